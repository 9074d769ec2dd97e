"""What the reports draw for kernels, decided here so the reports only draw: roofline panels and family rows.

Rules (docs/formulas.md#report-view):

* **One panel per device and ceiling set.** A kernel belongs to the panel of its ceiling device and of
  *which entry* each of its ceilings came from (``export``/``builtin``/``user`` per ceiling), so a
  panel holds exactly the kind of ceilings its kernels were classified against.
* **A panel's ceiling value** is the time-weighted median of the values its kernels used (per-kernel
  export ceilings follow each kernel's measured clock); ``min``/``max`` give their spread.
* **Family rows** come from :func:`rooftop.analyzer.kernels.families.family_table` over each panel's kernels
  (the label and limiter rule the findings use); ``kernels``/``representative`` are positions in the
  document's ``kernels`` list; ``time_share`` is of all kernel time.
* **Placed points**: a family with achieved FLOP/s > 0 and an intensity > 0 at a level is a point at
  that level. The :data:`MAX_LABELLED` largest placed families by time of a panel are named on the chart.
* **Points without a roof**: ``no_roof`` lists the memory levels at which the panel places points but
  has no bandwidth ceiling (neither the export nor the device table gives one); the chart says so.
* **Nothing placeable**: ``why_empty`` says what is missing and what to collect.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from rooftop.analyzer.document import jsonable
from rooftop.analyzer.kernels.families import family_table
from rooftop.analyzer.metrics.columns import column
from rooftop.analyzer.schema import (
    BANDWIDTH_CEILINGS,
    CEILING_UNITS,
    COMPUTE_CEILINGS,
    MEMORY_LEVELS,
    CeilingKey,
    FamilyRow,
    MemoryLevel,
    RooflineCeiling,
    RooflineView,
    WindowPanel,
    ceiling_kind,
)
from rooftop.parsers.model import concat_frames

MAX_LABELLED = 5
MAX_BANDWIDTH = 10  # families on a panel's bandwidth chart
LEVELS = BANDWIDTH_CEILINGS  # the memory levels, outermost first: dram, l2, l1
# the ceilings a panel draws, with their display names (their kind and unit: analyzer/schema/vocab.py)
CEILING_KEYS: dict[CeilingKey, str] = {
    "fp64": "FP64",
    "fp32": "FP32",
    "fp16": "FP16",
    "tensor": "Tensor FP16/BF16",
    "dram": "DRAM",
    "l2": "L2",
    "l1": "L1",
}


class KernelView(TypedDict):
    """The document keys :func:`kernel_view` decides."""

    roofline: RooflineView
    families: list[FamilyRow]


def _ceiling(key: CeilingKey, value: float, lo: float, hi: float, source: Any, entry: str, provenance: Any,
             kernels: int, binding: int | None) -> RooflineCeiling:
    """One drawn ceiling: kind and unit from the key's vocabulary, precision or level the key."""
    kind = ceiling_kind(key)
    return {"key": key, "name": CEILING_KEYS[key], "kind": kind,
            "precision": key if key in COMPUTE_CEILINGS else None,
            "level": key if key in MEMORY_LEVELS else None,
            "value": value, "min": lo, "max": hi, "unit": CEILING_UNITS[kind], "source": source,
            "entry": entry, "provenance": provenance, "kernels": kernels, "binding_kernels": binding}
COLLECT = ("collect FLOP and byte counters, e.g. `ncu --set full` or `ncu --section SpeedOfLight_RooflineChart "
           "--section MemoryWorkloadAnalysis_Tables` (a raw-page CSV: `ncu --import FILE --csv --page raw`)")


def _col(frame: pd.DataFrame | None, name: str, n: int) -> np.ndarray:
    if frame is None:
        return np.full(n, np.nan)
    return np.asarray(column(frame, name).to_numpy(dtype=float), dtype=float)


