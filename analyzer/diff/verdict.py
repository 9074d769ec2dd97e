"""Noise-aware verdicts per series and the gate (docs/formulas.md#diff)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.diff import stats
from rooftop.analyzer.diff.deltas import _col, group_deltas, pct
from rooftop.analyzer.diff.gate import DECIDED, Gate, decide, p_text
from rooftop.analyzer.diff.match import KEY, SIDES, _str_col
from rooftop.analyzer.document import jsonable
from rooftop.analyzer.kernels.families import display_name

__all__ = [
    "GATES", "SERIES_FIELDS", "decided_counts", "how_text", "named", "noise_text",
    "series_records", "series_stats", "series_table", "short_name", "test_text", "verdict",
]

NAME_LIMIT = 80
"""Characters of a kernel name in verdict sentences (the JSON records keep the whole name)."""


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


def _note(method: str, n_base: int, n_cand: int) -> str:
    if method == "mann-whitney":
        return f"{n_base} vs {n_cand} launches: Mann–Whitney U, Holm-adjusted"
    if min(n_base, n_cand) <= 1:
        return "single launch: threshold only"
    return f"{min(n_base, n_cand)} launches: too few for a test here, threshold only"


GATES = ("total", "matched")
"""``total``: matched series and the total kernel time (new and vanished kernels included);
``matched``: matched series only (docs/formulas.md#diff)."""


def short_name(family: Any, grid: Any = None, block: Any = None, nvtx: Any = None, device: Any = None) -> str:
    """A series in a sentence: the family shortened to :data:`NAME_LIMIT` characters
    (``analyzer.kernels.families.display_name``), its launch configuration when known and not
    already in the name, its NVTX path, and ``GPU <device>:`` for a timeline's device id."""
    name = display_name(str(family), NAME_LIMIT)
    g, b = (None if v is None or (isinstance(v, float) and math.isnan(v)) or v in (-1, "") else v
            for v in (grid, block))
    if (g is not None or b is not None) and "(grid " not in name:
        name += f" (grid {g if g is not None else '?'}, block {b if b is not None else '?'})"
    if nvtx:
        name += f" @ {display_name(str(nvtx), 40)}"
    if device:
        name = f"GPU {device}: {name}"
    return name


def _evidence(row: Any) -> str:
    if row.method == "mann-whitney":
        return f"{p_text(row.p_adjusted)} Holm-adjusted"
    return str(row.note)


def named(rows: pd.DataFrame, k: int = 5) -> str:
    """Up to ``k`` series as ``name +30 % (p=1e-09 Holm-adjusted)``; ``and N more``."""
    text = "; ".join(f"{_row_name(r)} {pct(r.change)} ({_evidence(r)})" for r in rows.head(k).itertuples())
    return text + (f" and {len(rows) - k} more" if len(rows) > k else "")


def _row_name(r: Any) -> str:
    given = getattr(r, "short_name", None)
    if isinstance(given, str) and given:
        return given
    return short_name(getattr(r, "family", r.series), getattr(r, "grid", None), getattr(r, "block", None),
                      getattr(r, "nvtx", None), getattr(r, "gpu", None))


def how_text(tested: int, compared: int, alpha: float, what: str = "series") -> str:
    """How the compared series (or ``what``) were judged, for the verdict's reason."""
    if tested:
        return (f"{compared} {what} compared: {tested} with {stats.TEST_NAME} at α={alpha:g}, "
                f"{compared - tested} by threshold only")
    return f"{compared} {what} compared, all by threshold only (too few repeats for a test)"


def test_text(tested: int, compared: int, alpha: float, what: str = "series") -> str:
    """Which series (or ``what``) the statistical test judged; the rest are judged by the threshold alone."""
    if not compared:
        return f"none run: no {what} on both sides"
    if not tested:
        return f"none run: every one of the {what} has too few repeats, judged by the threshold alone"
    if tested == compared:
        return f"{stats.TEST_NAME} at α={alpha:g} on all {compared} {what}"
    return f"{stats.TEST_NAME} at α={alpha:g} on {tested} of {compared} {what}; the rest by the threshold alone"


def noise_text(series: pd.DataFrame, gate: Gate, what: str = "series") -> str:
    """What the effect size and the test held back: significant series within the effect threshold
    (the run-to-run noise the test cannot see) and series beyond it that the test calls noise."""
    compared = series[series["decided_by"] != ""]
    small = compared[(compared["decided_by"] == "effect") & compared["significant"].astype(bool)]
    parts = []
    if len(small):
        top = small.reindex(small["change"].abs().sort_values(ascending=False).index).iloc[0]
        parts.append(f"{len(small)} {what} changed significantly but by less than {gate.effect_pct:g} % "
                     f"(largest {_row_name(top)} {pct(top['change'])}): within run-to-run noise, "
                     "decided by the effect size")
    noisy = compared[compared["decided_by"] == "significance"]
    if len(noisy):
        parts.append(f"{len(noisy)} {what} beyond {gate.effect_pct:g} % but not significant, decided by the test")
    return "; ".join(parts)


def decided_counts(series: pd.DataFrame) -> dict[str, int]:
    """Series per deciding condition (:data:`analyzer.diff.gate.DECIDED`) and the significant
    series the effect size held back."""
    if not len(series):
        return {k: 0 for k in [*DECIDED, "significant_within_effect"]}
    d = series["decided_by"]
    out = {k: int((d == k).sum()) for k in DECIDED}
    out["significant_within_effect"] = int(((d == "effect") & series["significant"].astype(bool)).sum())
    return out


def _unmeasured_text(matched: int, metrics: dict[str, list[str]] | None) -> str:
    """The reason when launches matched but no duration is on both sides (docs/formulas.md#diff)."""
    have = {s: (metrics or {}).get(s) or [] for s in SIDES}
    sides = "; ".join(f"{s}: {', '.join(have[s]) if have[s] else 'no metric'}" for s in SIDES)
    return (f"nothing to gate: {matched} kernel launch(es) matched, but no duration is on both sides ({sides}), "
            "so no time can be compared. Collect gpu__time_duration.sum (ncu --section SpeedOfLight) in both runs")


def verdict(series: pd.DataFrame, fail_on: float | None, alpha: float = stats.ALPHA, *,
            total: dict[str, Any] | None = None, gate: str = "total", min_effect: float | None = None,
            matched: int | None = None, metrics: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The gate. ``series`` is :func:`series_table` output; ``fail_on`` a percentage or None;
    ``min_effect`` the effect floor (% , default :data:`analyzer.diff.gate.MIN_EFFECT_PCT`);
    ``total``: ``{"change", "baseline_s", "candidate_s", "new": [(family, seconds)], "vanished": [...]}``
    (the total-time gate, applied when ``gate`` is ``total``); ``matched``: launches paired;
    ``metrics``: per side, the metrics its matched launches carry (said when none is on both)."""
    g = Gate(fail_on) if min_effect is None else Gate(fail_on, min_effect)
    if "decided_by" not in series.columns:
        series = series.assign(decided_by=decide(series, g.threshold)[1]) if len(series) else \
            series.assign(decided_by=pd.Series(dtype=object))
    threshold = g.threshold
    reg = series[series["status"] == "regressed"].sort_values(["delta_s", "change"], ascending=False)
    imp = series[series["status"] == "improved"].sort_values(["delta_s", "change"], ascending=True)
    tested = int((series["method"] == "mann-whitney").sum())
    compared = int(((series["n_base"] > 0) & (series["n_cand"] > 0)).sum())
    thr = g.threshold_text()
    tchange = (total or {}).get("change")
    total_fail = (gate == "total" and fail_on is not None and tchange is not None
                  and math.isfinite(tchange) and tchange > threshold)
    fail = fail_on is not None and (len(reg) > 0 or total_fail)
    how = how_text(tested, compared, alpha)
    noise = noise_text(series, g) if compared else ""
    parts = []
    if len(reg) and fail_on is not None:
        parts.append(f"{len(reg)} regression(s) beyond {thr}{g.floor_note()}: {named(reg)}")
    if total_fail:
        parts.append(_total_text(total or {}, f"{g.effect_pct:g} %"))
    if fail:
        reason = f"{'; '.join(parts)}. {how}."
    elif fail_on is not None:
        reason = f"no regression beyond {thr} that is more than noise{g.floor_note()}. {how}."
        if gate == "total" and tchange is not None and math.isfinite(tchange):
            reason += f" Total kernel time {pct(tchange)} (new and vanished kernels included)."
        elif gate == "matched":
            reason += " Gate: matched kernels only (--gate matched); new and vanished kernels not judged."
    else:
        reason = (f"report only (no --fail-on): {len(reg)} regression(s) and {len(imp)} improvement(s) "
                  f"beyond {thr}. {how}.")
    if noise:
        reason += f" {noise[0].upper()}{noise[1:]}."
    nothing = not compared and not total_fail
    if nothing and matched:
        reason = _unmeasured_text(matched, metrics)
    elif nothing:
        reason = ("nothing to compare: no kernel launch matched between the two runs "
                  "(see the new and vanished kernels; a renamed kernel is one of each)")
    if nothing:
        summary = ("matched launches have no duration on both sides: no verdict" if matched
                   else "nothing matched: no verdict")
    elif fail:
        what = [f"{len(reg)} regression(s)"] if len(reg) else []
        if total_fail:
            what.append(f"total kernel time {pct(float(tchange or 0.0))}")
        summary = f"FAIL: {' and '.join(what)} beyond {g.effect_pct:g} %"
    elif fail_on is not None:
        summary = f"ok: no regression beyond {g.effect_pct:g} %"
    else:
        summary = f"report only: {len(reg)} regression(s), {len(imp)} improvement(s) beyond {g.effect_pct:g} %"
    return {
        "fail": bool(fail),
        "summary": summary,
        **g.fields(),
        "alpha": alpha,
        "test": test_text(tested, compared, alpha),
        "gate": gate,
        "decided_by": decided_counts(series),
        "regressions": series_records(reg),
        "improvements": series_records(imp),
        "reason": reason,
    }


def _series_device(frame: pd.DataFrame) -> pd.Series:
    """The device of each series' launches (the first named one)."""
    dev = _str_col(frame, "device")
    t = pd.DataFrame({"series": frame["series"], "device": dev})
    t = t[t["device"] != ""]
    return t.drop_duplicates("series").set_index("series")["device"]


def series_table(baseline: pd.DataFrame, candidate: pd.DataFrame, pairs: pd.DataFrame,
                 threshold: float, alpha: float = stats.ALPHA) -> pd.DataFrame:
    """One row per series: test statistics, status (and what decided it), note, device, time on
    each side and an explanation."""
    st = series_stats(baseline, candidate, alpha)
    meta = pd.concat([baseline[["series", *KEY]], candidate[["series", *KEY]]]).drop_duplicates("series")
    st = st.join(meta.set_index("series"), how="left")
    st["status"], st["decided_by"] = decide(st, threshold)
    st["note"] = [_note(m, int(a), int(b)) for m, a, b in zip(st["method"], st["n_base"], st["n_cand"], strict=True)]
    dev = pd.concat([_series_device(baseline), _series_device(candidate)])
    st["device"] = dev[~dev.index.duplicated()].reindex(st.index)
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
    st = st.reset_index()
    st["short_name"] = [short_name(r.family, r.grid, r.block, r.nvtx) for r in st.itertuples()]
    return st


SERIES_FIELDS = ["series", "short_name", "family", "grid", "block", "nvtx", "device", "status", "decided_by",
                 "method", "note", "n_base", "n_cand", "median_base_s", "median_cand_s", "change", "p_value",
                 "p_adjusted", "significant", "time_base_s", "time_cand_s", "delta_s", "explanation"]


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
        named = ", ".join(f"{display_name(f, NAME_LIMIT)} {_secs(s)}" for f, s in new[:5])
        text += f"; new kernels: {named}" + (f" and {len(new) - 5} more" if len(new) > 5 else "")
    gone = total.get("vanished") or []
    if gone:
        text += (f"; vanished: {', '.join(display_name(f, NAME_LIMIT) for f, _s in gone[:3])}"
                 + (" ..." if len(gone) > 3 else ""))
    return text


def _secs(s: Any) -> str:
    if s is None or not math.isfinite(float(s)):
        return "n/a"
    v = float(s)
    return f"{v * 1e3:.3g} ms" if v < 1 else f"{v:.3g} s"
