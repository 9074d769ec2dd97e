"""The document's timeline entries (docs/formulas.md#timelines) and what the reports draw for
kernels: roofline panels with their ceilings and the family table (docs/formulas.md#report-view)."""

from __future__ import annotations

from typing import Literal, TypedDict

from rooftop.analyzer.schema.ops import StepOp
from rooftop.analyzer.schema.parts import Json, Num
from rooftop.analyzer.schema.vocab import (
    CeilingKey,
    CeilingKind,
    CeilingUnit,
    ComputeCeiling,
    DeviceSource,
    KernelLabel,
    KernelLimiter,
    MemoryLevel,
    TimelineLabel,
    TimelineLimiter,
    WindowLabel,
)

# docs/formulas.md#timelines: one entry per input and device (nsys stats: the timeline fields null)
Gaps = TypedDict("Gaps", {"count": int, "lt_10us": int, "10_to_100us": int, "gt_100us": int,
                          "le_5ns": int, "max_s": "float | None"})


class TopKernel(TypedDict):
    name: str
    count: int
    total_s: Num


class ShortKernels(TypedDict):
    count: int
    sum_s: Num
    busy_s: Num
    share_of_kernel_busy: float | None
    share_of_kernel_sum: float | None


class _TimelineBase(TypedDict):
    input: str
    device: str | None
    gpu_name: str | None
    kernels: int | None
    memcpy: int | None
    memset: int | None
    span_s: float | None
    kernel_sum_s: float | None
    kernel_busy_s: float | None
    gpu_busy_s: float | None
    idle_s: float | None
    idle_fraction: float | None
    gaps: Gaps | None
    short_kernels: ShortKernels | None
    top_kernels: list[TopKernel]
    label: TimelineLabel
    limiter: TimelineLimiter
    evidence: list[str]


class TimelineEntry(_TimelineBase, total=False):
    zero_or_negative_duration: int
    streams: list[str]
    nccl_kernels: int
    first_start_ns: int | None
    last_end_ns: int | None
    memcpy_sum_s: float | None
    memset_sum_s: float | None
    idle_by_cause_s: dict[str, float]
    host_idle_by_activity_s: dict[str, float]  # the host cause by what the host ran (category -> s)
    host_idle_top: list[HostIdleTop]
    communication: Communication  # NCCL kernels (docs/formulas.md#timeline-communication)
    copies: list[CopyKind]  # per copy/set kind (docs/formulas.md#timeline-copies)
    graph_replay_share: float | None  # GPU time launched by CUDA-graph launches (docs/formulas.md#timelines)
    optimizer_impl: Literal["fused", "foreach"]  # what the optimizer ranges show (docs/formulas.md#timeline-findings)
    section: int | None  # nsys stats console: the run within the file
    gap_histogram: GapHistogram
    busy_strip: BusyStrip | None


class CopyKind(TypedDict):
    kind: str
    op: Literal["memcpy", "memset"]
    direction: str | None
    memory: str | None
    count: int
    bytes: int | None
    bytes_missing: int
    time_s: Num
    busy_s: Num
    gb_s: float | None
    size_min: int | None
    size_median: float | None
    size_max: int | None
    pageable: bool
    async_calls: int


class Communication(TypedDict):
    kernels: int
    busy_s: Num
    overlapped_s: Num
    exposed_s: Num
    overlap_share: float | None
    exposed_by_op_s: dict[str, Num]


class HostIdleTop(TypedDict):
    category: str
    name: str
    seconds: Num


class GapHistogram(TypedDict):
    edges_s: list[float]  # lower edges: 0, 1 µs, 10 µs, ... 1 s (the last bin is open)
    count: list[int]
    idle_s: list[float]


class BusyStrip(TypedDict):
    start_ns: int
    bin_s: float
    busy_fraction: list[float]


class Step(TimelineEntry):
    """A ProfilerStep#N or top-level NVTX/record_function range on one device."""

    name: str
    kind: Literal["profiler-step", "iteration", "range"]
    wall_s: Num
    ops_attributed_s: Num | None  # a ProfilerStep of a trace with ops: its GPU time attributed to ops
    top_ops: list[StepOp] | None  # ...and its largest ops by that time (docs/formulas.md#op-categories)


# docs/formulas.md#report-view (analyzer/view.py): what the reports draw for kernels.


class RooflineCeiling(TypedDict):
    key: CeilingKey  # fp64 fp32 fp16 tensor dram l2 l1
    name: str
    kind: CeilingKind
    precision: ComputeCeiling | None
    level: MemoryLevel | None
    value: float
    min: float
    max: float
    unit: CeilingUnit
    source: DeviceSource | None
    entry: str  # "<device name>|<source>" of the devices[] entry it came from
    provenance: str | None
    kernels: int
    binding_kernels: int | None


class _RooflinePanelBase(TypedDict):
    id: str
    device: str
    kernels: int
    time_s: Num
    ceilings: list[RooflineCeiling]
    families: list[int]  # positions in the document's families
    placed: list[int]
    labelled: list[int]
    no_roof: list[MemoryLevel]  # levels with placed points but no bandwidth ceiling


class BandwidthLevel(TypedDict):
    level: MemoryLevel
    bytes_s: float  # achieved: Σ bytes / Σ time of the family
    pct: Num  # 100 x bytes_s / the panel's ceiling for the level; null without one


class BandwidthRow(TypedDict):
    family: int  # position in the document's families
    levels: list[BandwidthLevel]
    bound_s: Num  # max over levels of Σ bytes / ceiling: the time the bytes need at peak; null: a level lacks a ceiling


class RooflinePanel(_RooflinePanelBase, total=False):
    bandwidth: list[BandwidthRow]  # families with bytes and time but no FLOPs (not placed), largest first


class WindowPoint(TypedDict):
    gpu: str
    label: WindowLabel | None
    start: str | None
    intensity: float
    flops_s: float
    dram_bytes_s: float
    seconds: Num
    windows: int


class WindowPanel(TypedDict):
    id: str
    device: str
    model: str
    ceilings: list[RooflineCeiling]
    windows: list[WindowPoint]
    note: str


class RooflineView(TypedDict):
    panels: list[RooflinePanel]
    windows: list[WindowPanel]
    why_empty: str | None


class _FamilyRowBase(TypedDict):
    family: str
    label: KernelLabel
    limiter: KernelLimiter
    kernels: list[int]  # positions in the document's kernels
    launches: Num
    time_s: Num
    time_share: Num
    flops: Num
    bytes_l1: Num
    bytes_l2: Num
    bytes_dram: Num
    intensity_l1: Num
    intensity_l2: Num
    intensity_dram: Num
    achieved_flops_s: Num
    nvtx: list[str]
    panel: str
    placed: bool


class FamilyRow(_FamilyRowBase, total=False):
    key: Json
    name: Json
    device: Json
    grid: Json
    block: Json
    representative: int | None
    attainable_flops_s: Num
