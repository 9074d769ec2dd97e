"""``rooftop diff``: match kernels across two runs, explain the deltas, gate CI on real regressions.

The core is pure functions over two flat kernel-result frames (columns named by
``analyzer.document.KERNEL_FIELDS`` plus ``family``; an optional ``nvtx`` column is used when present):

* :func:`match_kernels` pairs launches by *identity*: family + launch configuration (grid, block) +
  NVTX path + ordinal (the k-th launch of that family with that configuration and NVTX path, in
  launch order). What does not pair is reported as ``new`` or ``vanished``, never guessed: a
  renamed kernel is one vanished + one new.
* :func:`pair_deltas` / :func:`group_deltas`: per-pair and time-weighted per-family changes in
  duration, achieved FLOP/s, FLOPs, bytes and intensity per level, label and limiter, each with
  one explanation line.
* :func:`verdict`: per *series* (family + grid + block + NVTX path; its launches are replicates)
  a noise-aware verdict from :mod:`analyzer.stats` (Mann–Whitney U with Holm's correction where
  there are enough repeats; the threshold alone, marked as such, otherwise).

:func:`run_diff` reads both sides (ncu exports or saved ``rooftop analyze --json`` documents) and
returns the contract document of kind ``diff``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer import stats
from rooftop.analyzer.document import KERNEL_FIELDS, build_document, jsonable
from rooftop.parsers import InputError

SIDES = ("baseline", "candidate")
KEY = ["family", "grid", "block", "nvtx"]
"""Series key. A pair also matches on ``ordinal`` (position within the series, launch order)."""

LEVELS = {"l1": "L1", "l2": "L2", "dram": "DRAM"}
NUMERIC = [
    "duration_s", "achieved_flops_s", "attainable_flops_s", "flops",
    "bytes_l1", "bytes_l2", "bytes_dram", "intensity_l1", "intensity_l2", "intensity_dram",
    "sol_compute_pct", "sol_memory_pct",
]
CARRIED = ["input", "index", "id", "name", "device", "label", "limiter"]
NOTABLE = 0.05
"""Relative change worth a word in an explanation line (5 %)."""
REPORT_PCT = 5.0
"""Classification threshold (%) for the report when no ``--fail-on`` is given (never gates)."""
_HINT = "pass an ncu export, a folder of them, or the JSON of `rooftop analyze --json`"


# --------------------------------------------------------------------------- identity & matching


def _str_col(frame: pd.DataFrame, col: str) -> pd.Series:
    if col not in frame.columns:
        return pd.Series("", index=frame.index, dtype=object)
    return frame[col].astype(object).where(frame[col].notna(), "").astype(str)


def _int_col(frame: pd.DataFrame, col: str) -> pd.Series:
    if col not in frame.columns:
        return pd.Series(-1, index=frame.index, dtype="int64")
    return pd.to_numeric(frame[col], errors="coerce").fillna(-1).astype("int64")


def identify(results: pd.DataFrame) -> pd.DataFrame:
    """Launch order, identity key, ordinal and series id for one run's kernel results.

    Returns a copy sorted in launch order (input path, then ``index``) with ``family`` (falls
    back to ``name``), ``grid``/``block`` (-1 when unknown), ``nvtx`` ("" when none), ``ordinal``
    (0-based position of the launch within its series) and ``series`` (the key joined).
    """
    out = results.copy()
    name = _str_col(out, "name")
    family = _str_col(out, "family")
    out["family"] = family.where(family != "", name)
    out["grid"] = _int_col(out, "grid")
    out["block"] = _int_col(out, "block")
    out["nvtx"] = _str_col(out, "nvtx")
    out["_pos"] = np.arange(len(out))
    sort_cols = [c for c in ("input", "index") if c in out.columns] + ["_pos"]
    out = out.sort_values(sort_cols, kind="stable", na_position="last").reset_index(drop=True)
    out = out.drop(columns="_pos")
    out["ordinal"] = out.groupby(KEY, sort=False).cumcount().astype("int64")
    out["series"] = series_ids(out)
    return out


def series_ids(frame: pd.DataFrame) -> pd.Series:
    """Readable series id: ``family ⟨grid G, block B⟩`` plus `` @ nvtx`` when there is one.

    The configuration is not repeated when the family name already ends with it
    (``analyzer.families`` writes ``name (grid G, block B)``).
    """
    grid = frame["grid"].astype(str).where(frame["grid"] >= 0, "?")
    block = frame["block"].astype(str).where(frame["block"] >= 0, "?")
    config = "grid " + grid + ", block " + block
    has = pd.Series([f.endswith(f"({c})") for f, c in zip(frame["family"], config, strict=True)],
                    index=frame.index, dtype=bool)
    at = (" @ " + frame["nvtx"]).where(frame["nvtx"] != "", "")
    return frame["family"] + (" ⟨" + config + "⟩").where(~has, "") + at


_CONFIG_SUFFIX = re.compile(r" \(grid [^()]*, block [^()]*\)$")


def base_names(family: pd.Series) -> pd.Series:
    """Family names without the `` (grid G, block B)`` suffix that ``analyzer.families`` adds."""
    return family.astype(str).str.replace(_CONFIG_SUFFIX, "", regex=True)


@dataclass
class Matched:
    """Result of :func:`match_kernels`.

    ``pairs``: key columns (``family, grid, block, nvtx, ordinal, series``, from the side whose
    launch configuration is known), ``match`` (``"config"`` or ``"name-order"``) and
    ``<col>_base`` / ``<col>_cand`` for every carried and numeric column. ``baseline`` /
    ``candidate``: the identified frames, with the series of launches matched by name and order
    renamed to their partner's, so both sides of a pair are in the same series.
    """

    pairs: pd.DataFrame
    new: pd.DataFrame
    vanished: pd.DataFrame
    baseline: pd.DataFrame
    candidate: pd.DataFrame


def _pair_rows(b: pd.DataFrame, c: pd.DataFrame, on: list[str]) -> tuple[np.ndarray, np.ndarray]:
    m = b[[*on, "_row"]].merge(c[[*on, "_row"]], on=on, how="inner", suffixes=("_b", "_c"), sort=False)
    return m["_row_b"].to_numpy(dtype=int), m["_row_c"].to_numpy(dtype=int)


def match_kernels(baseline: pd.DataFrame, candidate: pd.DataFrame) -> Matched:
    """Pair launches by identity; what does not pair is new or vanished.

    1. ``config``: same family, grid, block, NVTX path and ordinal (k-th such launch).
    2. ``name-order``: only for what one side cannot tell — a launch configuration it does not
       know (old exports without Block/Grid columns), or NVTX paths when that side carries none
       at all (CSV exported from a report that has them): same base kernel name (and NVTX path
       where both sides have them), k-th launch of that name among the launches step 1 left
       unmatched; a pair whose configurations are both known and differ is not made.

    Both inputs must come from :func:`identify`.
    """
    keys = [*KEY, "ordinal"]
    b = baseline.assign(_row=np.arange(len(baseline)), _base=base_names(baseline["family"]))
    c = candidate.assign(_row=np.arange(len(candidate)), _base=base_names(candidate["family"]))
    rb1, rc1 = _pair_rows(b, c, keys)
    nvtx_b, nvtx_c = bool((b["nvtx"] != "").any()), bool((c["nvtx"] != "").any())
    nvtx_unknown = nvtx_b != nvtx_c
    ub = b[~np.isin(b["_row"], rb1)]
    uc = c[~np.isin(c["_row"], rc1)]
    cfg_b = (b["grid"].to_numpy() >= 0) & (b["block"].to_numpy() >= 0)
    cfg_c = (c["grid"].to_numpy() >= 0) & (c["block"].to_numpy() >= 0)
    if nvtx_unknown:
        loose = set(ub["_base"]) & set(uc["_base"])
    else:
        loose = set(ub.loc[~cfg_b[ub["_row"]], "_base"]) | set(uc.loc[~cfg_c[uc["_row"]], "_base"])
    fb = ub[ub["_base"].isin(loose)]
    fc = uc[uc["_base"].isin(loose)]
    fb = fb.assign(_nv="" if nvtx_unknown else fb["nvtx"])
    fc = fc.assign(_nv="" if nvtx_unknown else fc["nvtx"])
    fb = fb.assign(_ord=fb.groupby(["_base", "_nv"], sort=False).cumcount())
    fc = fc.assign(_ord=fc.groupby(["_base", "_nv"], sort=False).cumcount())
    rb2, rc2 = _pair_rows(fb, fc, ["_base", "_nv", "_ord"])
    both_cfg = cfg_b[rb2] & cfg_c[rc2]
    conflict = both_cfg & ((b["grid"].to_numpy()[rb2] != c["grid"].to_numpy()[rc2])
                           | (b["block"].to_numpy()[rb2] != c["block"].to_numpy()[rc2]))
    ok = ~conflict & (~both_cfg | nvtx_unknown)
    rb2, rc2 = rb2[ok], rc2[ok]
    # the key of a name-order pair comes from the side that knows more (configuration, then NVTX)
    info_b = cfg_b[rb2] * 2 + int(nvtx_b)
    info_c = cfg_c[rc2] * 2 + int(nvtx_c)
    b_known = info_b >= info_c
    rb, rc = np.concatenate([rb1, rb2]), np.concatenate([rc1, rc2])
    match = np.array(["config"] * len(rb1) + ["name-order"] * len(rb2), dtype=object)
    key_cols = [*keys, "series"]
    key = b[key_cols].iloc[rb].reset_index(drop=True)
    if len(rb2):
        from_c = c[key_cols].iloc[rc2[~b_known]].to_numpy()
        key.iloc[len(rb1) + np.flatnonzero(~b_known)] = from_c
    values = [col for col in CARRIED + NUMERIC if col in b.columns or col in c.columns]
    vb = b.reindex(columns=values).iloc[rb].reset_index(drop=True).add_suffix("_base")
    vc = c.reindex(columns=values).iloc[rc].reset_index(drop=True).add_suffix("_cand")
    pairs = pd.concat([key, pd.DataFrame({"match": match}), vb, vc], axis=1)
    for col in ("grid", "block", "ordinal"):
        pairs[col] = pairs[col].astype("int64")
    # one series per pair on both sides, so the verdict compares like with like
    base_out = baseline.copy()
    cand_out = candidate.copy()
    if len(rb2):
        series_b = base_out["series"].to_numpy(dtype=object).copy()
        series_c = cand_out["series"].to_numpy(dtype=object).copy()
        series_b[rb2[~b_known]] = series_c[rc2[~b_known]]
        series_c[rc2[b_known]] = series_b[rb2[b_known]]
        base_out["series"], cand_out["series"] = series_b, series_c
    drop = ["_row", "_base"]
    new = c[~np.isin(c["_row"], rc)].drop(columns=drop).reset_index(drop=True)
    vanished = b[~np.isin(b["_row"], rb)].drop(columns=drop).reset_index(drop=True)
    return Matched(pairs=pairs, new=new, vanished=vanished, baseline=base_out, candidate=cand_out)


# --------------------------------------------------------------------------- deltas & explanations


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
    if col not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


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
        if lab_b[i] and lab_c[i] and lab_b[i] != lab_c[i]:
            parts.append(f"now {_bound(lab_c[i], lim_c[i])}, was {_bound(lab_b[i], lim_b[i])}")
        elif lim_b[i] and lim_c[i] and lim_b[i] != lim_c[i]:
            parts.append(f"limiter {lim_b[i]} → {lim_c[i]}")
        if not parts and math.isfinite(dur[i]) and abs(dur[i]) >= NOTABLE:
            parts.append("same FLOPs and bytes, so " + ("slower" if dur[i] > 0 else "faster")
                         + " per unit of work (clocks, occupancy, latency or contention)")
        lines.append(f"duration {pct(dur[i])}: " + (", ".join(parts) if parts else "no notable change"))
    return lines


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


# --------------------------------------------------------------------------- verdict


def series_stats(baseline: pd.DataFrame, candidate: pd.DataFrame, alpha: float = stats.ALPHA) -> pd.DataFrame:
    """:func:`analyzer.stats.compare_series` over every launch of both runs (identified frames)."""
    parts = []
    for side, frame in zip(SIDES, (baseline, candidate), strict=True):
        parts.append(pd.DataFrame({
            "series": frame["series"].to_numpy(),
            "side": side,
            "duration_s": _col(frame, "duration_s"),
        }))
    return stats.compare_series(pd.concat(parts, ignore_index=True), alpha=alpha)


def classify(table: pd.DataFrame, threshold: float) -> pd.Series:
    """Status per series: regressed / improved / within threshold / not significant / unmatched / no duration.

    ``threshold`` is a fraction (0.10 = 10 %). A tested series must also be significant; a
    threshold-only series needs only the change.
    """
    change = table["change"].to_numpy(dtype=float, na_value=np.nan)
    tested = (table["method"] == "mann-whitney").to_numpy()
    sig = table["significant"].to_numpy(dtype=bool)
    up, down = change > threshold, change < -threshold
    status = np.where(up & (sig | ~tested), "regressed",
                      np.where(down & (sig | ~tested), "improved",
                               np.where((up | down) & tested, "not significant", "within threshold")))
    status = np.where(np.isfinite(change), status, "no duration")
    unmatched = (table["n_base"].to_numpy() == 0) | (table["n_cand"].to_numpy() == 0)
    status = np.where(unmatched, "unmatched", status)
    return pd.Series(status.astype(object), index=table.index)


def _note(method: str, n_base: int, n_cand: int) -> str:
    if method == "mann-whitney":
        return f"{n_base} vs {n_cand} launches: Mann–Whitney U, Holm-adjusted"
    if min(n_base, n_cand) <= 1:
        return "single launch: threshold only"
    return f"{min(n_base, n_cand)} launches: too few for a test here, threshold only"


def verdict(series: pd.DataFrame, fail_on: float | None, alpha: float = stats.ALPHA) -> dict[str, Any]:
    """The gate. ``series`` is :func:`series_table` output; ``fail_on`` a percentage or None."""
    threshold = (fail_on if fail_on is not None else REPORT_PCT) / 100.0
    reg = series[series["status"] == "regressed"].sort_values(["delta_s", "change"], ascending=False)
    imp = series[series["status"] == "improved"].sort_values(["delta_s", "change"], ascending=True)
    tested = int((series["method"] == "mann-whitney").sum())
    compared = int(((series["n_base"] > 0) & (series["n_cand"] > 0)).sum())
    fail = fail_on is not None and len(reg) > 0
    thr = f"{threshold * 100:g} %"
    how = (f"{compared} series compared: {tested} with {stats.TEST_NAME} at α={alpha:g}, "
           f"{compared - tested} by threshold only")
    if fail:
        named = "; ".join(f"{r.series} {pct(r.change)} ({_evidence(r)})" for r in reg.head(5).itertuples())
        more = f" and {len(reg) - 5} more" if len(reg) > 5 else ""
        reason = f"{len(reg)} regression(s) beyond {thr}: {named}{more}. {how}."
    elif fail_on is not None:
        reason = f"no regression beyond {thr} that is more than noise. {how}."
    else:
        reason = (f"report only (no --fail-on): {len(reg)} regression(s) and {len(imp)} improvement(s) "
                  f"beyond {thr}. {how}.")
    if not compared:
        reason = ("nothing to compare: no kernel launch matched between the two runs "
                  "(see the new and vanished kernels; a renamed kernel is one of each)")
    if not compared:
        summary = "nothing matched: no verdict"
    elif fail:
        summary = f"FAIL: {len(reg)} regression(s) beyond {thr}"
    elif fail_on is not None:
        summary = f"ok: no regression beyond {thr}"
    else:
        summary = f"report only: {len(reg)} regression(s), {len(imp)} improvement(s) beyond {thr}"
    return {
        "fail": bool(fail),
        "summary": summary,
        "threshold_pct": fail_on,
        "classify_pct": threshold * 100.0,
        "alpha": alpha,
        "test": stats.TEST_NAME,
        "regressions": series_records(reg),
        "improvements": series_records(imp),
        "reason": reason,
    }


def _evidence(row: Any) -> str:
    if row.method == "mann-whitney":
        return f"p={row.p_adjusted:.2g} Holm-adjusted"
    return row.note


def series_table(baseline: pd.DataFrame, candidate: pd.DataFrame, pairs: pd.DataFrame,
                 threshold: float, alpha: float = stats.ALPHA) -> pd.DataFrame:
    """One row per series: test statistics, status, note, time on each side and an explanation."""
    st = series_stats(baseline, candidate, alpha)
    meta = pd.concat([baseline[["series", *KEY]], candidate[["series", *KEY]]]).drop_duplicates("series")
    st = st.join(meta.set_index("series"), how="left")
    st["status"] = classify(st, threshold)
    st["note"] = [_note(m, int(a), int(b)) for m, a, b in zip(st["method"], st["n_base"], st["n_cand"], strict=True)]
    for frame, col in ((baseline, "time_base_s"), (candidate, "time_cand_s")):
        dur = pd.Series(_col(frame, "duration_s"), index=frame.index)
        st[col] = dur.groupby(frame["series"]).sum(min_count=1).reindex(st.index)
    st["delta_s"] = st["time_cand_s"].fillna(0.0) - st["time_base_s"].fillna(0.0)
    if len(pairs):
        gd = group_deltas(pairs, by="series").set_index("series")
        st["explanation"] = gd["explanation"].reindex(st.index)
    else:
        st["explanation"] = np.nan
    fallback = pd.Series([f"median duration {pct(c)}" for c in st["change"]], index=st.index)
    st["explanation"] = st["explanation"].where(st["explanation"].notna(), fallback)
    return st.reset_index()


SERIES_FIELDS = ["series", "family", "grid", "block", "nvtx", "status", "method", "note", "n_base", "n_cand",
                 "median_base_s", "median_cand_s", "change", "p_value", "p_adjusted", "significant",
                 "time_base_s", "time_cand_s", "delta_s", "explanation"]


def series_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Contract records of series rows (``SERIES_FIELDS`` plus ``change_pct``)."""
    t = table.reindex(columns=SERIES_FIELDS).copy()
    t["grid"] = t["grid"].where(t["grid"] >= 0)
    t["block"] = t["block"].where(t["block"] >= 0)
    t["nvtx"] = t["nvtx"].where(t["nvtx"] != "")
    t["change_pct"] = t["change"] * 100.0
    records: list[dict[str, Any]] = jsonable(t.to_dict("records"))
    return records


