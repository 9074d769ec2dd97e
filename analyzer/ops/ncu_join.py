"""The op model checked against ncu (``docs/formulas.md#op-ncu``): with a trace and an ncu profile of the same
program, each op's kernels are joined to ncu launches (name, then base name + grid + block, as the timeline
join; the k-th launch of a name in the trace to the k-th launch ncu profiled) and the model's FLOPs and bytes
are set against the measured SASS + tensor FLOP counts and ``dram__bytes``, per op category."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.ops.attribution import attribute
from rooftop.analyzer.ops.model import model
from rooftop.analyzer.timeline.join import base_name
from rooftop.parsers.model import ParseResult

LISTED = 20


def _ncu_launches(kernels: pd.DataFrame, results: pd.DataFrame) -> tuple[pd.DataFrame, dict[tuple[str, ...], list[int]]]:
    """The ncu launches in launch order, and (name,) and (base, grid, block) -> their row positions."""
    have = [c for c in ("grid_dim", "block_dim") if c not in results.columns]
    r = results.merge(kernels[["input", "index", *have]], on=["input", "index"], how="left") if have else results
    r = r.sort_values(["input", "index"], kind="stable").reset_index(drop=True)
    out: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, (name, grid, block) in enumerate(zip(r["name"].astype(str), r["grid_dim"].astype(str),
                                                r["block_dim"].astype(str), strict=True)):
        out[(name,)].append(i)
        out[(base_name(name), grid, block)].append(i)
    return r, out


def _matched_rows(att: Any, launches: dict[tuple[str, ...], list[int]]) -> tuple[Any, dict[int, list[int | None]]]:
    """Each attributed kernel of the trace, in start order, joined to its ncu launch: per op row, the ncu row
    position of each of its kernels (``None``: no launch left for that key); also those kernels."""
    k = att.acts[(att.acts["kind"] == "kernel") & (att.acts["op"] >= 0)].sort_values("start_ns", kind="stable")
    seen: dict[tuple[str, ...], int] = defaultdict(int)
    rows: dict[int, list[int | None]] = defaultdict(list)
    for name, grid, block, op in zip(k["name"].astype(str), k["grid_dim"].astype(str), k["block_dim"].astype(str),
                                     k["op"].to_numpy(np.int64).tolist(), strict=True):
        key: tuple[str, ...] = (name,)
        if key not in launches:
            key = (base_name(name), grid, block)
        got = launches.get(key, [])
        i = seen[key]
        seen[key] += 1
        rows[op].append(got[i] if i < len(got) else None)
    return k, rows


def _measured_per_op(r: ParseResult, ncu: pd.DataFrame, launches: dict[tuple[str, ...], list[int]]
                     ) -> tuple[dict[int, tuple[float, float]], int, int, Any]:
    """Per op row whose every kernel matched an ncu launch with both counts: (FLOPs, DRAM bytes);
    also the kernels matched and unmatched, and the attribution."""
    att = attribute(r.events, r.ops)
    _, rows = _matched_rows(att, launches)
    flops = pd.to_numeric(ncu.get("flops"), errors="coerce").to_numpy(dtype=float)
    dram = pd.to_numeric(ncu.get("bytes_dram"), errors="coerce").to_numpy(dtype=float)
    out: dict[int, tuple[float, float]] = {}
    matched = unmatched = 0
    for op, positions in rows.items():
        good = [i for i in positions if i is not None and np.isfinite(flops[i]) and np.isfinite(dram[i])]
        matched += len(good)
        unmatched += len(positions) - len(good)
        if len(good) == len(positions):
            out[op] = (float(sum(flops[i] for i in good)), float(sum(dram[i] for i in good)))
    return out, matched, unmatched, att


SignatureKey = tuple[str, str, str, str | None, str | None, str | None]
NcuLaunch = tuple[str, str, float, str]  # label, limiter, ncu duration s, kernel name


def ncu_kernels_per_signature(results: list[ParseResult], kernels: pd.DataFrame, kernel_results: pd.DataFrame
                              ) -> dict[SignatureKey, list[NcuLaunch]]:
    """(input, device, op name, dims, dtypes, concrete inputs) -> the ncu launches its calls' kernels matched,
    as :data:`NcuLaunch`: the op's verdict from ncu (docs/formulas.md#op-ncu-verdicts).
    Only op calls whose every kernel matched a launch count."""
    if not len(kernel_results) or "label" not in kernel_results.columns:
        return {}
    ncu, launches = _ncu_launches(kernels, kernel_results)
    labels = ncu["label"].astype(str).tolist()
    limiters = ncu["limiter"].astype(str).tolist() if "limiter" in ncu.columns else ["unknown"] * len(ncu)
    dur = pd.to_numeric(ncu.get("duration_s"), errors="coerce").to_numpy(dtype=float)
    names = ncu["name"].astype(str).tolist()
    out: dict[SignatureKey, list[NcuLaunch]] = defaultdict(list)
    for r in results:
        if not r.meta.get("timeline") or not len(r.ops):
            continue
        att = attribute(r.events, r.ops)
        k, rows = _matched_rows(att, launches)
        device = dict(zip(k["op"].to_numpy(np.int64).tolist(), k["device"].fillna("").astype(str), strict=True))
        for op, positions in rows.items():
            if not positions or any(i is None for i in positions):
                continue
            h = att.hosts.iloc[op]
            key = (r.accounting.path, device[op], str(h["name"]), _text(h["input_dims"]), _text(h["input_types"]),
                   _text(h["concrete_inputs"]))
            out[key].extend((labels[i], limiters[i], float(dur[i]) if np.isfinite(dur[i]) else 0.0, names[i])
                            for i in positions if i is not None)
    return dict(out)


def _text(v: object) -> str | None:
    return v if isinstance(v, str) else None


def cross_validate(results: list[ParseResult], kernels: pd.DataFrame, kernel_results: pd.DataFrame
                   ) -> list[dict[str, Any]]:
    """One entry per trace input: matched op calls, and per category the model against ncu."""
    if not len(kernel_results):
        return []
    ncu, launches = _ncu_launches(kernels, kernel_results)
    out = []
    for r in results:
        if not r.meta.get("timeline") or not len(r.ops):
            continue
        per_op, matched, unmatched, att = _measured_per_op(r, ncu, launches)
        cats: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        ops: list[dict[str, Any]] = []
        for op, (m_flops, m_dram) in sorted(per_op.items()):
            h = att.hosts.iloc[op]
            mod = model(str(h["name"]), _text(h["input_dims"]), _text(h["input_types"]), _text(h["concrete_inputs"]),
                        _text(h["collective"]))
            if mod.work is None:
                continue
            w = mod.work
            c = cats[mod.category]
            for key, v in (("calls", 1), ("model_flops", w.flops), ("measured_flops", m_flops),
                           ("model_bytes_min", w.bytes_min), ("model_bytes_max", w.bytes_max),
                           ("measured_dram_bytes", m_dram),
                           ("dram_in_interval", float(w.bytes_min <= m_dram <= w.bytes_max))):
                c[key] += v
            if len(ops) < LISTED:
                ops.append({"name": str(h["name"]), "shape": w.shape, "category": mod.category, "model_flops": w.flops,
                            "measured_flops": m_flops, "model_bytes_min": w.bytes_min, "model_bytes_max": w.bytes_max,
                            "measured_dram_bytes": m_dram})
        out.append({"input": r.accounting.path, "kernels_matched": matched, "kernels_unmatched": unmatched,
                    "calls_compared": int(sum(c["calls"] for c in cats.values())),
                    "categories": [_category(name, c) for name, c in sorted(cats.items())], "ops": ops})
    return out


def _category(name: str, c: dict[str, float]) -> dict[str, Any]:
    mf, mb = c["measured_flops"], c["measured_dram_bytes"]
    return {"category": name, "calls": int(c["calls"]), "model_flops": c["model_flops"], "measured_flops": mf,
            "flops_error": (c["model_flops"] / mf - 1) if mf else None,
            "model_bytes_min": c["model_bytes_min"], "model_bytes_max": c["model_bytes_max"],
            "measured_dram_bytes": mb,
            "bytes_min_error": (c["model_bytes_min"] / mb - 1) if mb else None,
            "dram_in_interval": c["dram_in_interval"] / c["calls"] if c["calls"] else None}
