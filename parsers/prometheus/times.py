"""Time checks of the Prometheus text parser: explicit timestamps and scrape-stamped times.

An explicit trailing timestamp is integer milliseconds (``promtool tsdb dump`` style). One that does
not fit int64 is rejected; one that is an epoch time between :data:`EPOCH_YEARS` only in seconds,
microseconds or nanoseconds is rescaled (counted by scale); one that is such a time in no scale is
rejected (docs/formulas.md#fleet-ingest, "Time scales"). Lines without one get
``start + scrape * interval``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.parsers.prometheus.scan import bool_mask
from rooftop.parsers.units import epoch_ms_array

INT64_RANGE = (-(2**63) + 1, 2**63 - 1)  # int64 min is NaT as a datetime64
MAX_SAFE_DIGITS = 18  # an integer string this long (with its sign) always fits int64
FILL_MS = 1_700_000_000_000  # stands in for a missing timestamp in the scale checks (2023, in ms)

__all__ = ["bad_timestamps", "off_scale", "stamp", "to_ms"]


def bad_timestamps(ts_s: pa.Array) -> np.ndarray:
    """True where an explicit (integer-millisecond) timestamp does not fit int64 (or is its NaT value)."""
    bad = np.zeros(len(ts_s), dtype=bool)
    try:
        ok = pc.all(pc.greater(pc.cast(ts_s, pa.int64()), INT64_RANGE[0] - 1)).as_py() is not False
    except (pa.ArrowInvalid, OverflowError):
        ok = False
    if not ok:
        long_idx = np.flatnonzero(bool_mask(pc.greater(pc.utf8_length(ts_s), MAX_SAFE_DIGITS)))
        for i in long_idx:  # only 19+ digit strings can overflow: few
            v = int(ts_s[int(i)].as_py())
            bad[i] = not INT64_RANGE[0] <= v <= INT64_RANGE[1]
    return bad


def off_scale(ts_s: pa.Array, overflow: np.ndarray) -> np.ndarray:
    """True where an explicit timestamp (fitting int64) is an epoch time between EPOCH_YEARS in no
    scale: ms as the exposition format says, or s/us/ns (docs/formulas.md#fleet-ingest)."""
    if ts_s.null_count == len(ts_s):
        return np.zeros(len(ts_s), dtype=bool)
    ok = pa.array(~overflow) if overflow.any() else None
    ts = pc.cast(ts_s.filter(ok) if ok is not None else ts_s, pa.int64())
    _ms, off, _counts = epoch_ms_array(pc.fill_null(ts, FILL_MS).to_numpy(zero_copy_only=False), "ms")
    out = np.zeros(len(ts_s), dtype=bool)
    out[np.flatnonzero(~overflow)] = off
    return out


def to_ms(ts: pa.Array, rescaled: dict[str, int]) -> pa.Array:
    """Explicit timestamps (checked by :func:`off_scale`) in milliseconds: seconds, microseconds and
    nanoseconds rescaled (counted in ``rescaled`` by scale); nulls (no timestamp) kept."""
    if ts.null_count == len(ts):
        return ts
    raw = pc.fill_null(ts, FILL_MS).to_numpy(zero_copy_only=False)
    ms, _off, counts = epoch_ms_array(raw, "ms")
    if not counts:
        return ts
    for k, n in counts.items():
        rescaled[k] = rescaled.get(k, 0) + n
    return pa.array(ms, pa.int64(), mask=np.asarray(pc.is_null(ts)))


def stamp(ts_ms: pa.Array, scrape: np.ndarray, start_ms: int, interval_ms: int) -> pa.Array:
    """UTC timestamps: the explicit one where given, else ``start_ms + scrape * interval_ms``."""
    explicit = np.asarray(pc.fill_null(ts_ms, 0).to_numpy(zero_copy_only=False), dtype="int64")
    has = np.asarray(pc.is_valid(ts_ms))
    out = np.where(has, explicit, start_ms + scrape * interval_ms)
    return pa.array(out.astype("datetime64[ms]"), pa.timestamp("ms")).cast(pa.timestamp("ms", tz="UTC"))