def _text(frame: pd.DataFrame | None, name: str, n: int) -> list[str | None]:
    if frame is None or name not in frame.columns:
        return [None] * n
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else str(v)
            for v in frame[name].tolist()]


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The value at half the total weight (values sorted); equal weights where none is positive."""
    ok = np.isfinite(values)
    v, w = values[ok], np.nan_to_num(weights[ok], nan=0.0)
    if not len(v):
        return math.nan
    if not (w > 0).any():
        w = np.ones_like(v)
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    cum = np.cumsum(w)
    return float(v[int(np.searchsorted(cum, cum[-1] / 2.0))])


_Sources = tuple[tuple[CeilingKey, str], ...]  # (ceiling key, the devices[] source it came from)


def _text_codes(frame: pd.DataFrame | None, name: str, n: int) -> tuple[np.ndarray, list[str]]:
    """:func:`_text` as codes into its distinct texts: ``texts[codes[i]]`` is ``_text(frame, name, n)[i]``,
    code -1 where that is None. One hash pass instead of a ``str`` per kernel (bench/NOTES.md);
    ``tests/test_kernel_fast_paths.py`` holds the two equal."""
    if frame is None or name not in frame.columns:
        return np.full(n, -1, dtype=np.int64), []
    values = frame[name].to_numpy(dtype=object)
    codes, uniq = pd.factorize(values, use_na_sentinel=True)
    if all(type(u) is str for u in uniq) and all(v is None or v is pd.NA or (type(v) is float and math.isnan(v))
                                                for v in values[codes < 0].tolist()):
        return codes.astype(np.int64), list(uniq)
    codes, uniq = pd.factorize(np.asarray(_text(frame, name, n), dtype=object), use_na_sentinel=True)
    return codes.astype(np.int64), list(uniq)


def _panel_groups(results: pd.DataFrame, ceilings: pd.DataFrame | None) -> dict[tuple[str, _Sources], np.ndarray]:
    """Kernel rows (ascending) per panel key, keys in the order of their first kernel: the kernel's
    ceiling device (else its own device, else "unknown device") and the source of each of its ceilings.
    The key is built once per distinct combination of those texts, not per kernel."""
    n = len(results)
    cols = [_text_codes(ceilings, "ceiling_device", n), _text_codes(results, "device", n),
            *(_text_codes(ceilings, f"src_{_cname(k)}", n) for k in CEILING_KEYS)]
    combo, first = _combine([c for c, _ in cols])
    by_combo = np.argsort(combo, kind="stable")
    bounds = np.flatnonzero(np.diff(combo[by_combo])) + 1
    parts = dict(zip(combo[by_combo[np.r_[0, bounds]]].tolist(), np.split(by_combo, bounds), strict=True)) if n else {}
    groups: dict[tuple[str, _Sources], list[np.ndarray]] = {}
    for i in first.tolist():
        dev, own, *srcs = (texts[codes[i]] if codes[i] >= 0 else None for codes, texts in cols)
        key = (dev or own or "unknown device", tuple((k, str(v)) for k, v in zip(CEILING_KEYS, srcs, strict=True) if v))
        groups.setdefault(key, []).append(parts[int(combo[i])])
    return {k: v[0] if len(v) == 1 else np.sort(np.concatenate(v)) for k, v in groups.items()}


def _combine(codes: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """One code per row for the tuple of ``codes`` (-1 allowed), and the first row of each code in row order."""
    n = len(codes[0]) if codes else 0
    combo = np.zeros(n, dtype=np.int64)
    radix = 1
    for c in codes:
        size = int(c.max()) + 2 if n else 1
        if radix * size >= 2**62:  # too many distinct tuples for one integer: renumber what there is so far
            combo = np.unique(combo, return_inverse=True)[1].astype(np.int64)
            radix = int(combo.max()) + 1
        combo = combo * size + (c + 1)
        radix *= size
    _, first = np.unique(combo, return_index=True)
    return combo, np.sort(first)


def _cname(key: CeilingKey) -> str:
    return ("peak_" if ceiling_kind(key) == "compute" else "bw_") + key


def _ceiling_rows(ceilings: pd.DataFrame | None, rows: np.ndarray, weights: np.ndarray,
                  sources: _Sources, device: str, results: pd.DataFrame) -> list[RooflineCeiling]:
    """The panel's ceilings; ``binding_kernels``: its kernels whose dominant FLOP class (compute) or
    binding level (bandwidth) is this ceiling (analyzer.kernels.analyze ``dominant_class``/``binding_level``)."""
    out = []
    n = 0 if ceilings is None else len(ceilings)
    binding_codes = {col: _text_codes(results, col, len(results)) for col in ("dominant_class", "binding_level")}
    for key, source in sources:
        b_codes, b_texts = binding_codes["dominant_class" if ceiling_kind(key) == "compute" else "binding_level"]
        binding = b_codes[rows]
        vals = _col(ceilings, _cname(key), n)[rows]
        if not np.isfinite(vals).any():
            continue
        d_codes, d_texts = _text_codes(ceilings, f"detail_{_cname(key)}", n)
        details = d_codes[rows]
        details = details[details >= 0]
        _, at, counts = np.unique(details, return_index=True, return_counts=True)
        seen = {d_texts[int(details[i])]: int(c) for i, c in sorted(zip(at.tolist(), counts.tolist(), strict=True))}
        seen = {t: c for t, c in seen.items() if t}  # set(list(...)): the iteration order set(details) had
        bound = int((binding == b_texts.index(key)).sum()) if key in b_texts else 0
        out.append(_ceiling(key, weighted_median(vals, weights), float(np.nanmin(vals)), float(np.nanmax(vals)),
                            source, f"{device}|{source}", max(set(list(seen)), key=seen.__getitem__) if seen else source,
                            int(np.isfinite(vals).sum()), bound if (binding >= 0).any() else None))
    return out


def _families(results: pd.DataFrame, rows: np.ndarray, every: pd.DataFrame | None = None) -> pd.DataFrame:
    """The family table of ``rows`` (ascending positions); ``every``: ``family_table(results)``, used when
    ``rows`` are all of them."""
    if every is not None and len(rows) == len(results):
        fam = every.copy()
    else:
        fam = family_table(results.iloc[rows].reset_index(drop=True))
    if len(fam):
        fam["kernels"] = [[int(rows[p]) for p in ks] for ks in fam["kernels"]]
        if "representative" in fam.columns:
            fam["representative"] = [int(rows[int(p)]) for p in fam["representative"]]
    return fam


def _placed(fam: pd.DataFrame) -> np.ndarray:
    if not len(fam):
        return np.zeros(0, dtype=bool)
    ach = pd.to_numeric(fam["achieved_flops_s"], errors="coerce").to_numpy(dtype=float)
    any_ai = np.zeros(len(fam), dtype=bool)
    for lvl in LEVELS:
        ai = pd.to_numeric(fam[f"intensity_{lvl}"], errors="coerce").to_numpy(dtype=float)
        any_ai |= np.isfinite(ai) & (ai > 0)
    return np.asarray(np.isfinite(ach) & (ach > 0) & any_ai, dtype=bool)


def no_roof(fam: pd.DataFrame, placed: Sequence[int], ceilings: Sequence[RooflineCeiling]) -> list[MemoryLevel]:
    """Memory levels with a placed family's point (intensity > 0) but no bandwidth ceiling in the panel."""
    roofs = {c["level"] for c in ceilings if c["kind"] == "bandwidth"}
    out = []
    for lvl in LEVELS:
        if lvl in roofs or not placed:
            continue
        ai = pd.to_numeric(fam.loc[list(placed), f"intensity_{lvl}"], errors="coerce").to_numpy(dtype=float)
        if (np.isfinite(ai) & (ai > 0)).any():
            out.append(lvl)
    return out