# --------------------------------------------------------------------------- the whole comparison


@dataclass
class DiffResult:
    """Everything :func:`compare` finds, as frames (rendered into the document by :func:`diff_payload`)."""

    baseline: pd.DataFrame
    candidate: pd.DataFrame
    pairs: pd.DataFrame
    new: pd.DataFrame
    vanished: pd.DataFrame
    families: pd.DataFrame
    series: pd.DataFrame
    totals: dict[str, Any]
    verdict: dict[str, Any]


def compare(baseline: pd.DataFrame, candidate: pd.DataFrame, *, fail_on: float | None,
            alpha: float = stats.ALPHA) -> DiffResult:
    """Pure core: two flat kernel-result frames in, the whole comparison out."""
    if fail_on is not None and (not math.isfinite(fail_on) or fail_on < 0):
        raise InputError("--fail-on", f"{fail_on!r} is not a percentage ≥ 0", "e.g. --fail-on 5")
    threshold = (fail_on if fail_on is not None else REPORT_PCT) / 100.0
    m = match_kernels(identify(baseline), identify(candidate))
    b, c = m.baseline, m.candidate
    pairs = pair_deltas(m.pairs)
    families = group_deltas(pairs, by="family")
    series = series_table(b, c, m.pairs, threshold, alpha)
    fam_status = _family_status(series)
    families["status"] = families["family"].map(fam_status).fillna("within threshold")
    return DiffResult(
        baseline=b, candidate=c, pairs=pairs, new=m.new, vanished=m.vanished, families=families,
        series=series, totals=totals(b, c, m), verdict=verdict(series, fail_on, alpha),
    )


