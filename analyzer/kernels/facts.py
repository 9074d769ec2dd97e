"""Every number behind a kernel's label (docs/formulas.md#kernel-labels): duration, launch,
FLOPs and bytes per level with their sources, ceilings (:mod:`analyzer.ceilings.per_kernel`), roofline
placement, SOL percentages and the lint inputs, one row per kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.ceilings.devices import load_device_option
from rooftop.analyzer.ceilings.per_kernel import CEILING_COLUMNS, resolve_ceilings
from rooftop.analyzer.kernels.roofline import compute as roofline
from rooftop.analyzer.metrics import columns, sol, traffic, work
from rooftop.analyzer.metrics.launch_facts import launch_facts
from rooftop.analyzer.metrics.units import busiest_unit


def facts_for(kernels: pd.DataFrame, device: str | None = None, meta: dict[str, dict[str, Any]] | None = None
              ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Every number behind the label, per kernel (index 0..n-1), and the devices used.

    ``meta``: parser meta per input path; its ``device_hints`` (application lines naming the GPU,
    :mod:`parsers.ncu.hints`) name the device where the export does not (docs/formulas.md#ceilings).
    Device lint is returned in ``f.attrs["device_lint"]``. About 70 lines: one line per column
    (group) of the facts table, whose two dozen intermediate columns would otherwise be passed
    between functions."""
    df = kernels.reset_index(drop=True)
    hints = {p: m["device_hints"][0] for p, m in (meta or {}).items()
             if isinstance(m, dict) and m.get("device_hints") and len(m["device_hints"]) == 1}
    option = load_device_option(device)
    cc = columns.cc_number(df)
    dur, dur_src = work.duration(df)
    launch = sol.launch(df)
    fp, partial = work.fp_flops(df, dur)
    t_flops, t_src, t_ops = work.tensor_flops(df, dur, cc)
    flops = fp.assign(tensor=t_flops)
    # absent is not zero (docs/formulas.md#kernel-labels): zero counted FLOPs beside a class whose
    # counters are missing is unknown work, not 0 FLOP
    unknown_work = flops[["fp64", "fp32", "fp16"]].isna().any(axis=1) & ~(flops.fillna(0.0) > 0).any(axis=1)
    # FP32 and FP64 counters present (NCU's SpeedOfLight_RooflineChart) and every collected FP counter at
    # zero: 0 FLOPs measured, an integer or data-movement kernel (docs/formulas.md#work-bytes)
    zero_fp = flops["fp32"].notna() & flops["fp64"].notna() & ~(flops.fillna(0.0) > 0).any(axis=1) & \
        ~(t_flops.fillna(0.0) > 0)
    unknown_work &= ~zero_fp
    # tensor work the export does not count: the FLOPs counted (an FP32 epilogue) are not the kernel's
    # work, so its compute side is unknown and it is not placed (docs/formulas.md#work-bytes)
    tensor_unc = _tensor_uncounted(df, dur, cc, t_flops)
    counted_fp = flops[["fp64", "fp32", "fp16"]].sum(axis=1, min_count=1)
    flops = flops.mask(unknown_work | tensor_unc)
    bytes_, b_src, b_conv = traffic.bytes_by_level(df, dur, cc)
    rate_only, flops_in, bytes_in, dur_in, b_conv = _rate_inputs(df, cc, dur, flops, bytes_, b_conv)
    ceil = resolve_ceilings(df, dur=dur, cc=cc, launch=launch, tensor_ops=t_ops, bytes_conv=b_conv, option=option,
                            hints=hints)
    if launch["sm_count"].isna().any() and option is not None and option.sm_count:
        launch["sm_count"] = launch["sm_count"].fillna(float(option.sm_count))
    roof = roofline(flops_in, bytes_in, dur_in, ceil.values).table
    roof.loc[rate_only, ["flops", "bw_time_s"]] = np.nan  # rates only: the totals are not known
    sol_c, sol_m, sol_src = sol.sol(df)

    # the columns are gathered in dicts and framed once: one DataFrame.__setitem__ per column cost
    # ~0.1 ms each, about a sixth of a one-kernel analysis (bench/NOTES.md, command-line start-up)
    idx = df.index
    cols: dict[str, Any] = {col: df[col] if col in df.columns else None
                            for col in ("index", "input", "id", "name", "nvtx", "invocations")}
    exported = df["device"].astype("object").where(df["device"].notna(), None) if "device" in df.columns \
        else pd.Series(None, index=idx, dtype="object")
    cols["device"] = exported.where(exported.notna(), ceil.device_name)
    cols["ceiling_device"] = ceil.device_name
    cols["builtin_device"] = ceil.builtin_name
    cols["device_assumed"] = ceil.assumed
    cols["export_device"] = exported.where(exported.notna(), "unnamed device")  # name of its ``export`` entry
    cols["cc"] = df["cc"] if "cc" in df.columns else None
    cols["duration_s"] = dur
    cols["duration_source"] = dur_src
    cols["grid"] = launch["grid"].round().astype("Int64")
    cols["block"] = launch["block"].round().astype("Int64")
    cols["waves"] = launch["waves"]
    cols["sm_count"] = launch["sm_count"]
    cols["sol_compute_pct"], cols["sol_memory_pct"], cols["sol_source"] = sol_c, sol_m, sol_src
    for c in columns.FLOP_CLASSES:
        cols[f"flops_{c}"] = flops[c]
        cols[f"partial_{c}"] = partial[c] if c in partial.columns else None
    cols["tensor_source"] = t_src
    for lvl in columns.LEVELS:
        cols[f"bytes_{lvl}"] = bytes_[lvl]
        cols[f"bytes_{lvl}_source"] = b_src[lvl]
    cols["bytes_convention"] = traffic.bytes_convention(b_conv)
    for col in CEILING_COLUMNS:
        cols[col] = ceil.values[col]
        cols[f"src_{col}"] = ceil.source[col]
        cols[f"detail_{col}"] = ceil.detail[col]
    cols["tensor_peak_missing"] = ceil.tensor_missing_peak
    cols["rate_only"] = rate_only
    for lvl in columns.LEVELS:
        cols[f"rate_{lvl}"] = (bytes_in[lvl] / dur_in).where(rate_only)
    more = _units_and_lint_inputs(df, dur, cc, sol_src, b_src["dram"])
    more["tensor_uncounted"] = tensor_unc
    more["zero_flops"] = zero_fp & ~tensor_unc
    more["fp16_uncollected"] = zero_fp & flops["fp16"].isna()
    more["fp_flops_counted"] = counted_fp.where(tensor_unc)
    f = pd.concat([pd.DataFrame(cols, index=idx), roof, pd.DataFrame(more, index=idx)], axis=1)
    f.attrs["device_lint"] = ceil.lint
    return f, ceil.devices


