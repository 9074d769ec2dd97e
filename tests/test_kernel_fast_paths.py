"""Fast paths of the 100k-kernel analysis held equal to their plain forms (bench/NOTES.md, issue 23 item 7)."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.findings.estimate import launch_units
from rooftop.analyzer.metrics.columns import nan_series, none_series
from rooftop.analyzer.metrics.work import counter, fp16_thread_inst, tensor_flops, tensor_shape
from rooftop.analyzer.schema import RooflineCeiling, ceiling_kind
from rooftop.analyzer.view import (
    CEILING_KEYS,
    _ceiling,
    _ceiling_rows,
    _cname,
    _col,
    _panel_groups,
    _text,
    _text_codes,
    weighted_median,
)
from rooftop.parsers.ncu.csv_values import PROBE_ROWS, all_missing_text, is_missing_text
from rooftop.reports.formatting import (
    kernel_label_shares,
    kernel_time,
    kernel_times,
    launches_each,
    launches_of,
)

_CELLS = ["n/a", "N/A", " (!) nan", "", "  ", "1.5", "0", "nan", "(!)n/a", "12,345", None]


@pytest.mark.parametrize("seed", range(40))
def test_all_missing_text_equals_the_whole_column_check(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([0, 1, PROBE_ROWS - 1, PROBE_ROWS, PROBE_ROWS + 1, 300])
    missing = [c for c in _CELLS if c is not None and bool(is_missing_text(pd.Series([c], dtype=object)).all())]
    cells: list[str | None] = [rng.choice(missing) for _ in range(n)]
    if n and rng.random() < 0.7:  # one value that is not a marker, anywhere (also past the probe)
        cells[rng.randrange(n)] = rng.choice(_CELLS)
    s = pd.Series(cells, dtype=object)
    assert all_missing_text(s) == bool(is_missing_text(s).all())


def _tensor_by_name_reference(df: pd.DataFrame, dur: pd.Series, cc: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The name rule of ``tensor_flops`` as the per-launch loop it was (before the fast path)."""
    total, src = nan_series(df), none_series(df)
    inst, _ = counter(df, "inst_executed_pipe_tensor", dur)
    by_pipe = {p: counter(df, f"inst_executed_pipe_tensor_op_{p}", dur)[0] for p in ("hmma", "imma", "dmma")}
    agg = (inst - fp16_thread_inst(df, dur).fillna(0.0) / 32.0).clip(lower=0.0)
    names = df["name"].astype("object").tolist()
    ccs = cc.to_numpy(dtype="float64")
    for i in range(len(df)):
        got = tensor_shape(names[i] if isinstance(names[i], str) else None, float(ccs[i]))
        if got is None:
            continue
        shape, per, pipe = got
        n_pipe = by_pipe[pipe].iat[i]
        n = n_pipe if math.isfinite(n_pipe) else agg.iat[i]
        if not math.isfinite(n):
            continue
        total.iat[i] = n * per
        which = f"sm__inst_executed_pipe_tensor_op_{pipe}" if math.isfinite(n_pipe) else \
            "(sm__inst_executed_pipe_tensor - FP16 warp instructions)"
        src.iat[i] = f"{which} x {per:g} ({shape} from the kernel name, docs/formulas.md#work-bytes)"
    return total, src


_NAMES = ["ampere_fp16_s16816gemm_fp16_128x128", "cutlass_75_tensorop_i8816gemm", "volta_h884gemm_64x64",
          "ampere_d884gemm_64x64", "sm80_xmma_gemm_f16f16_1688gemm", "elementwise_kernel", "x_8832gemm", None]


