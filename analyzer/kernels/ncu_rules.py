"""NVIDIA's own rule results, read for the verdicts (docs/formulas.md#kernel-labels, #findings).

* :func:`rule_errors`: rows that are NCU failing to run a rule (``ERR`` results such as "Rule
  Bottleneck returned an error", Python exception text such as "float division by zero …
  SpeedOfLight_Roofline.py:64"). They are never shown as rule titles nor used as estimates.
* :func:`launch_signals`: per kernel, whether NCU's LaunchConfiguration rule raised *Tail Effect*
  or *Small Grid* (``True``), evaluated and did not (``False``), or cannot be told (``None``).
* :func:`failed_profiles`: kernels whose profile failed (``==ERROR== LaunchFailed`` / "An error
  occurred while trying to profile" in the log, or only rule errors) and that carry no duration.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

# Inline (?i), not re.IGNORECASE, and .str methods get the pattern text: pandas < 3 cannot pass a
# compiled pattern to Arrow-backed strings (RE2 reads (?i) too).
_ERROR_TEXT = re.compile(
    r"(?i)returned an error|returned a result with an (?:exception|error) set|Traceback|\.py:\d+|division by zero")
_TAIL_TEXT = re.compile(r"(?i)^Tail Effect$|A wave of thread blocks is defined|partial wave")
_SMALL_GRID_TEXT = re.compile(r"(?i)which is less than the GPU's|less than the GPU's \d+ multiprocessors")
_FAILED_LOG = re.compile(r"LaunchFailed|An error occurred while trying to profile|Failed to profile", re.IGNORECASE)
LAUNCH_RULES = ("LaunchConfiguration", "Launch Configuration")


def _text(rules: pd.DataFrame, col: str) -> pd.Series:
    if col not in rules.columns:
        return pd.Series("", index=rules.index, dtype="object")
    return rules[col].astype("object").where(rules[col].notna(), "").astype(str)


def rule_errors(rules: pd.DataFrame) -> pd.Series:
    """True for rows that report NCU failing to evaluate a rule (not a finding about the kernel)."""
    if rules is None or not len(rules):
        return pd.Series(False, index=getattr(rules, "index", pd.RangeIndex(0)), dtype=bool)
    kind = _text(rules, "type").str.upper()
    title, desc = _text(rules, "title"), _text(rules, "description")
    return (kind == "ERR") | title.str.contains(_ERROR_TEXT.pattern) | desc.str.contains(_ERROR_TEXT.pattern)


def _keys(frame: pd.DataFrame) -> list[tuple[Any, Any]]:
    return list(zip(frame["input"].astype("string").tolist(), frame["index"].astype("Int64").tolist(), strict=True))


def launch_signals(kernels: pd.DataFrame, rules: pd.DataFrame) -> pd.DataFrame:
    """``ncu_tail`` and ``ncu_small_grid`` per kernel (same row order as ``kernels``).

    ``True`` where NCU raised the result; ``False`` where NCU evaluated rules for this kernel (it
    has at least one rule result that is not an error, no LaunchConfiguration error) and the
    launch statistics were collected (``waves`` known), but raised none; ``None`` otherwise.
    """
    n = len(kernels)
    out = pd.DataFrame({"ncu_tail": pd.Series([None] * n, dtype="object"),
                        "ncu_small_grid": pd.Series([None] * n, dtype="object")})
    if rules is None or not len(rules) or not n:
        return out
    r = rules.reset_index(drop=True)
    err = rule_errors(r).to_numpy()
    rule, title, desc = _text(r, "rule"), _text(r, "title"), _text(r, "description")
    text = title + " " + desc
    tail = (title.str.contains(_TAIL_TEXT.pattern) | desc.str.contains(_TAIL_TEXT.pattern)).to_numpy() & ~err
    small = ((rule.isin(LAUNCH_RULES) & (title == "Small Grid")) | text.str.contains(_SMALL_GRID_TEXT.pattern)).to_numpy() & ~err
    launch_err = (rule.isin(LAUNCH_RULES) | title.str.contains("Launch Configuration")).to_numpy() & err
    keys = _keys(r)
    per: dict[tuple[Any, Any], list[bool]] = {}
    for k, e, t, s, le in zip(keys, err.tolist(), tail.tolist(), small.tolist(), launch_err.tolist(), strict=True):
        acc = per.setdefault(k, [False, False, False, False])  # any valid, tail, small, launch error
        acc[0] |= not e
        acc[1] |= t
        acc[2] |= s
        acc[3] |= le
    waves_known = pd.to_numeric(kernels.get("launch__waves_per_multiprocessor", pd.Series(np.nan, index=kernels.index)),
                                errors="coerce").notna().to_numpy()
    tails: list[bool | None] = []
    smalls: list[bool | None] = []
    for k, wk in zip(_keys(kernels), waves_known.tolist(), strict=True):
        got = per.get(k)
        decided = got is not None and got[0] and not got[3] and wk
        tails.append(True if got and got[1] else (False if decided else None))
        smalls.append(True if got and got[2] else (False if decided else None))
    out["ncu_tail"] = pd.Series(tails, dtype="object")
    out["ncu_small_grid"] = pd.Series(smalls, dtype="object")
    return out


def failed_profiles(kernels: pd.DataFrame, rules: pd.DataFrame, meta: dict[str, dict[str, Any]] | None,
                    duration: pd.Series) -> pd.Series:
    """Kernels (positions as in ``kernels``) whose profile failed: no duration, and either the log
    reports a failed launch/profile (``ncu_errors`` in the parser's meta) or every rule result of
    the kernel is an NCU error."""
    n = len(kernels)
    no_dur = duration.isna().to_numpy() if n else np.zeros(0, dtype=bool)
    failed_inputs = {path for path, m in (meta or {}).items()
                     if any(_FAILED_LOG.search(str(e)) for e in (m or {}).get("ncu_errors", []) or [])}
    inp = kernels["input"].astype("string").fillna("").tolist() if "input" in kernels.columns else [""] * n
    by_log = np.array([p in failed_inputs for p in inp], dtype=bool)
    only_errors = np.zeros(n, dtype=bool)
    if rules is not None and len(rules):
        r = rules.reset_index(drop=True)
        err = rule_errors(r).tolist()
        per: dict[tuple[Any, Any], list[bool]] = {}
        for k, e in zip(_keys(r), err, strict=True):
            acc = per.setdefault(k, [False, False])
            acc[0] |= e
            acc[1] |= not e
        only_errors = np.array([bool(per.get(k, [False, True])[0] and not per.get(k, [False, True])[1])
                                for k in _keys(kernels)], dtype=bool)
    return pd.Series(no_dur & (by_log | only_errors), index=kernels.index)


def failed_profile_lint(failed: pd.Series, kernels: pd.DataFrame, meta: dict[str, dict[str, Any]] | None
                        ) -> dict[str, Any] | None:
    """The ``failed-profile`` lint item (docs/formulas.md#kernel-labels), ``None`` when none failed."""
    pos = [int(i) for i in np.flatnonzero(failed.to_numpy(dtype=bool))]
    if not pos:
        return None
    inputs = sorted({str(kernels["input"].iloc[p]) for p in pos}) if "input" in kernels.columns else []
    errs: list[str] = []
    for path in inputs:
        errs += [str(e) for e in ((meta or {}).get(path) or {}).get("ncu_errors", []) or []][:3]
    said = f" (the log says: {'; '.join(errs[:3])})" if errs else ""
    return {"code": "failed-profile", "kernels": pos,
            "message": f"{len(pos)} kernel(s) were not profiled: NCU failed to collect their metrics{said}; "
                       "NCU's rule errors for them are not findings. No label or advice is given: fix the "
                       "launch failure and profile again (docs/formulas.md#kernel-labels)."}
