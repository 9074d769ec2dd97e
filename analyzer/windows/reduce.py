"""Reduce: combine partials of any grouping, then finish them into one row per window (means)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.codes import (
    _decode,
    _group_codes,
    _top_labels,
    _unify,
)
from rooftop.analyzer.windows.fields import (
    _KEY_KEEP,
    LABEL_COLUMNS,
    METRICS,
)
from rooftop.analyzer.windows.partials import WindowPartials


def combine_partials(parts: Any) -> Any:
    """Re-aggregate partials of several partitions (sums of sums and counts; label counts merged).

    Takes :class:`WindowPartials` (a list, returns one) or partials tables (one or a list,
    returns a table). Rows of one (key, window) are reduced in part order (``reduceat`` over a
    stable sort), so the same partials in the same order give the same bits; rows come out
    sorted by key (missing last) and window start."""
    if isinstance(parts, WindowPartials):
        return _combine([parts])
    if isinstance(parts, list) and parts and all(isinstance(p, WindowPartials) for p in parts):
        return _combine(parts)
    df = pd.concat(parts, ignore_index=True) if isinstance(parts, list) else parts
    if not len(df):
        return df.copy()
    return _combine([WindowPartials.from_frame(df)]).to_frame()


def _combine(parts: list[WindowPartials]) -> WindowPartials:
    parts = [p for p in parts if len(p)] or parts[:1]
    window_s = parts[0].window_s
    if any(p.window_s != window_s for p in parts):
        raise ValueError("cannot combine partials of different window lengths")
    n = sum(len(p) for p in parts)
    if n == 0:
        return parts[0]
    k = len(_KEY_KEEP)
    cols: list[np.ndarray] = []
    uniques: list[np.ndarray] = []
    for i in range(k):
        c, u = _unify([p.uniques[i] for p in parts], [p.codes[:, i] for p in parts])
        cols.append(c)
        uniques.append(u)
    ws = np.concatenate([p.window_start for p in parts])
    wcodes, wuniq = pd.factorize(ws, sort=True)
    grp, n_grp = _group_codes([*cols, np.asarray(wcodes, dtype="int64")])
    in_order = bool((grp[1:] > grp[:-1]).all())  # disjoint parts already in key order (hosts in turn)
    order = np.arange(n) if in_order else np.argsort(grp, kind="stable")  # a group's rows in part order
    g_sorted = grp[order]
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    rep = order[starts]  # the first row of each group

    def red(name: str, how: np.ufunc = np.add) -> np.ndarray:
        vals = np.concatenate([getattr(p, name) for p in parts])
        vals = vals if in_order else vals[order]
        # parts with disjoint keys (other hosts): nothing to reduce, only to order
        out = vals if n_grp == n else np.asarray(how.reduceat(vals, starts, axis=0))
        if how is np.add:
            np.add(out, 0, out=out)  # -0.0 -> 0.0, as a sum from 0 would give
        return out

    labels: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for lab in LABEL_COLUMNS:
        if not all(lab in p.labels for p in parts):
            if any(lab in p.labels for p in parts):  # a part without the column counts no values
                parts_l = [p.labels.get(lab, (np.zeros(len(p), "int64"), np.empty(0, dtype=object),
                                              np.zeros(len(p), "int64"))) for p in parts]
            else:
                continue
        else:
            parts_l = [p.labels[lab] for p in parts]
        lc, lu = _unify([u for _c, u, _k in parts_l], [c for c, _u, _k in parts_l])
        lk = np.concatenate([kk for _c, _u, kk in parts_l])
        top, top_n = _top_labels((lc, lu), grp, n_grp, lk)
        labels[lab] = (top, lu, top_n)
    return WindowPartials(uniques=tuple(uniques), codes=np.stack([c[rep] for c in cols], axis=1),
                          window_start=np.asarray(wuniq, dtype="int64")[np.asarray(wcodes)[rep]],
                          sums=red("sums"), counts=red("counts"), zeros=red("zeros"),
                          first_ts=red("first_ts", np.minimum), last_ts=red("last_ts", np.maximum),
                          window_s=window_s, labels=labels)


# -------------------------------------------------------------------------------------- finish
def finish_windows(partials: WindowPartials | pd.DataFrame) -> pd.DataFrame:
    """One row per window: means per metric (short names), ``n_samples``, ``start``/``end``, labels;
    sorted by host, gpu, PCI bus id, mig (missing first), window start."""
    p = partials if isinstance(partials, WindowPartials) else WindowPartials.from_frame(partials)
    n = len(p)
    ws = np.full(n, float(p.window_s))
    order = np.lexsort((p.window_start, *[(p.codes[:, _KEY_KEEP.index(c)] + 1) % (len(p.uniques[_KEY_KEEP.index(c)]) + 1)
                                          for c in ("mig", "pci_bus_id", "gpu", "host")]))
    cols: dict[str, Any] = {c: pd.Series(p.key_values(i)[order], dtype=object) for i, c in enumerate(_KEY_KEEP)}
    wstart = p.window_start[order]
    cols["window_start"] = wstart
    start = pd.to_datetime(wstart, unit="ms", utc=True)
    cols["start"] = start
    cols["end"] = start + pd.to_timedelta(np.round(ws * 1000).astype("int64"), unit="ms")
    cols["window_s"] = ws
    sums, cnts, zeros = p.sums[order], p.counts[order], p.zeros[order]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(cnts > 0, sums / np.where(cnts > 0, cnts, 1), np.nan)
    # the metric columns as three 2-D blocks, after the others (one column per array would exceed
    # pandas' 100-block fragmentation limit once a few columns are added)
    blocks = [pd.DataFrame(means, columns=list(METRICS), copy=False),
              pd.DataFrame(cnts, columns=[m + "__n" for m in METRICS], copy=False),
              pd.DataFrame(zeros, columns=[m + "__zero" for m in METRICS], copy=False)]
    cols["n_samples"] = cnts.sum(axis=1)
    cols["first_ts"] = pd.to_datetime(p.first_ts[order], unit="ms", utc=True)
    cols["last_ts"] = pd.to_datetime(p.last_ts[order], unit="ms", utc=True)
    for lab in LABEL_COLUMNS:
        if lab in p.labels:
            c, u, _k = p.labels[lab]
            cols[lab] = pd.Series(_decode(c, u)[order], dtype=object)
        else:
            cols[lab] = pd.Series(np.full(n, None, dtype=object), dtype=object)
    return pd.concat([pd.DataFrame(cols, copy=False), *blocks], axis=1)


def without_unplaced(wide: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``wide`` without the windows of samples that name no GPU (an exporter block whose samples
    carry no label set: no ``gpu``/``UUID``), and how many samples those held: such samples cannot
    be placed on a GPU, so no window, label or roll-up takes them (docs/formulas.md#windows)."""
    if not len(wide) or "gpu" not in wide.columns:
        return wide, 0
    gpu = wide["gpu"]
    unplaced = gpu.isna() | gpu.astype(str).eq("")
    if not unplaced.any():
        return wide, 0
    return wide.loc[~unplaced].reset_index(drop=True), int(wide.loc[unplaced, "n_samples"].sum())


def unplaced_lint(n: int) -> list[dict[str, object]]:
    """The lint item for :func:`without_unplaced`'s count (none when 0)."""
    if not n:
        return []
    return [{"code": "samples-without-gpu", "kernels": [],
             "message": f"{n:,} sample(s) name no GPU (no gpu/UUID label: an exporter block without a label "
                        "set): not analysed, as no window can place them; check the exporter's labels"}]