@pytest.mark.parametrize("seed", range(20))
def test_tensor_flops_by_name_equals_the_per_launch_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))

    def counts() -> np.ndarray:
        v = rng.integers(0, 10**6, n).astype(float)
        v[rng.random(n) < 0.3] = np.nan
        return v

    df = pd.DataFrame({
        "name": pd.Series([_NAMES[int(i)] for i in rng.integers(0, len(_NAMES), n)], dtype="object"),
        "sm__inst_executed_pipe_tensor.sum": counts(),
        "sm__inst_executed_pipe_tensor_op_hmma.sum": counts(),
        "sm__inst_executed_pipe_tensor_op_imma.sum": counts(),
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum": counts(),
    })
    if seed % 2:
        df["name"] = df["name"].astype("string")
    cc = pd.Series(rng.choice([7.0, 7.2, 7.5, 8.0, 8.6, 9.0, 12.0, np.nan], n))
    dur = pd.Series(rng.random(n) * 1e-3)
    total, src, _ = tensor_flops(df, dur, cc)
    ref_total, ref_src = _tensor_by_name_reference(df, dur, cc)
    keep = ~((cc >= 7.0) & (cc < 7.2))  # Volta takes the pipe x 512 rule before the name rule
    assert total[keep].equals(ref_total[keep])
    assert src[keep].equals(ref_src[keep])
    assert src.notna().sum() > 0 or seed > 3  # the name rule fires in the first cases


def _panel_groups_reference(results: pd.DataFrame, ceilings: pd.DataFrame | None) -> dict[object, list[int]]:
    """The panel keys as the per-kernel loop they were (analyzer/view.py before the fast path)."""
    n = len(results)
    dev = _text(ceilings, "ceiling_device", n)
    own = _text(results, "device", n)
    srcs = {k: _text(ceilings, f"src_{_cname(k)}", n) for k in CEILING_KEYS}
    groups: dict[object, list[int]] = {}
    for i in range(n):
        name = dev[i] or own[i] or "unknown device"
        groups.setdefault((name, tuple((k, str(s[i])) for k, s in srcs.items() if s[i])), []).append(i)
    return groups


def _ceiling_rows_reference(ceilings: pd.DataFrame, rows: np.ndarray, weights: np.ndarray, sources: Any, device: str,
                            results: pd.DataFrame) -> list[RooflineCeiling]:
    """``_ceiling_rows`` as it was: every text column as a list of ``str`` per kernel."""
    out = []
    n = len(ceilings)
    for key, source in sources:
        col = "dominant_class" if ceiling_kind(key) == "compute" else "binding_level"
        binding = np.asarray(_text(results, col, len(results)), dtype=object)[rows]
        vals = _col(ceilings, _cname(key), n)[rows]
        if not np.isfinite(vals).any():
            continue
        texts = _text(ceilings, f"detail_{_cname(key)}", n)
        details = [d for d in (texts[i] for i in rows.tolist()) if d]
        out.append(_ceiling(key, weighted_median(vals, weights), float(np.nanmin(vals)),
                            float(np.nanmax(vals)), source, f"{device}|{source}",
                            max(set(details), key=details.count) if details else source,
                            int(np.isfinite(vals).sum()),
                            int((binding == key).sum()) if any(b is not None for b in binding) else None))
    return out


def _mixed_texts(rng: np.random.Generator, n: int, pool: list[object], dtype: str) -> pd.Series:
    vals = [pool[int(i)] for i in rng.integers(0, len(pool), n)]
    return pd.Series(vals, dtype=dtype)


