"""Classification of finished windows: label, limiter, evidence, estimates (docs/formulas.md#windows)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.counters import counter_ratios
from rooftop.analyzer.windows.fields import METRICS, PIPES
from rooftop.analyzer.windows.hysteresis import IDLE_EXIT, held_idle
from rooftop.analyzer.windows.identity import gpu_shares, memory_share
from rooftop.analyzer.windows.ofu import max_clocks, ofu, spec_clocks, tensor_activity
from rooftop.analyzer.windows.span import add_coverage

IDLE_MAX = 0.05  # kempnerpulse "idle": GR < 5 %, DRAM < 5 % (docs/research/anchors.md §3 row 18)
GR_BUSY = 0.40  # kempnerpulse "busy-low-SM": GR >= 40 % ...
SM_LOW = 0.25  # ... and SM < 25 % -> "overhead, sync, or small kernels"
PIPE_HIGH = 0.50  # kempnerpulse "tensor-heavy" Tensor >= 50 %
DRAM_HIGH = 0.50  # kempnerpulse "memory-bound" DRAM >= 50 %
DRAM_PRACTICAL_PEAK = 0.80  # DCGM guide: "in practice a peak of ~0.8 (80%) is the maximum achievable"
SM_EFFECTIVE, SM_INEFFECTIVE = 0.80, 0.50  # DCGM guide, SM activity (docs/research/anchors.md §3 row 15)
DOMINANT_MIN = 0.20
NEAR_PEAK = 0.80  # a side at >= 80 % of its peak is near peak (the kernel rule's "sides >= 80", docs/formulas.md#windows)
BUSY_CONFLICT = 0.50  # GPU_UTIL above GR by this much: the two time-busy signals disagree (docs/formulas.md#windows)
FB_IDLE_MIB = 64.0  # framebuffer used at or below this with no activity field: no CUDA context (docs/formulas.md#windows)
_MIG_G = re.compile(r"^(\d+)g\.")


def _devices_module() -> Any:
    try:
        from rooftop.analyzer.ceilings import devices
    except ImportError:  # pragma: no cover - devices is part of the package
        return None
    return devices


def resolve_devices(models: list[Any], device: str | None) -> dict[Any, Any]:
    """model name -> DeviceSpec (or None); ``device`` (a name or file) overrides every model."""
    d = _devices_module()
    if d is None:
        return {m: None for m in models}
    if device:
        spec = d.load_device_option(device)
        return {m: spec for m in models}
    out: dict[Any, Any] = {}
    for m in models:
        try:
            out[m] = d.lookup(m) if isinstance(m, str) and m else None
        except Exception:  # an odd model string must never stop the analysis
            out[m] = None
    return out


def mig_share(profile: Any, model: Any) -> float:
    """Share of the whole GPU a MIG instance owns: ``g/7`` (``g/4`` on A30); 1.0 when not MIG."""
    if not isinstance(profile, str):
        return 1.0
    m = _MIG_G.match(profile.strip())
    if not m:
        return 1.0
    slices = 4.0 if isinstance(model, str) and "A30" in model.upper() else 7.0
    return min(1.0, int(m.group(1)) / slices)


def _strs(template: str, vals: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``template % v`` for the rows in ``mask`` (None elsewhere), one column at a time."""
    out = np.full(len(mask), None, dtype=object)
    if mask.any():
        out[mask] = np.char.mod(template, vals[mask]).astype(object)
    return out


def _const(text: str, mask: np.ndarray) -> np.ndarray:
    out = np.full(len(mask), None, dtype=object)
    out[mask] = text
    return out


