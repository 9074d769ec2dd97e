"""Device ceilings as the document gives them (``ceilings_of``), for the devices table and the diff
roofline. The analyze roofline itself is ``reports/svg_roofline.py`` (static SVG)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rooftop.analyzer.schema import (
    BANDWIDTH_CEILINGS,
    CEILING_UNITS,
    COMPUTE_CEILINGS,
    CeilingKey,
    Device,
    RooflineCeiling,
    ceiling_kind,
)


@dataclass(frozen=True)
class Ceiling:
    """One roof: a compute peak (FLOP/s) or a bandwidth (B/s) with where it came from."""

    key: CeilingKey
    name: str
    value: float
    source: str | None = None


def ceilings_of(device: Device) -> tuple[list[Ceiling], list[Ceiling]]:
    """(compute ceilings, bandwidth ceilings) of a ``devices[]`` entry, each with a finite positive
    value: a key's kind is the vocabulary it belongs to (``COMPUTE_CEILINGS``: FLOP/s, named by
    their key; ``BANDWIDTH_CEILINGS``: B/s, named ``DRAM``, ``L2``, ``L1``), its source the entry's
    ``sources[key]``. Compute ceilings highest first, bandwidths outermost level first."""
    values = device["ceilings"]
    sources = device.get("sources") or {}

    def known(key: CeilingKey) -> float | None:
        v = values.get(key)
        return float(v) if v is not None and math.isfinite(v) and v > 0 else None

    compute = [Ceiling(k, k, v, sources.get(k)) for k in values if k in COMPUTE_CEILINGS and (v := known(k))]
    bandwidth = [Ceiling(k, k.upper(), v, sources.get(k)) for k in BANDWIDTH_CEILINGS if (v := known(k))]
    return sorted(compute, key=lambda c: -c.value), bandwidth


def roofs_of(device: Device) -> list[RooflineCeiling]:
    """The device entry's ceilings (:func:`ceilings_of`) as roofs to draw: kind and unit by the
    key's vocabulary, the entry's value as median, minimum and maximum, its source as provenance."""
    compute, bandwidth = ceilings_of(device)
    return [{"key": c.key, "name": c.name, "kind": ceiling_kind(c.key),
             "precision": c.key if c.key in COMPUTE_CEILINGS else None,
             "level": c.key if c.key in BANDWIDTH_CEILINGS else None,
             "value": c.value, "min": c.value, "max": c.value, "unit": CEILING_UNITS[ceiling_kind(c.key)],
             "source": device["source"], "entry": f"{device['name']}|{device['source']}",
             "provenance": c.source, "kernels": 0, "binding_kernels": None}
            for c in (*compute, *bandwidth)]