_STATUS_ORDER = ["regressed", "improved", "not significant", "within threshold", "no duration", "unmatched"]


def _family_status(series: pd.DataFrame) -> pd.Series:
    """Worst series status per family (regressed before improved before the rest)."""
    if not len(series):
        return pd.Series(dtype=object)
    rank = series["status"].map({s: i for i, s in enumerate(_STATUS_ORDER)})
    best = series.assign(_r=rank).sort_values("_r", kind="stable").drop_duplicates("family")
    return best.set_index("family")["status"]


def _side_totals(frame: pd.DataFrame) -> dict[str, Any]:
    def total(col: str) -> float | None:
        if col not in frame.columns:
            return None
        v = pd.to_numeric(frame[col], errors="coerce")
        return float(v.sum()) if v.notna().any() else None

    dur, flops = total("duration_s"), total("flops")
    out: dict[str, Any] = {"kernels": len(frame), "duration_s": dur, "flops": flops,
                           "bytes": {lv: total(f"bytes_{lv}") for lv in LEVELS}}
    out["achieved_flops_s"] = flops / dur if flops is not None and dur else None
    out["intensity"] = {lv: (flops / b if flops is not None and b else None)
                        for lv, b in out["bytes"].items()}
    return out


def _one_side(pairs: pd.DataFrame, suffix: str) -> pd.DataFrame:
    """The ``<col><suffix>`` columns of a pairs frame, renamed ``<col>``."""
    cols = [c for c in pairs.columns if c.endswith(suffix)]
    return pairs[cols].rename(columns=lambda c: c[: -len(suffix)])


