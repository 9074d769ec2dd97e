"""Number formatting shared by every renderer: SI prefixes, percentages and durations."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rooftop.analyzer.schema import Device, Kernel

DASH = "—"
_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def num(value: Any) -> float | None:
    """A finite float from an int/float (not bool), else ``None``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        f = float(value)
        return f if math.isfinite(f) else None
    return None


def fmt_num(value: Any, unit: str = "", digits: int = 3) -> str:
    """``1.23e12, "FLOP/s"`` -> ``1.23 TFLOP/s``; ``None``/NaN -> ``—``; text is shown as is."""
    if value is None:
        return DASH
    x = num(value)
    if x is None:
        return DASH if isinstance(value, (int, float)) else str(value)
    for factor, prefix in _SI:
        if abs(x) >= factor:
            return f"{x / factor:.{digits}g} {prefix}{unit}".strip()
    return f"{x:.{digits}g} {unit}".strip()


def fmt_gpu_hours(value: Any) -> str:
    """GPU-hours, always in GPU-hours: two decimals from 0.1 up, two significant digits below
    (``0.0041667`` -> ``0.0042``, never seconds in a GPU-hours cell); ``None``/NaN -> ``—``."""
    x = num(value)
    if x is None:
        return DASH
    if x == 0 or abs(x) >= 0.1:
        return f"{x:.2f}"
    decimals = 1 - math.floor(math.log10(abs(x)))
    return f"{x:.{decimals}f}"


def fmt_saving(f: Mapping[str, Any]) -> str:
    """A finding's estimated saving: for a DCGM window or fleet finding (it carries ``gpu_hours``) GPU
    time summed over GPUs, in GPU-hours as the fleet cards write them (``0.030 GPU-h (108 GPU-s)``; it
    read ``108 s``, as if wall time); else time (docs/formulas.md#findings)."""
    s = f.get("est_saving_s")
    if s is None:
        return DASH
    if f.get("gpu_hours") is not None:
        h = float(s) / 3600
        return f"{fmt_gpu_hours(h)} GPU-h{gpu_seconds_hint(h)}"
    return fmt_time(s)


def gpu_seconds_hint(value: Any) -> str:
    """`` (15 GPU-s)`` for GPU-hours under 0.1, where the hours alone read as 0.00..; else ``""``."""
    x = num(value)
    return f" ({x * 3600:.0f} GPU-s)" if x is not None and 0 < abs(x) < 0.1 else ""


def fmt_pct(value: Any, digits: int = 1) -> str:
    """A fraction 0..1 as a percentage (``0.123`` -> ``12.3%``)."""
    if value is None:
        return DASH
    x = num(value)
    if x is None:
        return DASH if isinstance(value, (int, float)) else str(value)
    return f"{x * 100:.{digits}f}%"


def fmt_time(seconds: Any) -> str:
    """Seconds in the most readable unit (``1.5e-6`` -> ``1.5 µs``)."""
    if seconds is None:
        return DASH
    s = num(seconds)
    if s is None:
        return DASH if isinstance(seconds, (int, float)) else str(seconds)
    a = abs(s)
    if a >= 1:
        return f"{s:.3g} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if a >= 1e-6 or a == 0:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


def launches_of(k: Kernel) -> float:
    """The launches a kernel row stands for: ``extra.invocations`` (a ``--print-summary`` row stands for
    N launches, its duration is their average), 1 where absent (docs/formulas.md#families)."""
    extra = k.get("extra")
    inv = num(extra.get("invocations")) if extra is not None else None
    return inv if inv is not None and inv > 0 else 1.0


def kernel_time(k: Kernel) -> float | None:
    """A kernel row's GPU time: its duration x the launches it stands for (``None``: no duration)."""
    d = num(k["duration_s"])
    return None if d is None else d * launches_of(k)


def launches_each(kernels: Sequence[Kernel]) -> np.ndarray:
    """:func:`launches_of` of every kernel row, as one array."""
    inv = num_column(kernels, "extra", "invocations")
    return np.where(np.isfinite(inv) & (inv > 0), inv, 1.0)


