"""Recommendations from the evidence: the numbers that motivate the advice first, then the advice
those numbers select (docs/formulas.md#findings). A finding whose numbers are not in the export
gets the label's general advice, without a motivating sentence."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

STREAMING_FLOP_PER_BYTE = 1.0
"""Below this DRAM intensity a kernel uses each byte about once (elementwise 1/12-1/4, FP32 GEMV
1/2 FLOP/B): blocking cannot raise its intensity, only moving fewer bytes helps."""
NEAR_ROOF_PCT = 80.0
"""At or above this share of its roof (SOLBottleneck's 80 %) only less work or fewer bytes help."""

_LEVEL = {"dram": "DRAM", "l2": "L2", "l1": "L1"}
_PIPE = {"tensor": "tensor-core", "fp32": "FP32", "fp64": "FP64", "fp16": "FP16"}

STREAMING_ADVICE = (
    "It streams its data: each byte is used about once, so blocking cannot help and only moving fewer "
    "bytes does: fuse it with its producer or consumer, use a narrower data type where accuracy allows, "
    "or process several inputs per pass (e.g. batch GEMVs into a GEMM) so loaded data is reused.")
DATA_MOVEMENT_ADVICE = (
    "It moves data without floating-point work: only fewer bytes (fuse the copy or initialisation into its "
    "producer or consumer, a narrower data type, no copy at all) or a higher share of the bandwidth "
    "(coalesced, 128-bit accesses) make it faster.")
NEAR_MEMORY_ROOF = (
    "It already runs near this roof: only moving fewer {level} bytes per FLOP makes it faster (more reuse "
    "of each byte loaded, e.g. register or shared-memory tiling; fusion; a narrower data type), or less work.")
NEAR_COMPUTE_ROOF = (
    "It already runs near this roof: only less work (a better algorithm, fusion, no padded work) or a faster "
    "pipe for the same work (e.g. a narrower tensor-core data type where accuracy allows) makes it faster.")


def _num(row: Mapping[str, Any], key: str) -> float:
    try:
        v = float(row.get(key))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return v


def _true(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and bool(v)


def _g(x: float) -> str:
    return f"{x:.3g}"


def motivation(label: str, limiter: str, row: Mapping[str, Any], roof_pct: float) -> str:
    """One sentence of the numbers that motivate the advice ('' when the export lacks them)."""
    pct = f" at {roof_pct:.0f} % of its roof" if math.isfinite(roof_pct) else ""
    if label == "memory-bound" and limiter in _LEVEL:
        ai = _num(row, f"intensity_{limiter}")
        if math.isfinite(ai):
            return f"Why: {_LEVEL[limiter]} bandwidth binds{pct}, at {_g(ai)} FLOP/byte of {_LEVEL[limiter]} traffic."
        util = _num(row, f"bw_util_{limiter}")
        if _true(row.get("zero_flops")) and math.isfinite(util):
            return (f"Why: {_LEVEL[limiter]} bandwidth binds at {100 * util:.0f} % of its peak, and the kernel does "
                    "no floating-point work (0 FLOPs measured).")
    if label == "compute-bound" and limiter in _PIPE:
        ach = _num(row, "achieved_flops_s")
        if math.isfinite(ach):
            return f"Why: the {_PIPE[limiter]} pipe binds{pct}, at {_g(ach / 1e12)} TFLOP/s achieved."
    if label == "compute-bound":
        ppct, name = _num(row, "pipe_pct"), row.get("pipe_name")
        if math.isfinite(ppct) and isinstance(name, str) and name:
            return f"Why: the {name} is the busiest pipe, at {ppct:.0f} % of its peak (NCU)."
        sm = _num(row, "sol_compute_pct")
        if limiter == "unknown" and math.isfinite(sm):
            return f"Why: NCU's Compute (SM) throughput is {sm:.0f} % of peak."
    if label == "overhead-bound" and limiter == "launch":
        t, n = _num(row, "time_s"), _num(row, "launches")
        if math.isfinite(t) and n > 0:
            return f"Why: {n:.0f} launch(es) averaging {_g(t / n * 1e6)} µs each, the order of a launch's own cost."
    return ""


OCCUPANCY_HIGH_PCT = 80.0
"""Achieved occupancy (% of the SM's maximum warps) from which more warps cannot be the fix."""
_RAISE_OCC = "raise occupancy (fewer registers/shared memory per block), "
SPILL_ADVICE = (
    "Local memory traffic first: {ops:.0f} local loads/stores with {regs} registers per thread are register "
    "spills (or local arrays); they travel through L1, L2 and DRAM and make memory look busy. Cut register "
    "pressure (fewer live values, smaller per-thread tiles, __launch_bounds__ with a minimum of blocks per SM, "
    "no dynamically indexed local arrays) before anything else.")
REG_MAX_ADVICE = (
    "{regs} registers per thread, the maximum the hardware allows: the compiler likely spills to local memory; "
    "check the local-memory traffic (Memory Workload Analysis) and cut register pressure first.")


def occupancy_text(general: str, row: Mapping[str, Any]) -> str:
    """``general`` with its "raise occupancy" replaced by what NCU's occupancy numbers say: already high
    (nothing to raise), or limited by a named resource (docs/formulas.md#findings)."""
    if _RAISE_OCC not in general:
        return general
    ach, theo = _num(row, "occupancy_achieved_pct"), _num(row, "occupancy_theoretical_pct")
    lim = row.get("occupancy_limiter")
    if math.isfinite(ach) and ach >= OCCUPANCY_HIGH_PCT:
        return general.replace(_RAISE_OCC, "") + (f" Occupancy is already {ach:.0f} % of the maximum warps, so more "
                                                  "warps will not help.")
    if math.isfinite(theo) and theo < 100.0 and isinstance(lim, str) and lim:
        regs = _num(row, "registers_per_thread")
        by = f" ({regs:.0f} per thread)" if lim == "registers" and math.isfinite(regs) else ""
        return general.replace(_RAISE_OCC, f"raise occupancy (theoretical {theo:.0f} %, limited by {lim}{by}; "
                                           f"achieved {ach:.0f} %), " if math.isfinite(ach) else
                               f"raise occupancy (theoretical {theo:.0f} %, limited by {lim}{by}), ")
    return general


def spill_text(row: Mapping[str, Any]) -> str:
    """Register spilling named as such: local-memory traffic measured, or the register maximum reached."""
    ops, regs = _num(row, "local_memory_ops"), _num(row, "registers_per_thread")
    if math.isfinite(ops) and ops > 0:
        return SPILL_ADVICE.format(ops=ops, regs=f"{regs:.0f}" if math.isfinite(regs) else "an unknown number of")
    if math.isfinite(regs) and regs >= 255 and not math.isfinite(ops):
        return REG_MAX_ADVICE.format(regs=f"{regs:.0f}")
    return ""


def block_text(row: Mapping[str, Any]) -> str:
    """Blocks that leave warp lanes idle (not a multiple of 32 threads), named first."""
    block = _num(row, "block")
    if math.isfinite(block) and block > 0 and block % 32:
        used = int(block) % 32
        return (f"Blocks of {block:.0f} thread{'s' if block != 1 else ''} leave {32 - used} of the 32 lanes of their last warp idle: use a "
                "multiple of 32 threads per block (128-256 is a good start) first.")
    return ""


def advise(label: str, limiter: str, general: str, row: Mapping[str, Any], roof_pct: float) -> str:
    """The recommendation: the block size and register spilling where NCU's numbers show them, the
    motivating numbers, then the advice they select, else ``general``; "raise occupancy" only where
    occupancy can rise."""
    general = occupancy_text(general, row)
    spill = spill_text(row)
    # a grid that leaves SMs idle, or a launch shorter than its own cost, bounds the kernel before any
    # per-thread cost: there the spills come after the grid's advice (docs/formulas.md#findings)
    late = label == "overhead-bound" and limiter in ("small-grid", "launch")
    first = " ".join(t for t in (block_text(row), "" if late else spill) if t)
    text = _advise(label, limiter, general, row, roof_pct)
    text = f"{first} {text}" if first else text
    if late and spill:
        spill = spill.replace("Local memory traffic first: ", "Then the local memory traffic: ", 1).replace(
            " before anything else.", " next.", 1)
        return f"{text} {spill}"
    return text


def _advise(label: str, limiter: str, general: str, row: Mapping[str, Any], roof_pct: float) -> str:
    why = motivation(label, limiter, row, roof_pct)
    if not why:
        return general
    near = math.isfinite(roof_pct) and roof_pct >= NEAR_ROOF_PCT
    if label == "memory-bound" and _true(row.get("zero_flops")):
        return f"{why} {DATA_MOVEMENT_ADVICE}"
    if label == "memory-bound" and limiter == "dram" and _num(row, "intensity_dram") < STREAMING_FLOP_PER_BYTE:
        return f"{why} {STREAMING_ADVICE}"
    if near and label == "memory-bound":
        return f"{why} {NEAR_MEMORY_ROOF.format(level=_LEVEL[limiter])}"
    if near and label == "compute-bound" and (limiter in _PIPE or limiter.startswith("tensor")):
        return f"{why} {NEAR_COMPUTE_ROOF}"
    return f"{why} {general}"
