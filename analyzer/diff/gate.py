"""The gate's two conditions, effect size and significance, and which one decided
(docs/formulas.md#diff).

A change counts (``regressed`` / ``improved``) only when

* its **effect size** (the relative change of the median) exceeds the effect threshold
  ``max(--fail-on, --min-effect)``, and
* where there are enough repeats for a test, it is **significant** (Mann–Whitney U with Holm's
  correction, :mod:`analyzer.diff.stats`).

Why both: the test compares launches *within* each run, which share clocks, temperature and
co-tenants, so it cannot see run-to-run variance; with thousands of launches it calls a 1 % shift
significant. The minimum effect stands in for the run-to-run variance that two single runs cannot
measure (``rooftop trend`` measures it over N runs: its noise band). The same two conditions as
airspeed velocity's ``asv compare`` (``--factor``, default 1.1, on top of its statistics unless
``--no-stats``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooftop.errors import InputError

MIN_EFFECT_PCT = 5.0
"""Default minimum effect (%): the report-only threshold ``REPORT_PCT`` (docs/formulas.md#diff)."""

DECIDED = {
    "effect+significance": "beyond the effect threshold and significant",
    "effect-untested": "beyond the effect threshold; too few repeats for a test, so the effect alone",
    "significance": "beyond the effect threshold but not significant (noise by the test)",
    "effect": "within the effect threshold",
}
"""What decided a series' status (the ``decided_by`` field), in words."""


def check_pct(value: float | None, option: str) -> None:
    """A percentage option must be finite and ≥ 0 (``InputError`` naming the option)."""
    if value is not None and (not math.isfinite(value) or value < 0):
        raise InputError(option, f"{value!r} is not a percentage ≥ 0", f"e.g. {option} 5")


@dataclass(frozen=True)
class Gate:
    """``fail_on``: the gate (%; None = report only). ``min_effect``: the effect floor (%)."""

    fail_on: float | None
    min_effect: float = MIN_EFFECT_PCT

    def __post_init__(self) -> None:
        check_pct(self.fail_on, "--fail-on")
        check_pct(self.min_effect, "--min-effect")

    @property
    def effect_pct(self) -> float:
        """The effect threshold applied: the larger of ``--fail-on`` and ``--min-effect``."""
        return max(self.fail_on or 0.0, self.min_effect)

    @property
    def threshold(self) -> float:
        """:attr:`effect_pct` as a fraction."""
        return self.effect_pct / 100.0

    @property
    def effect_from(self) -> str:
        """Which option set the effect threshold: ``min-effect`` (it is at least ``--fail-on``) or ``fail-on``."""
        return "min-effect" if self.min_effect >= (self.fail_on or 0.0) else "fail-on"

    def threshold_text(self) -> str:
        """``5 %``."""
        return f"{self.effect_pct:g} %"

    def floor_note(self) -> str:
        """When the floor overrode a smaller ``--fail-on``: `` (5 % is the --min-effect floor: ...)``."""
        if self.fail_on is not None and self.fail_on < self.min_effect:
            return (f" ({self.min_effect:g} % is the --min-effect floor: --fail-on {self.fail_on:g} asks for "
                    "less than run-to-run noise)")
        return ""

    def fields(self) -> dict[str, object]:
        """The verdict's gate fields."""
        return {"threshold_pct": self.fail_on, "classify_pct": self.effect_pct,
                "min_effect_pct": self.min_effect, "effect_from": self.effect_from}


def classify(table: pd.DataFrame, threshold: float) -> pd.Series:
    """Status per series: regressed / improved / within threshold / not significant / unmatched / no duration.

    ``threshold`` is the effect threshold as a fraction (0.05 = 5 %). A tested series must also be
    significant; a threshold-only series needs only the change.
    """
    return decide(table, threshold)[0]


def decide(table: pd.DataFrame, threshold: float) -> tuple[pd.Series, pd.Series]:
    """:func:`classify`'s status and ``decided_by`` (a key of :data:`DECIDED`, "" when nothing was judged)."""
    change = table["change"].to_numpy(dtype=float, na_value=np.nan)
    tested = (table["method"] == "mann-whitney").to_numpy()
    sig = table["significant"].to_numpy(dtype=bool)
    up, down = change > threshold, change < -threshold
    beyond = up | down
    status = np.where(up & (sig | ~tested), "regressed",
                      np.where(down & (sig | ~tested), "improved",
                               np.where(beyond & tested, "not significant", "within threshold")))
    decided = np.where(beyond & tested & sig, "effect+significance",
                       np.where(beyond & ~tested, "effect-untested",
                                np.where(beyond & tested, "significance", "effect")))
    judged = np.isfinite(change)
    unmatched = (table["n_base"].to_numpy() == 0) | (table["n_cand"].to_numpy() == 0)
    status = np.where(judged, status, "no duration")
    status = np.where(unmatched, "unmatched", status)
    decided = np.where(judged & ~unmatched, decided, "")
    return (pd.Series(status.astype(object), index=table.index),
            pd.Series(decided.astype(object), index=table.index))


def p_text(p: float | None) -> str:
    """A p-value to 2 significant digits (``p=9.3e-14``); ``p n/a`` when there is none."""
    if p is None or not math.isfinite(p):
        return "p n/a"
    return f"p={p:.2g}"