def kernel_times(kernels: Sequence[Kernel]) -> np.ndarray:
    """:func:`kernel_time` of every kernel row, as one array (NaN for ``None``)."""
    d = num_column(kernels, "duration_s")
    with np.errstate(over="ignore"):  # as the float product: inf
        t: np.ndarray = np.where(np.isfinite(d), d, np.nan) * launches_each(kernels)
    return t


def kernel_label_shares(kernels: Sequence[Kernel]) -> tuple[dict[str, float], float]:
    """Shares of total kernel time per label, and the total time (seconds), each row weighted by the
    launches it stands for (:func:`launches_of`). Summed per label in row order (``np.bincount`` adds in
    input order: equal to the plain loop in ``tests/test_kernel_fast_paths.py``)."""
    first: dict[str, int] = {}  # label -> its code, in the order labels first appear (the plain loop's dict order)
    codes = np.fromiter((first.setdefault(k["label"], len(first)) for k in kernels), dtype=np.int64, count=len(kernels))
    t = kernel_times(kernels)
    sums = np.bincount(codes, weights=np.where(np.isnan(t), 0.0, t), minlength=len(first))
    totals = dict(zip(first, sums.tolist(), strict=True))
    total = sum(totals.values())
    return ({lab: v / total for lab, v in totals.items()} if total > 0 else {}), total


def kernel_headline(kernels: Sequence[Kernel]) -> str:
    """``1141 launches (12 summary rows), 35.6 ms GPU time``: launches weighted as the findings are;
    ``duration unknown`` where no row has one (never 0), and how many rows lack one where some do."""
    launches = sum(launches_each(kernels).tolist())
    n = f"{launches:.0f} launch{'' if launches == 1 else 'es'}" + (
        f" ({len(kernels)} summary rows)" if launches != len(kernels) else "")
    _, total = kernel_label_shares(kernels)
    unknown = sum(1 for k in kernels if num(k["duration_s"]) is None)
    if unknown == len(kernels):
        return f"{n}, GPU time unknown (no duration in the export)"
    more = f" ({unknown} launch row(s) without a duration)" if unknown else ""
    return f"{n}, {fmt_time(total)} GPU time{more}"


def get_each(objs: Sequence[Any], key: str) -> list[Any]:
    """``o.get(key)`` for every mapping in ``objs`` (None for anything else)."""
    return [o.get(key) if isinstance(o, (dict, Mapping)) else None for o in objs]


_PLAIN_NUMBERS = frozenset({float, int, np.float64, type(None)})


def num_column(kernels: Sequence[Mapping[str, Any]], *path: str) -> np.ndarray:
    """The number at ``path`` in every record (NaN where missing, not a number, or a bool)."""
    vals: list[Any] = list(kernels)
    for p in path:
        vals = get_each(vals, p)
    if set(map(type, vals)) <= _PLAIN_NUMBERS:
        return np.array([np.nan if v is None else v for v in vals], dtype=float)
    out = np.empty(len(vals), dtype=float)
    for i, v in enumerate(vals):
        out[i] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan
    return out


def finite_pos(a: Any) -> np.ndarray:
    """True where ``a`` is a finite number above zero."""
    x = np.asarray(a, dtype=float)
    return np.asarray(np.isfinite(x) & (x > 0), dtype=bool)


def device_sources(devices: Sequence[Device]) -> list[tuple[str, str]]:
    """Each named device once with the entries its ceilings come from (``export, builtin``), in
    document order: a GPU with an export and a builtin entry is one device, not two."""
    seen: dict[str, list[str]] = {}
    exported = {d["name"] for d in devices if d["source"] == "export"}
    for d in devices:
        if not d["name"]:
            continue
        serves = [n for n in d.get("serves") or [] if n in exported]
        if serves:  # a table entry that fills in an exported GPU's missing ceilings: that GPU's line
            for n in serves:
                srcs = seen.setdefault(n, [])
                srcs.append(f"{d['source']} {d['name']}")
            continue
        srcs = seen.setdefault(d["name"], [])
        if d["source"] not in srcs:
            srcs.append(d["source"])
    return [(name, ", ".join(sorted(srcs, key=lambda x: x != "export"))) for name, srcs in seen.items()]
