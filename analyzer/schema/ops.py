"""The document's ``ops`` entries and ``ops_coverage`` (docs/formulas.md#ops, docs/contract.md): every
PyTorch op signature on the roofline from a profiler trace, and per input and device how much GPU time
was attributed to ops and modelled."""

from __future__ import annotations

from typing import Literal, TypedDict

from rooftop.analyzer.schema.parts import Json, Num
from rooftop.analyzer.schema.vocab import OpLabel, OpLimiter

OpCategory = Literal["gemm", "conv", "attention", "softmax", "norm", "reduce", "elementwise", "embedding", "copy",
                     "communication", "other"]


class OpRoof(TypedDict, total=False):
    compute: str | None  # the device peak key (bf16, tensor, fp8, tf32, fp32, ...); None for bytes-only ops
    peak_flops: Num | None
    level: Literal["dram", "l2"]
    bandwidth: Num | None
    llc_bytes: Num | None
    device: str


class OpEntry(TypedDict):
    input: str
    device: str
    gpu_name: str | None
    name: str
    category: OpCategory
    shape: str | None
    input_dims: Json
    input_types: Json
    concrete_inputs: Json
    calls: int
    kernels: int
    activities: int
    kernel_time_s: Num
    time_share: Num | None
    flops: Num | None  # null when unmodelled
    bytes_min: Num | None
    bytes_max: Num | None
    intensity: list[Num] | None  # [FLOPs / bytes_max, FLOPs / bytes_min]
    achieved_flops_per_s: Num | None
    achieved_bytes_per_s: list[Num] | None  # [bytes_min, bytes_max] / kernel_time_s
    label: OpLabel  # a kernel's words, and transfer-bound (docs/formulas.md#op-verdicts)
    limiter: OpLimiter
    pct_of_roof: Num | None
    roof: OpRoof
    min_time_s: Num | None
    max_saving_s: Num | None  # small-grid: the share of its time filling the idle SMs can recover at most
    evidence: list[str]
    verdict_source: Literal["trace", "ncu"]  # ncu: the verdict of its matched ncu launches
    formula: str | None  # the docs/formulas.md section of its formula
    unmodelled: str | None  # why it has no FLOPs / bytes
    params: dict[str, Json]
    top_kernels: list[str]


class Unattributed(TypedDict):
    reason: Literal["launch not in trace", "graph replay", "no enclosing op"]
    time_s: Num


class UnmodelledOp(TypedDict):
    name: str
    reason: str
    time_s: Num


class CategoryTime(TypedDict):
    category: OpCategory | Literal["unattributed"]
    time_s: Num
    share: Num | None  # of the device's GPU time


class StepOp(TypedDict):
    name: str
    category: OpCategory
    calls: int
    kernel_time_s: Num


class OpsCoverage(TypedDict):
    input: str
    device: str
    gpu_name: str | None
    roof_device: str | None
    gpu_time_s: Num
    launched_s: Num
    attributed_s: Num
    modelled_s: Num
    attributed: Num | None  # attributed / launched GPU time
    attributed_of_all: Num | None  # attributed / all GPU time
    modelled: Num | None  # modelled / attributed
    unattributed: list[Unattributed]
    unmodelled: list[UnmodelledOp]
    unmodelled_left_out: int
    signatures: int
    categories: list[CategoryTime]  # largest first, then "unattributed" (docs/formulas.md#op-categories)
    categories_status: Literal["known", "unknown"]  # known: >= 95 % of the GPU time attributed


class OpsNcuCategory(TypedDict):
    category: OpCategory
    calls: int
    model_flops: Num
    measured_flops: Num
    flops_error: Num | None  # model / measured - 1
    model_bytes_min: Num
    model_bytes_max: Num
    measured_dram_bytes: Num
    bytes_min_error: Num | None  # compulsory / measured DRAM - 1
    dram_in_interval: Num | None  # share of calls whose measured DRAM bytes lie in [min, max]


class OpsNcu(TypedDict):
    """A trace and an ncu profile of the same program: the op model against the counters
    (docs/formulas.md#op-ncu)."""

    input: str
    kernels_matched: int
    kernels_unmatched: int
    calls_compared: int
    categories: list[OpsNcuCategory]
    ops: list[dict[str, Json]]
