"""What of an input's sample times rooftop assumed rather than read (docs/formulas.md#inputs,
"Assumed times"): said in ``analyze`` (lint ``times-assumed``), recorded by ``ingest`` in the
manifest entry and said again by ``fleet`` (lint ``fleet-times-assumed``)."""

from __future__ import annotations

from typing import Any


def times_assumed(fmt: str, meta: dict[str, Any]) -> str | None:
    """What of an input's sample times rooftop assumed rather than read (docs/formulas.md#inputs,
    "Assumed times"), in a sentence with the fix; None when the times are the data's own."""
    parts: list[str] = []
    fix: list[str] = []
    if meta.get("naive_timestamps"):
        parts.append("its timestamps carry no time zone (nvidia-smi prints the machine's local time) and are "
                     "read as UTC")
        fix.append("log in UTC (TZ=UTC nvidia-smi ...)")
    if meta.get("start_from") == "file mtime":
        parts.append("the file has no timestamps: its samples are placed to end at the file's modification time")
        fix.append("pass --start T")
    if meta.get("interval_assumed") or (meta.get("start_from") and str(meta.get("interval_from", "")).startswith(
            ("the default", "nvidia-smi dmon's default", "dcgmi dmon's default"))):
        iv = meta.get("interval_s")
        what = "scrapes" if fmt == "prometheus-text" else "samples"
        parts.append(f"{what} are taken {iv:g} s apart, rooftop's assumption"
                     + (" (dcgm-exporter's default collect interval), not in the data"
                        if fmt == "prometheus-text" else " (the tool's default), not in the data"))
        fix.append("pass --interval S")
    if not parts:
        return None
    return "; ".join(parts) + f". Times, windows and GPU-hours rest on that: {'; '.join(fix)} for real ones"
