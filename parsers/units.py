"""Nsight Compute unit strings to SI base units.

ncu scales units per row unless ``--print-units base`` was used (``Kbyte`` for one kernel, ``Mbyte``
for the next; ``nsecond``/``ns``, ``cycle/nsecond``, ``Ghz``). :func:`si_factor` returns the factor
that brings a value in that unit to the base unit (bytes, seconds, Hz, bytes/second, counts).
Byte prefixes are decimal (1 Kbyte = 1000 bytes), as in Nsight Compute; IEC ``KiB``/``MiB``/``GiB``
are powers of two; ``KB``/``MB``/``GB`` (1000 or 1024?) have no factor (``None``: the caller lints
them, never takes them as bytes); ``min``/``minute``/``h``/``hour`` are 60/3600 s.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"ns": 1e-9, "nsecond": 1e-9, "nsec": 1e-9, "us": 1e-6, "usecond": 1e-6, "usec": 1e-6,
         "ms": 1e-3, "msecond": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0, "second": 1.0, "ps": 1e-12,
         "psecond": 1e-12, "min": 60.0, "minute": 60.0, "h": 3600.0, "hour": 3600.0}
# IEC binary byte units: unambiguous powers of two (Nsight itself prints decimal Kbyte/Mbyte)
_BINARY = {f"{p}{b}": float(1 << (10 * (i + 1))) for i, p in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi"))
           for b in ("B", "byte")}
# "KB", "MB", "GB/s": 1000 or 1024? Not Nsight's spelling and ambiguous: no factor (the caller lints)
_AMBIGUOUS_BYTES = re.compile(r"^[kKMGTP]B$")
# Countable base units that take a decimal prefix (Kbyte, Mhz, Ginst ...).
_COUNTABLE = ("byte", "hz", "inst", "cycle", "warp", "sector", "request", "thread", "block",
              "register", "pass", "flop", "op", "transaction", "wavefront")
_PART = re.compile(r"^(?P<prefix>[kKMGTP]?)(?P<base>[A-Za-z]+)$")


@lru_cache(maxsize=512)
def si_factor(unit: str | None) -> float | None:
    """Factor to SI base units, ``1.0`` for dimensionless or unknown-but-plain units.

    Returns ``None`` for a unit string that cannot be understood (the caller rejects or keeps
    the raw value and says so).
    """
    if unit is None:
        return 1.0
    u = unit.strip()
    if u in ("", "%", "#"):
        return 1.0
    factor = 1.0
    parts = u.split("/")
    for i, part in enumerate(parts):
        f = _part_factor(part.strip())
        if f is None:
            return None
        factor = factor * f if i == 0 else factor / f
    return float(f"{factor:.15g}")  # 1/1e-9 is 999999999.9999999 in binary floating point


def _part_factor(part: str) -> float | None:
    """One ``/``-separated part: Nsight's spellings, time words, IEC bytes; ``None`` for an ambiguous
    byte abbreviation (docs/formulas.md#fleet-ingest, "Time scales")."""
    if part in ("1", "%", "#", ""):  # dimensionless parts: "1/cycle", "%/byte" (ncu's spellings)
        return 1.0
    if part in _TIME:
        return _TIME[part]
    if part in _BINARY:
        return _BINARY[part]
    if _AMBIGUOUS_BYTES.match(part):
        return None
    m = _PART.match(part)
    if not m:
        return None
    prefix, base = m.group("prefix"), m.group("base")
    if prefix and base.lower() in _COUNTABLE:
        return _PREFIX[prefix]
    # An unprefixed unit ("byte", "warp", "inst") or a plain word: no scaling.
    return 1.0


def unit_refusal(unit: str) -> str:
    """Why a value in ``unit`` (one :func:`si_factor` cannot scale) is not read: the words for a
    rejection line."""
    if any(_AMBIGUOUS_BYTES.match(p.strip()) for p in unit.split("/")):
        return f"unit {unit!r} is ambiguous (1000 or 1024 bytes?)"
    return f"unit {unit!r} is not one rooftop can scale"


def base_unit(unit: str | None) -> str:
    """The unit a value is in after :func:`si_factor` scaling (for display and lint)."""
    if not unit:
        return ""
    out = []
    for part in unit.strip().split("/"):
        p = part.strip()
        if p in _TIME:
            out.append("second")
            continue
        if p in _BINARY:
            out.append("byte")
            continue
        m = _PART.match(p)
        if m and m.group("base").lower() in _COUNTABLE and m.group("prefix"):
            out.append(m.group("base").lower())
        else:
            out.append(p.lower() if p.lower() == "hz" else p)
    return "/".join(out)


# --------------------------------------------------------------------------------------------------
# epoch time scales (docs/formulas.md#fleet-ingest, "Time scales")

EPOCH_YEARS = (1990, 2200)  # a DCGM/Prometheus sample time outside these years is not a time at all
_EPOCH_LO_S = 631_152_000  # 1990-01-01T00:00:00Z
_EPOCH_HI_S = 7_258_118_400  # 2200-01-01T00:00:00Z
# seconds per unit of each scale; the bands [lo, hi) / unit are 1000x apart and 11.5x wide: disjoint
EPOCH_SCALES: dict[str, float] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def epoch_scale(value: float) -> str | None:
    """The one scale (``s``, ``ms``, ``us``, ``ns``) in which ``value`` is an epoch time between
    :data:`EPOCH_YEARS`, or None when it is one in none of them. The bands do not overlap, so the
    scale is never ambiguous.

    >>> epoch_scale(1_700_000_000), epoch_scale(1_700_000_000_000), epoch_scale(253_402_300_799_000)
    ('s', 'ms', None)
    """
    for name, sec in EPOCH_SCALES.items():
        if _EPOCH_LO_S / sec <= value < _EPOCH_HI_S / sec:
            return name
    return None


def epoch_ms_array(values: Any, expected: str) -> tuple[Any, Any, dict[str, int]]:
    """Epoch times (a float or int numpy array) in any of :data:`EPOCH_SCALES` to integer
    milliseconds: ``(ms int64, bad bool mask, {scale: count rescaled})``; ``bad`` where a value is
    an epoch time between :data:`EPOCH_YEARS` in no scale (rejected by the caller, never stored
    as 1970 or year 57868). Values in the ``expected`` scale are not counted as rescaled."""
    import numpy as np

    v = np.asarray(values)
    ms = np.zeros(len(v), dtype="int64")
    done = np.zeros(len(v), dtype=bool)
    counts: dict[str, int] = {}
    with np.errstate(invalid="ignore"):
        for name, sec in EPOCH_SCALES.items():
            m = ~done & (v >= _EPOCH_LO_S / sec) & (v < _EPOCH_HI_S / sec)
            if m.any():
                if v.dtype.kind in "iu":  # exact integer arithmetic
                    ms[m] = v[m] * 1000 if name == "s" else v[m] // round(1e-3 / sec)
                else:
                    ms[m] = np.round(v[m] * (sec * 1000)).astype("int64")
                done |= m
                if name != expected:
                    counts[name] = int(m.sum())
    return ms, ~done, counts
