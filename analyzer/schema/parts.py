"""The parts of the analysis document (docs/contract.md): inputs, devices, kernels, findings, DCGM
windows, lint and the diff verdict. ``_XBase`` holds the required keys, ``X`` adds the optional."""

from __future__ import annotations

from typing import Any, TypedDict

from rooftop.analyzer.schema.vocab import (
    CeilingKey,
    DeviceSource,
    KernelLabel,
    KernelLimiter,
    LintSide,
    Severity,
    Side,
    WindowLabel,
    WindowLimiter,
)

Num = float | None  # a finite number (an int is a number) or null
Json = Any  # any JSON value (loose: tighten where a key settles)


class Tool(TypedDict):
    name: str
    version: str


class Run(TypedDict):
    command: str
    created: str
    input_sha256: dict[str, str | None]


class _InputBase(TypedDict):
    path: str
    format: str
    records: int
    missing: int
    rejected: int


class Input(_InputBase, total=False):
    side: Side  # diff
    sha256: str  # fleet: from the dataset manifest
    ingested_at: str
    run: int  # trend: the run's position (0 = oldest)


class _RejectedBase(TypedDict):
    path: str
    line: int | None
    reason: str


class Rejected(_RejectedBase, total=False):
    side: Side


class _DeviceBase(TypedDict):
    name: str
    source: DeviceSource
    ceilings: dict[CeilingKey, Num]  # a key's kind (FLOP/s or B/s) is its vocabulary (vocab.ceiling_kind)


class Device(_DeviceBase, total=False):
    sources: dict[str, str]
    sm_count: int | None
    cc: str | None
    clock_mhz: Num
    serves: list[str]  # a table entry: the exported GPU names whose kernels take ceilings from it


class Sol(TypedDict):
    compute_pct: Num
    memory_pct: Num


class FlopsByClass(TypedDict):
    fp64: Num
    fp32: Num
    fp16: Num
    tensor: Num


class Levels(TypedDict):
    l1: Num
    l2: Num
    dram: Num


class NcuRule(TypedDict, total=False):
    rule: str
    title: str
    speedup_pct: Num
    speedup_type: str | None  # "global" | "local" (ncu_report speedup_type); docs/formulas.md#findings
    message: str  # NVIDIA's rule text where the export has it (quoted by findings)


class _KernelBase(TypedDict):
    index: int
    input: str
    id: str | None
    name: str
    family: str
    device: str | None
    duration_s: Num
    grid: int | None
    block: int | None
    sol: Sol
    flops: Num
    flops_by_class: FlopsByClass
    bytes: Levels
    intensity: Levels
    attainable_flops_s: Num
    achieved_flops_s: Num
    label: KernelLabel
    limiter: KernelLimiter
    evidence: list[str]
    ncu_rules: list[NcuRule]


class Kernel(_KernelBase, total=False):
    nvtx: str | None  # NVTX ranges "outer > inner" (default domain bare, others "domain:range"); older documents lack it
    extra: dict[str, Json]  # README "extensions": binding level, ridge, waves, SOL verdict, ...


class _FindingBase(TypedDict):
    rank: int
    rule: str
    severity: Severity
    title: str
    kernels: list[int]
    time_share: Num
    est_saving_s: Num
    recommendation: str


class Finding(_FindingBase, total=False):
    saving_bound_s: Num  # the physical bound est_saving_s respects (docs/formulas.md#findings); null: none stated
    saving_basis: str  # nvidia-preserving | nvidia-removing | nvidia-mixed | roofline-gap | none
    family: str
    label: str  # a kernel or a window label, by the finding's source
    limiter: str
    evidence: list[str]
    source: str
    group: str | dict[str, str | None]  # analyze: "host/gpu"; fleet: the --by key
    gpu_hours: Num
    windows: int
    metrics: dict[str, Num]
    side: Side


class _WindowBase(TypedDict):
    gpu: str
    start: str
    end: str
    label: WindowLabel
    limiter: WindowLimiter
    metrics: dict[str, Num]


class Window(_WindowBase, total=False):
    host: str | None
    model: str | None
    namespace: str | None
    pod: str | None
    container: str | None
    job: str | None
    device: str | None
    uuid: str | None
    pci_bus_id: str | None  # docs/formulas.md#windows "GPU identity": NVML's form, 00000000:3B:00.0
    mig: str | None
    mig_profile: str | None
    n_samples: int
    est_flops_s: Num
    est_dram_bytes_s: Num
    est_intensity: Num
    est_ofu: Num  # docs/formulas.md#ofu: null where a field it needs is absent
    evidence: list[str]
    # docs/formulas.md#windows: the one GPU key, the window length, the time its samples span
    gpu_key: str
    window_s: Num
    covered_s: Num
    interval_s: Num


class _LintBase(TypedDict):
    code: str
    message: str
    kernels: list[int]


class Lint(_LintBase, total=False):
    side: LintSide
    run: int  # trend: the run it is about


class _VerdictBase(TypedDict):
    fail: bool
    threshold_pct: Num
    regressions: list[dict[str, Json]]
    improvements: list[dict[str, Json]]
    reason: str


class Verdict(_VerdictBase, total=False):
    alpha: Num
    classify_pct: Num
    summary: str
    test: str
    gate: str  # docs/formulas.md#diff: "total" or "matched"
    min_effect_pct: Num  # docs/formulas.md#diff: the effect floor (--min-effect)
    effect_from: str  # which option set the effect threshold classify_pct: "min-effect" or "fail-on"
    decided_by: dict[str, int]  # series per deciding condition (analyzer/diff/gate.py DECIDED)
    throughput_by: str | None  # diff of two timelines: "step", "span" (same work) or None (docs/formulas.md#timeline-diff)
    span_regressions: list[dict[str, Json]]  # ... devices whose span for the same work grew beyond the threshold