def bandwidth_rows(fam: pd.DataFrame, unplaced: Sequence[int],
                   ceilings: Sequence[RooflineCeiling]) -> list[dict[str, Any]]:
    """Families with bytes and time but no place on the FLOP roofline (no FLOPs: copies, transposes,
    reductions; docs/formulas.md#report-view): per level the achieved Σ bytes / Σ time and its % of the
    panel's ceiling, and the time the bytes need at least at the ceilings (max over the levels with one), the
    :data:`MAX_BANDWIDTH` largest by time."""
    roofs = {c["level"]: float(c["value"]) for c in ceilings if c["kind"] == "bandwidth" and c["value"] > 0}
    out: list[dict[str, Any]] = []
    for i in unplaced:
        t = _num(fam.at[i, "time_s"])
        if t is None or t <= 0:
            continue
        levels, need = [], 0.0
        for lvl in ("dram", "l2", "l1"):
            b = _num(fam.at[i, f"bytes_{lvl}"])
            if b is None or b <= 0:
                continue
            roof = roofs.get(lvl)
            levels.append({"level": lvl, "bytes_s": b / t, "pct": 100.0 * b / t / roof if roof else None})
            need = max(need, b / roof) if roof else need
        if levels:
            out.append({"family": int(i), "levels": levels, "bound_s": need if need > 0 else None})
    return out[:MAX_BANDWIDTH]


