"""Axes for the static SVG charts: readable ticks (SI units, UTC clock times) and honest downsampling.

Nothing here decides a number: ticks are round values inside the data's range, and
:func:`envelope` reduces samples to per-pixel-bucket min / mean / max of exactly the samples that
fall in each bucket (the chart caption says so; docs/formulas.md#report-view).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from rooftop.reports.formatting import fmt_num, fmt_time

# clock-time steps for an epoch axis (seconds): 1 s ... 1 day, then whole days
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
               172800, 604800)


def nice_step(span: float, target: int = 5) -> float:
    """A 1/2/5 x 10^k step giving about ``target`` intervals over ``span`` (> 0)."""
    raw = span / max(target, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if raw <= m * mag * (1 + 1e-9):
            return m * mag
    return 10.0 * mag


def linear_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values within [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    step = nice_step(hi - lo, target)
    first = math.ceil(lo / step - 1e-9) * step
    n = math.floor((hi - first) / step + 1e-9) + 1
    return [round(first + i * step, 12) for i in range(max(n, 0))]


def value_range(values: list[float], *, from_zero: bool = True) -> tuple[float, float]:
    """A y range that holds every value, widened to round ticks (from 0 when all values are >= 0)."""
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return 0.0, 1.0
    lo, hi = min(vals), max(vals)
    if from_zero and lo >= 0:
        lo = 0.0
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    step = nice_step(hi - lo)
    return math.floor(lo / step) * step, math.ceil(hi / step - 1e-9) * step


def fmt_tick(value: float, unit: str) -> str:
    """A y tick: ``ratio`` as percent, ``s`` as a duration, else SI prefix + unit (``1.41 GHz``, ``250 W``)."""
    if unit == "ratio":
        return f"{value * 100:.4g}%"
    if unit == "s":
        return "0" if value == 0 else fmt_time(value)
    return "0" if value == 0 else fmt_num(value, unit)


def fmt_value(value: float, unit: str) -> str:
    """A hovered value, one more digit than a tick."""
    if unit == "ratio":
        return f"{value * 100:.1f}%"
    if unit == "s":
        return fmt_time(value)
    return fmt_num(value, unit)


@dataclass(frozen=True)
class TimeAxis:
    """A time axis: epoch seconds shown as UTC clock times, or seconds from a start shown as durations."""

    lo: float
    hi: float
    epoch: bool

    def ticks(self, target: int = 7) -> list[tuple[float, str]]:
        span = self.hi - self.lo
        if span <= 0:
            return [(self.lo, self.label(self.lo))]
        if not self.epoch:
            return [(v, "0" if v == 0 else fmt_time(v)) for v in linear_ticks(self.lo, self.hi, target)]
        step = next((s for s in _TIME_STEPS if span / s <= target), None)
        if step is None:
            step = _TIME_STEPS[-1] * math.ceil(span / target / _TIME_STEPS[-1])
        if span < 1:  # sub-second capture: offsets from its start
            return [(self.lo + v, f"+{fmt_time(v)}") for v in linear_ticks(0.0, span, target)]
        first = math.ceil(self.lo / step) * step
        out, t = [], float(first)
        while t <= self.hi + 1e-9:
            out.append((t, self.label(t, step)))
            t += step
        return out

    def label(self, t: float, step: float = 1.0) -> str:
        if not self.epoch:
            return fmt_time(t - self.lo) if self.lo else fmt_time(t)
        d = datetime.fromtimestamp(t, tz=timezone.utc)
        if self.years_apart():  # a span across New Year: the year on every tick (issue 24)
            return d.strftime("%Y-%m-%d" if step >= 86400 and d.hour == 0 and d.minute == 0 else "%Y-%m-%d %H:%M")
        if self.hi - self.lo >= 86400:
            return d.strftime("%m-%d %H:%M")
        return d.strftime("%H:%M" if step >= 60 and d.second == 0 else "%H:%M:%S")

    def years_apart(self) -> bool:
        """An epoch axis whose ends fall in different calendar years (UTC)."""
        return self.epoch and (datetime.fromtimestamp(self.lo, tz=timezone.utc).year
                               != datetime.fromtimestamp(self.hi, tz=timezone.utc).year)

    def stamp(self, t: float) -> str:
        """A full time for hover text."""
        if not self.epoch:
            return fmt_time(t)
        return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + (
            f".{round((t % 1) * 1000):03d}" if t % 1 else "") + " UTC"

    def title(self) -> str:
        if not self.epoch:
            return "seconds from the first GPU activity"
        return "time, UTC (from " + datetime.fromtimestamp(self.lo, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + ")"


@dataclass(frozen=True)
class Envelope:
    """Per-bucket statistics of one series: bucket index, min, mean, max and sample count."""

    index: np.ndarray
    lo: np.ndarray
    mean: np.ndarray
    hi: np.ndarray
    count: np.ndarray


def envelope(t: np.ndarray, y: np.ndarray, t0: float, t1: float, buckets: int) -> Envelope:
    """Min, mean and max of the finite samples in each of ``buckets`` equal time buckets over
    [t0, t1]; buckets without a sample are left out (a gap, never a made-up value)."""
    ok = np.isfinite(t) & np.isfinite(y)
    t, y = t[ok], y[ok]
    if not len(t):
        e = np.empty(0)
        return Envelope(e.astype(int), e, e, e, e.astype(int))
    span = (t1 - t0) or 1.0
    b = np.clip(((t - t0) / span * buckets).astype(np.int64), 0, buckets - 1)
    order = np.argsort(b, kind="stable")
    b, y = b[order], y[order]
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    count = np.diff(np.r_[starts, len(b)])
    return Envelope(b[starts], np.minimum.reduceat(y, starts), np.add.reduceat(y, starts) / count,
                    np.maximum.reduceat(y, starts), count)
