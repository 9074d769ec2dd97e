"""Op findings (``docs/formulas.md#op-findings``): each op signature's time above its roofline bound,
ranked with the kernel and timeline findings. The saving is at most the op's time less the roofline's
lower bound on it (FLOPs at the compute roof, compulsory bytes at the memory roof): never more than
physics allows."""

from __future__ import annotations

from typing import Any

from rooftop.analyzer.findings.severity import severity
from rooftop.analyzer.ops.verdicts import ROOF_NAMES

_DTYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64",
           "c10::Float8_e4m3fn": "fp8e4m3", "c10::Float8_e5m2": "fp8e5m2", "long int": "int64", "int": "int32",
           "bool": "bool", "unsigned char": "uint8", "signed char": "int8"}
ADVICE = {
    ("memory-bound", "dram"): "cut its HBM bytes: fuse it with its producer or consumer (torch.compile), or keep "
                              "tensors in a narrower dtype",
    ("memory-bound", "l2"): "its data fits in L2: fuse it with the ops around it so its bytes stay on chip",
    ("memory-bound", "unknown"): "cut its bytes: fuse it with its producer or consumer (torch.compile)",
    ("compute-bound", "tensor"): "it runs at the tensor roof: only less work (FP8, smaller shapes) makes it faster",
    ("compute-bound", "fp32"): "it runs on the FP32 pipe: move it to tensor cores (TF32, BF16)",
    ("compute-bound", "fp64"): "it runs on the FP64 pipe: use the FP64 tensor cores or lower precision",
    ("overhead-bound", "small-grid"): "fewer blocks than SMs: batch these calls or use a split-K / stream-K kernel",
}
UNKNOWN_ADVICE = ("the trace cannot decide its bound: profile it with ncu (rooftop analyze TRACE PROFILE joins "
                  "the two op by op)")
COMM_UNKNOWN_ADVICE = ("communication ops (NCCL) are not decided by ncu: their message size in the trace decides "
                       "them (PyTorch's record_param_comms events, recorded with record_shapes=True), and the "
                       "exposed-communication finding says how much of their time stalls this GPU")


def dtype(op: dict[str, Any]) -> str:
    """The first tensor dtype of an op, short (``bf16``)."""
    for t in op.get("input_types") or []:
        if t in _DTYPES:
            return _DTYPES[t]
    return ""


def describe(op: dict[str, Any]) -> str:
    """``aten::mm M×N×K 1×25136×2880 bf16 (GEMV)``."""
    p = op.get("params") or {}
    gemv = op["category"] == "gemm" and (p.get("M") == 1 or p.get("N") == 1)
    parts = [op["name"], op.get("shape") or "", dtype(op), "(GEMV)" if gemv else ""]
    return " ".join(x for x in parts if x)


def verdict_text(op: dict[str, Any]) -> str:
    label, limiter, pct = op["label"], op["limiter"], op.get("pct_of_roof")
    roof = op.get("roof") or {}
    if op.get("verdict_source") == "ncu" and pct is None:
        return f"{label} ({'small grid' if limiter == 'small-grid' else limiter}) in ncu"
    if label == "memory-bound":
        return f"memory-bound at {100 * pct:.0f} % of {ROOF_NAMES.get(limiter, 'memory')} (compulsory bytes)" \
            if pct is not None else "memory-bound"
    if label == "compute-bound":
        return f"compute-bound at {100 * pct:.0f} % of the {ROOF_NAMES.get(roof.get('compute') or '', '')} roof" \
            if pct is not None else "compute-bound"
    if label == "overhead-bound":
        return f"overhead-bound ({'small grid' if limiter == 'small-grid' else limiter})"
    return "unknown"


GEMV_ADVICE = ("a GEMV reads its whole matrix for one vector: batch the GEMVs that share the matrix into one "
               "GEMM so each byte is used for many FLOPs")


NCU_ADVICE = {  # the limiter NCU names for an op's kernels (docs/formulas.md#op-ncu-verdicts)
    "compute-bound": "ncu finds its kernels bound by {limiter}: only fewer instructions per element make it "
                     "faster (cheaper math: fast intrinsics, a narrower dtype); "
                     "the kernel findings give NCU's detail",
    "memory-bound": "ncu finds its kernels bound by {limiter} bandwidth: cut the bytes it moves there (fuse it "
                    "with its producer or consumer, better locality, a narrower dtype)",
    "overhead-bound": "ncu finds its kernels near neither roof ({limiter}): raise the work per launch (larger "
                      "batches or shapes per call) and see NCU's warp stall reasons in the kernel findings",
}


SMALL_GRID_ADVICE = ("its grid cannot fill the SMs (under one wave): batch these calls into one launch over more "
                     "data (concatenate the tensors, torch._foreach ops) or fuse them (torch.compile)")


def launch_advice(op: dict[str, Any]) -> str:
    """A launch-bound op: its kernels by count and average length, and what removes launches. One kernel is
    told to merge with its neighbours (alone there is nothing to batch: "many short kernels" was written for
    a 1-call, 1-kernel aten::fill_)."""
    n = int(op.get("activities") or op.get("kernels") or 0)
    avg = f"{_t(op['kernel_time_s'] / n)}" if n and op.get("kernel_time_s") else ""
    if n == 1:
        return (f"one GPU activity{f' of {avg}' if avg else ''}, about its launch cost: fuse it into the op "
                "before or after it (torch.compile) or capture it with its neighbours in a CUDA graph")
    many = f"{n} GPU activities" if n else "its GPU activities"
    return (f"{many} over {op['calls']} call{'' if op['calls'] == 1 else 's'}{f' averaging {avg}' if avg else ''}, "
            "about their launch cost: capture them in a CUDA graph or fuse them (torch.compile)")


