"""Kernel duration, unit clocks and cycles, counter totals, and FLOPs per class (FP64/FP32/FP16 from
SASS thread-instruction counts, tensor from ``sm__ops_path_tensor_*``; docs/research/formulas.md
§1.1-1.6, §2.2-2.3)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import column, first_of, nan_series, none_series

# class -> [(SASS op, FLOPs per thread instruction)]  (docs/research/formulas.md §1.2-1.4)
FP_TERMS: dict[str, tuple[tuple[str, float], ...]] = {
    "fp64": (("dadd", 1.0), ("dmul", 1.0), ("dfma", 2.0)),
    "fp32": (("fadd", 1.0), ("fmul", 1.0), ("ffma", 2.0)),
    "fp16": (("hadd", 2.0), ("hmul", 2.0), ("hfma", 4.0)),
}
VOLTA_TENSOR_FLOPS_PER_INST = 512.0  # docs/research/formulas.md §2.3: NERSC, V100 only

_TENSOR_RE = re.compile(r"^sm__ops_path_tensor_(?P<v>(?!op_)[a-z0-9_]+?)\.sum(?P<s>\.per_cycle_elapsed|\.per_second)?$")


# -- time and clocks ---------------------------------------------------------------------------

def duration(df: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Kernel duration in seconds: ``gpu__time_duration.sum`` (legacy ``gpu__time_duration``), else
    NERSC's ``sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second`` (docs/research/formulas.md §2.2)."""
    out, src = first_of(df, ["duration_s", "gpu__time_duration.sum", "gpu__time_duration"])
    src = src.replace({"duration_s": "gpu__time_duration.sum"})
    for unit in ("sm", "smsp", "gpc"):
        cyc = column(df, f"{unit}__cycles_elapsed.avg")
        if unit == "gpc" and cyc.isna().all():
            cyc = column(df, "gpc__cycles_elapsed.max")
        hz = column(df, f"{unit}__cycles_elapsed.avg.per_second")
        v = (cyc / hz).where(hz > 0)
        take = out.isna() & v.notna()
        if take.any():
            out = out.mask(take, v)
            src = src.mask(take, f"{unit}__cycles_elapsed / {unit}__cycles_elapsed.avg.per_second")
    return out, src


CLOCK_ALIASES: dict[str, tuple[str, ...]] = {
    "sm": ("sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second",
           "smsp__cycles_elapsed.avg.per_second"),
    "smsp": ("smsp__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second",
             "gpc__cycles_elapsed.avg.per_second"),
    "dram": ("dram__cycles_elapsed.avg.per_second", "dram__frequency"),
    "lts": ("lts__cycles_elapsed.avg.per_second",),
    "l1tex": ("l1tex__cycles_elapsed.avg.per_second",),
}


def clock_hz(df: pd.DataFrame, unit: str) -> tuple[pd.Series, pd.Series]:
    """Measured clock (cycles/s) of a unit over the kernel (the ceiling multiplier, docs/research/formulas.md §1.1)."""
    return first_of(df, CLOCK_ALIASES[unit])


def unit_cycles(df: pd.DataFrame, unit: str, dur: pd.Series) -> pd.Series:
    """Elapsed cycles of a unit: ``<unit>__cycles_elapsed.avg``, else cycles/s x duration."""
    names = [f"{unit}__cycles_elapsed.avg"]
    if unit in ("sm", "smsp"):
        names.append(f"{'smsp' if unit == 'sm' else 'sm'}__cycles_elapsed.avg")
    cyc, _ = first_of(df, names)
    if unit in CLOCK_ALIASES:
        hz, _ = clock_hz(df, unit)
        cyc = cyc.fillna(hz * dur)
    return cyc


# -- counts and FLOPs --------------------------------------------------------------------------

def counter(df: pd.DataFrame, base: str, dur: pd.Series, prefixes: Sequence[str] = ("sm", "smsp")
            ) -> tuple[pd.Series, pd.Series]:
    """Total count of an ``sm__``/``smsp__`` counter from ``.sum``, ``.sum.per_cycle_elapsed`` or
    ``.sum.per_second`` (docs/research/formulas.md §1.1: per-cycle-elapsed x cycles elapsed = count)."""
    out, src = first_of(df, [f"{p}__{base}.sum" for p in prefixes])
    for p in prefixes:
        for suffix, mult in ((".sum.per_cycle_elapsed", None), (".sum.per_second", dur)):
            name = f"{p}__{base}{suffix}"
            if name not in df.columns:
                continue
            scale = unit_cycles(df, p, dur) if mult is None else mult
            v = column(df, name) * scale
            take = out.isna() & v.notna()
            if take.any():
                out = out.mask(take, v)
                src = src.mask(take, name)
    return out, src


