"""Per-pair and per-family deltas with one explanation line each (docs/formulas.md#diff)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rooftop.analyzer.diff.match import LEVELS, NOTABLE, NUMERIC, SIDES, _str_col
from rooftop.analyzer.metrics.columns import column


def rel_change(cand: pd.Series, base: pd.Series) -> pd.Series:
    """``cand / base − 1``; 0 when both are 0; NaN when undefined (missing, or 0 → non-zero)."""
    b = pd.to_numeric(base, errors="coerce").astype(float)
    c = pd.to_numeric(cand, errors="coerce").astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = c / b - 1.0
    r = r.where((b != 0) & np.isfinite(b) & np.isfinite(c))
    return r.mask((b == 0) & (c == 0), 0.0)


def add_changes(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``<metric>_change`` for every numeric metric with both sides, and ``explanation``."""
    out = frame.copy()
    for m in NUMERIC:
        if f"{m}_base" in out.columns and f"{m}_cand" in out.columns:
            out[f"{m}_change"] = rel_change(out[f"{m}_cand"], out[f"{m}_base"])
    for m in ("label", "limiter"):
        if f"{m}_base" in out.columns and f"{m}_cand" in out.columns:
            lb = _str_col(out, f"{m}_base")
            lc = _str_col(out, f"{m}_cand")
            out[f"{m}_changed"] = (lb != lc) & (lb != "") & (lc != "")
    out["explanation"] = explain(out)
    return out


def pct(x: float) -> str:
    """``+38 %`` / ``-1.2 %`` (one decimal below 10 %), ``n/a`` when undefined."""
    if x is None or not math.isfinite(x):
        return "n/a"
    v = 100.0 * x
    return f"{v:+.0f} %" if abs(v) >= 9.95 else f"{v:+.1f} %"


def _col(frame: pd.DataFrame, col: str) -> np.ndarray:
    return np.asarray(column(frame, col).to_numpy(dtype=float), dtype=float)


def explain(frame: pd.DataFrame) -> list[str]:
    """One line per row: the duration change and what moved with it.

    Reads ``duration_s_change``, ``flops_change``, ``bytes_<lvl>_change``,
    ``intensity_<lvl>_change``, ``label_base/cand``, ``limiter_base/cand``. The byte level that
    changed most (≥ 5 %) is named, with the direction it moved the kernel on that level's
    roofline (less intensity = left), then any label or limiter change.
    """
    n = len(frame)
    dur = _col(frame, "duration_s_change")
    flops = _col(frame, "flops_change")
    levels = ("dram", "l2", "l1")  # on equal changes, name DRAM (the classic roofline) first
    byte_ch = np.column_stack([_col(frame, f"bytes_{lv}_change") for lv in levels]) if n else np.empty((0, 3))
    int_ch = np.column_stack([_col(frame, f"intensity_{lv}_change") for lv in levels]) if n else np.empty((0, 3))
    mag = np.abs(np.log1p(np.where(np.isfinite(byte_ch) & (byte_ch > -1), byte_ch, 0.0)))
    top = mag.argmax(axis=1) if n else np.empty(0, dtype=int)
    top_mag = mag[np.arange(n), top] if n else np.empty(0)
    names = [LEVELS[lv] for lv in levels]
    lab_b, lab_c = _str_col(frame, "label_base").to_numpy(), _str_col(frame, "label_cand").to_numpy()
    lim_b, lim_c = _str_col(frame, "limiter_base").to_numpy(), _str_col(frame, "limiter_cand").to_numpy()
    dev_b, dev_c = _str_col(frame, "device_base").to_numpy(), _str_col(frame, "device_cand").to_numpy()
    notable = math.log1p(NOTABLE)
    lines: list[str] = []
    for i in range(n):  # string assembly only; every number above is computed vectorized
        parts: list[str] = []
        if top_mag[i] >= notable:
            lv = int(top[i])
            part = f"{names[lv]} bytes {pct(byte_ch[i, lv])}"
            ic = int_ch[i, lv]
            if math.isfinite(ic) and abs(ic) >= NOTABLE:
                part += ", moved left on the roofline" if ic < 0 else ", moved right on the roofline"
            parts.append(part)
        if math.isfinite(flops[i]) and abs(flops[i]) >= NOTABLE:
            parts.append(f"FLOPs {pct(flops[i])}")
        lost = _device_text(dev_b[i], dev_c[i])
        if lost:  # ceilings differ in kind, not in behaviour: labels are not compared
            parts.append(lost)
        elif _known(lab_b[i]) and _known(lab_c[i]) and lab_b[i] != lab_c[i]:
            parts.append(f"now {_bound(lab_c[i], lim_c[i])}, was {_bound(lab_b[i], lim_b[i])}")
        elif _known(lim_b[i]) and _known(lim_c[i]) and lim_b[i] != lim_c[i]:
            parts.append(f"limiter {lim_b[i]} → {lim_c[i]}")
        if not parts and math.isfinite(dur[i]) and abs(dur[i]) >= NOTABLE:
            parts.append(_same_work(dur[i], math.isfinite(flops[i]), bool(np.isfinite(byte_ch[i]).any())))
        lines.append(f"duration {pct(dur[i])}: " + (", ".join(parts) if parts else "no notable change"))
    return lines


