"""The document's ``ops`` list and ``ops_coverage`` for every trace input (``docs/formulas.md#ops``):
attribution, the formula table, a verdict per op signature, coverage per device."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rooftop.analyzer.ceilings.devices import DeviceSpec, load_device_option, lookup
from rooftop.analyzer.ops.attribution import REASONS, attribute, coverage_times
from rooftop.analyzer.ops.categories import category_split, step_ops
from rooftop.analyzer.ops.findings import op_findings
from rooftop.analyzer.ops.ncu_join import NcuLaunch, SignatureKey
from rooftop.analyzer.ops.signatures import Signature, signatures
from rooftop.analyzer.ops.verdicts import Verdict, ncu_verdict, verdict
from rooftop.parsers.model import ParseResult

TOP_KERNELS = 3
UNMODELLED_LISTED = 10


@dataclass
class OpsAnalysis:
    ops: list[dict[str, Any]] = field(default_factory=list)
    coverage: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    # (input, ProfilerStep name, device) -> attributed_s and top_ops (docs/formulas.md#op-categories)
    steps: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)


def _sec(ns: float) -> float:
    return round(ns / 1e9, 9)


def _json(text: str | None) -> Any:
    return json.loads(text) if text else None


def _device(r: ParseResult, device: str, option: DeviceSpec | None) -> tuple[str | None, DeviceSpec | None]:
    names = r.meta.get("gpu_names") or {}
    name = names.get(device) if isinstance(names, dict) else None
    return (name if isinstance(name, str) and name else None), option or (lookup(name) if name else None)


def _entry(r: ParseResult, sig: Signature, v: Verdict, gpu: str | None, device_ns: int, source: str
           ) -> dict[str, Any]:
    w = sig.modelled.work
    t = sig.time_ns / 1e9
    flops = w.flops * sig.calls if w else None
    lo = w.bytes_min * sig.calls if w else None
    hi = w.bytes_max * sig.calls if w else None
    if v.limiter in ("host-link", "latency") and sig.link_only and sig.link is not None and sig.link.bytes is not None:
        # across the host link each copied byte moves once (docs/formulas.md#op-memory), whatever the formula's
        # read + write of the two tensors
        flops, lo, hi = 0, sig.link.bytes, sig.link.bytes
    top = [k for k, _ in sorted(sig.kernel_names.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_KERNELS]]
    return {
        "input": r.accounting.path, "device": sig.device, "gpu_name": gpu, "name": sig.name,
        "category": sig.modelled.category, "shape": w.shape if w else None,
        "input_dims": _json(sig.dims), "input_types": _json(sig.types), "concrete_inputs": _json(sig.concrete),
        "calls": sig.calls, "kernels": sig.kernels, "activities": sig.activities, "kernel_time_s": _sec(sig.time_ns),
        "time_share": round(sig.time_ns / device_ns, 6) if device_ns else None,
        "flops": flops, "bytes_min": lo, "bytes_max": hi,
        "intensity": ([flops / hi, flops / lo] if flops is not None and lo and hi else None),
        "achieved_flops_per_s": (flops / t if flops is not None and t > 0 else None),
        "achieved_bytes_per_s": ([lo / t, hi / t] if lo is not None and hi is not None and t > 0 else None),
        "label": v.label, "limiter": v.limiter, "pct_of_roof": v.pct_of_roof, "roof": v.roof,
        "min_time_s": v.min_time_s, "max_saving_s": v.max_saving_s, "evidence": v.evidence, "verdict_source": source,
        "formula": sig.modelled.source or None, "unmodelled": sig.modelled.reason or None,
        "params": dict(w.params) if w else {}, "top_kernels": top,
    }


def _coverage(r: ParseResult, device: str, times: dict[str, int], sigs: list[Signature],
              gpu: str | None, spec: DeviceSpec | None) -> dict[str, Any]:
    mine = [s for s in sigs if s.device == device]
    attributed = times["attributed_ns"]
    launched = times["gpu_ns"] - times["launch not in trace"]
    modelled = sum(s.time_ns for s in mine if s.modelled.work is not None)
    unmodelled: dict[tuple[str, str], int] = {}
    for s in mine:
        if s.modelled.work is None:
            key = (s.name, s.modelled.reason)
            unmodelled[key] = unmodelled.get(key, 0) + s.time_ns
    listed = sorted(unmodelled.items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "input": r.accounting.path, "device": device, "gpu_name": gpu, "roof_device": spec.name if spec else None,
        "gpu_time_s": _sec(times["gpu_ns"]), "launched_s": _sec(launched), "attributed_s": _sec(attributed),
        "modelled_s": _sec(modelled),
        "attributed": round(attributed / launched, 6) if launched else None,
        "attributed_of_all": round(attributed / times["gpu_ns"], 6) if times["gpu_ns"] else None,
        "modelled": round(modelled / attributed, 6) if attributed else None,
        "unattributed": [{"reason": why, "time_s": _sec(times[why])} for why in REASONS if times[why]],
        "unmodelled": [{"name": n, "reason": why, "time_s": _sec(ns)} for (n, why), ns in listed[:UNMODELLED_LISTED]],
        "unmodelled_left_out": max(0, len(listed) - UNMODELLED_LISTED),
        "signatures": len(mine),
        **category_split(sigs, device, times["gpu_ns"], attributed),
    }


def analyze_ops(results: list[ParseResult], device: str | None = None, top: int = 10,
                ncu: dict[SignatureKey, list[NcuLaunch]] | None = None) -> OpsAnalysis:
    """Every op of every trace input with GPU activity: attributed, modelled, judged; the ``top`` op
    findings. ``ncu``: the ncu launches matched per op signature (a paired profile), whose verdict wins
    (docs/formulas.md#op-ncu-verdicts)."""
    option = load_device_option(device) if device else None
    out = OpsAnalysis()
    for r in results:
        if not r.meta.get("timeline") or not len(r.events):
            continue
        att = attribute(r.events, r.ops)
        if not len(att.acts):
            continue
        times = coverage_times(att)
        sigs = signatures(att)
        for (step, dev), in_step in step_ops(att, sigs, r.events).items():
            out.steps[(r.accounting.path, step, dev)] = in_step
        for dev in sorted(times):
            gpu, spec = _device(r, dev, option)
            dev_ns = times[dev]["gpu_ns"]
            out.coverage.append(_coverage(r, dev, times[dev], sigs, gpu, spec))
            mine = sorted((s for s in sigs if s.device == dev), key=lambda s: (-s.time_ns, s.name, s.dims or ""))
            for s in mine:
                v = verdict(s, spec)
                got = (ncu or {}).get((r.accounting.path, s.device, s.name, s.dims, s.types, s.concrete))
                out.ops.append(_entry(r, s, ncu_verdict(v, got) if got else v, gpu, dev_ns, "ncu" if got else "trace"))
    out.findings = op_findings(out.ops, top)
    return out
