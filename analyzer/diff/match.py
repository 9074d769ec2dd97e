"""Kernel identity and matching across two runs: series key, ordinal, new and vanished (docs/formulas.md#diff)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooftop.analyzer.kernels.families import family_key
from rooftop.analyzer.schema.vocab import SIDES as _SIDES

SIDES = _SIDES
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
    family = _unsplit(out, _str_col(out, "family"))
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


def _unsplit(results: pd.DataFrame, family: pd.Series) -> pd.Series:
    """The family without the verdict split of :func:`assign_families` (``key [label limiter]``
    -> ``key``): a kernel whose launches were split by label in one run still pairs with the same
    kernel in the other, which is what a diff must show (docs/formulas.md#families)."""
    if "name" not in results.columns or not len(results):
        return family
    key = family_key(results).astype(object).fillna("").astype(str)
    split = pd.Series([f.startswith(k + " [") and f.endswith("]") for f, k in
                       zip(family, key, strict=True)], index=family.index, dtype=bool)
    return family.where(~split, key)


def series_ids(frame: pd.DataFrame) -> pd.Series:
    """Readable series id: ``family ⟨grid G, block B⟩`` plus `` @ nvtx`` when there is one.

    The configuration is not repeated when the family name already ends with it
    (``analyzer.kernels.families`` writes ``name (grid G, block B)``).
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
    """Family names without the `` (grid G, block B)`` suffix that ``analyzer.kernels.families`` adds."""
    return family.astype(str).str.replace(_CONFIG_SUFFIX.pattern, "", regex=True)


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

    One piece because step 2 works on the rows step 1 left and on masks (configuration and NVTX
    known) that the key and series choice after it reuse.
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