def totals(baseline: pd.DataFrame, candidate: pd.DataFrame, m: Matched) -> dict[str, Any]:
    """Time-weighted totals of both runs, of the matched launches, and of new/vanished launches."""
    tb, tc = _side_totals(baseline), _side_totals(candidate)

    def ch(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None or a == 0 else b / a - 1.0

    mb, mc = _side_totals(_one_side(m.pairs, "_base")), _side_totals(_one_side(m.pairs, "_cand"))
    return {
        "baseline": tb,
        "candidate": tc,
        "change": {
            "duration": ch(tb["duration_s"], tc["duration_s"]),
            "achieved_flops_s": ch(tb["achieved_flops_s"], tc["achieved_flops_s"]),
            "flops": ch(tb["flops"], tc["flops"]),
            "bytes": {lv: ch(tb["bytes"][lv], tc["bytes"][lv]) for lv in LEVELS},
        },
        "matched": {
            "launches": len(m.pairs),
            "baseline_s": mb["duration_s"],
            "candidate_s": mc["duration_s"],
            "change": ch(mb["duration_s"], mc["duration_s"]),
        },
        "new": {"launches": len(m.new), "duration_s": _side_totals(m.new)["duration_s"]},
        "vanished": {"launches": len(m.vanished), "duration_s": _side_totals(m.vanished)["duration_s"]},
    }


# --------------------------------------------------------------------------- document


def _side_record(row: dict[str, Any], suf: str) -> dict[str, Any]:
    g = row.get
    return {
        "input": g(f"input{suf}"), "index": g(f"index{suf}"), "id": g(f"id{suf}"), "name": g(f"name{suf}"),
        "device": g(f"device{suf}"),
        "duration_s": g(f"duration_s{suf}"), "flops": g(f"flops{suf}"),
        "achieved_flops_s": g(f"achieved_flops_s{suf}"),
        "bytes": {lv: g(f"bytes_{lv}{suf}") for lv in LEVELS},
        "intensity": {lv: g(f"intensity_{lv}{suf}") for lv in LEVELS},
        "label": g(f"label{suf}"), "limiter": g(f"limiter{suf}"),
    }


def _change_record(row: dict[str, Any]) -> dict[str, Any]:
    g = row.get
    return {
        "duration": g("duration_s_change"), "achieved_flops_s": g("achieved_flops_s_change"),
        "flops": g("flops_change"),
        "bytes": {lv: g(f"bytes_{lv}_change") for lv in LEVELS},
        "intensity": {lv: g(f"intensity_{lv}_change") for lv in LEVELS},
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts of plain Python values (NaN/NA -> None), without a per-cell Python pass."""
    clean = frame.astype(object).where(frame.notna(), None)
    records: list[dict[str, Any]] = clean.to_dict("records")
    return records


def pair_records(pairs: pd.DataFrame) -> list[dict[str, Any]]:
    """Contract records of matched pairs: key, both sides, relative changes, explanation."""
    out = []
    for row in _records(pairs):
        out.append({
            "family": row["family"], "series": row["series"], "ordinal": row["ordinal"],
            "match": row.get("match"),
            "grid": row["grid"] if row["grid"] is not None and row["grid"] >= 0 else None,
            "block": row["block"] if row["block"] is not None and row["block"] >= 0 else None,
            "nvtx": row["nvtx"] or None,
            "baseline": _side_record(row, "_base"), "candidate": _side_record(row, "_cand"),
            "change": _change_record(row),
            "label_changed": bool(row.get("label_changed") or False),
            "limiter_changed": bool(row.get("limiter_changed") or False),
            "explanation": row["explanation"],
        })
    return out


def family_records(families: pd.DataFrame) -> list[dict[str, Any]]:
    """Time-weighted per-family records (roofline arrows: ``baseline`` → ``candidate`` points)."""
    out = []
    for row in families.to_dict("records"):
        out.append({
            "family": row["family"], "launches": row["launches"], "status": row.get("status"),
            "baseline": _side_record(row, "_base"), "candidate": _side_record(row, "_cand"),
            "change": _change_record(row),
            "label_changed": bool(row.get("label_changed", False)),
            "limiter_changed": bool(row.get("limiter_changed", False)),
            "explanation": row["explanation"],
        })
    for rec in out:
        for side in SIDES:
            for k in ("input", "index", "id", "name", "device"):
                rec[side].pop(k, None)
    return out


def unmatched_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """New or vanished launches: identity, where they came from, duration and label."""
    cols = ["series", "family", "ordinal", "name", "input", "index", "grid", "block", "nvtx",
            "duration_s", "label", "limiter"]
    t = frame.reindex(columns=cols).copy()
    t["grid"] = t["grid"].where(t["grid"] >= 0)
    t["block"] = t["block"].where(t["block"] >= 0)
    t["nvtx"] = t["nvtx"].where(t["nvtx"] != "")
    records: list[dict[str, Any]] = jsonable(t.to_dict("records"))
    return records


def findings(result: DiffResult) -> list[dict[str, Any]]:
    """Regressions as contract findings (so the terminal summary lists them), costliest first."""
    base_total = result.totals["baseline"]["duration_s"] or 0.0
    severity = "high" if result.verdict["fail"] else "medium"
    out: list[dict[str, Any]] = []
    for rank, r in enumerate(result.verdict["regressions"], start=1):
        delta = r.get("delta_s") or 0.0
        out.append({
            "rank": rank, "rule": "diff-regression", "severity": severity,
            "title": f"{r['series']}: median duration {pct(r['change'])}; "
                     f"{str(r['explanation']).split(': ', 1)[-1]}",
            "kernels": [], "time_share": delta / base_total if base_total else 0.0,
            "est_saving_s": delta if delta > 0 else None,
            "recommendation": f"{r['note']}; compare the two profiles of this kernel in Nsight Compute "
                              "(ncu-ui: baseline) to see which section moved",
        })
    return out


MAX_RECORDS = 10_000
"""Matched pairs (and new, and vanished launches) listed in the document, largest time first.

Families, series, totals and the verdict always cover every launch; ``listed`` in the document
says how many records each list holds out of how many, and a lint entry says when one is cut."""


def _largest(frame: pd.DataFrame, weight: pd.Series, limit: int) -> pd.DataFrame:
    """The ``limit`` rows with the largest ``weight`` (NaN last), in their original order."""
    if len(frame) <= limit:
        return frame
    w = pd.to_numeric(weight, errors="coerce").fillna(-1.0).to_numpy(dtype=float)
    keep = np.sort(np.argsort(-w, kind="stable")[:limit])
    return frame.iloc[keep]


def diff_payload(result: DiffResult, limit: int = MAX_RECORDS) -> dict[str, Any]:
    """The diff-specific keys of the document (everything but the common contract keys), JSON-ready."""
    pairs = result.pairs
    delta = (pd.to_numeric(pairs.get("duration_s_cand"), errors="coerce")
             - pd.to_numeric(pairs.get("duration_s_base"), errors="coerce")).abs() if len(pairs) \
        else pd.Series(dtype=float)
    shown = _largest(pairs, delta, limit)
    new = _largest(result.new, result.new.get("duration_s", pd.Series(dtype=float)), limit)
    vanished = _largest(result.vanished, result.vanished.get("duration_s", pd.Series(dtype=float)), limit)
    payload: dict[str, Any] = jsonable({
        "pairs": pair_records(shown),
        "families": family_records(result.families),
        "series": series_records(result.series),
        "unmatched": {"new": unmatched_records(new), "vanished": unmatched_records(vanished)},
        "listed": {"pairs": [len(shown), len(pairs)], "new": [len(new), len(result.new)],
                   "vanished": [len(vanished), len(result.vanished)]},
        "totals": result.totals,
        "verdict": result.verdict,
    })
    return payload


def listing_lint(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """A lint entry for each list the document cut (see :data:`MAX_RECORDS`)."""
    out = []
    for key, (shown, total) in payload["listed"].items():
        if shown < total:
            out.append({"code": "diff-list-truncated", "kernels": [],
                        "message": f"{key}: the {shown} largest by time of {total} are listed; families, "
                                   "series, totals and the verdict cover all of them"})
    return out


# --------------------------------------------------------------------------- reading a side


@dataclass
class Side:
    """One run as read: flat kernel results plus what the document lists about its inputs."""

    path: str
    source: str  # "profile" (ncu exports analysed now) or "analysis" (a saved rooftop JSON)
    results: pd.DataFrame
    inputs: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    devices: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)


def read_document(path: Path) -> dict[str, Any] | None:
    """A rooftop JSON document at ``path``, or None when the file is not one."""
    try:
        with path.open("rb") as fh:
            head = fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError as exc:
        raise InputError(str(path), f"cannot be read ({exc.strerror})", _HINT) from exc
    if not head.startswith(b"{"):
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict) or "schema_version" not in doc:
        return None
    tool = doc.get("tool")
    if not isinstance(tool, dict) or tool.get("name") != "rooftop":
        return None
    return doc


def frame_from_document(doc: dict[str, Any], path: str) -> pd.DataFrame:
    """Rebuild the flat kernel-result frame (``KERNEL_FIELDS`` + ``extra``) from a saved analysis."""
    if doc.get("schema_version") != 1:
        raise InputError(path, f"has schema_version {doc.get('schema_version')!r}; this rooftop reads 1",
                         "re-run `rooftop analyze --json` with this version")
    if doc.get("kind", "analyze") != "analyze":
        raise InputError(path, f"is a rooftop {doc.get('kind')!r} document, not an analysis", _HINT)
    kernels = doc.get("kernels")
    if not isinstance(kernels, list):
        raise InputError(path, "has no 'kernels' list", _HINT)
    rows = []
    for k in kernels:
        if not isinstance(k, dict):
            continue
        row: dict[str, Any] = {}
        for col, p in KERNEL_FIELDS.items():
            v: Any = k
            for part in p:
                v = v.get(part) if isinstance(v, dict) else None
            row[col] = v
        extra = k.get("extra")
        if isinstance(extra, dict):
            for col, v in extra.items():
                row.setdefault(col, v)
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(KERNEL_FIELDS) if not rows else None)
    for col in NUMERIC:
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    for col in ("grid", "block", "index"):
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    return frame


def _with_nvtx(results: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """Carry the kernel table's NVTX path onto the results (by input and index) when it is absent."""
    if "nvtx" in results.columns or "nvtx" not in kernels.columns or not {"input", "index"} <= set(results.columns):
        return results
    src = kernels[["input", "index", "nvtx"]].drop_duplicates(["input", "index"])
    src = src.astype({"input": "string", "index": "Int64"})
    out = results.astype({"input": "string", "index": "Int64"})
    return out.merge(src, on=["input", "index"], how="left", validate="many_to_one")


def load_side(path: str, side: str, device: str | None) -> Side:
    """Read one side: a saved rooftop analysis JSON, or ncu exports (file or folder) analysed now."""
    p = Path(path)
    if not p.exists():
        raise InputError(path, "does not exist", _HINT)
    if p.is_file():
        doc = read_document(p)
        if doc is not None:
            frame = frame_from_document(doc, path)
            if not len(frame):
                raise InputError(path, "is a rooftop analysis with no kernels", _HINT)
            lint = list(doc.get("lint") or [])
            if device:
                lint.append({"code": "diff-device-ignored", "kernels": [],
                             "message": f"{side} {path} is a saved analysis: its ceilings are kept, --device is not applied"})
            return Side(path=path, source="analysis", results=frame,
                        inputs=[{"path": path, "format": "rooftop-json", "records": len(frame), "missing": 0,
                                 "rejected": 0}],
                        rejected=list(doc.get("rejected") or []), devices=list(doc.get("devices") or []),
                        lint=lint)
    from rooftop.analyzer.pipeline import analyze_inputs

    ai = analyze_inputs([path], device)
    if not len(ai.kernels):
        raise InputError(path, "holds no kernel launches",
                         "rooftop diff compares ncu profiles or saved analyses; DCGM streams have no kernels")
    results = _with_nvtx(ai.results, ai.kernels)
    return Side(path=path, source="profile", results=results, inputs=ai.parsed.inputs(),
                rejected=ai.parsed.rejected(), devices=ai.devices, lint=ai.lint)


def _side_lint(sides: list[Side]) -> list[dict[str, Any]]:
    """Each side's lint tagged with ``side``; one entry with side ``both`` when both say the same.

    ``kernels`` indices refer to that side's own analysis (positions in its kernel list).
    """
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for name, side in zip(SIDES, sides, strict=True):
        for lt in side.lint:
            key = (str(lt.get("code")), str(lt.get("message")))
            if key in out and out[key]["side"] != name:
                out[key]["side"] = "both"
            else:
                out.setdefault(key, {**lt, "side": name})
    return list(out.values())


def _device_lint(b: pd.DataFrame, c: pd.DataFrame) -> list[dict[str, Any]]:
    db = sorted(set(_str_col(b, "device")) - {""})
    dc = sorted(set(_str_col(c, "device")) - {""})
    if db and dc and db != dc:
        return [{"code": "diff-different-devices", "kernels": [],
                 "message": f"baseline ran on {', '.join(db)}, candidate on {', '.join(dc)}: "
                            "durations are not comparable like for like"}]
    return []


def run_diff(baseline: str, candidate: str, *, fail_on: float | None, device: str | None,
             command: str) -> dict[str, Any]:
    """The whole ``diff`` job; returns the contract document of kind ``diff``."""
    if fail_on is not None and (not math.isfinite(fail_on) or fail_on < 0):
        raise InputError("--fail-on", f"{fail_on!r} is not a percentage ≥ 0", "e.g. --fail-on 5")
    sides = [load_side(path, side, device) for path, side in zip((baseline, candidate), SIDES, strict=True)]
    result = compare(sides[0].results, sides[1].results, fail_on=fail_on)
    inputs = [{**i, "side": s} for s, side in zip(SIDES, sides, strict=True) for i in side.inputs]
    rejected = [{**r, "side": s} for s, side in zip(SIDES, sides, strict=True) for r in side.rejected]
    devices: list[dict[str, Any]] = []
    for side in sides:
        devices += [d for d in side.devices if d not in devices]
    lint = _side_lint(sides) + _device_lint(result.baseline, result.candidate)
    payload = diff_payload(result)
    lint += listing_lint(payload)
    extra = {
        "sides": {s: {"path": side.path, "source": side.source, "kernels": len(side.results)}
                  for s, side in zip(SIDES, sides, strict=True)},
        **payload,
    }
    return build_document(kind="diff", inputs=inputs, rejected=rejected, devices=devices, kernels=None,
                          findings=findings(result), lint=lint, command=command, extra=extra)
