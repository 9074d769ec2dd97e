"""Bytes moved per kernel at L1, L2 and DRAM, one L1/L2 convention per kernel, and the rates of
exports without a duration (docs/formulas.md#work-bytes; docs/research/formulas.md §1.2, §1.7, §2.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import (
    LEVELS,
    Recipe,
    column,
    nan_series,
    none_series,
    resolve,
)
from rooftop.analyzer.metrics.work import fp_flops, tensor_flops

L2_BYTES_PER_CYCLE = 32.0  # lts__lts2xbar_cycles_active x 32 (docs/research/formulas.md §1.2)
L1_BYTES_PER_CYCLE = 128.0  # l1tex__lsu_writeback_active_* x 128 (docs/research/formulas.md §1.2)

# -- bytes per level ---------------------------------------------------------------------------

DRAM_RECIPES = (
    Recipe(("dram__bytes.sum",)),
    Recipe(("dram__bytes.sum.per_second",), rate=True),
    Recipe(("dram__bytes_read.sum", "dram__bytes_write.sum")),
    Recipe(("dram__bytes_op_read.sum", "dram__bytes_op_write.sum")),
    Recipe(("dram__read_bytes", "dram__write_bytes"), label="dram__read_bytes + dram__write_bytes (legacy 2019 names)"),
    Recipe(("dram__read_bytes.sum", "dram__write_bytes.sum")),
    Recipe(("dram__bytes_per_sec",), rate=True, label="dram__bytes_per_sec x duration (legacy 2019 name)"),
)
L2_NCU_RECIPES = (
    Recipe(("lts__lts2xbar_cycles_active.sum",), L2_BYTES_PER_CYCLE),
    Recipe(("derived__lts__lts2xbar_bytes.sum",)),
    Recipe(("lts__lts2xbar_cycles_active.sum.per_second",), L2_BYTES_PER_CYCLE, rate=True),
    Recipe(("derived__lts__lts2xbar_bytes.sum.per_second",), rate=True),
)
L2_NERSC_RECIPES = (
    Recipe(("lts__t_bytes.sum",)),
    Recipe(("lts__t_bytes.sum.per_second",), rate=True),
)
# L2 from the tag-stage sectors where neither lts2xbar nor lts__t_bytes is exported (ncu --set full
# reports of some versions): lts__t_bytes is lts__t_sectors x 32 B by NCU's own definition
L2_SECTOR_RECIPES = (
    Recipe(("lts__t_sectors.sum",), L2_BYTES_PER_CYCLE, label="lts__t_sectors.sum x 32 B (NCU's lts__t_bytes)"),
    Recipe(("lts__t_sectors.sum.per_second",), L2_BYTES_PER_CYCLE, rate=True,
           label="lts__t_sectors.sum.per_second x 32 B x duration (NCU's lts__t_bytes)"),
)
L1_NERSC_RECIPES = (
    Recipe(("l1tex__t_bytes.sum",)),
    Recipe(("l1tex__t_bytes.sum.per_second",), rate=True),
)


def _l1_recipes(kind: str) -> tuple[Recipe, ...]:
    name = {"lgds": "l1tex__lsu_writeback_active_mem_lgds", "lg": "l1tex__lsu_writeback_active_mem_lg",
            "all": "l1tex__lsu_writeback_active"}[kind]
    derived = {"lgds": "derived__l1tex__lsu_writeback_bytes_mem_lgds", "lg": "derived__l1tex__lsu_writeback_bytes_mem_lg",
               "all": "derived__l1tex__lsu_writeback_bytes"}[kind]
    return (
        Recipe((f"{name}.sum",), L1_BYTES_PER_CYCLE),
        Recipe((f"{derived}.sum",)),
        Recipe((f"{name}.sum.per_second",), L1_BYTES_PER_CYCLE, rate=True),
        Recipe((f"{derived}.sum.per_second",), rate=True),
    )


def l1_order(cc: pd.Series) -> dict[str, pd.Series]:
    """Which L1 writeback counter ncu's sections use at each CC (docs/research/formulas.md §1.2, §7 item 2)."""
    return {"lgds": cc >= 9.0, "lg": (cc >= 7.5) & (cc < 9.0), "all": cc < 7.5}


