"""Severity of a finding from its recoverable share of kernel time (docs/formulas.md#findings):
>= 10 % high, >= 2 % medium, else low; at most medium without an estimate, with an unknown label,
or at >= 80 % of the roof."""

from __future__ import annotations

import numpy as np
import pandas as pd

SEVERITY_ORDER = {"high": 0, "critical": 0, "medium": 1, "warning": 1, "low": 2, "info": 3}
HIGH, MEDIUM = 0.10, 0.02
ROOF_HIGH = 80.0  # % of the roof at or above which a finding is never high (SOLBottleneck's 80 %)
_NAMES = ("high", "medium", "low")


def severity(score: float, estimated: bool, capped: bool = False) -> str:
    """high >= 10 % of all kernel time recoverable, medium >= 2 %, else low; at most medium without
    an estimate or when ``capped`` (unknown label, or at >= 80 % of its roof). docs/formulas.md#findings."""
    sev = "high" if score >= HIGH else "medium" if score >= MEDIUM else "low"
    return "medium" if (sev == "high" and (not estimated or capped)) else sev


def rank_families(agg: pd.DataFrame) -> pd.DataFrame:
    """``agg`` (one row per family with ``label``, ``roof_pct``, ``est`` and ``score``) with ``capped``
    (unknown label or >= ROOF_HIGH % of the roof) and ``sev`` (0 high, 1 medium, 2 low, the same rule
    as :func:`severity`) added, sorted by severity then score, best first (a new frame)."""
    agg = agg.copy()
    sev = np.where(agg["score"] >= HIGH, 0, np.where(agg["score"] >= MEDIUM, 1, 2))
    agg["capped"] = (agg["label"].fillna("unknown") == "unknown") | (agg["roof_pct"] >= ROOF_HIGH)
    agg["sev"] = np.where((sev == 0) & (agg["est"].isna() | agg["capped"]), 1, sev)
    return agg.sort_values(["sev", "score"], ascending=[True, False], kind="stable")
