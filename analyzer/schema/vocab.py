"""The document's vocabularies: each defined once, as a Literal type; the tuple of its words is
derived from it (docs/architecture.md#the-document). ``unknown`` is a word of every label vocabulary."""

from __future__ import annotations

from typing import Literal, get_args

Kind = Literal["analyze", "fleet", "diff", "trend"]
KINDS: tuple[str, ...] = get_args(Kind)

# docs/formulas.md#kernel-labels (analyzer/kernels/classify.py)
KernelLabel = Literal["compute-bound", "memory-bound", "overhead-bound", "unknown"]
KERNEL_LABELS: tuple[str, ...] = get_args(KernelLabel)
KernelLimiter = Literal["tensor", "fp64", "fp32", "fp16", "dram", "l2", "l1",
                        "launch", "small-grid", "tail", "latency", "unknown",
                        # the pipe NCU's SpeedOfLight breakdown or HighPipeUtilization rule names
                        # (analyzer/metrics/units.py UNIT_WORDS)
                        "alu", "fma", "lsu", "xu", "issue", "tensor-hmma", "tensor-imma", "tensor-dmma",
                        "shared-pipe", "uniform", "cbu", "adu", "tex", "tma", "tmem", "idc"]
KERNEL_LIMITERS: tuple[str, ...] = get_args(KernelLimiter)

# docs/formulas.md#windows (analyzer/windows): ``unknown`` = no activity field in the window.
WindowLabel = Literal["idle", "compute-bound", "memory-bound", "overhead-bound", "mixed", "unknown"]
WINDOW_LABELS: tuple[str, ...] = get_args(WindowLabel)
WindowLimiter = Literal["tensor", "fp64", "fp32", "fp16", "dram", "launch", "host", "latency",
                        "none", "unknown"]
WINDOW_LIMITERS: tuple[str, ...] = get_args(WindowLimiter)

# docs/formulas.md#timelines (analyzer/timeline): where a step's wall time goes.
TimelineLabel = Literal["overhead-bound", "transfer-bound", "kernel-bound", "idle", "unknown"]
TIMELINE_LABELS: tuple[str, ...] = get_args(TimelineLabel)
TimelineLimiter = Literal["launch", "sync", "host", "transfer", "kernel", "none", "unknown"]
TIMELINE_LIMITERS: tuple[str, ...] = get_args(TimelineLimiter)

# docs/formulas.md#findings (high/medium/low; the others are NCU rule severities)
Severity = Literal["high", "medium", "low", "critical", "warning", "info"]
SEVERITIES: tuple[str, ...] = get_args(Severity)

DeviceSource = Literal["export", "builtin", "user"]
DEVICE_SOURCES: tuple[str, ...] = get_args(DeviceSource)

Side = Literal["baseline", "candidate"]
SIDES: tuple[str, ...] = get_args(Side)
LintSide = Literal["baseline", "candidate", "both"]
