"""One L1/L2 byte convention per kernel, ncu's when the export carries it (issue 14 item 7).

Rule: docs/formulas.md#work-bytes. Hand-computed values.
"""

from __future__ import annotations

import pandas as pd
import pytest

from rooftop.analyzer.kernels.analyze import analyze_kernels
from rooftop.analyzer.metrics.columns import cc_number
from rooftop.analyzer.metrics.traffic import bytes_by_level

BASE = {"input": "a.csv", "index": 0, "name": "k", "cc": "8.0", "duration_s": 1e-3,
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 5e8,
        "sm__cycles_elapsed.avg.per_second": 1e9, "lts__cycles_elapsed.avg.per_second": 2e9,
        "l1tex__cycles_elapsed.avg.per_second": 1e9}
T_BYTES = {"l1tex__t_bytes.sum": 4e9, "lts__t_bytes.sum": 2e9,
           "l1tex__t_bytes.sum.peak_sustained": 10_000.0, "lts__t_bytes.sum.peak_sustained": 2_000.0}
NCU = {"l1tex__lsu_writeback_active_mem_lg.sum": 1e7, "lts__lts2xbar_cycles_active.sum": 1e7}


def _conv(row: dict[str, object]) -> pd.DataFrame:
    df = pd.DataFrame([row])
    dur = pd.Series([1e-3])
    return bytes_by_level(df, dur, cc_number(df))[2]


def test_t_bytes_with_their_peaks_win_at_every_level() -> None:
    """l1tex/lts__t_bytes with .peak_sustained: bytes 4 GB / 2 GB, roofs 10,000 B x 1 GHz = 10 TB/s and
    2,000 B x 2 GHz = 4 TB/s, even though ncu's lsu_writeback/lts2xbar counters are also there."""
    ka = analyze_kernels(pd.DataFrame([{**BASE, **T_BYTES, **NCU}]), pd.DataFrame())
    r, c = ka.results.iloc[0], ka.ceilings.iloc[0]  # type: ignore[union-attr]
    assert (r["bytes_l1"], r["bytes_l2"]) == (4e9, 2e9)
    assert r["bytes_convention"] == "t_bytes"
    assert (c["bw_l1"], c["src_bw_l1"]) == (pytest.approx(10e12), "export")  # the L1 ceiling is kept
    assert (c["bw_l2"], c["src_bw_l2"]) == (pytest.approx(4e12), "export")
    assert r["intensity_l1"] == pytest.approx(1e9 / 4e9)
    [item] = [i for i in ka.lint if i["code"] == "bytes-convention"]
    assert "both from l1tex__t_bytes / lts__t_bytes and their .peak_sustained" in item["message"]
    assert any("one convention per kernel" in e for e in r["evidence"])


def test_ncu_counters_without_t_bytes_peaks_stay_ncu() -> None:
    conv = _conv({**BASE, **NCU, "l1tex__t_bytes.sum": 4e9, "lts__t_bytes.sum": 2e9})
    assert (conv.loc[0, "l1"], conv.loc[0, "l2"]) == ("ncu", "ncu")


def test_never_mixed_within_a_kernel() -> None:
    """ncu's L1 counter and only NERSC's L2: one convention (ncu, the tie-break), L2 left out, not mixed."""
    row = {**BASE, "l1tex__lsu_writeback_active_mem_lg.sum": 1e7, "lts__t_bytes.sum": 2e9}
    conv = _conv(row)
    assert conv.loc[0, "l1"] == "ncu" and pd.isna(conv.loc[0, "l2"])
    # NERSC covers both levels: NERSC for both, never ncu's L1 beside NERSC's L2
    conv = _conv({**row, "l1tex__t_bytes.sum": 4e9})
    assert (conv.loc[0, "l1"], conv.loc[0, "l2"]) == ("nersc", "nersc")
