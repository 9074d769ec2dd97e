"""Label every kernel compute-, memory- or overhead-bound, name the limiter, vectorized.

Input is a *facts* frame (built by :mod:`analyzer.kernels.analyze`), one row per kernel:

==================  ==================================================================
duration_s          seconds (NaN unknown)
sol_compute_pct     ``sm__throughput.avg.pct_of_peak_sustained_elapsed``
sol_memory_pct      ``gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed``
waves, grid,        ``launch__waves_per_multiprocessor``, blocks, SMs
sm_count
compute_util        roofline FLOP/s over the compute roof (fraction)
util_<class>        roofline FLOP/s of the class over its peak (fraction)
bw_util_<lvl>       roofline bytes/s over the level's bandwidth (fraction)
unit_<lvl>          SOL breakdown memory-unit throughput % (l1tex/lts/dram)
pipe_<class>        compute pipe utilization % (tensor, fp64, fp32, fp16, alu)
==================  ==================================================================

Rules (docs/formulas.md#kernel-labels; sources in docs/research/formulas.md §3, §5):

1. With both SOL % or NCU's stored verdict: NVIDIA's ``SOLBottleneck`` (80/60/10, waves < 1); the
   stored verdict wins over the replay. High Throughput on both sides or Balanced: the busier of
   rooftop's memory and compute sides decides.
2. Without SOL: the same thresholds on rooftop's own utilisations; a side is named only at >= 60 %;
   both < 60 % is latency only with L1, L2 and DRAM measured, else ``unknown`` (basis ``thin``).
3. Overhead limiter, in order: ``launch`` (< 5 µs; ``launch_duration_s``, the median over a kernel's
   launches in one launch configuration, where given), ``small-grid`` (blocks < SMs, or NCU says Small
   Grid), ``tail`` (NCU's Tail Effect condition and an idle last-wave share >= 10 %; NCU's own
   Tail Effect result wins), ``latency``.
4. Which level or pipe: per level the larger of the roofline bandwidth utilization and the SOL
   breakdown unit throughput; per class the larger of the roofline utilization and the pipe
   utilization. The highest wins (``binding level``, ``dominant class``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import FLOP_CLASSES, LEVELS
from rooftop.analyzer.schema.vocab import KERNEL_LABELS

HIGH = 80.0  # SOLBottleneck no_bound_threshold
LATENCY = 60.0  # latency_bound_threshold
BALANCED = 10.0  # balanced_threshold
WAVES = 1.0  # waves_threshold
LAUNCH_S = 5e-6  # docs/research/formulas.md §5.3: kernels below ~5 µs are comparable to launch cost
TAIL_SPEEDUP = 20.0  # LaunchStatistics speedup_threshold (percent)
TAIL_MIN_PCT = 10.0  # rooftop: the tail's idle share must be worth >= 10 % of the runtime

LABELS = KERNEL_LABELS
LEVEL_NAMES = {"l1": "L1", "l2": "L2", "dram": "DRAM"}


def _col(f: pd.DataFrame, name: str) -> pd.Series:
    return f[name].astype("float64") if name in f.columns else pd.Series(np.nan, index=f.index)


def _argmax(frame: pd.DataFrame) -> pd.Series:
    arr = frame.to_numpy(dtype="float64")
    has = ~np.isnan(arr).all(axis=1)
    pos = np.where(np.isnan(arr), -np.inf, arr).argmax(axis=1)
    return pd.Series(np.where(has, np.array(frame.columns, dtype=object)[pos], None), index=frame.index, dtype="object")


def sol_verdict(sol_c: pd.Series, sol_m: pd.Series, waves: pd.Series) -> pd.Series:
    """NVIDIA's SOLBottleneck rule result title (docs/research/formulas.md §3.1), ``None`` without both SOL %,
    except that one side >= 80 % is "High Throughput" on its own (SOLBottleneck tests each side against
    its no_bound_threshold before it compares them)."""
    has = sol_c.notna() & sol_m.notna()
    high = (sol_c >= HIGH) | (sol_m >= HIGH)
    low = has & ~high & (sol_c < LATENCY) & (sol_m < LATENCY)
    mid = has & ~high & ~low
    diff = sol_c - sol_m
    out = np.select(
        [high, low & (waves < WAVES), low, mid & (diff.abs() >= BALANCED) & (diff > 0),
         mid & (diff.abs() >= BALANCED), mid],
        ["High Throughput", "Small Grid", "Latency Issue", "High Compute Throughput",
         "High Memory Throughput", "Balanced Throughput"], default="")
    return pd.Series(out, index=sol_c.index, dtype="object").replace("", None)


def tail_effect(waves: pd.Series) -> pd.Series:
    """Tail effect (docs/formulas.md#kernel-labels): NCU's LaunchConfiguration condition (partial
    wave, >= 1 whole wave, 1 / (1 + whole) >= 20 %) *and* the idle part of the last wave worth at
    least 10 % of the runtime: :func:`tail_speedup` >= ``TAIL_MIN_PCT``."""
    whole = np.floor(waves)
    partial = waves - whole
    ncu = (partial > 0) & (whole >= 1) & (100.0 / (1.0 + whole) >= TAIL_SPEEDUP)
    return ncu & (tail_speedup(waves) >= TAIL_MIN_PCT)


def tail_speedup(waves: pd.Series) -> pd.Series:
    """Estimated speedup (%) from removing the tail: the idle share of the last wave over the
    waves the launch runs, 100 · (1 − partial) / (1 + whole) (uniform block durations assumed)."""
    whole = np.floor(waves)
    partial = waves - whole
    return (100.0 * (1.0 - partial) / (1.0 + whole)).where((partial > 0) & (whole >= 1), 0.0).where(waves.notna())


def side_utils(f: pd.DataFrame) -> pd.DataFrame:
    """Per level / class utilization in %, combining roofline and SOL-breakdown evidence."""
    out = pd.DataFrame(index=f.index)
    for lvl in LEVELS:
        out[f"mem_{lvl}"] = np.fmax(100.0 * _col(f, f"bw_util_{lvl}"), _col(f, f"unit_{lvl}"))
    for c in FLOP_CLASSES:
        out[f"cmp_{c}"] = np.fmax(100.0 * _col(f, f"util_{c}"), _col(f, f"pipe_{c}"))
    mem = out[[f"mem_{lvl}" for lvl in LEVELS]]
    cmp_ = out[[f"cmp_{c}" for c in FLOP_CLASSES]]
    out["memory"] = mem.max(axis=1).where(mem.notna().any(axis=1))
    comp = np.fmax(100.0 * _col(f, "compute_util"), cmp_.max(axis=1).where(cmp_.notna().any(axis=1)))
    # every pipe NCU measured is the compute side too (the SpeedOfLight breakdown's busiest pipe)
    out["compute"] = np.fmax(np.fmax(comp, _col(f, "pipe_alu")), _col(f, "pipe_pct"))
    level = _argmax(mem.set_axis(list(LEVELS), axis=1))
    cls = _argmax(cmp_.set_axis(list(FLOP_CLASSES), axis=1))
    alu_wins = _col(f, "pipe_alu") > cmp_.max(axis=1).fillna(-1.0)
    out["level"] = level
    out["class"] = cls.mask(alu_wins, None)
    return out


ISSUE_SOL_POINTS = 1.0
ISSUE_ACTIVE = "issue_slots_active_pct"  # sm__inst_issued.avg.pct_of_peak_sustained_active: "Issue Slots Busy"


def compute_limiter(f: pd.DataFrame, u: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """The compute limiter (docs/formulas.md#kernel-labels): the busiest pipe of NCU's SpeedOfLight
    breakdown (``pipe_word``), else the pipe NCU's HighPipeUtilization rule names (``rule_pipe_word``),
    else the FLOP class with the highest utilisation, else the ALU pipe where it is busier than every
    class. The FMA pipe is ``fp32`` where the FP32 FLOPs fill at least half of its busy share (FADD and
    FMUL take a slot for one FLOP, FFMA for two), else ``fma`` (integer IMAD, conversions); the shared
    pipe is named by its FP64 or tensor class where that class did the work."""
    none = pd.Series(None, index=f.index, dtype=object)
    word = f["pipe_word"].astype("object") if "pipe_word" in f.columns else none
    from_breakdown = word.notna()
    name = f["pipe_name"].astype("object") if "pipe_name" in f.columns else none
    pct = _col(f, "pipe_pct")
    if "rule_pipe_word" in f.columns:
        rw = f["rule_pipe_word"].astype("object")
        take = word.isna() & rw.notna()
        word = word.where(~take, rw)
        name = name.where(~take, rw.map(lambda w: f"{w} pipe (NCU's HighPipeUtilization rule)" if isinstance(w, str)
                                        else None))
        pct = pct.where(~take, _col(f, "rule_pipe_pct"))
    # no SOL breakdown (a details page or console log): NCU's Issue Slots Busy is the issue unit; it names
    # the limiter where it is busier than the pipe NCU's rule names (docs/formulas.md#kernel-labels)
    # ... and only where it is what makes NCU's Compute (SM) Throughput (within a point): SM Busy can be
    # 95 % on a pipe no page names (an XU loop) while issue slots sit at 31 % (NaN compares False)
    issue = _col(f, ISSUE_ACTIVE)
    busier = ~from_breakdown & (issue >= _col(f, "sol_compute_pct") - ISSUE_SOL_POINTS) & (pct.isna() | (issue > pct))
    word = word.mask(busier, "issue")
    name = name.mask(busier, "instruction issue (NCU's Issue Slots Busy, over active cycles)")
    pct = pct.mask(busier, issue)
    cls = u["class"].astype("object")
    fp32_share = 100.0 * _col(f, "util_fp32") / pct.where(pct > 0)
    word = word.mask((word == "fma") & (fp32_share >= 50.0), "fp32")
    word = word.mask((word == "shared-pipe") & cls.isin(["fp64", "tensor"]), cls)
    alu = _col(f, "pipe_alu") > u[[f"cmp_{c}" for c in FLOP_CLASSES]].max(axis=1).fillna(-1.0)
    alu_word = pd.Series(None, index=f.index, dtype=object).mask(alu.to_numpy(dtype=bool), "alu")
    fallback = cls.where(cls.notna(), alu_word)
    return word.where(word.notna(), fallback), name.where(word.notna(), None), pct.where(word.notna())


def classify(f: pd.DataFrame) -> pd.DataFrame:
    """Label, limiter and NCU verdict per kernel (module docstring; docs/formulas.md#kernel-labels).

    Output columns: ``label``, ``limiter``, ``sol_verdict`` (NCU's or the replica's title),
    ``basis`` (which rule decided: ``ncu-sol``, ``roofline-sol``, ``launch``, ``small-grid``,
    ``thin``, ``none``), ``memory_side_pct``, ``compute_side_pct``, ``memory_levels_known``,
    ``launch_short``, ``small_grid``, ``tail_effect``, ``tail_speedup_pct``.

    One piece because the rules are one ordered decision table whose masks feed each other: read
    top to bottom it follows docs/formulas.md#kernel-labels step by step.
    """
    idx = f.index
    sol_c, sol_m = _col(f, "sol_compute_pct"), _col(f, "sol_memory_pct")
    waves, grid, sms = _col(f, "waves"), _col(f, "grid"), _col(f, "sm_count")
    dur = _col(f, "duration_s")
    verdict = sol_verdict(sol_c, sol_m, waves)
    if "ncu_stored_verdict" in f.columns:  # NVIDIA's own result wins (e.g. waves not exported)
        stored = f["ncu_stored_verdict"].astype("object")
        verdict = stored.where(stored.notna(), verdict)
    has_sol = verdict.notna()
    u = side_utils(f)
    mem, cmp_ = u["memory"], u["compute"]
    levels_known = u[[f"mem_{lvl}" for lvl in LEVELS]].notna().all(axis=1) | sol_m.notna()

    launch = _col(f, "launch_duration_s").fillna(dur) < LAUNCH_S if "launch_duration_s" in f.columns else dur < LAUNCH_S
    ncu_small = _flag(f, "ncu_small_grid")
    small = (grid < sms) | ncu_small | (verdict == "Small Grid")
    tail = tail_effect(waves)
    if "ncu_tail" in f.columns:  # NCU evaluated its LaunchConfiguration rule: its answer wins
        nt = f["ncu_tail"].astype("object")
        tail = pd.Series(np.where(nt.notna(), nt.to_numpy(dtype=object, na_value=False).astype(bool), tail),
                         index=idx)

    both_known = mem.notna() & cmp_.notna()
    mem_wins = mem >= cmp_
    # 1. NCU's SOLBottleneck (exported SOL % or its stored result)
    hi = verdict == "High Throughput"
    hi_c_only = hi & (sol_c >= HIGH) & ~(sol_m >= HIGH)
    hi_m_only = hi & (sol_m >= HIGH) & ~(sol_c >= HIGH)
    undecided = (hi & ~hi_c_only & ~hi_m_only) | (verdict == "Balanced Throughput")
    sol_mem = hi_m_only | (verdict == "High Memory Throughput") | \
        (undecided & ((both_known & mem_wins) | (~both_known & (sol_m >= sol_c))))
    sol_cmp = hi_c_only | (verdict == "High Compute Throughput") | (undecided & ~sol_mem)
    sol_over = verdict.isin(["Small Grid", "Latency Issue"])
    # 2. no SOL: the same thresholds on rooftop's own utilisations (a side is named only at >= 60 %, and
    # against an unmeasured other side only at >= 80 %, SOLBottleneck's high-throughput line)
    ns = ~has_sol
    mem_ok = (mem >= LATENCY) & (mem_wins | (cmp_.isna() & (mem >= HIGH)))
    cmp_ok = (cmp_ >= LATENCY) & ((cmp_ > mem) | (mem.isna() & (cmp_ >= HIGH)))
    named = ns & (mem_ok | cmp_ok)
    ns_mem = named & mem_ok
    ns_cmp = named & ~ns_mem
    low = ns & ~named & both_known & levels_known  # both measured sides < 60 %: latency family
    ns_over = ns & ~named & (launch | (grid < sms) | ncu_small | low)
    thin = ns & ~named & ~ns_over & (mem.notna() | cmp_.notna())

    over = (sol_over | ns_over) & ~(sol_mem | sol_cmp)
    memb = sol_mem | ns_mem
    cmpb = sol_cmp | ns_cmp
    label = np.select([memb, cmpb, over], ["memory-bound", "compute-bound", "overhead-bound"], default="unknown")
    small_lim = (grid < sms) | ncu_small | (verdict == "Small Grid")
    over_lim = np.select([launch, small_lim, tail], ["launch", "small-grid", "tail"], default="latency")
    pipe, pipe_name, pipe_pct = compute_limiter(f, u)
    limiter = np.select(
        [over, memb & u["level"].notna(), cmpb & pipe.notna()],
        [over_lim, u["level"].fillna("unknown"), pipe.fillna("unknown")], default="unknown")
    basis = np.select([has_sol, ns & named, ns & low, ns & ns_over & launch, ns & ns_over, thin],
                      ["ncu-sol", "roofline-sol", "roofline-sol", "launch", "small-grid", "thin"], default="none")
    return pd.DataFrame({"label": label, "limiter": limiter, "sol_verdict": verdict, "basis": basis,
                         "memory_side_pct": mem, "compute_side_pct": cmp_, "memory_levels_known": levels_known,
                         "launch_short": launch, "small_grid": small, "tail_effect": tail,
                         "tail_speedup_pct": tail_speedup(waves), "pipe_name": pipe_name, "pipe_pct": pipe_pct,
                         "busiest_level": u["level"]},
                        index=idx)


def _flag(f: pd.DataFrame, name: str) -> pd.Series:
    if name not in f.columns:
        return pd.Series(False, index=f.index)
    return pd.Series(f[name].to_numpy(dtype=object, na_value=False).astype(bool), index=f.index)