def fp_flops(df: pd.DataFrame, dur: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
    """FP64/FP32/FP16 FLOPs per kernel (docs/research/formulas.md §1.2-1.4, ncu factors).

    Returns (flops, missing): ``flops[cls]`` is NaN when none of the class's counters was
    collected; ``missing[cls]`` names the terms of a partially collected class (counted as
    absent, and linted), else ``None``.
    """
    flops, missing = pd.DataFrame(index=df.index), pd.DataFrame(index=df.index)
    for cls, terms in FP_TERMS.items():
        total, n_present, absent = nan_series(df).fillna(0.0), pd.Series(0, index=df.index), []
        for op, factor in terms:
            v, _ = counter(df, f"sass_thread_inst_executed_op_{op}_pred_on", dur)
            total = total + v.fillna(0.0) * factor
            n_present = n_present + v.notna().astype(int)
            absent.append((op, v.isna()))
        flops[cls] = total.where(n_present > 0)
        miss = none_series(df)
        partial = (n_present > 0) & (n_present < len(terms))
        if partial.any():
            names = pd.Series("", index=df.index, dtype="object")
            for op, isna in absent:
                names = names.mask(isna, names + op + " ")
            miss = miss.mask(partial, names.str.strip())
        missing[cls] = miss
    return flops, missing


def tensor_variant_columns(columns: Sequence[str]) -> dict[str, dict[str, str]]:
    """Aggregate tensor variants in the export: variant -> {suffix: column}.

    ``op_*`` per-instruction variants are excluded (they break the aggregate down; adding them
    would count every op twice, docs/research/formulas.md §1.6). A variant without a sparsity suffix is dropped
    when its ``_sparsity_on/off`` split is also present.
    """
    found: dict[str, dict[str, str]] = {}
    for c in columns:
        m = _TENSOR_RE.match(c)
        if m:
            found.setdefault(m.group("v"), {})[".sum" + (m.group("s") or "")] = c
    for v in list(found):
        if any(o.startswith(v + "_sparsity_") for o in found if o != v):
            del found[v]
    return found


def tensor_ops(df: pd.DataFrame, dur: pd.Series) -> pd.DataFrame:
    """Tensor ops (= FLOPs, 2 per MAC) per aggregate variant; one column per variant."""
    out = pd.DataFrame(index=df.index)
    cycles = None
    for variant, cols in tensor_variant_columns(list(df.columns)).items():
        v = column(df, cols[".sum"]) if ".sum" in cols else nan_series(df)
        if ".sum.per_cycle_elapsed" in cols:
            cycles = unit_cycles(df, "sm", dur) if cycles is None else cycles
            v = v.fillna(column(df, cols[".sum.per_cycle_elapsed"]) * cycles)
        if ".sum.per_second" in cols:
            v = v.fillna(column(df, cols[".sum.per_second"]) * dur)
        out[variant] = v
    return out


# Tensor instruction shapes (mma.sync m·n·k) as cuBLAS and CUTLASS kernel names spell them
# (``ampere_fp16_s16816gemm``, ``cutlass_75_tensorop_i8816gemm``, ``volta_h884gemm``): shape ->
# (M, N, K, pipe), and the architectures (CC major.minor prefixes) that execute it as one warp
# instruction of that shape (PTX ISA, "Matrix shape" tables of mma.sync; docs/formulas.md#work-bytes).
# FLOPs per warp instruction = 2·M·N·K (one multiply-add = 2 FLOP); e.g. HMMA m16n8k16 = 4096.
TENSOR_SHAPES: dict[str, tuple[int, int, int, str, tuple[str, ...]]] = {
    "884": (8, 8, 4, "hmma", ("7.0", "7.2")),
    "1688": (16, 8, 8, "hmma", ("7.5", "8.", "9.", "10.", "12.")),
    "1684": (16, 8, 4, "hmma", ("8.", "9.", "10.", "12.")),  # TF32
    "16816": (16, 8, 16, "hmma", ("8.", "9.", "10.", "12.")),
    "8816": (8, 8, 16, "imma", ("7.2", "7.5", "8.", "9.", "10.", "12.")),
    "8832": (8, 8, 32, "imma", ("7.5", "8.")),  # INT4
    "16832": (16, 8, 32, "imma", ("8.", "9.", "10.", "12.")),
}
_SHAPE_RE = re.compile(r"(?<![0-9])([hsid])?(" + "|".join(sorted(TENSOR_SHAPES, key=len, reverse=True)) +
                       r")(?=gemm|conv|fprop|dgrad|wgrad)", re.IGNORECASE)


def tensor_shape(name: str | None, cc: float) -> tuple[str, float, str] | None:
    """(shape, FLOPs per warp instruction, pipe) from a cuBLAS/CUTLASS kernel name, where the name's
    shape runs as one warp instruction on this CC (:data:`TENSOR_SHAPES`); ``None`` otherwise. A ``d``
    prefix (``d884gemm``: FP64 DMMA) is the DMMA pipe, m8n8k4 = 512 FLOP, on CC 8.0 and 9.0."""
    if not name or not math.isfinite(cc):
        return None
    m = _SHAPE_RE.search(name)
    if not m:
        return None
    kind, shape = (m.group(1) or "").lower(), m.group(2)
    mm, nn, kk, pipe, archs = TENSOR_SHAPES[shape]
    if kind == "d":
        return ("m8n8k4", 512.0, "dmma") if shape == "884" and f"{cc:.1f}" in ("8.0", "9.0") else None
    if not f"{cc:.1f}".startswith(archs):
        return None
    return f"m{mm}n{nn}k{kk}", float(2 * mm * nn * kk), pipe


def fp16_thread_inst(df: pd.DataFrame, dur: pd.Series) -> pd.Series:
    """FP16 (half2) thread instructions, HADD + HMUL + HFMA: on GA100 their warp instructions issue on
    the pipe ``sm__inst_executed_pipe_tensor`` counts (corpus leleucas BERT CSV: tensor instructions =
    HFMA / 32 in the full-warp kernels). A warp instruction has 1 to 32 active threads, so they stand for
    between this / 32 and this many warp instructions. NaN where no FP16 counter was collected."""
    parts = [counter(df, f"sass_thread_inst_executed_op_{op}_pred_on", dur)[0] for op in ("hadd", "hmul", "hfma")]
    frame = pd.concat(parts, axis=1)
    return frame.sum(axis=1, min_count=1).where(frame.notna().any(axis=1))


def tensor_flops(df: pd.DataFrame, dur: pd.Series, cc: pd.Series) -> tuple[pd.Series, pd.Series, pd.DataFrame]:
    """Tensor FLOPs (docs/formulas.md#work-bytes), the first that applies: Σ aggregate
    ``sm__ops_path_tensor_*`` variants (docs/research/formulas.md §1.6); on Volta (CC 7.0)
    ``sm__inst_executed_pipe_tensor`` x 512 (§2.3); else the tensor instructions of the kernel name's
    shape (:func:`tensor_shape`) x its FLOPs per warp instruction: the per-type pipe
    (``sm__inst_executed_pipe_tensor_op_hmma``/``_imma``/``_dmma``) where exported, else the aggregate
    pipe less the fewest FP16 warp instructions that can share it (:func:`fp16_thread_inst` / 32). Returns (flops,
    source, ops by variant)."""
    ops = tensor_ops(df, dur)
    src = none_series(df)
    if ops.shape[1]:
        total = ops.sum(axis=1, min_count=1)
        src = src.mask(total.notna(), "sm__ops_path_tensor_* (aggregate variants)")
    else:
        total = nan_series(df)
    inst, _ = counter(df, "inst_executed_pipe_tensor", dur)
    volta = (cc >= 7.0) & (cc < 7.2)
    v = (inst * VOLTA_TENSOR_FLOPS_PER_INST).where(volta)
    take = total.isna() & v.notna()
    total = total.mask(take, v)
    src = src.mask(take, "sm__inst_executed_pipe_tensor x 512 (V100)")
    todo = total.isna()
    if todo.any() and "name" in df.columns:
        by_pipe = {p: counter(df, f"inst_executed_pipe_tensor_op_{p}", dur)[0] for p in ("hmma", "imma", "dmma")}
        agg = (inst - fp16_thread_inst(df, dur).fillna(0.0) / 32.0).clip(lower=0.0)
        rows = np.flatnonzero(todo.to_numpy())
        pos, values, sources = _by_name(df["name"].to_numpy(dtype=object)[rows], cc.to_numpy(dtype="float64")[rows],
                                        {p: c.to_numpy(dtype="float64")[rows] for p, c in by_pipe.items()},
                                        agg.to_numpy(dtype="float64")[rows])
        if len(pos):
            total, src = total.copy(), src.copy()
            total.iloc[rows[pos]] = values
            src.iloc[rows[pos]] = sources
    return total, src, ops


def _by_name(names: np.ndarray, ccs: np.ndarray, by_pipe: dict[str, np.ndarray],
             agg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tensor FLOPs from the kernel name's shape (:func:`tensor_flops`' last rule) for rows with
    ``names``, ``ccs``, per-type pipe counts and the aggregate pipe less FP16: (positions that got a
    value, the values, their sources). :func:`tensor_shape` runs once per distinct (name, CC), not per
    launch (bench/NOTES.md); ``tests/test_kernel_fast_paths.py`` holds it equal to the per-row loop."""
    name_codes, name_uniq = pd.factorize(names, use_na_sentinel=True)
    cc_codes, cc_uniq = pd.factorize(ccs, use_na_sentinel=True)
    combo, inverse = np.unique(name_codes.astype(np.int64) * (len(cc_uniq) + 1) + cc_codes + 1, return_inverse=True)
    pipes = ("hmma", "imma", "dmma")
    per, pipe = np.full(len(combo), np.nan), np.full(len(combo), -1)
    shapes: list[str] = []
    for j, code in enumerate(combo.tolist()):
        nc, cc_code = divmod(code, len(cc_uniq) + 1)
        name = name_uniq[nc] if nc >= 0 and isinstance(name_uniq[nc], str) else None
        got = tensor_shape(name, float(cc_uniq[cc_code - 1]) if cc_code else math.nan)
        shapes.append(got[0] if got else "")
        if got is not None:
            per[j], pipe[j] = got[1], pipes.index(got[2])
    row_pipe = pipe[inverse]
    n_pipe = np.stack([by_pipe[p] for p in pipes])[np.maximum(row_pipe, 0), np.arange(len(row_pipe))]
    n_pipe = np.where(row_pipe >= 0, n_pipe, np.nan)
    from_pipe = np.isfinite(n_pipe)
    n = np.where(from_pipe, n_pipe, agg)
    pos = np.flatnonzero((row_pipe >= 0) & np.isfinite(n))
    texts: dict[tuple[int, bool], str] = {}
    sources = np.empty(len(pos), dtype=object)
    for k, (j, own) in enumerate(zip(inverse[pos].tolist(), from_pipe[pos].tolist(), strict=True)):
        if (j, own) not in texts:
            which = f"sm__inst_executed_pipe_tensor_op_{pipes[pipe[j]]}" if own else \
                "(sm__inst_executed_pipe_tensor - FP16 warp instructions)"
            texts[j, own] = f"{which} x {per[j]:g} ({shapes[j]} from the kernel name, docs/formulas.md#work-bytes)"
        sources[k] = texts[j, own]
    return pos, n[pos] * per[inverse[pos]], sources


def tensor_inst_unscaled(df: pd.DataFrame, dur: pd.Series, cc: pd.Series) -> pd.Series:
    """``sm__inst_executed_pipe_tensor`` on a non-Volta GPU beyond what the FP16 instructions sharing its
    pipe can account for (at most one warp instruction per FP16 thread instruction,
    :func:`fp16_thread_inst`): tensor instructions with no single FLOP factor (§2.3). NaN where the
    count was not collected."""
    inst, _ = counter(df, "inst_executed_pipe_tensor", dur)
    extra = (inst - fp16_thread_inst(df, dur).fillna(0.0)).clip(lower=0.0).where(inst.notna())
    return extra.where(~((cc >= 7.0) & (cc < 7.2)))
