"""Nsight Compute unit strings to SI base units.

ncu scales units per row unless ``--print-units base`` was used (``Kbyte`` for one kernel, ``Mbyte``
for the next; ``nsecond``/``ns``, ``cycle/nsecond``, ``Ghz``). :func:`si_factor` returns the factor
that brings a value in that unit to the base unit (bytes, seconds, Hz, bytes/second, counts).
Byte prefixes are decimal (1 Kbyte = 1000 bytes), as in Nsight Compute.
"""

from __future__ import annotations

import re
from functools import lru_cache

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
         "s": 1.0, "sec": 1.0, "second": 1.0, "ps": 1e-12, "psecond": 1e-12}
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
    if part in _TIME:
        return _TIME[part]
    m = _PART.match(part)
    if not m:
        return None
    prefix, base = m.group("prefix"), m.group("base")
    if prefix and base.lower() in _COUNTABLE:
        return _PREFIX[prefix]
    # An unprefixed unit ("byte", "warp", "inst") or a plain word: no scaling.
    return 1.0


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
        m = _PART.match(p)
        if m and m.group("base").lower() in _COUNTABLE and m.group("prefix"):
            out.append(m.group("base").lower())
        else:
            out.append(p.lower() if p.lower() == "hz" else p)
    return "/".join(out)
