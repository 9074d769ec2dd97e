"""Which optimizer implementation a trace shows, so the optimizer advice does not name what the program
already does (docs/formulas.md#timeline-findings): ``fused`` when an ``Optimizer.step#`` range names a
fused class (``FusedAdam``...) or an ``aten::_fused_*`` op (``_fused_adam_``, ``_fused_adamw_``,
``_fused_sgd_``) starts inside an optimizer range; ``foreach`` when an ``aten::_foreach_*`` op does;
else ``None`` (not shown: a plain per-parameter loop, or ops not recorded)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer.timeline.causes import HOST_CATEGORIES, HostActivity
from rooftop.analyzer.timeline.metrics import union

OptimizerImpl = Literal["fused", "foreach"]
_OPTIMIZER = HOST_CATEGORIES.index("optimizer")


def _flags(labels: pa.Array, prefix: str) -> np.ndarray:
    out: np.ndarray = np.asarray(pc.starts_with(labels, prefix).fill_null(False).to_numpy(zero_copy_only=False),
                                 dtype=bool)
    return out


def optimizer_impl(host: HostActivity) -> OptimizerImpl | None:
    """The implementation the optimizer ranges of ``host`` show (module docstring); processes not told
    apart (an optimizer steps in the training process)."""
    opt = np.flatnonzero(host.cat == _OPTIMIZER)
    if not len(opt) or not len(host.labels):
        return None
    steps = host.labels.take(pa.array(np.unique(host.code[opt]), type=pa.int64())).to_pylist()
    if any("#Fused" in str(n) for n in steps):
        return "fused"
    within = union(host.start[opt], host.end[opt])
    if not len(within.starts):
        return None
    at = np.searchsorted(within.starts, host.start, side="right") - 1  # the optimizer interval each event starts in
    inside = (at >= 0) & (host.start < within.ends[np.maximum(at, 0)])
    if (_flags(host.labels, "aten::_fused_")[host.code] & inside).any():
        return "fused"
    if (_flags(host.labels, "aten::_foreach_")[host.code] & inside).any():
        return "foreach"
    return None
