"""Noise-aware verdicts per series and the gate (docs/formulas.md#diff)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.diff import stats
from rooftop.analyzer.diff.deltas import _col, group_deltas, pct
from rooftop.analyzer.diff.match import KEY, REPORT_PCT, SIDES
from rooftop.analyzer.document import jsonable


def series_stats(baseline: pd.DataFrame, candidate: pd.DataFrame, alpha: float = stats.ALPHA) -> pd.DataFrame:
    """:func:`analyzer.diff.stats.compare_series` over every launch of both runs (identified frames)."""
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


GATES = ("total", "matched")
"""``total``: matched series and the total kernel time (new and vanished kernels included);
``matched``: matched series only (docs/formulas.md#diff)."""


def _how_text(tested: int, compared: int, alpha: float) -> str:
    """How the compared series were judged, for the verdict's reason."""
    if tested:
        return (f"{compared} series compared: {tested} with {stats.TEST_NAME} at α={alpha:g}, "
                f"{compared - tested} by threshold only")
    return f"{compared} series compared, all by threshold only (too few launches for a test)"


def _test_text(tested: int, compared: int, alpha: float) -> str:
    """Which series the statistical test judged; the rest are judged by the threshold alone."""
    if not tested:
        return "none run: every series has too few launches, judged by the threshold alone"
    if tested == compared:
        return f"{stats.TEST_NAME} at α={alpha:g} on all {compared} series"
    return f"{stats.TEST_NAME} at α={alpha:g} on {tested} of {compared} series; the rest by the threshold alone"


def verdict(series: pd.DataFrame, fail_on: float | None, alpha: float = stats.ALPHA, *,
            total: dict[str, Any] | None = None, gate: str = "total") -> dict[str, Any]:
    """The gate. ``series`` is :func:`series_table` output; ``fail_on`` a percentage or None;
    ``total``: ``{"change", "baseline_s", "candidate_s", "new": [(family, seconds)], "vanished": [...]}``
    (the total-time gate, applied when ``gate`` is ``total``)."""
    threshold = (fail_on if fail_on is not None else REPORT_PCT) / 100.0
    reg = series[series["status"] == "regressed"].sort_values(["delta_s", "change"], ascending=False)
    imp = series[series["status"] == "improved"].sort_values(["delta_s", "change"], ascending=True)
    tested = int((series["method"] == "mann-whitney").sum())
    compared = int(((series["n_base"] > 0) & (series["n_cand"] > 0)).sum())
    thr = f"{threshold * 100:g} %"
    tchange = (total or {}).get("change")
    total_fail = (gate == "total" and fail_on is not None and tchange is not None
                  and math.isfinite(tchange) and tchange > threshold)
    fail = fail_on is not None and (len(reg) > 0 or total_fail)
    how = _how_text(tested, compared, alpha)
    parts = []
    if len(reg) and fail_on is not None:
        named = "; ".join(f"{r.series} {pct(r.change)} ({_evidence(r)})" for r in reg.head(5).itertuples())
        more = f" and {len(reg) - 5} more" if len(reg) > 5 else ""
        parts.append(f"{len(reg)} regression(s) beyond {thr}: {named}{more}")
    if total_fail:
        parts.append(_total_text(total or {}, thr))
    if fail:
        reason = f"{'; '.join(parts)}. {how}."
    elif fail_on is not None:
        reason = f"no regression beyond {thr} that is more than noise. {how}."
        if gate == "total" and tchange is not None and math.isfinite(tchange):
            reason += f" Total kernel time {pct(tchange)} (new and vanished kernels included)."
        elif gate == "matched":
            reason += " Gate: matched kernels only (--gate matched); new and vanished kernels not judged."
    else:
        reason = (f"report only (no --fail-on): {len(reg)} regression(s) and {len(imp)} improvement(s) "
                  f"beyond {thr}. {how}.")
    if not compared and not total_fail:
        reason = ("nothing to compare: no kernel launch matched between the two runs "
                  "(see the new and vanished kernels; a renamed kernel is one of each)")
    if not compared and not total_fail:
        summary = "nothing matched: no verdict"
    elif fail:
        what = [f"{len(reg)} regression(s)"] if len(reg) else []
        if total_fail:
            what.append(f"total kernel time {pct(float(tchange or 0.0))}")
        summary = f"FAIL: {' and '.join(what)} beyond {thr}"
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
        "test": _test_text(tested, compared, alpha),
        "gate": gate,
        "regressions": series_records(reg),
        "improvements": series_records(imp),
        "reason": reason,
    }


def _evidence(row: Any) -> str:
    if row.method == "mann-whitney":
        return f"p={row.p_adjusted:.2g} Holm-adjusted"
    return str(row.note)


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


def _total_text(total: dict[str, Any], thr: str) -> str:
    """The total-time regression in words, naming the new kernels that added time."""
    text = (f"total kernel time {pct(total['change'])} beyond {thr} "
            f"({_secs(total.get('baseline_s'))} → {_secs(total.get('candidate_s'))}, new and vanished kernels "
            "included; a sum, not a test)")
    new = total.get("new") or []
    if new:
        named = ", ".join(f"{f} {_secs(s)}" for f, s in new[:5])
        text += f"; new kernels: {named}" + (f" and {len(new) - 5} more" if len(new) > 5 else "")
    gone = total.get("vanished") or []
    if gone:
        text += f"; vanished: {', '.join(f for f, _s in gone[:3])}" + (" ..." if len(gone) > 3 else "")
    return text


def _secs(s: Any) -> str:
    if s is None or not math.isfinite(float(s)):
        return "n/a"
    v = float(s)
    return f"{v * 1e3:.3g} ms" if v < 1 else f"{v:.3g} s"