@pytest.mark.parametrize("seed", range(12))
def test_panel_groups_and_ceiling_rows_equal_the_per_kernel_loops(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    odd = seed % 3 == 0  # non-text cells too: numbers, NaN, pd.NA, empty strings
    devs: list[object] = ["H100", "A100", "", None] + ([np.nan, 7, pd.NA] if odd else [])
    srcs: list[object] = ["export", "builtin", "user", None, ""] + ([np.nan, 1.5] if odd else [])
    details: list[object] = ["ncu export", "device table H100", "device table A100", "", None] + ([3] if odd else [])
    dtype = "object" if seed % 2 or odd else "string"
    if dtype == "string":
        devs, srcs, details = ([v for v in p if v is None or isinstance(v, str)] for p in (devs, srcs, details))
    ceilings = pd.DataFrame({"ceiling_device": _mixed_texts(rng, n, devs, dtype)})
    for k in CEILING_KEYS:
        ceilings[f"src_{_cname(k)}"] = _mixed_texts(rng, n, srcs, dtype)
        ceilings[f"detail_{_cname(k)}"] = _mixed_texts(rng, n, details, dtype)
        vals = rng.random(n) * 1e12
        vals[rng.random(n) < 0.2] = np.nan
        ceilings[_cname(k)] = vals
    results = pd.DataFrame({
        "device": _mixed_texts(rng, n, devs, dtype),
        "dominant_class": _mixed_texts(rng, n, ["fp32", "tensor", "fp16", None], "object"),
        "binding_level": _mixed_texts(rng, n, ["dram", "l2", "l1", None] if seed % 4 else [None], "object"),
    })
    for frame, name in [(ceilings, "ceiling_device"), (results, "device"), (ceilings, "src_peak_fp32"),
                        (results, "binding_level"), (results, "missing")]:
        codes, texts = _text_codes(frame, name, n)
        assert [texts[c] if c >= 0 else None for c in codes.tolist()] == _text(frame, name, n)
    fast = _panel_groups(results, ceilings)
    ref = _panel_groups_reference(results, ceilings)
    assert list(fast) == list(ref)
    assert all(fast[k].tolist() == ref[k] for k in ref)
    w = rng.random(n)
    for (device, sources), rows in fast.items():
        got = _ceiling_rows(ceilings, rows, w[rows], sources, device, results)
        assert got == _ceiling_rows_reference(ceilings, rows, w[rows], sources, device, results)


@pytest.mark.parametrize("seed", range(6))
def test_launch_units_of_some_rows_equal_those_rows_of_all(seed: int) -> None:
    """``launch_estimates`` reads units only for launches with NCU rules: the same Units as reading all."""
    rng = np.random.default_rng(seed)
    n = 50

    def pct() -> np.ndarray:
        v = rng.random(n) * 100
        v[rng.random(n) < 0.3] = np.nan
        return v

    results = pd.DataFrame({
        "busiest_pct": pct(), "sol_compute_pct": pct(), "sol_memory_pct": pct(), "sol_l1_pct": pct(),
        "sol_l2_pct": pct(), "sol_dram_pct": pct(),
        "top_unit_word": _mixed_texts(rng, n, ["dram", "fma", None], "object"),
        "top_unit_name": _mixed_texts(rng, n, ["DRAM", "FMA pipe", None, np.nan], "object"),
        "top_unit_side": _mixed_texts(rng, n, ["compute", "memory", None], "object"),
        "top_unit_level": _mixed_texts(rng, n, ["dram", "l2", None], "object"),
    }, index=rng.permutation(n) + 1000)
    rows = sorted(rng.choice(n, int(rng.integers(0, n)), replace=False).tolist())
    every = launch_units(results)
    assert [repr(u) for u in launch_units(results, rows)] == [repr(every[i]) for i in rows]


def _label_shares_reference(kernels: list[dict[str, Any]]) -> tuple[dict[str, float], float]:
    """``kernel_label_shares`` as the per-kernel loop it was."""
    totals: dict[str, float] = {}
    for k in kernels:
        lab = k["label"]
        totals[lab] = totals.get(lab, 0.0) + (kernel_time(k) or 0.0)  # type: ignore[arg-type]
    total = sum(totals.values())
    return ({lab: v / total for lab, v in totals.items()} if total > 0 else {}), total


@pytest.mark.parametrize("seed", range(20))
def test_label_shares_and_launch_arrays_equal_the_per_kernel_loops(seed: int) -> None:
    rng = random.Random(seed)
    durations: list[Any] = [1e-6, 2.5e-3, 0, -0.0, None, math.inf, math.nan, True, 3, 1e308, "1.0", np.float64(4e-5)]
    invocations: list[Any] = [None, 1, 7, 0, -2, 2.5, math.nan, math.inf, True, "3", np.float64(3.0)]
    labels = ["memory-bound", "compute-bound", "unknown", "overhead-bound"]
    kernels: list[dict[str, Any]] = []
    for _ in range(rng.choice([0, 1, 5, 200])):
        k: dict[str, Any] = {"label": rng.choice(labels), "duration_s": rng.choice(durations + [rng.random()] * 6)}
        if rng.random() < 0.7:
            k["extra"] = {"invocations": rng.choice(invocations)} if rng.random() < 0.8 else {}
        kernels.append(k)
    got_shares, got_total = kernel_label_shares(kernels)  # type: ignore[arg-type]
    ref_shares, ref_total = _label_shares_reference(kernels)
    assert repr((got_shares, got_total)) == repr((ref_shares, ref_total))
    assert launches_each(kernels).tolist() == [launches_of(k) for k in kernels]  # type: ignore[arg-type]
    times = [kernel_time(k) for k in kernels]  # type: ignore[arg-type]
    assert [None if math.isnan(t) else t for t in kernel_times(kernels).tolist()] == times  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(10))