def _known(v: str) -> bool:
    return bool(v) and v != "unknown"


def _device_text(base: str, cand: str) -> str:
    """The kernel's device is named on one side only: said as that (docs/formulas.md#diff)."""
    if base and not cand:
        return f"device known in the baseline ({base}) but not in the candidate: labels not comparable"
    if cand and not base:
        return f"device known in the candidate ({cand}) but not in the baseline: labels not comparable"
    return ""


def _same_work(dur: float, has_flops: bool, has_bytes: bool) -> str:
    """The sentence for a duration change with no notable change in what both inputs measured."""
    way = "slower" if dur > 0 else "faster"
    why = "(clocks, occupancy, latency or contention)"
    if has_flops and has_bytes:
        return f"same FLOPs and bytes, so {way} per unit of work {why}"
    if has_flops:
        return f"same FLOPs (bytes not in both inputs), so {way} per FLOP {why}"
    if has_bytes:
        return f"same bytes (FLOPs not in both inputs), so {way} per byte moved {why}"
    return ("neither FLOPs nor bytes are in both inputs: what changed is unknown (collect them with "
            "ncu --section SpeedOfLight --section MemoryWorkloadAnalysis)")


def _bound(label: str, limiter: str) -> str:
    return f"{label} ({limiter})" if limiter and limiter != "unknown" else label


def pair_deltas(pairs: pd.DataFrame) -> pd.DataFrame:
    """Matched pairs with per-metric relative changes and an explanation line each."""
    return add_changes(pairs)


def _dominant(frame: pd.DataFrame, by: str, col: str, weight: str) -> pd.Series:
    """Per group, the value of ``col`` holding the most ``weight`` (time-weighted label/limiter)."""
    if col not in frame.columns or not len(frame):
        return pd.Series(dtype=object)
    w = pd.to_numeric(frame[weight], errors="coerce").fillna(0.0)
    t = pd.DataFrame({"g": frame[by], "v": _str_col(frame, col), "w": w})
    t = t[t["v"] != ""]
    if not len(t):
        return pd.Series(dtype=object)
    s = t.groupby(["g", "v"], sort=True)["w"].sum().reset_index()
    s = s.sort_values(["g", "w", "v"], ascending=[True, False, True], kind="stable")
    return s.drop_duplicates("g").set_index("g")["v"]


def group_deltas(pairs: pd.DataFrame, by: str = "family") -> pd.DataFrame:
    """Time-weighted changes per group of matched pairs (``by``: ``family`` or ``series``).

    Sums duration, FLOPs and bytes on each side; achieved FLOP/s = ΣFLOPs / Σduration;
    intensity per level = ΣFLOPs / Σbytes; label/limiter = the one holding the most time.
    """
    sums = ["duration_s", "flops", "bytes_l1", "bytes_l2", "bytes_dram"]
    cols: dict[str, pd.Series] = {by: pairs[by]}
    for s in SIDES:
        suf = "_base" if s == "baseline" else "_cand"
        for m in sums:
            cols[f"{m}{suf}"] = pd.to_numeric(pairs.get(f"{m}{suf}"), errors="coerce") \
                if f"{m}{suf}" in pairs.columns else pd.Series(np.nan, index=pairs.index)
    t = pd.DataFrame(cols)
    g = t.groupby(by, sort=True).sum(min_count=1)
    g["launches"] = t.groupby(by, sort=True).size()
    for suf in ("_base", "_cand"):
        with np.errstate(divide="ignore", invalid="ignore"):
            dur = g[f"duration_s{suf}"]
            g[f"achieved_flops_s{suf}"] = (g[f"flops{suf}"] / dur).where(dur > 0)
            for lv in LEVELS:
                b = g[f"bytes_{lv}{suf}"]
                g[f"intensity_{lv}{suf}"] = (g[f"flops{suf}"] / b).where(b > 0)
        weight = f"duration_s{suf}"
        for m in ("label", "limiter"):
            g[f"{m}{suf}"] = _dominant(pairs, by, f"{m}{suf}", weight).reindex(g.index)
    g = g.reset_index()
    return add_changes(g)
