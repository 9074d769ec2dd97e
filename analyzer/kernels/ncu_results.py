"""NCU's own rule results as the document carries them (docs/formulas.md#findings,
docs/formulas.md#kernel-labels): the SOLBottleneck verdict NCU stored, and each kernel's rule
items with NVIDIA's text reduced to plain words."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.document import gc_paused
from rooftop.analyzer.kernels.ncu_rules import rule_errors

_SOL_TITLES = ("High Throughput", "Latency Issue", "Small Grid", "Balanced Throughput",
               "High Compute Throughput", "High Memory Throughput")


def stored_sol_verdicts(rules: pd.DataFrame) -> pd.Series:
    """NCU's own SOLBottleneck result per (input, index), from rule title or message text."""
    if rules is None or not len(rules) or "rule" not in rules.columns:
        return pd.Series(dtype="object")
    r = rules[rules["rule"].astype("string").isin(["SOLBottleneck", "Bottleneck"])]
    if not len(r):
        return pd.Series(dtype="object")
    title = r["title"].astype("string").fillna("") if "title" in r.columns else pd.Series("", index=r.index)
    desc = r["description"].astype("string").fillna("") if "description" in r.columns else pd.Series("", index=r.index)
    verdict = pd.Series(None, index=r.index, dtype="object")
    for t in _SOL_TITLES:
        verdict = verdict.mask(verdict.isna() & (title == t), t)
    text = desc.str.lower()
    for pat, t in (("greater than 80", "High Throughput"), ("grid is too small", "Small Grid"),
                   ("low compute throughput and memory bandwidth", "Latency Issue"),
                   ("well-balanced", "Balanced Throughput"), ("compute is more heavily utilized", "High Compute Throughput"),
                   ("memory is more heavily utilized", "High Memory Throughput")):
        verdict = verdict.mask(verdict.isna() & text.str.contains(pat, regex=False), t)
    key = pd.MultiIndex.from_arrays([r["input"].astype("string"), r["index"].astype("Int64")])
    out = pd.Series(verdict.to_numpy(), index=key).dropna()
    return out[~out.index.duplicated()]


# NCU's HighPipeUtilization message: "<pipe> is the highest-utilized pipeline (P%) based on active
# cycles" (ComputeWorkloadAnalysis rule, Nsight Compute 2023+); pipe names -> rooftop's limiter words
_PIPE_MSG = re.compile(r"([A-Za-z0-9]+(?: \((?:FP|INT|DP|FP16)\))?) is the highest-utilized pipeline \((\d+(?:\.\d+)?)%\)")
PIPE_WORDS = {"ALU": "alu", "FMA": "fma", "FP64": "fp64", "FP16": "fp16", "FMA (FP16)": "fp16", "Shared": "shared-pipe",
              "Tensor": "tensor", "Tensor (FP)": "tensor-hmma", "Tensor (INT)": "tensor-imma",
              "Tensor (DP)": "tensor-dmma", "TMA": "tma", "LSU": "lsu", "XU": "xu", "Uniform": "uniform", "ADU": "adu",
              "CBU": "cbu", "TEX": "tex"}


def rule_pipes(rules: pd.DataFrame) -> pd.DataFrame:
    """The pipe NCU's HighPipeUtilization rule names per (input, index): ``rule_pipe_word`` and
    ``rule_pipe_pct`` (docs/formulas.md#kernel-labels); empty without such a message."""
    if rules is None or not len(rules) or "description" not in rules.columns:
        return pd.DataFrame(columns=["rule_pipe_word", "rule_pipe_pct"])
    text = (rules["title"].astype("string").fillna("") + " " if "title" in rules.columns else "") + \
        rules["description"].astype("string").fillna("")
    found = text.str.extract(_PIPE_MSG)
    hit = found[0].notna() & found[0].isin(list(PIPE_WORDS))
    if not hit.any():
        return pd.DataFrame(columns=["rule_pipe_word", "rule_pipe_pct"])
    r = rules[hit]
    key = pd.MultiIndex.from_arrays([r["input"].astype("string"), r["index"].astype("Int64")])
    out = pd.DataFrame({"rule_pipe_word": found.loc[hit, 0].map(PIPE_WORDS).to_numpy(),
                        "rule_pipe_pct": pd.to_numeric(found.loc[hit, 1], errors="coerce").to_numpy()}, index=key)
    return out[~out.index.duplicated()]


_NCU_LINKS = ((re.compile(r"@url:([^:@]+):[^@]*@"), r"\1"),          # @url:Text:https://…@ -> Text
              (re.compile(r"@section:[^:@]*:([^@]*)@"), r"\1"),     # @section:Id:Name@ -> Name
              (re.compile(r"@[a-z]+:([^@]*)@"), r"\1"))             # @metric:name@ and others


def ncu_plain_text(text: str) -> str:
    """NVIDIA's rule text as plain words: its ``@url:``/``@section:`` link markup reduced to the
    link's name, whitespace runs to one space."""
    for pat, rep in _NCU_LINKS:
        text = pat.sub(rep, text)
    return " ".join(text.split())


def ncu_rule_items(kernels: pd.DataFrame, rules: pd.DataFrame) -> list[list[dict[str, Any]]]:
    n = len(kernels)
    if rules is None or not len(rules):
        with gc_paused():
            return [[] for _ in range(n)]
    r = rules.reset_index(drop=True)
    r = r[~rule_errors(r).to_numpy()].reset_index(drop=True)  # NCU failing to run a rule is no finding
    speed = pd.to_numeric(r.get("speedup_pct"), errors="coerce") if "speedup_pct" in r.columns else pd.Series(np.nan, index=r.index)
    stype = r["speedup_type"].astype("string").fillna("").tolist() if "speedup_type" in r.columns else [""] * len(r)
    # NVIDIA's own rule text (ncu-rep message, details "Rule Description", console paragraph), quoted
    # by findings; only where the export has it (docs/formulas.md#findings)
    msgs = ([ncu_plain_text(m) for m in r["description"].astype("string").fillna("").tolist()]
            if "description" in r.columns else [""] * len(r))
    items = [{"rule": rule, "title": title, "speedup_pct": None if pd.isna(sp) else float(sp),
              "speedup_type": st or None, **({"message": msg} if msg else {})}
             for rule, title, sp, st, msg in zip(r["rule"].astype("string").fillna("").tolist(),
                                                 r.get("title", pd.Series("", index=r.index)).astype("string").fillna("").tolist(),
                                                 speed.tolist(), stype, msgs, strict=True)]
    keys = list(zip(r["input"].astype("string").tolist(), r["index"].astype("Int64").tolist(), strict=True))
    grouped: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for k, it in zip(keys, items, strict=True):
        grouped.setdefault(k, []).append(it)
    kk = zip(kernels["input"].astype("string").tolist(), kernels["index"].astype("Int64").tolist(), strict=True)
    with gc_paused():
        return [grouped.get(k, []) for k in kk]
