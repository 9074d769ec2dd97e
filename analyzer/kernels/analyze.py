"""Per-kernel analysis: metrics -> ceilings -> roofline -> label, evidence and lint.

``analyze_kernels(kernels, rules, device)`` returns :class:`KernelAnalysis`:

* ``results``: one row per kernel (same order as the kernel table), flat columns named as in
  :data:`analyzer.document.KERNEL_FIELDS` (except ``family``) plus extras: ``binding_level``,
  ``dominant_class``, ``ridge_<lvl>``, ``attainable_<lvl>``, ``bw_util_<lvl>``, ``pct_of_roof``,
  ``waves``, ``sol_verdict``, ``bytes_convention``, ``compute_peak``, ``compute_util``, ``memory_util``
  and the ceilings as a reference into ``devices`` (:func:`analyzer.ceilings.refs.ceiling_refs`: column
  ``ceilings``; ``peak_<class>``, ``bw_<lvl>``, ``sm_count``, ``ceiling_device`` only where they
  differ from the referenced entry, NaN/None elsewhere).
* ``devices``: contract entries of every device whose ceilings were used.
* ``ceilings``: every kernel's full ceilings: ``peak_<class>``, ``bw_<lvl>``, ``src_<ceiling>``
  (export/builtin/user), ``detail_<ceiling>``, ``ceiling_device``, ``sm_count``.
* ``lint``: contract lint items; ``kernels`` are row positions in ``results`` (= positions in
  the document's ``kernels`` list).
* ``evidence``: every kernel's evidence as facts (:class:`analyzer.kernels.evidence.Facts`); the
  ``evidence`` column of ``results`` holds the sentences drawn from them for the
  :data:`~analyzer.schema.evidence.SENTENCE_KERNELS` longest launches (None for the others).

The steps live in their own modules: :mod:`analyzer.kernels.facts` (every number behind a label),
:mod:`analyzer.kernels.classify` (the label), :mod:`analyzer.kernels.evidence` (the evidence facts),
:mod:`analyzer.kernels.ncu_results` (NCU's own rule results), :mod:`analyzer.ceilings.per_kernel` (the ceilings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.ceilings.per_kernel import CEILING_COLUMNS
from rooftop.analyzer.ceilings.refs import ceiling_refs
from rooftop.analyzer.kernels.classify import classify
from rooftop.analyzer.kernels.evidence import Facts, kernel_facts, shown
from rooftop.analyzer.kernels.facts import facts_for
from rooftop.analyzer.kernels.families import family_key
from rooftop.analyzer.kernels.lint import lint_kernels
from rooftop.analyzer.kernels.ncu_results import ncu_rule_items, rule_pipes, stored_sol_verdicts
from rooftop.analyzer.kernels.ncu_rules import failed_profile_lint, failed_profiles, launch_signals
from rooftop.analyzer.metrics.columns import FLOP_CLASSES, LEVELS

__all__ = ["KernelAnalysis", "analyze_kernels"]


@dataclass
class KernelAnalysis:
    results: pd.DataFrame
    devices: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)
    ceilings: pd.DataFrame | None = None
    evidence: Facts | None = None


def _bind_to_label(f: pd.DataFrame, c: pd.DataFrame) -> None:
    """``binding_level`` agrees with the label (docs/formulas.md#kernel-labels): a memory-bound kernel's
    limiter level, else the level with the highest utilisation (roofline or SOL breakdown). Where that
    level has no bandwidth ceiling, the roof of another level would overstate what is attainable, so the
    attainable FLOP/s and % of roof are unknown (``roof_unknown_level`` names it). In place."""
    level = c["busiest_level"].astype("object")
    level = level.where(level.notna(), f["binding_level"].astype("object"))
    level = level.mask(c["label"] == "memory-bound", c["limiter"])
    level = level.where(level.isin(list(LEVELS)), None)
    no_ceiling = pd.Series(False, index=f.index)
    for lvl in LEVELS:
        no_ceiling |= (level == lvl) & f[f"bw_{lvl}"].isna()
    no_ceiling &= f["attainable_flops_s"].notna()  # only where another level's roof was about to be used
    f["binding_level"] = level.where(level.notna(), f["binding_level"])
    f["roof_unknown_level"] = level.where(no_ceiling, None)
    f.loc[no_ceiling, ["attainable_flops_s", "pct_of_roof"]] = np.nan


def analyze_kernels(kernels: pd.DataFrame, rules: pd.DataFrame, device: str | None = None,
                    meta: dict[str, dict[str, Any]] | None = None) -> KernelAnalysis:
    """Analyze every kernel (see the module docstring). ``meta``: parser meta per input path
    (ncu command line for the cache/clock-control lint), optional."""
    if kernels is None or not len(kernels):
        return KernelAnalysis(pd.DataFrame(columns=["index", "input", "name", "label", "limiter"]))
    f, devices = facts_for(kernels, device, meta)
    stored = stored_sol_verdicts(rules)
    if len(stored):
        key = pd.MultiIndex.from_arrays([f["input"].astype("string"), f["index"].astype("Int64")])
        f["ncu_stored_verdict"] = stored.reindex(key).to_numpy()
    pipes = rule_pipes(rules)
    if len(pipes):
        key = pd.MultiIndex.from_arrays([f["input"].astype("string"), f["index"].astype("Int64")])
        f["rule_pipe_word"] = pipes["rule_pipe_word"].reindex(key).to_numpy()
        f["rule_pipe_pct"] = pipes["rule_pipe_pct"].reindex(key).to_numpy()
    sig = launch_signals(f[["input", "index"]].assign(launch__waves_per_multiprocessor=f["waves"]), rules)
    f["ncu_tail"], f["ncu_small_grid"] = sig["ncu_tail"].to_numpy(), sig["ncu_small_grid"].to_numpy()
    failed = failed_profiles(f, rules, meta, f["duration_s"])
    # the 5 µs launch cut is taken on the median of a kernel's launches in one configuration, so one
    # family is not split by launches either side of it (docs/formulas.md#kernel-labels)
    f["launch_duration_s"] = f["duration_s"].groupby(family_key(f), sort=False).transform("median")
    c = classify(f)
    c.loc[failed.to_numpy(), ["label", "limiter", "basis"]] = ["unknown", "unknown", "failed"]
    _bind_to_label(f, c)
    na = {p: ", ".join(str(x) for x in m["metrics_na"]) for p, m in (meta or {}).items()
          if isinstance(m, dict) and m.get("metrics_na")}
    if na:
        f["metrics_na"] = f["input"].astype("object").map(na)
    facts = kernel_facts(f, c)
    facts.only(failed.to_numpy(dtype=bool), "profile-failed")
    ev: list[list[str] | None] = [None] * len(f)
    for i, sentences in facts.sentences(shown(f["duration_s"])).items():
        ev[i] = sentences
    extras = ["binding_level", "dominant_class", "pct_of_roof", "waves", "compute_peak", "compute_util",
              "memory_util", "bytes_convention", "busiest_pct", "top_unit", "top_unit_word", "top_unit_name",
              "top_unit_side", "top_unit_level", "bw_time_s", "bw_time_complete", "zero_flops",
              "occupancy_achieved_pct", "occupancy_theoretical_pct", "occupancy_limiter", "registers_per_thread",
              "shared_mem_per_block", "local_memory_ops"]
    extras += [f"{p}_{lvl}" for p in ("ridge", "attainable", "bw_util") for lvl in LEVELS]
    refs = ceiling_refs(f[list(CEILING_COLUMNS)], f[[f"src_{col}" for col in CEILING_COLUMNS]].set_axis(
        list(CEILING_COLUMNS), axis=1), f["ceiling_device"], f["export_device"], f["sm_count"], devices,
        builtin_device=f["builtin_device"])
    res = pd.DataFrame({  # framed once (bench/NOTES.md, command-line start-up)
        "index": f["index"], "input": f["input"], "id": f["id"], "name": f["name"], "device": f["device"],
        "duration_s": f["duration_s"], "grid": f["grid"], "block": f["block"],
        "sol_compute_pct": f["sol_compute_pct"], "sol_memory_pct": f["sol_memory_pct"],
        "flops": f["flops"],
        **{f"flops_{k}": f[f"flops_{k}"] for k in FLOP_CLASSES},
        **{f"bytes_{lvl}": f[f"bytes_{lvl}"] for lvl in LEVELS},
        **{f"intensity_{lvl}": f[f"intensity_{lvl}"] for lvl in LEVELS},
        "attainable_flops_s": f["attainable_flops_s"], "achieved_flops_s": f["achieved_flops_s"],
        "label": c["label"], "limiter": c["limiter"],
        "evidence": ev,
        "profile_failed": failed.to_numpy(dtype=bool),
        "ncu_rules": ncu_rule_items(f, rules),
        "invocations": pd.to_numeric(f["invocations"], errors="coerce").fillna(1).astype("Int64"),
        "nvtx": f["nvtx"].astype("object").where(f["nvtx"].notna(), None),
        **{col: f[col] for col in extras},
        **{f"sol_{lvl}_pct": f[f"unit_{lvl}"] for lvl in LEVELS},
        "sol_verdict": c["sol_verdict"], "label_basis": c["basis"],
        "pipe_name": c["pipe_name"], "pipe_pct": c["pipe_pct"],
        **{col: refs[col] for col in refs.columns},
    }, index=f.index)
    full = [*CEILING_COLUMNS, *(f"src_{col}" for col in CEILING_COLUMNS), *(f"detail_{col}" for col in CEILING_COLUMNS),
            "ceiling_device", "sm_count"]
    lint = lint_kernels(f, meta=meta) + list(f.attrs.get("device_lint", []))
    failed_item = failed_profile_lint(failed, f, meta)
    if failed_item is not None:
        lint.insert(0, failed_item)
    return KernelAnalysis(res, devices, lint, f[full].copy(), facts)
