"""``rooftop devices``: the built-in device table drawn for the terminal's width, and each
number's source (docs/formulas.md#device-table)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rooftop.analyzer.schema import BANDWIDTH_CEILINGS
from rooftop.reports.terminal import fit, terminal_width

PEAKS = (("FP64", "fp64"), ("FP32", "fp32"), ("FP16", "fp16"), ("Tensor", "tensor"), ("TF32", "tf32"),
         ("FP8", "fp8"), ("INT8", "int8"))
NOTE = ("Peaks in TFLOP/s (INT8: TOP/s), dense; bandwidth in GB/s. Export ceilings "
        "(.peak_sustained x clock) replace these when present.")


def _fmt(value: float | None, scale: float) -> str:
    return "-" if value is None else f"{value / scale:,.1f}"


def render_table(devices: Sequence[Mapping[str, Any]], as_json: bool = False, width: int | None = None) -> str:
    """Every device's ceilings (its ``devices[]`` contract entry: name, ceilings in SI units,
    sources, sm_count, cc), then each number's source. The columns after the device name are
    packed into as few tables as fit ``width`` (default: the terminal's), each repeating the name."""
    if as_json:
        return json.dumps(list(devices), indent=2)
    cols = (terminal_width() if width is None else width) or 1 << 16  # not a terminal: one table
    columns: list[tuple[str, list[str]]] = [("CC", [str(d.get("cc") or "-") for d in devices]),
                                            ("SMs", [str(d.get("sm_count") or "-") for d in devices])]
    columns += [(head, [_fmt(d["ceilings"].get(k), 1e12) for d in devices]) for head, k in PEAKS]
    columns += [(k.upper(), [_fmt(d["ceilings"].get(k), 1e9) for d in devices]) for k in BANDWIDTH_CEILINGS]
    names = [str(d["name"]) for d in devices]
    name_w = max(len("device"), *(len(n) for n in names))
    tables: list[list[tuple[str, list[str]]]] = [[]]
    used = name_w
    for head, vals in columns:
        w = 1 + max(len(head), *(len(v) for v in vals))
        if tables[-1] and used + w > cols:
            tables.append([])
            used = name_w
        tables[-1].append((head, vals))
        used += w
    lines = fit(NOTE, 0 if cols == 1 << 16 else cols)
    for table in tables:
        widths = [max(len(h), *(len(v) for v in vals)) for h, vals in table]
        head = f"{'device':<{name_w}}" + "".join(f" {h:>{w}}" for (h, _), w in zip(table, widths, strict=True))
        lines += ["", head, "-" * len(head)]
        for i, name in enumerate(names):
            lines.append(f"{name:<{name_w}}" + "".join(f" {vals[i]:>{w}}"
                                                        for (_, vals), w in zip(table, widths, strict=True)))
    lines += ["", "Sources:"]
    for d in devices:
        lines.append(f"  {d['name']}:")
        for k, v in (d.get("sources") or {}).items():
            lines += fit(f"    {k}: {v}", 0 if cols == 1 << 16 else cols)
    return "\n".join(lines)