def _tensor_uncounted(df: pd.DataFrame, dur: pd.Series, cc: pd.Series, tensor_flops: pd.Series) -> pd.Series:
    """Tensor pipe at work with no tensor FLOPs counted: instructions beyond the FP16 ones sharing the pipe,
    or (no instruction count) the tensor pipe % above 0 (docs/formulas.md#profiling-conditions)."""
    unscaled = work.tensor_inst_unscaled(df, dur, cc)
    pipe_active = (sol.pipe_utilization(df)["tensor"] > 0) & unscaled.isna()
    return tensor_flops.isna() & (pipe_active | (unscaled > 0))


def _units_and_lint_inputs(df: pd.DataFrame, dur: pd.Series, cc: pd.Series,
                           sol_src: pd.Series, dram_src: pd.Series) -> dict[str, pd.Series]:
    """The SOL breakdown per memory unit and pipe, and what the lint reads: FP16 counters at zero,
    tensor work not counted, legacy metrics, SM clock / max clock (docs/formulas.md#profiling-conditions)."""
    units = sol.unit_throughput(df)
    pipes = sol.pipe_utilization(df)
    more: dict[str, pd.Series] = {f"unit_{lvl}": units[lvl] for lvl in columns.LEVELS}
    more.update({f"pipe_{k}": pipes[k] for k in pipes.columns})
    more.update({k: v for k, v in busiest_unit(df).items()})
    more["issue_slots_active_pct"] = columns.column(df, "sm__inst_issued.avg.pct_of_peak_sustained_active")
    more.update({k: v for k, v in launch_facts(df).items()})
    hcounts = [work.counter(df, f"sass_thread_inst_executed_op_{op}_pred_on", dur)[0] for op in ("hadd", "hmul", "hfma")]
    hsum = hcounts[0].fillna(0) + hcounts[1].fillna(0) + hcounts[2].fillna(0)
    more["fp16_counters_zero"] = pd.concat(hcounts, axis=1).notna().any(axis=1) & (hsum == 0)
    more["legacy_metrics"] = (sol_src == "legacy") | dram_src.astype("string").str.contains("legacy", na=False)
    max_clock_khz = columns.column(df, "device__attribute_clock_rate")
    sm_hz, _ = work.clock_hz(df, "sm")
    more["clock_ratio"] = sm_hz / (max_clock_khz * 1e3)
    return more


def _rate_inputs(df: pd.DataFrame, cc: pd.Series, dur: pd.Series, flops: pd.DataFrame, bytes_: pd.DataFrame,
                 conv: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame, pd.DataFrame, pd.Series, pd.DataFrame]:
    """Kernels with no duration but rate metrics (ncu section CSVs): their FLOP/s and bytes/s as the
    roofline's inputs over a 1 s window (docs/formulas.md#work-bytes). Returns (rate-only mask, flops,
    bytes, duration) for :func:`analyzer.kernels.roofline.compute`, and the byte convention with the rate rows'."""
    no_dur = dur.isna()
    rate_only = pd.Series(False, index=df.index)
    if not no_dur.any():
        return rate_only, flops, bytes_, dur, conv
    rf, rb, _, rconv = traffic.rates(df.loc[no_dur], cc[no_dur])
    has = (rf.notna().any(axis=1) | rb.notna().any(axis=1)).reindex(df.index, fill_value=False)
    rate_only = no_dur & has.astype(bool)
    if not rate_only.any():
        return rate_only, flops, bytes_, dur, conv
    rows = rate_only[rate_only].index
    conv = conv.copy()
    conv.loc[rows, list(rconv.columns)] = rconv.loc[rows, list(conv.columns)].to_numpy()
    flops_in, bytes_in = flops.copy(), bytes_.copy()
    flops_in.loc[rows, list(rf.columns)] = rf.loc[rows].to_numpy()
    bytes_in.loc[rows, list(rb.columns)] = rb.loc[rows, list(bytes_in.columns)].to_numpy()
    return rate_only, flops_in, bytes_in, dur.mask(rate_only, 1.0), conv
