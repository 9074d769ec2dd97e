"""Lint of a window analysis: multiplexing zeros, sampling interval and gaps, missing fields, sentinels."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.codes import _epoch_ms
from rooftop.analyzer.windows.fields import PROFILE_METRICS, RATIO_METRICS, gpu_key
from rooftop.analyzer.windows.rules import IDLE_MAX, resolve_devices
from rooftop.parsers.dcgm import fields as F

_HOPPER_PLUS = re.compile(r"\b(H100|H200|H800|H20|GH200|B100|B200|B300|GB200|GB300|RTX PRO|RTX 50\d0)\b", re.I)


def _txt(x: Any) -> str:
    return x if isinstance(x, str) and x else "-"


def _pre_hopper(model: Any, spec: Any) -> bool:
    if spec is not None and getattr(spec, "cc", None):
        try:
            return float(spec.cc) < 9.0
        except ValueError:
            pass
    return isinstance(model, str) and not _HOPPER_PLUS.search(model)


def _item(code: str, message: str) -> dict[str, Any]:
    return {"code": code, "message": message, "kernels": []}


def _lint(samples: pd.DataFrame, windows: pd.DataFrame, device: str | None) -> list[dict[str, Any]]:
    """Window lint items: multiplexing zeros, sampling interval and gaps, missing profiling fields, bad values."""
    if not len(windows):
        return []
    return [*device_assumed_lint(windows, device), *_multiplexing_lint(windows, device), *_interval_lint(samples),
            *_profiling_fields_lint(windows), *_value_lint(samples)]


def no_window_fields_lint(samples: pd.DataFrame) -> list[dict[str, Any]]:
    """``dcgm-no-window-fields``: samples were read but none is a field a window is built from, so no
    GPU gets a label; names the fields the input has and the ones that would decide
    (docs/formulas.md#windows). The page said "no findings" and nothing else (corpus dcgm-exporter
    pull/736: decoder, encoder and framebuffer fields only)."""
    if not len(samples):
        return []
    ids = pd.unique(samples["field_id"].to_numpy())
    names = sorted({F.field_name(int(i)) for i in ids})
    gpus = samples.drop_duplicates(["host", "gpu"]).shape[0] if {"host", "gpu"} <= set(samples.columns) else 0
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return [_item("dcgm-no-window-fields",
                  f"{len(samples):,} sample(s) of {gpus} GPU(s) hold no field a window is built from ({shown}): "
                  "no GPU can be labelled busy, idle or bound, so the label is unknown. Collect the activity "
                  "fields: DCGM_FI_PROF_GR_ENGINE_ACTIVE (1001), SM_ACTIVE (1002), PIPE_TENSOR_ACTIVE (1004), "
                  "DRAM_ACTIVE (1005), or at least DCGM_FI_DEV_GPU_UTIL (203)")]


def device_assumed_lint(windows: pd.DataFrame, device: str | None) -> list[dict[str, Any]]:
    """``device-assumed`` for each model name the device table matches only by its family pattern
    (a vGPU profile such as ``GRID A100-40C`` or ``A10-24Q`` taken as one SXM/PCIe board): its
    ceilings are that entry's, not the name's (docs/formulas.md#ceilings, "Which device")."""
    if device or not len(windows) or "model" not in windows.columns:
        return []
    from rooftop.analyzer.ceilings.device_match import match_name

    out = []
    for model in dict.fromkeys(windows["model"].tolist()):
        if not isinstance(model, str) or not model:
            continue
        spec, exact = match_name(model)
        if spec is not None and not exact:
            out.append(_item("device-assumed",
                             f"model {model!r} is not an entry of the device table; its ceilings and "
                             f"estimates are those of {spec.name}, matched by family (a vGPU profile or "
                             "another board of the family may differ): pass --device NAME if it is "
                             "another board"))
    return out


def _multiplexing_lint(windows: pd.DataFrame, device: str | None) -> list[dict[str, Any]]:
    """SM active exactly 0 in samples while GR active > 0 (pre-Hopper profiling module)."""
    specs = resolve_devices(list(dict.fromkeys(windows["model"].tolist())), device)
    susp = windows[(windows["gr_active"] > IDLE_MAX) & (windows["sm_active__n"] > 0)
                   & (windows["sm_active__zero"] >= 0.2 * windows["sm_active__n"])]
    susp = susp[[_pre_hopper(m, specs.get(m)) for m in susp["model"]]]
    if not len(susp):
        return []
    gpus = sorted({f"{_txt(h)}/{_txt(g)}" for h, g in zip(susp["host"], susp["gpu"], strict=True)})
    return [_item("dcgm-multiplexing-zeros",
                  f"{len(susp)} window(s) on pre-Hopper GPUs ({', '.join(gpus[:5])}) read SM active exactly 0 "
                  "while the graphics engine was busy: profiling counters from different hardware groups are "
                  "multiplexed (or held by another profiler); treat those zeros as missing, watch fewer "
                  "profiling fields at once")]


def _interval_lint(samples: pd.DataFrame) -> list[dict[str, Any]]:
    """Sampling interval per GPU: the 30 s exporter default and gaps over 3x the usual interval."""
    out: list[dict[str, Any]] = []
    ent = ["host", "gpu", "uuid", "pci_bus_id", "mig"]
    s = samples[[c for c in ent if c in samples.columns] + ["timestamp"]].drop_duplicates()
    ms = _epoch_ms(s["timestamp"])
    s = s.assign(_t=ms).sort_values([*[c for c in ent if c in s.columns], "_t"], kind="stable")
    keys = [c for c in ent if c in s.columns]
    s = s.assign(_d=s.groupby(keys, dropna=False, sort=False)["_t"].diff())
    s = s[s["_d"] > 0]
    if not len(s):
        return out
    med = s.groupby(keys, dropna=False, sort=False)["_d"].transform("median").to_numpy(dtype="float64")
    d = s["_d"].to_numpy(dtype="float64")
    ent_med = s.assign(_m=med).drop_duplicates(keys)
    at30 = ent_med[(ent_med["_m"] - 30000).abs() <= 1000]
    if len(at30):
        names = [f"{_txt(h)}/{_txt(g)}" for h, g in zip(at30["host"], at30["gpu"], strict=True)]
        out.append(_item("dcgm-exporter-30s-interval",
                         f"samples of {len(at30)} GPU(s) ({', '.join(sorted(set(names))[:5])}) are 30 s apart "
                         "(dcgm-exporter's default collect interval, -c 30000): phases shorter than a minute are "
                         "averaged away; use -c 1000 (or dcgmi dmon -d 1000) to see them"))
    gap = d > np.maximum(3 * med, 1.0)
    if gap.any():
        worst = float(d[gap].max()) / 1000
        out.append(_item("dcgm-sampling-gap",
                         f"{int(gap.sum())} gap(s) in sampling longer than 3x the GPU's usual interval "
                         f"(longest {worst:g} s): exporter restarts, node down or scrape failures; those times "
                         "have no windows"))
    return out


def _profiling_fields_lint(windows: pd.DataFrame) -> list[dict[str, Any]]:
    """GPUs with no DCGM profiling field at all."""
    prof = [f"{m}__n" for m in ("gr_active", "sm_active", "tensor_active", "dram_active",
                                 "fp64_active", "fp32_active", "fp16_active")]
    per = windows.assign(_p=windows[prof].sum(axis=1)).groupby(
        ["host", "gpu", "mig"], dropna=False, sort=True).agg(p=("_p", "sum"), model=("model", "first"))
    none = per[per["p"] == 0]
    if not len(none):
        return []
    names = [f"{_txt(h)}/{_txt(g)}{'/' + mg if isinstance(mg, str) else ''}"
             f" ({mo or 'model unknown'})" for (h, g, mg), mo in zip(none.index, none["model"], strict=True)]
    return [_item("dcgm-no-profiling-fields",
                  f"no DCGM profiling fields (1001-1008) for {len(none)} GPU(s): {', '.join(names[:6])}. "
                  "vGPU guests and pre-Volta GPUs have none; dcgm-exporter's default CSV enables only GR, tensor "
                  "and DRAM; another profiler may hold the counters. Those windows use NVML GPU_UTIL only")]


def _value_lint(samples: pd.DataFrame) -> list[dict[str, Any]]:
    """Sentinel and implausible values that reached the table."""
    out: list[dict[str, Any]] = []
    vals = samples["value"].to_numpy(dtype="float64")
    sent = F.sentinel_mask(vals)
    if sent.any():
        out.append(_item("dcgm-sentinel-values", f"{int(sent.sum())} sample(s) hold DCGM blank sentinel values "
                                                 "(DCGM_*_BLANK/NOT_SUPPORTED...): ignored as data"))
    ratio_ids = [k for k, v in PROFILE_METRICS.items() if v in RATIO_METRICS]
    fid = samples["field_id"].to_numpy()
    big = np.isin(fid, ratio_ids) & (vals > 1.2) & ~sent
    if big.any():
        out.append(_item("dcgm-implausible-ratio", f"{int(big.sum())} profiling ratio sample(s) above 1.2 (max "
                                                   f"{float(vals[big].max()):g}); ratios are 0..1 (slightly above 1 "
                                                   "is possible under MIG): check units or placeholder values"))
    return out


def coverage_lint(windows: pd.DataFrame) -> list[dict[str, Any]]:
    """One-sample windows of GPUs whose sampling interval cannot be measured (instant scrapes):
    they cover 0 s and count no GPU-hours, never stretched to the window (docs/formulas.md#windows)."""
    if not len(windows) or "interval_s" not in windows.columns:
        return []
    lone = windows[~np.isfinite(windows["interval_s"].to_numpy(dtype="float64"))
                   & (windows["covered_s"].to_numpy(dtype="float64") <= 0)]
    if not len(lone):
        return []
    gpus = sorted({gpu_key(h, g, m) for h, g, m in zip(lone["host"], lone["gpu"], lone["mig"], strict=True)})
    return [{"code": "dcgm-single-sample-window", "kernels": [],
             "message": f"{len(lone)} window(s) of {len(gpus)} GPU(s) ({', '.join(gpus[:5])}) hold one instant "
                        "sample and no sampling interval can be measured: they cover 0 s and count no "
                        "GPU-hours (not stretched to the window); scrape the exporter repeatedly (a range "
                        "query or several scrapes) to measure time"}]
