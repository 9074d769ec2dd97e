"""The roofs a kernel was judged against, resolved from the document (docs/formulas.md#ceilings).

A contract kernel carries its ceilings as a reference into ``devices[]`` (``extra.ceilings``:
``"<name>|<source>; <keys>=<name>|<source>; <keys>=none"``) plus, in ``extra``, only the values
that differ from that entry (``peak_<class>``, ``bw_<level>``: clock-scaled or per-kernel export
ceilings). :func:`kernel_roofs` expands that back into the list a chart draws, each roof with its
kind, class or level, value, source (``export`` / ``builtin`` / ``user``), device entry and the
entry's source text. Works on a freshly built document and on a saved one alike.
"""

from __future__ import annotations

import math
from typing import Any

from rooftop.analyzer.schema.vocab import FLOP_CLASSES, MEMORY_LEVELS

PEAK_CLASSES = FLOP_CLASSES
LEVELS = MEMORY_LEVELS


def _refs(ref: str | None) -> dict[str, tuple[str, str] | None]:
    """``extra.ceilings`` -> key -> (device name, source) or ``None`` (not known)."""
    out: dict[str, tuple[str, str] | None] = {}
    if not ref:
        return {k: None for k in (*PEAK_CLASSES, *LEVELS)}
    head, *rest = ref.split("; ")
    name, _, src = head.rpartition("|")
    for k in (*PEAK_CLASSES, *LEVELS):
        out[k] = (name, src)
    for part in rest:
        keys, _, who = part.partition("=")
        if who == "none":
            target = None
        else:
            n, _, s = who.rpartition("|")
            target = (n, s)
        for key in keys.split(","):
            out[key] = target
    return out


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def kernel_roofs(kernel: dict[str, Any], devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every roof used for ``kernel``: the compute roof of each FLOP class it ran (the FP32 roof when it
    ran none, the reference of a copy kernel) and every memory level's bandwidth roof that is known.

    Each item: ``{"kind": "compute"|"bandwidth", "class"|"level": str, "value": float, "source": str,
    "device": str, "detail": str}``; ceilings not known are left out.
    """
    extra = kernel.get("extra") or {}
    refs = _refs(extra.get("ceilings"))
    entries = {(str(d.get("name")), str(d.get("source"))): d for d in devices}
    flops = kernel.get("flops_by_class") or {}
    classes = [c for c in PEAK_CLASSES if (_num(flops.get(c)) or 0.0) > 0] or ["fp32"]
    out: list[dict[str, Any]] = []
    for kind, key_name, keys, prefix in (("compute", "class", classes, "peak_"), ("bandwidth", "level", LEVELS, "bw_")):
        for k in keys:
            who = refs.get(k)
            if who is None:
                continue
            entry = entries.get(who) or {}
            value = _num(extra.get(prefix + k))
            if value is None:
                value = _num((entry.get("ceilings") or {}).get(k))
            if value is None:
                continue
            out.append({"kind": kind, key_name: k, "value": value, "source": who[1], "device": who[0],
                        "detail": str((entry.get("sources") or {}).get(k, ""))})
    return out