def _classify(out: pd.DataFrame, evidence: bool = True) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Label, limiter and evidence columns (object arrays, None = no line) for every window.

    One piece because it is one ordered decision table on shared masks (docs/formulas.md#windows),
    and each evidence line is written from the mask that decided the label.
    """
    v = {m: out[m].to_numpy(dtype="float64") for m in ("gr_active", "sm_active", "dram_active", "gpu_util",
                                                      "mem_copy_util", "fb_used_mib", *PIPES.values())}
    ok = {m: np.isfinite(x) for m, x in v.items()}
    gr, sm, dram, util = v["gr_active"], v["sm_active"], v["dram_active"], v["gpu_util"]
    p_gr, p_sm, p_dram, p_util = ok["gr_active"], ok["sm_active"], ok["dram_active"], ok["gpu_util"]
    pipe_cols = list(PIPES.values())
    pipe_v = np.stack([np.where(ok[c], v[c], -np.inf) for c in pipe_cols], axis=1)
    has_pipe = np.isfinite(pipe_v).any(axis=1)
    ninf = -np.inf
    signals = np.stack([np.where(p_gr, gr, ninf), np.where(p_sm, sm, ninf), np.where(p_dram, dram, ninf),
                        np.where(~p_gr & p_util, util, ninf)], axis=1)
    activity = np.maximum(signals.max(axis=1), pipe_v.max(axis=1))
    only_util = ~p_gr & ~p_sm & ~p_dram & ~has_pipe
    no_sig = only_util & ~p_util
    fb = v["fb_used_mib"]
    with np.errstate(invalid="ignore"):
        fb_idle = no_sig & ok["fb_used_mib"] & (fb >= 0) & (fb <= FB_IDLE_MIB)
    unknown = no_sig & ~fb_idle
    idle = ~no_sig & (activity < IDLE_MAX)
    # hysteresis: a window just above the cut stays idle after an idle window (docs/formulas.md#windows)
    held = held_idle(out, idle | fb_idle, ~no_sig & ~idle & (activity < IDLE_EXIT))
    idle_own = idle
    idle = idle | held
    ou_mixed = ~no_sig & ~idle & only_util
    rest = ~no_sig & ~idle & ~only_util
    top_i = pipe_v.argmax(axis=1)
    top_val = np.where(has_pipe, pipe_v.max(axis=1), 0.0)
    top_pipe = np.array(list(PIPES), dtype=object)[top_i]
    with np.errstate(invalid="ignore"):
        # both sides near peak: balanced, neither alone binds (a pipe that busy is never "memory-bound")
        balanced = rest & has_pipe & p_dram & (top_val >= NEAR_PEAK) & (dram / DRAM_PRACTICAL_PEAK >= NEAR_PEAK)
        mem = rest & ~balanced & p_dram & (dram >= DRAM_HIGH) & (dram / DRAM_PRACTICAL_PEAK >= top_val)
        comp = rest & ~balanced & ~mem & has_pipe & (top_val >= PIPE_HIGH)
        busy = np.where(p_gr, gr, util)
        launch = rest & ~balanced & ~mem & ~comp & (p_gr | p_util) & (busy >= GR_BUSY) & p_sm & (sm < SM_LOW)
        low_gr = rest & ~balanced & ~mem & ~comp & ~launch & p_gr & (gr < GR_BUSY)
        # GR says mostly idle, NVML GPU_UTIL says a kernel ran most of the time: the data conflict,
        # no cause (host wait) is claimed
        conflict = low_gr & p_util & (util - gr >= BUSY_CONFLICT)
        host = low_gr & ~conflict
        norm = np.concatenate([pipe_v, np.where(p_dram, dram / DRAM_PRACTICAL_PEAK, ninf)[:, None]], axis=1)
    mixed_rest = rest & ~(mem | comp | launch | host | conflict)
    lim_name = np.array([*PIPES, "dram"], dtype=object)[norm.argmax(axis=1)]
    dom = mixed_rest & (norm.max(axis=1) >= DOMINANT_MIN)
    latency = mixed_rest & ~dom
    label = np.select([unknown, fb_idle, idle, ou_mixed, conflict, mem, comp, launch, host],
                      ["unknown", "idle", "idle", "unknown", "unknown", "memory-bound", "compute-bound",
                       "overhead-bound", "overhead-bound"], "mixed").astype(object)
    limiter = np.select([unknown, fb_idle | idle, ou_mixed, conflict, mem, comp, launch, host, dom],
                        ["unknown", "none", "unknown", "unknown", "dram", top_pipe, "launch", "host", lim_name],
                        "latency").astype(object)
    if not evidence:
        return label, limiter, []
    sm_note = np.where(sm >= SM_EFFECTIVE, " (>= 0.8: SMs well used)",
                       np.where(sm < SM_INEFFECTIVE, " (< 0.5: likely ineffective use, NVIDIA)", ""))
    sm_ev = _strs("SM active %.2f", sm, rest & p_sm)
    sm_ev[rest & p_sm] = sm_ev[rest & p_sm] + sm_note[rest & p_sm].astype(object)
    gr_ev = _strs("GR active %.2f", gr, rest & p_gr)
    util_ev = _strs("GPU_UTIL %.2f", util, rest & ~p_gr & p_util)
    ev = [
        _const("no activity field in this window (DCGM GR/SM/pipes/DRAM, NVML GPU_UTIL): activity unknown; "
               "collect DCGM_FI_PROF_GR_ENGINE_ACTIVE (1001) or utilization.gpu to decide", unknown),
        _strs(f"no activity field, but framebuffer used %.0f MiB <= {FB_IDLE_MIB:g} MiB: no CUDA context holds "
              "GPU memory, so no kernel can run (idle)", fb, fb_idle),
        _const("only NVML GPU_UTIL (no DCGM profiling fields): coarse 'any kernel resident' signal",
               only_util & ~no_sig),
        _strs(f"all activity < {IDLE_MAX} (max %.3f)", activity, idle_own),
        _strs(f"activity max %.3f, below {IDLE_EXIT:.2f} after an idle window: stays idle (hysteresis: idle "
              f"begins below {IDLE_MAX:.2f} and ends at {IDLE_EXIT:.2f} or above, so a GPU hovering at the cut does "
              "not flip every window)", activity, held),
        _strs("GPU_UTIL %.2f: busy, but what limits it is unknown (no DCGM profiling field decides)",
              activity, ou_mixed),
        np.where(gr_ev == None, util_ev, gr_ev),  # noqa: E711 - elementwise on an object array
        sm_ev,
        *[_strs(f"{p} pipe active %.2f", v[c], rest & ok[c]) for p, c in PIPES.items()],
        _dram_ev(dram, rest & p_dram),
        _const("engine busy but few SMs occupied: tiny grids / launch-bound", launch),
        _strs("GPU engine idle %.0f%% of the window: host-side wait (input pipeline, synchronisation, "
              "launch gaps)", (1 - np.clip(gr, 0, 1)) * 100, host),  # corrupt ratios are linted, not computed with
        _const("pipes and DRAM lightly used while kernels run: latency/stall-bound", latency),
        _balanced_ev(top_pipe, top_val, dram, balanced),
        _conflict_ev(gr, util, v["mem_copy_util"], conflict),
    ]
    return label, limiter, ev


def _balanced_ev(pipe: np.ndarray, top: np.ndarray, dram: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Why a window with both sides near peak is balanced, not bound by one (docs/formulas.md#windows)."""
    out = np.full(len(mask), None, dtype=object)
    for i in np.flatnonzero(mask):
        out[i] = (f"balanced: {pipe[i]} pipe {top[i]:.2f} and DRAM {dram[i] / DRAM_PRACTICAL_PEAK:.0%} of its "
                  f"practical peak are both >= {NEAR_PEAK:.0%}: neither side alone binds, so neither is "
                  "called the limit")
    return out


def _conflict_ev(gr: np.ndarray, util: np.ndarray, copy: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The conflicting busy signals of a window (docs/formulas.md#windows): named, no cause claimed."""
    out = np.full(len(mask), None, dtype=object)
    for i in np.flatnonzero(mask):
        extra = f" and memory copy util {copy[i]:.2f}" if np.isfinite(copy[i]) else ""
        out[i] = (f"conflicting signals: GR active {gr[i]:.2f} (engine mostly idle) but NVML GPU_UTIL "
                  f"{util[i]:.2f}{extra} (a kernel resident most of the time); the data do not say "
                  "which holds, so no cause is named: a longer capture with both fields sampled "
                  "together decides")
    return out


def _dram_ev(dram: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.full(len(mask), None, dtype=object)
    if mask.any():
        d = dram[mask]
        out[mask] = np.char.add(np.char.mod("DRAM active %.2f (~", d),
                                np.char.mod("%.0f%% of the practical 0.8 peak)", (d / DRAM_PRACTICAL_PEAK) * 100)
                                ).astype(object)
    return out


def classify_windows(wide: pd.DataFrame, device: str | None = None, evidence: bool = True) -> pd.DataFrame:
    """Add ``label``, ``limiter``, ``est_flops_s``, ``est_dram_bytes_s``, ``est_intensity``,
    ``evidence`` (list of str; None for every window when ``evidence`` is False, which skips
    formatting text for windows no report lists) and ``device`` (the spec's name) to finished windows."""
    out = wide.copy(deep=False)  # columns are added, never changed in place (copy-on-write)
    n = len(out)
    if not n:
        for c in ("label", "limiter", "device", "evidence"):
            out[c] = pd.Series([], dtype=object)
        for c in ("est_flops_s", "est_dram_bytes_s", "est_intensity", "est_ofu"):
            out[c] = pd.Series([], dtype="float64")
        return out
    missing = [m for m in METRICS if m not in out.columns]
    if missing:  # at once: one column at a time fragments the frame (pandas PerformanceWarning)
        out = pd.concat([out, pd.DataFrame(np.nan, index=out.index, columns=missing)], axis=1)
    out = add_coverage(counter_ratios(out))  # DCGM 4.6 counters: exact ratios where present
    label, limiter, ev = _classify(out, evidence)
    mspecs, mcode, share = _device_shares(out, device)
    gpu_share, parent, mig_text = gpu_shares(out, share)
    label[parent] = "unknown"  # a MIG parent's values are the whole GPU's: its instances carry the labels
    limiter[parent] = "unknown"
    out["label"] = label.tolist()
    out["limiter"] = limiter.tolist()
    out["gpu_share"] = gpu_share
    names = np.array([s.name if s is not None else None for s in mspecs], dtype=object)[mcode]
    flops = np.zeros(n)
    have = np.zeros(n, dtype=bool)
    for pipe, col in PIPES.items():
        peak = np.array([(s.peaks.get(pipe) or 0.0) if s is not None else 0.0 for s in mspecs])[mcode]
        v = out[col].to_numpy(dtype="float64")
        use = (peak != 0) & np.isfinite(v)
        flops = flops + np.where(use, np.nan_to_num(v) * peak * share, 0.0)
        have |= use
    bw = np.array([(s.bandwidth.get("dram") or 0.0) if s is not None else 0.0 for s in mspecs])[mcode]
    dram = out["dram_active"].to_numpy(dtype="float64")
    mem_share = _memory_shares(out, share)
    dram_bw = np.where((bw != 0) & np.isfinite(dram), dram * bw * mem_share, np.nan)
    out["est_flops_s"] = np.where(have & ~parent, flops, np.nan)  # a MIG parent's work: its instances
    out["est_dram_bytes_s"] = dram_bw
    with np.errstate(invalid="ignore", divide="ignore"):
        out["est_intensity"] = np.where(dram_bw > 0, out["est_flops_s"] / dram_bw, np.nan)
    spec_clock = spec_clocks(mspecs, mcode)
    est_ofu = np.where(parent, np.nan, ofu(out, spec_clock))  # a MIG parent's work: its instances
    out["est_ofu"] = est_ofu
    if not evidence:  # labels and estimates only (the fleet roll-ups); evidence is text per window
        out["evidence"] = None
        out["device"] = names.tolist()
        return out
    ev.append(_strs("MIG instance: values relative to the instance; compute peaks scaled by %.3f of the GPU",
                    share, share < 1.0))
    ev.append(_strs("DRAM bandwidth scaled by the instance's memory slices, %.3f of the GPU", mem_share,
                    mem_share != share))
    ev.insert(0, np.array(mig_text, dtype=object))
    est = names.astype(bool) & have
    tflops = _strs("est. %.1f TFLOP/s (activity x ", out["est_flops_s"].to_numpy() / 1e12, est)
    tflops[est] = tflops[est] + names[est] + " peaks; an estimate, not a count)"
    ev.append(tflops)
    ev.append(_ofu_ev(out, est_ofu, max_clocks(out, spec_clock)))
    out["evidence"] = [[x for x in row if x is not None] for row in zip(*ev, strict=True)]
    out["device"] = names.tolist()
    return out


def _ofu_ev(out: pd.DataFrame, est: np.ndarray, peak: np.ndarray) -> np.ndarray:
    """The OFU line of each window that has one (docs/formulas.md#ofu)."""
    ok = np.isfinite(est)
    res = np.full(len(est), None, dtype=object)
    if not ok.any():
        return res
    tensor, source = tensor_activity(out)
    clock = out["sm_clock_mhz"].to_numpy(dtype="float64")
    for i in np.flatnonzero(ok):
        what = "tensor pipe" if source[i] == "tensor" else "HMMA+IMMA+DFMA pipes"
        res[i] = (f"est. OFU {est[i]:.2f} ({what} {tensor[i]:.2f} x SM clock {clock[i]:.0f} / max "
                  f"{peak[i]:.0f} MHz; an MFU-like estimate, arXiv:2605.20799)")
    return res


def _memory_shares(out: pd.DataFrame, share: np.ndarray) -> np.ndarray:
    """Each window's share of the GPU's DRAM bandwidth: a MIG instance's memory slices where its
    profile and GPU tell them (:func:`identity.memory_share`), else its compute share."""
    if "mig_profile" not in out.columns:
        return share
    profiles = out["mig_profile"].to_numpy(dtype=object)
    models = out["model"].to_numpy(dtype=object) if "model" in out.columns else np.full(len(out), None, dtype=object)
    cache: dict[tuple[Any, Any], float | None] = {}
    res: np.ndarray = np.array(share, dtype="float64")
    for i, (p, m) in enumerate(zip(profiles, models, strict=True)):
        if not isinstance(p, str):
            continue
        key = (p, m)
        if key not in cache:
            cache[key] = memory_share(p, m)
        v = cache[key]
        if v is not None:
            res[i] = v
    return res


def _device_shares(out: pd.DataFrame, device: str | None) -> tuple[list[Any], np.ndarray, np.ndarray]:
    """Per distinct model its spec (``None``: unknown), each window's index into them, and each
    window's MIG share of the GPU (resolved once per distinct model and MIG profile pair)."""
    n = len(out)
    models = out["model"].to_numpy(dtype=object) if "model" in out.columns else np.full(n, None, dtype=object)
    mcode, muniq = pd.factorize(models, use_na_sentinel=True)
    mcode = np.where(mcode < 0, len(muniq), mcode)
    mkeys: list[Any] = [*muniq, None]
    specs = resolve_devices(list(dict.fromkeys(mkeys)), device)
    mspecs = [specs.get(m) for m in mkeys]
    profiles = out["mig_profile"].to_numpy(dtype=object) if "mig_profile" in out.columns \
        else np.full(n, None, dtype=object)
    pcode, puniq = pd.factorize(profiles, use_na_sentinel=True)
    pcode = np.where(pcode < 0, len(puniq), pcode)
    pair, inv = np.unique(pcode * (len(mkeys) + 1) + mcode, return_inverse=True)
    rep = np.zeros(len(pair), dtype="int64")
    rep[inv] = np.arange(n)
    share = np.array([mig_share(profiles[i], models[i]) for i in rep], dtype="float64")[inv]
    return mspecs, mcode, share


def window_devices(windows: pd.DataFrame, device: str | None = None) -> list[dict[str, Any]]:
    """Contract ``devices`` entries for the device specs the windows used."""
    models = windows["model"].tolist() if len(windows) and "model" in windows.columns else []
    specs = resolve_devices(list(dict.fromkeys(models)), device) if models or device else {}
    if device and not specs:
        specs = resolve_devices([None], device)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for spec in specs.values():
        if spec is not None and spec.name not in seen:
            seen.add(spec.name)
            out.append(spec.as_contract())
    return out
