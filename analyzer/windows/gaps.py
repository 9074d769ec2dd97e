"""The gap rule (docs/formulas.md#windows "Covered time", docs/formulas.md#counters "Gaps"): a step
longer than :data:`GAP_STEPS` x the larger of the sampling interval and the window is missing data,
not an interval. Its own module so :mod:`.span`, :mod:`.counters` and :mod:`.hysteresis` read it
without an import cycle."""

from __future__ import annotations

from typing import Any

import numpy as np

GAP_STEPS = 5.0


def gap_limit(interval: Any, window: Any) -> Any:
    """Longest step read as one interval, elementwise: ``GAP_STEPS`` x max(interval, window) (``fmax``:
    either may be unknown, NaN); infinite where neither is known."""
    ref = np.fmax(interval, window)
    return np.where(np.isfinite(ref), GAP_STEPS * ref, np.inf)