def advice_for(op: dict[str, Any]) -> str:
    """The recommendation for an op's label and limiter; a GEMM on the FP32 pipe is told to use tensor cores
    whatever ncu's limiter inside that pipe."""
    label, limiter = op["label"], op["limiter"]
    if (label, limiter) == ("overhead-bound", "launch"):
        return launch_advice(op)
    fp32_gemm = op["category"] in ("gemm", "conv") and (op.get("roof") or {}).get("compute") == "fp32"
    if label == "compute-bound" and fp32_gemm:
        return ADVICE[("compute-bound", "fp32")]
    if (label, limiter) == ("overhead-bound", "small-grid") and op["category"] not in ("gemm", "conv"):
        return SMALL_GRID_ADVICE
    if (label, limiter) in ADVICE:
        return ADVICE[(label, limiter)]
    if op.get("verdict_source") == "ncu" and label in NCU_ADVICE:
        return NCU_ADVICE[label].format(limiter=limiter)
    return UNKNOWN_ADVICE


def _undecided(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One finding per input and device for the op signatures the trace cannot decide (label ``unknown``
    with GPU time): their share of GPU time, the largest of them, and what decides them. No saving is
    claimed: without a limiter no fix is known (docs/formulas.md#op-findings)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for op in ops:
        if op["label"] == "unknown" and op.get("time_share") and op.get("kernel_time_s"):
            groups.setdefault((str(op["input"]), str(op["device"])), []).append(op)
    out = []
    for (path, device), group in sorted(groups.items()):
        group.sort(key=lambda o: (-o["kernel_time_s"], describe(o)))
        share = sum(float(o["time_share"]) for o in group)
        where = f"{path.rsplit('/', 1)[-1]} GPU {device}"
        top = ", ".join(f"{describe(o)} {_t(o['kernel_time_s'])}" for o in group[:3])
        comm = [o for o in group if o["category"] == "communication"]
        rec = "; ".join(([UNKNOWN_ADVICE] if len(comm) < len(group) else []) + ([COMM_UNKNOWN_ADVICE] if comm else []))
        out.append({
            "rank": 0, "rule": "op-unknown", "severity": severity(share, False, True),
            "title": (f"{len(group)} op signature(s) holding {100 * share:.1f} % of the GPU time are not decided by "
                      f"the trace ({where}); largest: {top}"),
            "kernels": [], "time_share": share, "est_saving_s": None, "recommendation": rec,
            "label": "unknown", "limiter": "unknown", "source": "ops",
            "evidence": [f"{describe(o)}: {o['evidence'][-1]}" for o in group[:5] if o.get("evidence")],
        })
    return out


def _t(seconds: float) -> str:
    """A GPU time in ms from 1 ms up, else in µs (``4.58 µs``, not ``0.00458 ms``)."""
    return f"{1e3 * seconds:.3g} ms" if seconds >= 1e-3 else f"{1e6 * seconds:.3g} µs"


def op_findings(ops: list[dict[str, Any]], top: int) -> list[dict[str, Any]]:
    """The ``top`` op signatures by time above their roofline bound, as findings; the undecided ones
    as one finding per input and device."""
    out = []
    for op in ops:
        # transfer-bound (host<->device copies only): its saving is the timeline's copy finding
        # (docs/formulas.md#op-findings), not claimed twice
        if op["label"] in ("unknown", "transfer-bound"):
            continue
        t, t_min = op["kernel_time_s"], op.get("min_time_s")
        if t_min is None or not t or op.get("time_share") is None:
            continue
        saving = max(0.0, t - t_min)
        if op.get("max_saving_s") is not None:  # small-grid: what filling the idle SMs recovers at most
            saving = min(saving, float(op["max_saving_s"]))
        if saving <= 0:
            continue
        share = op["time_share"]
        score = saving / (t / share) if share else 0.0
        advice = advice_for(op)
        if op["label"] == "memory-bound" and "(GEMV)" in describe(op):
            advice = f"{advice}; {GEMV_ADVICE}"
        where = f"{str(op['input']).rsplit('/', 1)[-1]} GPU {op['device']}"
        out.append({
            "rank": 0, "rule": f"op-{op['label']}", "severity": severity(score, True, op["label"] == "unknown"),
            "title": f"{describe(op)}: {verdict_text(op)}, {op['calls']} call{'' if op['calls'] == 1 else 's'}, {_t(t)} ({where})",
            "kernels": [], "time_share": share, "est_saving_s": round(saving, 9),
            "recommendation": advice, "label": op["label"], "limiter": op["limiter"], "source": "ops",
            "evidence": [*op["evidence"], f"at its roofline bound it would take {_t(t_min)}: up to "
                                          f"{_t(saving)} to gain"
                         + (" (what filling the idle SMs recovers at most)" if saving < t - t_min else "")],
        })
    out.sort(key=lambda f: (-f["est_saving_s"], f["title"]))
    return out[:top] + _undecided(ops)
