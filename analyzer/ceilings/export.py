"""Ceilings from the export itself: ``<metric>.peak_sustained`` x the unit's measured
``*__cycles_elapsed.avg.per_second`` per kernel, as ncu's roofline sections draw the roofs
(docs/formulas.md#ceilings; docs/research/formulas.md §1.1-1.6), and the DRAM peak from the bus
width where ncu gives no ``dram__bytes.sum.peak_sustained``. Used by :mod:`analyzer.ceilings.per_kernel`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import Recipe, column, resolve
from rooftop.analyzer.metrics.traffic import L1_BYTES_PER_CYCLE, L2_BYTES_PER_CYCLE, l1_order
from rooftop.analyzer.metrics.work import clock_hz

# (FMA op, FLOPs per FMA) for the FP peaks (docs/research/formulas.md §1.2-1.4: _x2 / _x4 derived metrics)
_FMA = {"fp64": ("dfma", 2.0), "fp32": ("ffma", 2.0), "fp16": ("hfma", 4.0)}


def export_fp_peaks(df: pd.DataFrame, sm_hz: pd.Series) -> dict[str, tuple[pd.Series, pd.Series]]:
    out = {}
    for cls, (op, x) in _FMA.items():
        recipes = (
            Recipe((f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained",), x),
            Recipe((f"derived__sm__sass_thread_inst_executed_op_{op}_pred_on_x{int(x)}",)),
        )
        per_cycle, src = resolve(df, recipes)
        out[cls] = (per_cycle * sm_hz, src.where(src.isna(), src + " x sm__cycles_elapsed.avg.per_second"))
    return out


PCT_MIN = 1.0
"""A counter's own % of peak gives its peak only from 1 % up: CSV exports print the % with two
decimals, so below 1 % the rounding alone errs by more than 0.5 %."""


def peak_from_pct(df: pd.DataFrame, counter: str, factor: float, dur: pd.Series) -> tuple[pd.Series, pd.Series]:
    """A bandwidth ceiling from the counter's own ``.sum.pct_of_peak_sustained_elapsed``: NCU defines it as
    the counter over (peak per cycle x elapsed cycles), so the peak rate is the counter's rate / (% / 100)
    (docs/formulas.md#ceilings); the instance average ``.avg.per_cycle_elapsed / .avg.peak_sustained`` is the
    same ratio where the % is not exported. The rate is ``<counter>.sum`` / duration, else ``.sum.per_second``."""
    rate = column(df, f"{counter}.sum") / dur.where(dur > 0)
    rate = rate.fillna(column(df, f"{counter}.sum.per_second")) * factor
    pct = column(df, f"{counter}.sum.pct_of_peak_sustained_elapsed")
    # the same ratio per instance: .avg.per_cycle_elapsed / .avg.peak_sustained
    ratio = 100.0 * column(df, f"{counter}.avg.per_cycle_elapsed") / column(df, f"{counter}.avg.peak_sustained")
    by_ratio = pct.isna() & ratio.notna()
    pct = pct.fillna(ratio)
    v = (rate / (pct / 100.0)).where((pct >= PCT_MIN) & (rate > 0))
    x = f" x {factor:g} B" if factor != 1.0 else ""
    text = pd.Series(f"{counter}.sum{x} / duration ÷ its .sum.pct_of_peak_sustained_elapsed (NCU's own % of peak)",
                     index=df.index, dtype="object")
    text = text.mask(by_ratio, f"{counter}.sum{x} / duration ÷ (its .avg.per_cycle_elapsed / .avg.peak_sustained)")
    return v, text.where(v.notna(), None)


def _or(a: tuple[pd.Series, pd.Series], b: tuple[pd.Series, pd.Series]) -> tuple[pd.Series, pd.Series]:
    take = a[0].isna() & b[0].notna()
    return a[0].mask(take, b[0]), a[1].mask(take, b[1])


def export_bw(df: pd.DataFrame, cc: pd.Series, sm_hz: pd.Series, dur: pd.Series | None = None
              ) -> dict[str, dict[str, tuple[pd.Series, pd.Series]]]:
    """level -> convention -> (bytes/s ceiling, description): ``.peak_sustained`` x the unit's clock,
    else (with ``dur``) the counter's own % of peak (:func:`peak_from_pct`)."""
    dur = dur if dur is not None else pd.Series(np.nan, index=df.index)
    clocks: dict[str, pd.Series] = {}  # each unit's clock once (the L1 has four recipes)

    def clock(unit: str) -> pd.Series:
        if unit not in clocks:
            hz, _ = clock_hz(df, unit)
            clocks[unit] = hz.fillna(sm_hz) if unit == "l1tex" else hz
        return clocks[unit]

    def per(recipes: tuple[Recipe, ...], unit: str) -> tuple[pd.Series, pd.Series]:
        per_cycle, src = resolve(df, recipes)
        return per_cycle * clock(unit), src.where(src.isna(), src + f" x {unit}__cycles_elapsed.avg.per_second")

    dram = _or(dram_peak(df, per((Recipe(("dram__bytes.sum.peak_sustained",)),), "dram")),
               peak_from_pct(df, "dram__bytes", 1.0, dur))
    l2 = _or(per((Recipe(("lts__lts2xbar_cycles_active.sum.peak_sustained",), L2_BYTES_PER_CYCLE),
                  Recipe(("derived__lts__lts2xbar_bytes.sum.peak_sustained",))), "lts"),
             peak_from_pct(df, "lts__lts2xbar_cycles_active", L2_BYTES_PER_CYCLE, dur))
    l2n = _or(per((Recipe(("lts__t_bytes.sum.peak_sustained",)),), "lts"), peak_from_pct(df, "lts__t_bytes", 1.0, dur))
    l2s = _or(per((Recipe(("lts__t_sectors.sum.peak_sustained",), L2_BYTES_PER_CYCLE),), "lts"),
              peak_from_pct(df, "lts__t_sectors", L2_BYTES_PER_CYCLE, dur))
    l1_by = {}
    for k, name in (("lgds", "l1tex__lsu_writeback_active_mem_lgds"), ("lg", "l1tex__lsu_writeback_active_mem_lg"),
                    ("all", "l1tex__lsu_writeback_active")):
        dname = name.replace("l1tex__lsu_writeback_active", "derived__l1tex__lsu_writeback_bytes")
        l1_by[k] = _or(per((Recipe((f"{name}.sum.peak_sustained",), L1_BYTES_PER_CYCLE),
                            Recipe((f"{dname}.sum.peak_sustained",))), "l1tex"),
                       peak_from_pct(df, name, L1_BYTES_PER_CYCLE, dur))
    prefer = l1_order(cc)
    l1v, l1s = pd.Series(np.nan, index=df.index), pd.Series(None, index=df.index, dtype="object")
    for only_preferred in (True, False):
        for k in ("lgds", "lg", "all"):
            v, s = l1_by[k]
            take = l1v.isna() & v.notna() & (prefer[k] if only_preferred else True)
            l1v, l1s = l1v.mask(take, v), l1s.mask(take, s)
    l1n = _or(per((Recipe(("l1tex__t_bytes.sum.peak_sustained",)),), "l1tex"), peak_from_pct(df, "l1tex__t_bytes", 1.0, dur))
    return {"dram": {"ncu": dram}, "l2": {"ncu": l2, "nersc": l2n, "sectors": l2s},
            "l1": {"ncu": (l1v, l1s), "nersc": l1n}}


def dram_peak(df: pd.DataFrame, ncu: tuple[pd.Series, pd.Series]) -> tuple[pd.Series, pd.Series]:
    """DRAM ceiling: ncu's ``dram__bytes.sum.peak_sustained`` x DRAM cycles/s; else from the bus width.

    * legacy ncu (2019-2020: ``dram__frequency``): bus width / 8 bytes x ``dram__frequency``, the peak
      behind its ``fbpa__sol_pct`` / ``dram__read_pct + dram__write_pct``;
    * otherwise bus width / 4 bytes per DRAM cycle (two transfers per cycle; equal to
      ``dram__bytes.sum.peak_sustained`` on every corpus report that has both) x the measured
      ``dram__cycles_elapsed.avg.per_second``. docs/formulas.md#ceilings.
    """
    v, s = ncu
    bus = column(df, "device__attribute_global_memory_bus_width")
    legacy_hz = column(df, "dram__frequency")
    legacy = bus / 8.0 * legacy_hz
    take = v.isna() & legacy.notna() & (legacy > 0)
    v = v.mask(take, legacy)
    s = s.mask(take, "device__attribute_global_memory_bus_width / 8 B x dram__frequency (legacy ncu's DRAM peak)")
    modern = bus / 4.0 * column(df, "dram__cycles_elapsed.avg.per_second")
    take = v.isna() & modern.notna() & (modern > 0)
    v = v.mask(take, modern)
    s = s.mask(take, "device__attribute_global_memory_bus_width / 4 B x dram__cycles_elapsed.avg.per_second")
    return v, s
