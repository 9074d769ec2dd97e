"""Durations and byte counts as the timeline's findings write them (``docs/formulas.md#timeline-findings``)."""

from __future__ import annotations


def duration(s: float) -> str:
    """Seconds as ``1.235 s``, ``12.345 ms`` or ``456.7 µs``."""
    return f"{s:.3f} s" if s >= 1 else f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def size(n: float) -> str:
    """Bytes as ``1.2 GB``, ``3.4 MB``, ``5.6 kB`` or ``78 B`` (decimal units, as nsys prints them)."""
    return (f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"
            if n >= 1e3 else f"{n:.0f} B")
