"""The document's vocabularies: each defined once, as a Literal type; the tuple of its words is
derived from it (docs/architecture.md#the-document). ``unknown`` is a word of every label vocabulary.

The analyzer and the reports import these words from here and nowhere else: a label, limiter,
severity or ceiling key written as a literal elsewhere is a second definition to keep in step.
"""

from __future__ import annotations

from typing import Literal, get_args

Kind = Literal["analyze", "fleet", "diff", "trend"]
KINDS: tuple[Kind, ...] = get_args(Kind)

# The three bound labels kernels and DCGM windows share (docs/formulas.md#kernel-labels, #windows).
BoundLabel = Literal["compute-bound", "memory-bound", "overhead-bound"]
BOUND_LABELS: tuple[BoundLabel, ...] = get_args(BoundLabel)

# docs/formulas.md#kernel-labels (analyzer/kernels/classify.py)
KernelLabel = Literal[BoundLabel, "unknown"]
KERNEL_LABELS: tuple[KernelLabel, ...] = get_args(KernelLabel)
KernelLimiter = Literal["tensor", "fp64", "fp32", "fp16", "dram", "l2", "l1",
                        "launch", "small-grid", "tail", "latency", "unknown",
                        # the pipe NCU's SpeedOfLight breakdown or HighPipeUtilization rule names
                        # (analyzer/metrics/units.py UNIT_WORDS)
                        "alu", "fma", "lsu", "xu", "issue", "tensor-hmma", "tensor-imma", "tensor-dmma",
                        "shared-pipe", "uniform", "cbu", "adu", "tex", "tma", "tmem", "idc"]
KERNEL_LIMITERS: tuple[KernelLimiter, ...] = get_args(KernelLimiter)

# docs/formulas.md#op-verdicts (analyzer/ops/verdicts.py): an op's words are a kernel's, and an op whose GPU
# work is only copies between host and device is transfer-bound on the host link (PCIe / NVLink-C2C).
OpLabel = Literal[KernelLabel, "transfer-bound"]
OP_LABELS: tuple[OpLabel, ...] = get_args(OpLabel)
OpLimiter = Literal[KernelLimiter, "host-link"]
OP_LIMITERS: tuple[OpLimiter, ...] = get_args(OpLimiter)

# docs/formulas.md#windows (analyzer/windows): ``unknown`` = no activity field in the window.
# This order is the fleet roll-up's (``groups[].labels`` keys, analyzer/fleet/rollup.py).
WindowLabel = Literal["idle", BoundLabel, "mixed", "unknown"]
WINDOW_LABELS: tuple[WindowLabel, ...] = get_args(WindowLabel)
# The order the reports list window labels in (share bars, tables, charts): the bound labels first,
# as the kernel labels, then mixed, idle and unknown.
WINDOW_LABELS_SHOWN: tuple[WindowLabel, ...] = (*BOUND_LABELS, "mixed", "idle", "unknown")
WindowLimiter = Literal["tensor", "fp64", "fp32", "fp16", "dram", "launch", "host", "latency",
                        "none", "unknown"]
WINDOW_LIMITERS: tuple[WindowLimiter, ...] = get_args(WindowLimiter)

# docs/formulas.md#timelines (analyzer/timeline): where a step's wall time goes.
TimelineLabel = Literal["overhead-bound", "transfer-bound", "kernel-bound", "idle", "unknown"]
TIMELINE_LABELS: tuple[TimelineLabel, ...] = get_args(TimelineLabel)
TimelineLimiter = Literal["launch", "sync", "host", "transfer", "kernel", "none", "unknown"]
TIMELINE_LIMITERS: tuple[TimelineLimiter, ...] = get_args(TimelineLimiter)

# docs/formulas.md#findings (high/medium/low; the others are NCU rule severities)
Severity = Literal["high", "medium", "low", "critical", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)

DeviceSource = Literal["export", "builtin", "user"]
DEVICE_SOURCES: tuple[DeviceSource, ...] = get_args(DeviceSource)

Side = Literal["baseline", "candidate"]
SIDES: tuple[Side, ...] = get_args(Side)
LintSide = Literal["baseline", "candidate", "both"]

# Device ceilings (``devices[].ceilings`` keys; analyzer/ceilings/devices.py). A key's kind is which
# vocabulary it is a word of: compute peaks in FLOP/s (OP/s for int8), bandwidths in bytes/s. The
# reports draw a ceiling by its kind and never guess it from the key's spelling.
ComputeCeiling = Literal["fp64", "fp32", "fp16", "tensor", "tf32", "bf16", "fp8", "int8", "fp64_tensor",
                         "tensor_fp16acc"]
COMPUTE_CEILINGS: tuple[ComputeCeiling, ...] = get_args(ComputeCeiling)
# Bandwidth ceilings: the memory levels, outermost first (as devices list them and charts draw them).
BandwidthCeiling = Literal["dram", "l2", "l1"]
BANDWIDTH_CEILINGS: tuple[BandwidthCeiling, ...] = get_args(BandwidthCeiling)
# The memory levels innermost first: the order of a kernel's ``bytes`` and ``intensity`` (the same words).
MemoryLevel = Literal["l1", "l2", "dram"]
MEMORY_LEVELS: tuple[MemoryLevel, ...] = get_args(MemoryLevel)
# The FLOP classes a kernel's work is counted in (``flops_by_class``) and their peaks.
FlopClass = Literal["fp64", "fp32", "fp16", "tensor"]
FLOP_CLASSES: tuple[FlopClass, ...] = get_args(FlopClass)
CeilingKey = Literal[ComputeCeiling, BandwidthCeiling]
CEILING_KEYS: tuple[CeilingKey, ...] = get_args(CeilingKey)
CeilingKind = Literal["compute", "bandwidth"]
CeilingUnit = Literal["FLOP/s", "B/s"]
CEILING_UNITS: dict[CeilingKind, CeilingUnit] = {"compute": "FLOP/s", "bandwidth": "B/s"}


def ceiling_kind(key: CeilingKey) -> CeilingKind:
    """``compute`` for a peak (FLOP/s), ``bandwidth`` for a memory level (B/s): which vocabulary
    ``key`` belongs to."""
    return "bandwidth" if key in BANDWIDTH_CEILINGS else "compute"