def test_occupancy_limiters_equal_the_per_row_rule(seed: int) -> None:
    from rooftop.analyzer.metrics.launch_facts import limiter_names, limiter_text

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    arr = rng.choice([1.0, 2.0, 4.0, 16.0, 32.0, np.nan, np.inf], size=(n, 5))
    low = np.nanmin(np.where(np.isnan(arr), np.inf, arr), axis=1) if n else np.zeros(0)
    no_smem = rng.random(n) < 0.5
    assert limiter_names(arr, low, no_smem) == [limiter_text(arr[i].tolist(), float(low[i]), bool(no_smem[i]))
                                                for i in range(n)]


@pytest.mark.parametrize("seed", range(30))
def test_hint_scan_by_split_equals_the_multiline_regex(seed: int) -> None:
    from rooftop.parsers.ncu.hints import scan_text, scan_text_reference

    rng = random.Random(seed)
    lines = ['"ID","Device","Kernel Name"', '"1","0","kern"', "==PROF== Connected to process", "",
             "Detected GPU: Tesla V100-PCIE-32GB (SM 7.0)", "device: NVIDIA GeForce RTX 5070 (sm_120), 48 SMs",
             "\tGPU 0: NVIDIA A100", " Using device: H100", "GPU 1: NVIDIA H100 80GB HBM3, 132 SMs", "gpu",
             "Running on GPU: A10G", "DEVICE = NVIDIA L4", "not a hint", "=GPU: A100", "GPU İ: A100", "\r"]
    text = ("\r\n" if seed % 3 == 0 else "\n").join(rng.choice(lines) for _ in range(rng.randrange(0, 60)))
    if seed % 4 == 1:
        text += "\n"
    assert scan_text(text) == scan_text_reference(text)



@pytest.mark.parametrize("fixture", ["demo.raw.csv", "demo.details.csv"])
def test_family_table_computed_once_gives_the_same_view_and_findings(fixture: str) -> None:
    """The pipeline computes ``family_table`` once for the findings and the roofline view: both equal
    what each gives computing its own."""
    from pathlib import Path

    from rooftop.analyzer.findings import rank_findings
    from rooftop.analyzer.kernels.families import family_table
    from rooftop.analyzer.pipeline import analyze_inputs
    from rooftop.analyzer.view import kernel_view

    ai = analyze_inputs([str(Path(__file__).resolve().parent.parent / "fixtures" / "ncu" / fixture)])
    assert len(ai.results)
    fams = family_table(ai.results)
    before = fams.copy()
    assert kernel_view(ai.results, ai.ceilings, families=fams) == kernel_view(ai.results, ai.ceilings)
    assert repr(rank_findings(ai.results, None, families=fams, evidence=ai.evidence)) == \
        repr(rank_findings(ai.results, None, evidence=ai.evidence))
    assert fams.equals(before)  # neither changed the shared table
