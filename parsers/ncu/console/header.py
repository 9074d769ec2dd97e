"""Kernel header lines of Nsight Compute console logs (docs/formulas.md#inputs).

New layout (2023+): ``  name(args) (gx, gy, gz)x(bx, by, bz), Context 1, Stream 7, Device 0, CC 8.6``;
old (<=2022): ``  name(args), 2022-Dec-04 20:05:20, Context 1, Stream 7``; ``--print-summary
per-kernel``: ends in ``, Invocations N`` (or ``, N invocations``).
"""

from __future__ import annotations

import math
import re
from typing import Any

_HEADER_LEAD = re.compile(r"^(\s+)(\S.*?)\s*$")
_HEADER_KEY = re.compile(r", (Context|Stream|Device|CC|Invocations|Block Size|Grid Size) ([0-9][0-9.]*)$")
_HEADER_HINTS = (", Context ", ", Stream ", ", Invocations ", " invocations")
_HEADER_INVOC = re.compile(r", (\d+) invocations$")
_HEADER_TIME = re.compile(r", (\d{4}-[A-Za-z]{3}-\d{2} \d{2}:\d{2}:\d{2})$")
_HEADER_DIMS = re.compile(r" \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\)$")


def kernel_header(line: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, identity)`` when ``line`` is a kernel header, else ``None``."""
    if not any(key in line for key in _HEADER_HINTS):
        return None
    m = _HEADER_LEAD.match(line)
    if not m:
        return None
    text = m.group(2)
    keys: dict[str, str] = {}
    while True:
        k = _HEADER_KEY.search(text) or _HEADER_INVOC.search(text)
        if not k:
            break
        if k.re is _HEADER_INVOC:
            keys["Invocations"] = k.group(1)
        else:
            keys[k.group(1)] = k.group(2)
        text = text[: k.start()]
    if not ({"Context", "Stream", "Invocations"} & keys.keys()):
        return None
    ident: dict[str, Any] = {}
    t = _HEADER_TIME.search(text)
    if t:
        text = text[: t.start()]
    d = _HEADER_DIMS.search(text)
    if d:
        g = tuple(int(x) for x in d.groups()[:3])
        b = tuple(int(x) for x in d.groups()[3:])
        ident.update(grid_dim=f"({g[0]}, {g[1]}, {g[2]})", block_dim=f"({b[0]}, {b[1]}, {b[2]})",
                     grid=fits(math.prod(g)), block=fits(math.prod(b)))
        text = text[: d.start()]
    if not text.strip():
        return None
    for key, col in (("Context", "context"), ("Stream", "stream"), ("Device", "device_index"),
                     ("Invocations", "invocations"), ("Block Size", "block"), ("Grid Size", "grid")):
        if key in keys and ident.get(col) is None:
            try:
                ident[col] = as_int(float(keys[key]))
            except ValueError:
                ident[col] = None
    if "CC" in keys:
        ident["cc"] = keys["CC"]
    return text, ident


def as_int(v: float | None) -> int | None:
    """``v`` rounded, when finite and it fits (:func:`fits`), else ``None``."""
    return None if v is None or not math.isfinite(v) else fits(round(v))


def fits(v: int) -> int | None:
    """``v`` when it fits the Int64 identity columns, else ``None`` (a corrupt header)."""
    return v if -(2**63) <= v < 2**63 else None
