"""The advice text per label and limiter, and the rule id a finding carries (docs/formulas.md#findings)."""

from __future__ import annotations

RECOMMENDATIONS: dict[tuple[str, str], str] = {
    ("memory-bound", "dram"): (
        "Cut DRAM traffic: fuse with the producer/consumer kernel so intermediates are not "
        "materialized in global memory, store data in a lower precision (BF16/FP8) where accuracy "
        "allows, and batch or tile the work so each byte loaded is reused (higher arithmetic intensity)."),
    ("memory-bound", "l2"): (
        "L2 bandwidth binds: tile so the working set stays in L1/shared memory, coalesce accesses "
        "(consecutive threads, consecutive addresses), drop redundant loads, and fuse passes over "
        "the same data."),
    ("memory-bound", "l1"): (
        "L1/shared-memory bandwidth binds: use 128-bit vectorized loads, avoid shared-memory bank "
        "conflicts (padding/swizzling), keep reused values in registers, and cut uncoalesced or "
        "replayed accesses."),
    ("memory-bound", "latency"): (
        "Memory latency, not bandwidth, limits: raise occupancy or in-flight loads per thread "
        "(unrolling, async copies/cp.async/TMA, prefetching) so more requests overlap."),
    ("compute-bound", "tensor"): (
        "Already on tensor cores: use the narrowest accurate dtype (BF16/FP8), keep GEMM dimensions "
        "multiples of 8/16 (alignment), pick a better-tuned kernel or tile shape, or reduce the "
        "work algorithmically (fusion, sparsity)."),
    ("compute-bound", "fp32"): (
        "FP32 CUDA-core math dominates: move it onto tensor cores (TF32/BF16/FP16 via cuBLAS/"
        "cuDNN/CUTLASS or mma), align dimensions to multiples of 8/16, and use fast-math "
        "intrinsics where accuracy allows."),
    ("compute-bound", "fp64"): (
        "FP64 dominates: check whether double precision is needed (FP32 or mixed precision is much "
        "faster on most GPUs); use DMMA tensor-core paths (cuBLAS) where FP64 is required."),
    ("compute-bound", "fp16"): (
        "FP16 CUDA-core math dominates: use tensor cores (HMMA via cuBLAS/CUTLASS) instead of "
        "scalar half arithmetic, with dimensions aligned to multiples of 8."),
    ("compute-bound", "alu"): (
        "The ALU pipe (integer and logic instructions: index arithmetic, comparisons, bit operations, random "
        "number generation) binds: cut integer work per element (hoist loop-invariant index arithmetic, 32-bit "
        "instead of 64-bit indices, fewer bit-by-bit loops, process several elements per thread). Tensor cores "
        "and narrower float types do not run this work."),
    ("compute-bound", "fma"): (
        "The FMA pipe binds: it runs FP32 adds, multiplies and FMAs and integer multiply-adds (IMAD: index and "
        "address arithmetic). For FP32 matrix math, tensor cores (TF32/BF16 via cuBLAS/CUTLASS) are the faster "
        "pipe; for integer address arithmetic, hoist loop-invariant index computation, use 32-bit indices and "
        "strength-reduce multiplications."),
    ("compute-bound", "lsu"): (
        "The LSU pipe (load/store instruction issue) binds: issue fewer, wider memory instructions (128-bit "
        "vectorized loads such as float4), load each value once into registers or shared memory and reuse it, "
        "and drop redundant loads."),
    ("compute-bound", "xu"): (
        "The XU pipe (transcendentals such as sin, exp, rsqrt; conversions; integer division) binds: use the "
        "fast intrinsics (__expf, __sinf, __frsqrt_rn) where accuracy allows, hoist or tabulate repeated "
        "transcendentals, and avoid int/float conversions and integer division or modulo in inner loops."),
    ("compute-bound", "issue"): (
        "Instruction issue binds (the schedulers issue nearly every cycle): cut instructions per element: "
        "vectorized memory accesses, unrolled loops without per-iteration overhead, loop-invariant work "
        "hoisted, more work per instruction."),
    ("compute-bound", "shared-pipe"): (
        "The shared pipe (FP64 and tensor instructions on this GPU) binds: check whether FP64 is needed and "
        "whether the tensor work can use a narrower type."),
    ("overhead-bound", "launch"): (
        "Too short to amortize launch overhead: capture the launch sequence in a CUDA graph, fuse "
        "small kernels, and do more work per launch (fewer, larger launches)."),
    ("overhead-bound", "small-grid"): (
        "The grid is too small to fill the GPU: batch more work per launch (larger grids/batches) or run "
        "independent work concurrently on other streams; where the work has an independent reduction "
        "dimension (a GEMM's K), split it across blocks (split-K/stream-K)."),
    ("overhead-bound", "tail"): (
        "A partial last wave idles most SMs: size the grid to a multiple of the blocks the GPU runs "
        "at once, use a persistent/stream-K kernel, or give each block more work."),
    ("overhead-bound", "latency"): (
        "Neither compute nor memory is near its peak (latency-bound): raise occupancy (fewer "
        "registers/shared memory per block), add instruction-level parallelism (independent work "
        "per thread, unrolling), and check warp stall reasons in `ncu --section WarpStateStats`."),
}
for _t in ("tensor-hmma", "tensor-imma", "tensor-dmma"):
    RECOMMENDATIONS[("compute-bound", _t)] = RECOMMENDATIONS[("compute-bound", "tensor")]
COMPUTE_UNKNOWN_PIPE = (
    "Compute (SM) binds, but the export does not say which pipe: collect --section ComputeWorkloadAnalysis "
    "(or --set full, whose SpeedOfLight breakdown names the busiest pipe) before choosing a fix; integer, "
    "load/store and transcendental work need different fixes than floating-point math.")
LABEL_DEFAULTS = {
    "memory-bound": RECOMMENDATIONS[("memory-bound", "dram")],
    "compute-bound": ("Compute binds on the {pipe}: see NCU's Compute Workload Analysis for the instructions it "
                      "runs, cut them per element, or reduce the work algorithmically."),
    "overhead-bound": ("Launch/occupancy overhead dominates: CUDA graphs, kernel fusion, larger "
                       "grids/batches and fewer launches."),
}
LATENCY = RECOMMENDATIONS[("overhead-bound", "latency")]
UNKNOWN = ("Metrics are insufficient to classify this kernel: re-profile with `ncu --set full` (or at "
           "least the SpeedOfLight, MemoryWorkloadAnalysis and roofline sections) to see what binds.")


def recommendation(label: str, limiter: str) -> str:
    """The concrete advice for a label/limiter pair."""
    if (label, limiter) in RECOMMENDATIONS:
        return RECOMMENDATIONS[(label, limiter)]
    if limiter == "latency":
        return LATENCY
    if label == "unknown" or label not in LABEL_DEFAULTS:
        return UNKNOWN
    if label == "compute-bound":
        if limiter in ("unknown", ""):
            return COMPUTE_UNKNOWN_PIPE
        return LABEL_DEFAULTS[label].format(pipe=f"{limiter} pipe")
    return LABEL_DEFAULTS[label]


def rule_id(label: str, limiter: str) -> str:
    """rooftop's own rule id for a label/limiter finding, e.g. ``roofline.memory.dram``."""
    kind = {"memory-bound": "memory", "compute-bound": "compute", "overhead-bound": "overhead"}.get(label, "unclassified")
    return f"roofline.{kind}.{limiter or 'unknown'}"
