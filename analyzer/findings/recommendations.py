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
    ("overhead-bound", "launch"): (
        "Too short to amortize launch overhead: capture the launch sequence in a CUDA graph, fuse "
        "small kernels, and do more work per launch (fewer, larger launches)."),
    ("overhead-bound", "small-grid"): (
        "The grid is too small to fill the GPU: batch more work per launch (larger grids/batches), "
        "split the reduction dimension (split-K/stream-K), or run independent work concurrently "
        "on other streams."),
    ("overhead-bound", "tail"): (
        "A partial last wave idles most SMs: size the grid to a multiple of the blocks the GPU runs "
        "at once, use a persistent/stream-K kernel, or give each block more work."),
    ("overhead-bound", "latency"): (
        "Neither compute nor memory is near its peak (latency-bound): raise occupancy (fewer "
        "registers/shared memory per block), add instruction-level parallelism (independent work "
        "per thread, unrolling), and check warp stall reasons in `ncu --section WarpStateStats`."),
}
LABEL_DEFAULTS = {
    "memory-bound": RECOMMENDATIONS[("memory-bound", "dram")],
    "compute-bound": ("Compute binds: use tensor cores and the narrowest accurate dtype, align "
                      "dimensions to multiples of 8/16, or reduce the work algorithmically."),
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
    return LABEL_DEFAULTS[label]


def rule_id(label: str, limiter: str) -> str:
    """rooftop's own rule id for a label/limiter finding, e.g. ``roofline.memory.dram``."""
    kind = {"memory-bound": "memory", "compute-bound": "compute", "overhead-bound": "overhead"}.get(label, "unclassified")
    return f"roofline.{kind}.{limiter or 'unknown'}"