def bytes_by_level(df: pd.DataFrame, dur: pd.Series, cc: pd.Series
                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Bytes moved at L1, L2 and DRAM per kernel, one L1/L2 convention per kernel (docs/formulas.md#work-bytes).

    Returns (bytes, source, convention): ``source[level]`` names the metric used, and
    ``convention[level]`` is ``"ncu"`` (``lsu_writeback`` x 128 / ``lts2xbar`` x 32, ncu's hierarchical
    sections), ``"t_bytes"`` (``l1tex__t_bytes`` / ``lts__t_bytes`` with their ``.peak_sustained`` in the
    export: those metrics and their own ceilings at every level), ``"nersc"`` (``*_t_bytes`` without
    peaks) or ``None`` when the level was not collected. L1 and L2 never mix conventions: the kernel takes
    the convention covering more of the two levels (ties: ``t_bytes``, then ``ncu``, then ``nersc``).
    """
    out = pd.DataFrame(index=df.index)
    src = pd.DataFrame(index=df.index)
    conv = pd.DataFrame(index=df.index)

    out["dram"], src["dram"] = resolve(df, DRAM_RECIPES, dur)
    conv["dram"] = none_series(df).mask(out["dram"].notna(), "ncu")

    l2, l2s = resolve(df, L2_NCU_RECIPES, dur)
    l2n, l2ns = resolve(df, L2_NERSC_RECIPES, dur)
    # L1: the counter ncu uses at this CC first, then the other ncu variants.
    cands = {k: resolve(df, _l1_recipes(k), dur) for k in ("lgds", "lg", "all")}
    prefer = l1_order(cc)
    l1, l1s = nan_series(df), none_series(df)
    for k in ("lgds", "lg", "all"):  # preferred variant for the row's CC
        v, s = cands[k]
        take = l1.isna() & v.notna() & prefer[k]
        l1, l1s = l1.mask(take, v), l1s.mask(take, s)
    for k in ("lgds", "lg", "all"):  # unknown CC, or the export chose another variant
        v, s = cands[k]
        take = l1.isna() & v.notna()
        l1, l1s = l1.mask(take, v), l1s.mask(take, s)
    l1n, l1ns = resolve(df, L1_NERSC_RECIPES, dur)

    n_ncu = l1.notna().astype(int) + l2.notna().astype(int)
    n_tb = l1n.notna().astype(int) + l2n.notna().astype(int)
    tb_peaks = (column(df, "l1tex__t_bytes.sum.peak_sustained").notna() & l1n.notna()) | \
        (column(df, "lts__t_bytes.sum.peak_sustained").notna() & l2n.notna())
    use_tb = (n_tb > 0) & ((n_tb > n_ncu) | (tb_peaks & (n_tb >= n_ncu)))
    tb_word = pd.Series("nersc", index=df.index, dtype="object").mask(tb_peaks, "t_bytes")
    for lvl, (v, s), (vn, sn) in (("l1", (l1, l1s), (l1n, l1ns)), ("l2", (l2, l2s), (l2n, l2ns))):
        out[lvl] = v.mask(use_tb, vn)
        src[lvl] = s.mask(use_tb, sn)
        conv[lvl] = none_series(df).mask(~use_tb & v.notna(), "ncu").mask(use_tb & vn.notna(), tb_word)
    # no L2 counter of either convention: the tag-stage sectors (convention "sectors", stated as such)
    l2s_v, l2s_s = resolve(df, L2_SECTOR_RECIPES, dur)
    take = out["l2"].isna() & l2s_v.notna()
    out["l2"], src["l2"] = out["l2"].mask(take, l2s_v), src["l2"].mask(take, l2s_s)
    conv["l2"] = conv["l2"].mask(take, "sectors")
    return out[list(LEVELS)], src[list(LEVELS)], conv[list(LEVELS)]


def bytes_convention(conv: pd.DataFrame) -> pd.Series:
    """One word per kernel for the L1/L2 byte convention: ncu, t_bytes, nersc (never mixed since
    :func:`bytes_by_level` picks one per kernel; ``mixed`` only for a hand-built table), or None. L2 bytes
    from ``lts__t_sectors`` (convention ``sectors``, where no L2 counter of either convention exists) do
    not change the word: the evidence states them."""
    l1, l2 = conv["l1"], conv["l2"].mask(conv["l2"] == "sectors")  # the L2 fallback, stated on its own
    both = l1.notna() & l2.notna()
    # where(), not fillna(): no object-dtype downcasting (a FutureWarning on pandas 2.x)
    out = pd.Series(np.where(l2.notna(), l2.to_numpy(dtype=object), l1.to_numpy(dtype=object)), index=conv.index)
    return out.mask(both & (l1 != l2), "mixed")


def rate_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Only the rate metrics (``.per_cycle_elapsed``, ``.per_second``), clocks and device attributes.

    For exports without a duration (ncu's section CSVs, docs/formulas.md#work-bytes): the work and
    traffic functions run on this frame with a duration of 1 s return FLOP/s and bytes/s exactly as
    ncu's roofline sections compute them (per-cycle-elapsed x cycles per second, docs/research/formulas.md §1.1),
    never an absolute count mistaken for a rate."""
    keep = [c for c in df.columns if c.endswith((".per_cycle_elapsed", ".per_second", "_per_sec", ".peak_sustained"))
            or c.startswith("device__") or c in ("cc", "input", "index")]
    return df[keep]


def rates(df: pd.DataFrame, cc: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(FLOP/s by class, bytes/s by level, byte-rate source, convention by level) from :func:`rate_frame`."""
    sub = rate_frame(df)
    one = pd.Series(1.0, index=df.index)
    fp, _ = fp_flops(sub, one)
    t, _, _ = tensor_flops(sub, one, cc)
    b, bsrc, conv = bytes_by_level(sub, one, cc)
    return fp.assign(tensor=t), b, bsrc, conv
