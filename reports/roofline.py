"""Device ceilings as the document gives them (``ceilings_of``), for the devices table and the diff
roofline. The analyze roofline itself is ``reports/svg_roofline.py`` (static SVG)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ceiling:
    """One roof: a compute peak (FLOP/s) or a bandwidth (B/s) with where it came from."""

    name: str
    value: float
    source: str | None = None


_BW_LEVELS = (("dram", ("dram", "hbm", "fb")), ("l2", ("l2", "lts")), ("l1", ("l1", "shared", "smem")))


_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8", "tensor", "half",
               "single", "double")


def _leaves(obj: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(obj, Mapping):
        if "value" in obj and not isinstance(obj.get("value"), Mapping):
            return [(path, obj)]
        out: list[tuple[tuple[str, ...], Any]] = []
        for k, v in obj.items():
            out += _leaves(v, (*path, str(k)))
        return out
    return [(path, obj)]


def ceilings_of(device: Mapping[str, Any]) -> tuple[list[Ceiling], list[Ceiling]]:
    """(compute ceilings, bandwidth ceilings) from a contract device entry.

    Tolerates flat (``{"fp32_flops_s": 1e13, "dram_bytes_s": 2e12}``) and nested
    (``{"flops_s": {"fp32": ..}, "bytes_s": {"dram": ..}}``) shapes; a leaf may be a number or
    ``{"value": x, "source": "..."}``. Bandwidth names are normalised to ``dram``, ``l2``, ``l1``.
    """
    raw = device.get("ceilings") or {}
    sources = device.get("sources") if isinstance(device.get("sources"), Mapping) else {}
    compute: dict[str, Ceiling] = {}
    bandwidth: dict[str, Ceiling] = {}
    for path, leaf in _leaves(raw):
        src = None
        value = leaf
        if isinstance(leaf, Mapping):
            value, src = leaf.get("value"), leaf.get("source")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        v = float(value)
        if not math.isfinite(v) or v <= 0:
            continue
        key = ".".join(path)
        low = key.lower()
        src = src or (sources.get(key) if isinstance(sources, Mapping) else None)
        tokens = low.replace(".", "_").replace("-", "_").split("_")
        if "flop" in low or "ops" in tokens or any(p in tokens for p in _PRECISIONS):
            if any(t in tokens for t in ("count", "clock", "hz", "sms")):
                continue
            name = "_".join(t for t in tokens if t not in ("flops", "flop", "s", "peak", "ops", "per",
                                                          "second", "compute")) or "compute"
            compute.setdefault(name, Ceiling(name, v, src))
            continue
        for level, words in _BW_LEVELS:
            if any(w in tokens for w in words) and not any(t in tokens for t in ("size", "capacity", "mb", "kb")):
                bandwidth.setdefault(level, Ceiling(level.upper(), v, src))
                break
    order = {lvl: i for i, (lvl, _) in enumerate(_BW_LEVELS)}
    bw = sorted(bandwidth.items(), key=lambda kv: order[kv[0]])
    return (sorted(compute.values(), key=lambda c: -c.value), [c for _, c in bw])