def _num(v: Any) -> float | None:
    x = pd.to_numeric(v, errors="coerce")
    return float(x) if x is not None and np.isfinite(x) else None


def why_empty(results: pd.DataFrame) -> str:
    """One sentence: why no kernel can be placed on a roofline, and what to collect."""
    n = len(results)
    flops = _col(results, "flops", n)
    dur = _col(results, "duration_s", n)
    byts = np.column_stack([_col(results, f"bytes_{lvl}", n) for lvl in LEVELS]) if n else np.zeros((0, 3))
    has_f = int((np.isfinite(flops) & (flops > 0)).sum())
    has_b = int((np.isfinite(byts) & (byts > 0)).any(axis=1).sum()) if n else 0
    has_t = int((np.isfinite(dur) & (dur > 0)).sum())
    missing = [w for w, k in (("FLOP counts", has_f), ("bytes moved", has_b), ("durations", has_t)) if k == 0]
    if not missing:
        both = int((np.isfinite(flops) & (flops > 0) & (np.isfinite(byts) & (byts > 0)).any(axis=1)).sum())
        what = f"only {has_f} launch(es) have FLOPs and {has_b} bytes, and {both} both"
    else:
        what = "no launch has " + " or ".join(missing)
    return (f"No roofline: a kernel is placed by its FLOP/s and FLOP/byte, and among {n} launch(es) "
            f"{what}; {COLLECT}.")


def kernel_view(results: pd.DataFrame, ceilings: pd.DataFrame | None = None,
                windows: Sequence[Mapping[str, Any]] = (), device: str | None = None,
                families: pd.DataFrame | None = None) -> KernelView:
    """Document keys ``roofline`` (``panels``, ``why_empty``) and ``families`` for ``results``.

    ``ceilings``: the per-kernel ceilings frame of :func:`rooftop.analyzer.kernels.analyze.analyze_kernels`
    (``peak_<class>``, ``bw_<lvl>``, ``src_*``, ``detail_*``, ``ceiling_device``), row-aligned.
    ``families``: ``family_table(results)`` when the caller has it (a panel of every kernel reuses it).
    """
    n = len(results)
    wpanels = window_view(windows, device) if windows else []
    if not n:
        return {"roofline": {"panels": [], "windows": wpanels, "why_empty": None}, "families": []}
    if ceilings is not None:
        ceilings = ceilings.reset_index(drop=True)
    groups = _panel_groups(results, ceilings)
    dur = np.nan_to_num(_col(results, "duration_s", n), nan=0.0)
    panels: list[dict[str, Any]] = []
    frames: list[pd.DataFrame] = []
    for (device, sources), idx in sorted(groups.items(), key=lambda kv: -float(dur[kv[1]].sum())):
        rows = np.asarray(idx, dtype=int)
        fam = _families(results, rows, families)
        pid = f"p{len(panels)}"
        fam["panel"] = pid
        fam["placed"] = _placed(fam)
        frames.append(fam)
        panels.append({"id": pid, "device": device, "kernels": len(rows), "time_s": float(dur[rows].sum()),
                       "ceilings": _ceiling_rows(ceilings, rows, dur[rows], sources, device, results)})
    fams = concat_frames(frames) if frames else pd.DataFrame()
    total = float(np.nansum(pd.to_numeric(fams["time_s"], errors="coerce"))) if len(fams) else 0.0
    if len(fams):
        t = pd.to_numeric(fams["time_s"], errors="coerce")
        fams["time_share"] = (t / total) if total > 0 else np.nan
        fams = fams.assign(_t=t.fillna(-1.0)).sort_values("_t", ascending=False, kind="stable").drop(columns="_t")
        fams = fams.reset_index(drop=True)
    for p in panels:
        mine = fams.index[(fams["panel"] == p["id"])] if len(fams) else pd.Index([])
        placed = [int(i) for i in mine if bool(fams.at[i, "placed"])]
        p["families"] = [int(i) for i in mine]
        p["placed"] = placed
        p["labelled"] = placed[:MAX_LABELLED]
        p["no_roof"] = no_roof(fams, placed, p["ceilings"])
        bw = bandwidth_rows(fams, [int(i) for i in mine if not bool(fams.at[i, "placed"])], p["ceilings"])
        if bw:
            p["bandwidth"] = bw
    any_placed = any(p["placed"] for p in panels)
    roofline = {"panels": panels, "windows": wpanels, "why_empty": None if any_placed else why_empty(results)}
    return {"roofline": jsonable(roofline), "families": _family_records(fams)}


def _family_records(fams: pd.DataFrame) -> list[FamilyRow]:
    if not len(fams):
        return []
    recs: list[FamilyRow] = jsonable(fams.to_dict("records"))
    return recs


def panel_of_kernel(view: KernelView) -> dict[int, str]:
    """Kernel position -> panel id (for reports that say which ceilings each kernel used)."""
    out: dict[int, str] = {}
    for f in view["families"]:
        for k in f["kernels"]:
            out[int(k)] = str(f["panel"])
    return out


__all__: Sequence[str] = ("CEILING_KEYS", "MAX_LABELLED", "KernelView", "kernel_view", "panel_of_kernel", "weighted_median",
                          "why_empty")


# ----------------------------------------------------------------------------- DCGM windows

MAX_WINDOW_POINTS = 3000   # above this, one point per GPU and label (time-weighted means)
WINDOW_CEILINGS: tuple[CeilingKey, ...] = ("tensor", "fp16", "fp32", "fp64", "dram")  # the peaks the window estimates use


def _window_points(ws: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    def fnum(v: Any) -> float:
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan

    y = np.array([fnum(w.get("est_flops_s")) for w in ws])
    b = np.array([fnum(w.get("est_dram_bytes_s")) for w in ws])
    t0 = pd.to_datetime(pd.Series([w.get("start") for w in ws], dtype=object), utc=True, errors="coerce", format="ISO8601")
    t1 = pd.to_datetime(pd.Series([w.get("end") for w in ws], dtype=object), utc=True, errors="coerce", format="ISO8601")
    secs = (t1 - t0).dt.total_seconds().fillna(0.0).clip(lower=0.0).to_numpy()
    ok = np.flatnonzero(np.isfinite(y) & np.isfinite(b) & (y > 0) & (b > 0))
    pts: list[dict[str, Any]] = [
        {"gpu": f"{ws[i].get('host') or ''}/{ws[i].get('gpu')}", "label": ws[i].get("label"), "start": ws[i].get("start"),
         "intensity": float(y[i] / b[i]), "flops_s": float(y[i]), "dram_bytes_s": float(b[i]),
         "seconds": float(secs[i]), "windows": 1} for i in ok.tolist()]
    if len(pts) <= MAX_WINDOW_POINTS:
        return pts, ""
    agg: dict[tuple[str, str], dict[str, Any]] = {}
    for p in pts:
        wt = float(p["seconds"]) or 1.0
        a = agg.setdefault((p["gpu"], str(p["label"])), {"gpu": p["gpu"], "label": p["label"], "start": None,
                                                         "fw": 0.0, "bw": 0.0, "w": 0.0, "windows": 0})
        a["fw"] += p["flops_s"] * wt
        a["bw"] += p["dram_bytes_s"] * wt
        a["w"] += wt
        a["windows"] += 1
    out = [{"gpu": a["gpu"], "label": a["label"], "start": None, "flops_s": a["fw"] / a["w"],
            "dram_bytes_s": a["bw"] / a["w"], "intensity": a["fw"] / a["bw"], "seconds": a["w"], "windows": a["windows"]}
           for a in agg.values()]
    return out, f"{len(pts)} DCGM windows aggregated to one point per GPU and label (time-weighted means)."


def window_view(windows: Sequence[Mapping[str, Any]], device: str | None = None) -> list[WindowPanel]:
    """Roofline panels for DCGM windows, one per device model: the estimated points (FLOP/s and DRAM
    bytes/s are activity x the device's peaks, docs/formulas.md#windows) against those same peaks."""
    from rooftop.analyzer.windows.rules import resolve_devices

    by_model: dict[str, list[Mapping[str, Any]]] = {}
    for w in windows:
        by_model.setdefault(str(w.get("model") or ""), []).append(w)
    specs = resolve_devices(list(by_model), device)
    panels: list[dict[str, Any]] = []
    for model, ws in by_model.items():
        pts, note = _window_points(ws)
        if not pts:
            continue
        spec = specs.get(model)
        entry = spec.as_contract() if spec is not None else {}
        ceil = entry.get("ceilings") or {}
        rows = []
        for key in WINDOW_CEILINGS:
            v = ceil.get(key)
            if isinstance(v, (int, float)) and v > 0:
                rows.append(_ceiling(key, float(v), float(v), float(v), entry.get("source"),
                                     f"{entry.get('name')}|{entry.get('source')}",
                                     (entry.get("sources") or {}).get(key) or entry.get("source"), 0, 1))
        if any(w.get("mig") not in (None, "") for w in ws):
            note = (note + " MIG instance windows are estimated against the instance's share of the peaks; the "
                    "ceilings drawn are the whole GPU's.").strip()
        panels.append({"id": f"w{len(panels)}", "device": entry.get("name") or model or "unknown device",
                       "model": model, "ceilings": rows, "windows": pts, "note": note})
    out: list[WindowPanel] = jsonable(panels)
    return out


# ----------------------------------------------------------------------------- from a saved document

def _records_frames(kernels: Sequence[Mapping[str, Any]], devices: Sequence[Mapping[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The results and per-kernel ceilings frames back from contract kernel records: each kernel's
    ``extra.ceilings`` reference (``"<name>|<source>[; keys=<name>|<source>]..."``, analyzer.ceilings.per_kernel.
    ceiling_refs) into ``devices``, with the kernel's own ``extra.peak_*``/``bw_*`` where they differ."""
    entries = {f"{d.get('name')}|{d.get('source')}": d for d in devices}
    res_rows, ceil_rows = [], []
    for k in kernels:
        ex: dict[str, Any] = k["extra"] if isinstance(k.get("extra"), dict) else {}
        row = {c: k.get(c) for c in ("index", "input", "name", "family", "device", "duration_s", "grid", "block",
                                      "flops", "achieved_flops_s", "attainable_flops_s", "label", "limiter")}
        for lvl in LEVELS:
            row[f"bytes_{lvl}"] = (k.get("bytes") or {}).get(lvl)
            row[f"intensity_{lvl}"] = (k.get("intensity") or {}).get(lvl)
        row["nvtx"] = k.get("nvtx", ex.get("nvtx"))
        row["dominant_class"], row["binding_level"] = ex.get("dominant_class"), ex.get("binding_level")
        res_rows.append(row)
        ref = ex.get("ceilings")
        per_key: dict[str, str] = {}
        if isinstance(ref, str) and ref:
            head, *rest = ref.split("; ")
            per_key = dict.fromkeys(CEILING_KEYS, head)
            for part in rest:
                keys, _, entry = part.partition("=")
                for name in keys.split(","):
                    per_key[name] = entry
        c: dict[str, Any] = {"ceiling_device": per_key and next(iter(per_key.values())).rsplit("|", 1)[0]}
        for name, entry in per_key.items():
            d = entries.get(entry)
            key = next((ck for ck in CEILING_KEYS if ck == name), None)
            if key is None or d is None:
                continue
            col = _cname(key)
            own = ex.get(col)
            c[col] = own if isinstance(own, (int, float)) else (d.get("ceilings") or {}).get(key)
            c[f"src_{col}"] = d.get("source") if c[col] is not None else None
            c[f"detail_{col}"] = (d.get("sources") or {}).get(key) or d.get("source")
        ceil_rows.append(c)
    return pd.DataFrame(res_rows), pd.DataFrame(ceil_rows)


def document_view(doc: Mapping[str, Any]) -> KernelView:
    """``roofline`` and ``families`` for a document that lacks them (one saved by an older rooftop, or
    built by hand, so any of its keys may be missing): the same rules as the pipeline, from the kernel
    records and ``devices``."""
    kernels = list(doc.get("kernels") or [])
    results, ceilings = _records_frames(kernels, list(doc.get("devices") or []))
    if len(results) and results["family"].isna().any():
        from rooftop.analyzer.kernels.families import assign_families

        results["family"] = results["family"].fillna(assign_families(results))
    return kernel_view(results, ceilings if len(ceilings) else None, list(doc.get("windows") or []))
