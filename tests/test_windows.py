"""DCGM windows: partial sums by hand, combine == whole, classification rules, estimates, lint."""

from __future__ import annotations

import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from rooftop.analyzer.ceilings.devices import DeviceSpec
from rooftop.analyzer.windows import scan
from rooftop.analyzer.windows.analysis import analyze_windows
from rooftop.analyzer.windows.codes import _epoch_ms
from rooftop.analyzer.windows.fields import PROFILE_METRICS
from rooftop.analyzer.windows.reduce import combine_partials, finish_windows
from rooftop.analyzer.windows.rules import classify_windows, window_devices
from rooftop.analyzer.windows.scan import _run_starts, window_partials, window_partials_arrow
from rooftop.parsers import parse_path
from rooftop.parsers.model import SAMPLE_SCHEMA
from rooftop.parsers.source import ParseOptions

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "dcgm"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
T0 = pd.Timestamp(START)
STUB = DeviceSpec(name="Stub GPU", source="user", sm_count=100, cc="8.0",
                  peaks={"tensor": 1e15, "fp64": 5e13, "fp32": 6e13, "fp16": 1.2e14},
                  bandwidth={"dram": 3e12}, sources={})

# pandas 3's default ``str`` dtype, spelled out (pandas 2.x's "str" is object and prints None as "None")
_STR = pd.StringDtype("pyarrow", na_value=np.nan)


def samples(rows: list[tuple[Any, ...]], **labels: Any) -> pd.DataFrame:
    """(seconds after T0, gpu, field_id, value) -> a SAMPLE_SCHEMA-shaped DataFrame."""
    df = pd.DataFrame(rows, columns=["t", "gpu", "field_id", "value"])
    out = pd.DataFrame({
        "timestamp": (T0 + pd.to_timedelta(df["t"], unit="s")).astype("datetime64[ms, UTC]"),
        "host": "h", "gpu": df["gpu"], "uuid": None, "model": labels.pop("model", "Stub GPU"),
        "mig": None, "mig_profile": None, "field_id": df["field_id"].astype("int32"), "field": "",
        "value": df["value"].astype("float64"),
        "namespace": None, "pod": None, "container": None, "job": None,
    })
    for k, v in labels.items():
        out[k] = v
    return out


def as_table(df: pd.DataFrame) -> pa.Table:
    missing = {c: None for c in SAMPLE_SCHEMA.names if c not in df.columns}  # pci_bus_id where not given
    return pa.Table.from_pandas(df.assign(**missing) if missing else df, schema=SAMPLE_SCHEMA, preserve_index=False)


@pytest.fixture
def stub_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    import rooftop.analyzer.ceilings.devices as D

    monkeypatch.setattr(D, "lookup", lambda name, cc=None, sm_count=None: STUB if name == "Stub GPU" else None)
    monkeypatch.setattr(D, "load_device_option", lambda opt: STUB if opt else None)


def test_partials_by_hand() -> None:
    s = samples([(0, "0", 1001, 0.2), (30, "0", 1001, 0.4), (0, "0", 1002, 0.1), (30, "0", 1002, 0.0),
                 (60, "0", 1001, 0.9), (5, "0", 150, 40.0)])  # 150 (temperature) is not windowed
    s["pod"] = ["a", "a", "b", None, "c", "a"]
    p = window_partials(s, 60.0)
    assert list(p["window_start"]) == [T0.value // 10**6, T0.value // 10**6 + 60_000]
    w0 = p.iloc[0]
    assert w0["gr_active__sum"] == pytest.approx(0.6) and w0["gr_active__n"] == 2   # 0.2 + 0.4
    assert w0["sm_active__sum"] == pytest.approx(0.1) and w0["sm_active__n"] == 2
    assert w0["sm_active__zero"] == 1 and w0["n_samples"] == 4
    assert (w0["pod"], w0["pod__n"]) == ("a", 2)  # a twice, b once, null not counted
    assert w0["last_ts"] - w0["first_ts"] == 30_000
    f = finish_windows(p)
    assert f["gr_active"].tolist() == [pytest.approx(0.3), pytest.approx(0.9)]  # 0.6 / 2
    assert np.isnan(f["sm_active"].iloc[1])  # no SM samples in the second window
    assert (f["end"] - f["start"]).dt.total_seconds().tolist() == [60.0, 60.0]


def test_combine_equals_whole_in_any_split() -> None:
    r = parse_path(FIX / "dmon_v3_phases.txt", ParseOptions(start=START, interval_s=5.0))
    df = r.samples.to_pandas()
    df["pod"] = np.where(np.arange(len(df)) % 3 == 0, "x", "y")
    whole = finish_windows(window_partials(df, 60.0))
    for parts in ([df.iloc[:400], df.iloc[400:901], df.iloc[901:]], [df.iloc[::2], df.iloc[1::2]],
                  [df[df.gpu == "0"], df[df.gpu == "1"]]):
        partials = [window_partials(p, 60.0) for p in parts]
        nested = combine_partials([combine_partials(partials[:1]), *partials[1:]])
        got = finish_windows(nested)
        pd.testing.assert_frame_equal(got.drop(columns=["pod"]), whole.drop(columns=["pod"]),
                                      check_exact=False, rtol=1e-12, check_dtype=False)
        assert got["pod"].tolist() == whole["pod"].tolist()


def test_label_counts_merge() -> None:
    a = window_partials(samples([(0, "0", 1001, 0.5)] * 2, pod=["a", "a"]), 60.0)
    b = window_partials(samples([(1, "0", 1001, 0.5)] * 3, pod=["b", "b", "b"]), 60.0)
    c = window_partials(samples([(2, "0", 1001, 0.5)] * 2, pod=["a", "a"]), 60.0)
    m = combine_partials([a, b, c])
    assert (m["pod"].iat[0], m["pod__n"].iat[0]) == ("a", 4)  # a: 2 + 2 beats b: 3
    assert m["gr_active__n"].iat[0] == 7 and m["n_samples"].iat[0] == 7
    # documented heuristic: only each partition's top value travels (a 1 + b 2 | a 3 -> a 3)
    d = window_partials(samples([(0, "0", 1001, 0.5)] * 3, pod=["a", "b", "b"]), 60.0)
    e = window_partials(samples([(1, "0", 1001, 0.5)] * 3, pod=["a", "a", "a"]), 60.0)
    assert combine_partials([d, e])["pod"].iat[0] == "a"


CASES = [
    # (metrics, label, limiter)
    ({"gr_active": 0.01, "sm_active": 0.01, "dram_active": 0.02}, "idle", "none"),
    ({"gr_active": 0.9, "sm_active": 0.8, "tensor_active": 0.1, "dram_active": 0.7}, "memory-bound", "dram"),
    ({"gr_active": 0.9, "sm_active": 0.9, "tensor_active": 0.8, "dram_active": 0.5}, "compute-bound", "tensor"),
    # DRAM 0.5 is 0.625 of its practical 0.8 peak, above tensor 0.6: memory wins
    ({"gr_active": 0.9, "sm_active": 0.9, "tensor_active": 0.6, "dram_active": 0.5}, "memory-bound", "dram"),
    ({"gr_active": 0.95, "sm_active": 0.9, "fp64_active": 0.7, "dram_active": 0.2}, "compute-bound", "fp64"),
    ({"gr_active": 0.9, "sm_active": 0.1, "tensor_active": 0.01}, "overhead-bound", "launch"),
    ({"gr_active": 0.2, "sm_active": 0.15, "dram_active": 0.05}, "overhead-bound", "host"),
    ({"gr_active": 0.9, "sm_active": 0.7, "tensor_active": 0.05, "dram_active": 0.1}, "mixed", "latency"),
    ({"gr_active": 0.9, "sm_active": 0.7, "tensor_active": 0.05, "dram_active": 0.3}, "mixed", "dram"),
    ({"gpu_util": 0.01}, "idle", "none"),
    ({"gpu_util": 0.5}, "unknown", "unknown"),  # busy, but nothing decides what limits it
    ({"gpu_util": 1.0, "sm_active": 0.1}, "overhead-bound", "launch"),  # GPU_UTIL saturates with tiny kernels
    ({}, "unknown", "unknown"),
    # no activity field: unknown, or idle when the framebuffer shows no CUDA context (<= 64 MiB)
    ({"power_w": 74.0}, "unknown", "unknown"),
    ({"fb_used_mib": 4.0, "power_w": 74.0}, "idle", "none"),
    ({"fb_used_mib": 64.0}, "idle", "none"),
    ({"fb_used_mib": 65.0}, "unknown", "unknown"),
    ({"nvlink_tx_bytes": 1e9, "pcie_rx_bytes": 1e8}, "unknown", "unknown"),
]


def _wide(rows: list[dict[str, float]], model: str = "Stub GPU", profile: str | None = None) -> pd.DataFrame:
    base = {"host": "h", "gpu": "0", "uuid": None, "model": model, "mig": None, "window_start": 0,
            "mig_profile": profile}
    return pd.DataFrame([{**base, **r} for r in rows])


@pytest.mark.parametrize(("metrics", "label", "limiter"), CASES)
def test_classification_rules(metrics: dict[str, float], label: str, limiter: str) -> None:
    out = classify_windows(_wide([metrics], model="unknown model"))
    assert (out["label"].iat[0], out["limiter"].iat[0]) == (label, limiter)
    assert isinstance(out["evidence"].iat[0], list) and out["evidence"].iat[0]


def test_corrupt_ratio_does_not_overflow_the_evidence() -> None:
    # a corrupt GR-active of 1e308 next to a host-bound window: (1 - gr) * 100 used to overflow
    # (RuntimeWarning) for every row; the host evidence of the real window still reads 80 %
    rows = [{"gr_active": 1e308, "sm_active": 0.5}, {"gr_active": 0.2, "sm_active": 0.15, "dram_active": 0.05}]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = classify_windows(_wide(rows, model="unknown model"))
    assert any("idle 80% of the window" in e for e in out["evidence"].iat[1])


def test_estimates_with_stub_device(stub_devices: None) -> None:
    row = {"gr_active": 0.9, "sm_active": 0.9, "tensor_active": 0.5, "fp32_active": 0.1, "dram_active": 0.4}
    out = classify_windows(_wide([row]))
    # 0.5 x 1e15 + 0.1 x 6e13 = 5.06e14 FLOP/s; 0.4 x 3e12 = 1.2e12 B/s; 5.06e14 / 1.2e12 = 421.67 FLOP/B
    assert out["est_flops_s"].iat[0] == pytest.approx(5.06e14)
    assert out["est_dram_bytes_s"].iat[0] == pytest.approx(1.2e12)
    assert out["est_intensity"].iat[0] == pytest.approx(421.6666, rel=1e-4)
    assert out["device"].iat[0] == "Stub GPU"
    # MIG 3g.40gb: values are relative to the instance, peaks scaled by 3/7
    mig = classify_windows(_wide([row], profile="3g.40gb"))
    assert mig["est_flops_s"].iat[0] == pytest.approx(5.06e14 * 3 / 7)
    # --device overrides the model name; an unknown model has no estimate
    forced = classify_windows(_wide([row], model="whatever"), device="stub.yaml")
    assert forced["est_flops_s"].iat[0] == pytest.approx(5.06e14)
    none = classify_windows(_wide([row], model="whatever"))
    assert np.isnan(none["est_flops_s"].iat[0]) and none["device"].iat[0] is None
    assert window_devices(out)[0]["name"] == "Stub GPU"


EXPECTED = {
    "0": ["idle", "idle", "compute-bound/tensor", "compute-bound/tensor", "memory-bound/dram",
          "memory-bound/dram", "overhead-bound/launch", "overhead-bound/launch", "overhead-bound/host",
          "overhead-bound/host"],
    "1": ["memory-bound/dram", "memory-bound/dram", "idle", "idle", "compute-bound/tensor", "compute-bound/tensor",
          "compute-bound/fp64", "compute-bound/fp64", "idle", "idle"],
}


@pytest.mark.parametrize(("name", "interval"), [("dmon_v2_phases.txt", 5.0), ("dmon_v3_phases.txt", 5.0),
                                                ("dmon_v4_phases.txt", 5.0), ("prom_scrapes_phases.prom", None)])
def test_fixture_phases(name: str, interval: float | None) -> None:
    r = parse_path(FIX / name, ParseOptions(start=START, interval_s=interval))
    wa = analyze_windows(r.samples, window_s=60.0)
    w = wa.windows
    for gpu, want in EXPECTED.items():
        g = w[w.gpu == gpu].sort_values("start")
        got = [lab if lim == "none" else f"{lab}/{lim}" for lab, lim in zip(g["label"], g["limiter"], strict=True)]
        assert got == want, gpu
        assert [(t - T0.value // 10**6) / 1000 for t in g["window_start"]] == [60.0 * i for i in range(10)]
        # a window's start/end are its samples' span (first sample to last + one interval), within 60 s
        assert (g["start"] >= pd.to_datetime(g["window_start"], unit="ms", utc=True)).all()
        # first window: from the first sample (5 s in for dmon ticks) to its end; then whole windows
        assert g["covered_s"].iat[0] == 60.0 - (g["start"].iat[0] - T0).total_seconds()
        assert g["covered_s"].iloc[1:].eq(60.0).all()
        assert set(g["interval_s"]) == {30.0 if name.endswith(".prom") else interval}


def test_fixture_mig_phases() -> None:
    wa = analyze_windows(parse_path(FIX / "prom_tsdb_mig.prom").samples)
    w = wa.windows.sort_values(["mig", "start"])
    labels = {m: g["label"].tolist() for m, g in w.groupby("mig")}
    assert labels == {"1": ["compute-bound"] * 2 + ["memory-bound"] * 2 + ["idle"] * 2,
                      "2": ["idle"] * 2 + ["overhead-bound"] * 2 + ["compute-bound"] * 2}
    assert set(w["namespace"]) == {"ns1", "ns2"}
    f = [x for x in wa.findings if x["rule"] == "dcgm-idle-allocated"]
    assert {x["group"] for x in f} == {"namespace ns1", "namespace ns2"}


def test_findings_and_records_shape() -> None:
    r = parse_path(FIX / "prom_scrapes_phases.prom", ParseOptions(start=START))
    wa = analyze_windows(r.samples)
    assert [f["rank"] for f in wa.findings] == list(range(1, len(wa.findings) + 1))
    for f in wa.findings:
        assert {"rank", "rule", "severity", "title", "kernels", "time_share", "est_saving_s",
                "recommendation", "gpu_hours", "group"} <= set(f)
        assert f["kernels"] == [] and 0 < f["time_share"] <= 1
    mem = next(f for f in wa.findings if f["rule"] == "dcgm-memory-bound")
    # GPU 1 is memory-bound for 2 of the 20 one-minute windows: 2 min = 0.0333 GPU-hours, share 0.1
    assert mem["gpu_hours"] == pytest.approx(2 / 60) and mem["time_share"] == pytest.approx(0.1)
    assert "DRAM-active 0.85" in mem["title"]
    recs = wa.records()
    assert len(recs) == 20
    assert {"host", "gpu", "model", "start", "end", "label", "limiter", "metrics", "est_flops_s",
            "est_dram_bytes_s"} <= set(recs[0])
    assert recs[0]["start"].endswith("Z") and "gr_active" in recs[0]["metrics"]
    tl = wa.timelines()
    assert set(tl) == {"node-a/0", "node-a/1"} and len(tl["node-a/0"]["t"]) == 10
    assert tl["node-a/0"]["label"][2] == "compute-bound"
    assert any(x["code"] == "dcgm-exporter-30s-interval" for x in wa.lint)


def test_dmon_without_host_names_timelines_cleanly() -> None:
    r = parse_path(FIX / "dmon_v2_phases.txt", ParseOptions(start=START, interval_s=5.0))
    wa = analyze_windows(r.samples)
    assert set(wa.timelines()) == {"0", "1"}  # the records' gpu_key: no host, no "-/"
    assert {r["gpu_key"] for r in wa.records()} == {"0", "1"}
    assert all(rec["host"] is None or isinstance(rec["host"], str) for rec in wa.records())


def test_empty_table() -> None:
    wa = analyze_windows(SAMPLE_SCHEMA.empty_table())
    assert wa.windows.empty and wa.records() == [] and wa.timelines() == {} and wa.lint == []
    only_temp = as_table(samples([(0, "0", 150, 40.0)]))
    assert analyze_windows(only_temp).windows.empty


def _lint_codes(df: pd.DataFrame) -> set[str]:
    return {x["code"] for x in analyze_windows(as_table(df)).lint}


def test_lint_multiplexing_zeros_pre_hopper_only() -> None:
    rows = [(t, "0", 1001, 0.8) for t in range(0, 60, 5)] + [(t, "0", 1002, 0.0) for t in range(0, 60, 5)]
    assert "dcgm-multiplexing-zeros" in _lint_codes(samples(rows, model="NVIDIA A100-SXM4-80GB"))
    assert "dcgm-multiplexing-zeros" not in _lint_codes(samples(rows, model="NVIDIA H100 80GB HBM3"))


def test_lint_gaps_missing_profiling_and_sentinels() -> None:
    rows = [(t, "0", 1001, 0.5) for t in range(0, 60, 5)] + [(t, "0", 1001, 0.5) for t in range(600, 660, 5)]
    assert "dcgm-sampling-gap" in _lint_codes(samples(rows))  # 545 s gap vs 5 s interval
    only_util = [(t, "0", 203, 0.3) for t in range(0, 60, 5)]
    assert "dcgm-no-profiling-fields" in _lint_codes(samples(only_util))
    bad = [(0, "0", 1001, 0.5), (5, "0", 1005, 140737488355328.0), (10, "0", 1002, 3.0)]
    codes = _lint_codes(samples(bad))
    assert {"dcgm-sentinel-values", "dcgm-implausible-ratio"} <= codes
    clean = [(t, "0", 1001, 0.5) for t in range(0, 60, 5)]
    assert _lint_codes(samples(clean)) == set()


def test_partials_vectorized_keys_and_labels() -> None:
    # gpu "1" < "10" < "2" (string order), missing gpu last; window 0 of gpu "1": pod votes
    # "" (blank, ignored), "b", "b", "a", "a" -> tie 2:2 goes to the smaller value "a"
    s = samples([(0, "2", 1001, 0.5), (1, "10", 1001, 0.5), (2, None, 1001, 0.5)]
                + [(i, "1", 1001, 0.5) for i in range(5)])
    s["pod"] = [None, None, None, "", "b", "b", "a", "a"]
    for frame in (s, s.astype({"gpu": _STR, "pod": _STR, "host": _STR})):  # object and Arrow strings
        p = window_partials(frame, 60.0)
        assert p["gpu"].tolist() == ["1", "10", "2", None]
        assert p["gr_active__n"].tolist() == [5, 1, 1, 1]
        assert p["gr_active__sum"].tolist() == [2.5, 0.5, 0.5, 0.5]
        assert p["pod"].iat[0] == "a" and p["pod"].iloc[1:].isna().all()
        assert p["pod__n"].tolist() == [2, 0, 0, 0]
        assert p["n_samples"].dtype == np.int64 and p["pod__n"].dtype == np.int64


def test_classify_evidence_text_by_hand() -> None:
    out = classify_windows(_wide([{"gr_active": 0.9, "sm_active": 0.9, "dram_active": 0.72}],
                                   model="unknown model"))
    # DRAM 0.72 >= 0.5 and 0.72/0.8 = 0.9 >= busiest pipe (none -> 0): memory-bound
    assert (out["label"].iat[0], out["limiter"].iat[0]) == ("memory-bound", "dram")
    assert out["evidence"].iat[0] == ["GR active 0.90", "SM active 0.90 (>= 0.8: SMs well used)",
                                      "DRAM active 0.72 (~90% of the practical 0.8 peak)"]


def test_arrow_partials_match_pandas_and_split_slices() -> None:
    # slices [0, 59.5 s) and [59.5 s, ...): 0, 30, 59 s -> first slice, window 0 (sum 0.2 + 0.4 + 0.6,
    # pod votes a, a, blank -> a x2); 61 s (gpu "0" 0.9, gpu missing 0.0) -> second slice, window 60 s
    s = samples([(0, "0", 1001, 0.2), (30, "0", 1001, 0.4), (59, "0", 1001, 0.6), (61, "0", 1001, 0.9),
                 (61, None, 1001, 0.0), (5, "0", 150, 40.0)])
    s["pod"] = ["a", "a", "", "b", None, "a"]
    t0 = T0.value // 10**6
    tab = as_table(s)
    dict_tab = pa.table({c: (tab[c].dictionary_encode() if pa.types.is_string(tab[c].type) else tab[c])
                         for c in tab.column_names})
    whole = window_partials(s, 60.0)
    for t in (tab, dict_tab):
        (one,) = window_partials_arrow(t, 60.0, ((-(2**63), 2**63 - 1),))
        assert one is not None
        pd.testing.assert_frame_equal(one.to_frame(), whole)
        pa_, pb = window_partials_arrow(t, 60.0, ((t0, t0 + 59_500), (t0 + 59_500, t0 + 10**9)))
        assert pa_ is not None and pb is not None
        a, b = pa_.to_frame(), pb.to_frame()
        assert a["window_start"].tolist() == [t0] and a["gr_active__sum"].tolist() == [0.2 + 0.4 + 0.6]
        assert a["pod"].tolist() == ["a"] and a["pod__n"].tolist() == [2]
        assert b["gpu"].tolist() == ["0", None] and b["gr_active__n"].tolist() == [1, 1]
        assert b["window_start"].tolist() == [t0 + 60_000] * 2 and b["gr_active__sum"].tolist() == [0.9, 0.0]
        assert b["pod"].tolist() == ["b", None] and b["gr_active__zero"].tolist() == [0, 1]
    assert window_partials_arrow(tab, 60.0, ((0, 1),)) == [None]


def test_partials_same_through_hash_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    # many key tuples / groups / labels: with _DENSE_MAX = 1 every dense table falls back to
    # factorized codes (key tuples decoded from a representative row); results must not change
    rng = np.random.default_rng(3)
    n = 400
    rows = [(int(t), str(g), int(f), float(v)) for t, g, f, v in
            zip(rng.integers(0, 600, n), rng.integers(0, 12, n), rng.choice([1001, 1002, 1005, 150], n),
                rng.choice([0.0, 0.25, 0.5], n), strict=True)]
    s = samples(rows, pod=rng.choice(["a", "b", "", None], n).tolist(), uuid=rng.choice(["u1", "u2"], n).tolist())
    t0 = T0.value // 10**6
    cut = ((t0, t0 + 300_000), (t0 + 300_000, t0 + 600_000))
    want = window_partials_arrow(as_table(s), 60.0, cut)
    monkeypatch.setattr(scan, "_DENSE_MAX", 1)
    got = window_partials_arrow(as_table(s), 60.0, cut)
    for a, b in zip(want, got, strict=True):
        assert a is not None and b is not None
        pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    assert sum(int(p.counts.sum()) for p in want if p is not None) == int((s["field_id"] != 150).sum())


def test_arrow_partials_constant_columns_not_read() -> None:
    # host "h" and model "Stub GPU" on every row, mig and pod all null: passing them as constants
    # (not decoded from the file) gives the same partials as the full table
    s = samples([(0, "0", 1001, 0.2), (30, "1", 1001, 0.4), (61, "0", 1002, 0.0)])
    tab = as_table(s)
    want = window_partials_arrow(tab, 60.0, ((-(2**63), 2**63 - 1),))
    slim = tab.drop_columns(["host", "model", "mig", "pod"])
    got = window_partials_arrow(slim, 60.0, ((-(2**63), 2**63 - 1),),
                                  {"host": "h", "model": "Stub GPU", "mig": None, "pod": None})
    assert want[0] is not None and got[0] is not None
    pd.testing.assert_frame_equal(got[0].to_frame(), want[0].to_frame())
    assert got[0].to_frame()["host"].tolist() == ["h"] * 3 and got[0].to_frame()["mig"].isna().all()


def test_finding_title_says_not_collected_instead_of_nan() -> None:
    # GR-engine active 0.2 for two minutes and no SM-active field at all (an exporter without it):
    # overhead-bound, and the title must not print "nan".
    rows = [(t, "0", 1001, 0.2) for t in range(0, 120, 10)]
    wa = analyze_windows(as_table(samples(rows, namespace="ns")))
    titles = [f["title"] for f in wa.findings if f["rule"] == "dcgm-overhead-bound"]
    assert titles and all("nan" not in t for t in titles)
    assert "GR-active 0.20, SM-active not collected" in titles[0]


def test_run_and_row_tabulation_agree_by_hand() -> None:
    # GPU "0", 10 s: GR active = t/10 (0.0, 0.1, ... 0.9), SM active exactly 0; series after series
    # (runs of one cell: reduced run by run) and interleaved (tabulated row by row) give the same
    # window: GR sum 0+0.1+...+0.9 = 4.5, 10 samples, 1 zero; SM 10 samples, all zero
    gr = [(t, "0", 1001, t / 10) for t in range(10)]
    sm = [(t, "0", 1002, 0.0) for t in range(10)]
    series = samples(gr + sm)
    mixed = samples([r for pair in zip(gr, sm, strict=True) for r in pair])
    starts = _run_starts(np.array([1, 1, 1, 1, 2, 2, 2, 2]), np.array([5, 5, 5, 5, 5, 5, 5, 5]))
    assert starts is not None and starts.tolist() == [0, 4]
    assert _run_starts(np.array([1, 2, 1, 2, 1, 2, 1, 2])) is None
    t0 = T0.value // 10**6
    for df in (series, mixed):
        (p,) = window_partials_arrow(as_table(df), 60.0, ((-(2**63), 2**63 - 1),))
        assert p is not None
        f = p.to_frame()
        assert f["gr_active__sum"].iat[0] == pytest.approx(4.5)
        assert (f["gr_active__n"].iat[0], f["gr_active__zero"].iat[0]) == (10, 1)
        assert (f["sm_active__n"].iat[0], f["sm_active__zero"].iat[0]) == (10, 10)
        assert (f["first_ts"].iat[0], f["last_ts"].iat[0], f["n_samples"].iat[0]) == (t0, t0 + 9000, 20)


def test_array_partials_combine_like_frames() -> None:
    # two hosts whose GPU dictionaries differ ("0","1" vs "1","2"): the union is re-coded in string
    # order; combining arrays equals combining their frames, and finishing either gives one table
    a = samples([(0, "0", 1001, 0.2), (1, "1", 1001, 0.4), (70, "1", 1002, 0.5)], pod=["p", "q", "q"])
    b = samples([(0, "1", 1001, 0.6), (2, "2", 1001, 0.8)], host="h2", pod=["r", None])
    b.loc[0, "host"] = "h"  # same host and GPU "1" as in a: that window has 2 GR samples
    pa_ = window_partials_arrow(as_table(a), 60.0, ((-(2**63), 2**63 - 1),))[0]
    pb = window_partials_arrow(as_table(b), 60.0, ((-(2**63), 2**63 - 1),))[0]
    assert pa_ is not None and pb is not None
    arrays = combine_partials([pa_, pb])
    frames = combine_partials([pa_.to_frame(), pb.to_frame()])
    pd.testing.assert_frame_equal(arrays.to_frame(), frames)
    f = frames
    assert list(zip(f["host"], f["gpu"], strict=True)) == [("h", "0"), ("h", "1"), ("h", "1"), ("h2", "2")]
    row = f.iloc[1]  # h/1, window 0: 0.4 (a) + 0.6 (b) = 1.0 over 2 samples; pod q (1) vs r (1): tie -> q
    assert row["gr_active__sum"] == pytest.approx(1.0) and row["gr_active__n"] == 2
    assert (row["pod"], row["pod__n"]) == ("q", 1)
    pd.testing.assert_frame_equal(finish_windows(arrays), finish_windows(frames))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_run_partials_match_a_groupby_reference(seed: int) -> None:
    # random samples (GPU incl. missing, unknown field 150, exact zeros, pods switching every 90 s,
    # mid-window, incl. missing) in three row orders: series after series (a pod change alone ends
    # a run), field/window/GPU blocks (a GPU change alone ends a run) and shuffled (row by row),
    # each whole and split into two record batches with their own dictionaries: sums, counts,
    # zeros, first/last time and the top pod equal a pandas groupby of the same rows
    rng = np.random.default_rng(seed)
    n = 3000
    t = rng.integers(0, 900, n)
    df = samples(list(zip(t.tolist(), rng.choice(["0", "1", "7"], n).tolist(),
                          rng.choice([1001, 1002, 1005, 150], n).tolist(),
                          rng.choice([0.0, 0.25, 0.5, 0.75], n).tolist(), strict=True)),
                 pod=[f"p{x // 90 % 3}" for x in t.tolist()])
    df.loc[rng.random(n) < 0.05, "gpu"] = None
    df.loc[rng.random(n) < 0.1, "pod"] = None
    t0 = T0.value // 10**6
    known = df[df["field_id"] != 150].assign(
        ms=lambda d: _epoch_ms(d["timestamp"]), g=lambda d: d["gpu"].fillna("<none>"),
        m=lambda d: d["field_id"].map(PROFILE_METRICS), z=lambda d: (d["value"] == 0.0).astype(int))
    known["w"] = (known["ms"] - t0) // 60_000 * 60_000 + t0
    ref = known.groupby(["g", "w", "m"]).agg(s=("value", "sum"), n=("value", "size"), z=("z", "sum"))
    span = known.groupby(["g", "w"])["ms"].agg(["min", "max"])
    votes = known.dropna(subset=["pod"]).groupby(["g", "w", "pod"]).size().reset_index(name="c")
    votes = votes.sort_values(["g", "w", "c", "pod"], ascending=[True, True, False, True])
    top = {(g, w): (p, c) for g, w, p, c in votes.drop_duplicates(["g", "w"]).itertuples(index=False)}
    df["_w"] = _epoch_ms(df["timestamp"]) // 60_000
    orders = [df.sort_values(["gpu", "field_id", "timestamp"], kind="stable", na_position="last"),
              df.sort_values(["field_id", "_w", "gpu", "timestamp"], kind="stable", na_position="last"),
              df.sample(frac=1.0, random_state=seed)]
    for frame in orders:
        tab = as_table(frame.drop(columns=["_w"]).reset_index(drop=True))
        cut = tab.num_rows // 2
        for tb in (tab, pa.Table.from_batches([*tab.slice(0, cut).to_batches(), *tab.slice(cut).to_batches()])):
            (p,) = window_partials_arrow(tb, 60.0, ((-(2**63), 2**63 - 1),))
            assert p is not None and int(p.counts.sum()) == len(known)
            for r in p.to_frame().itertuples(index=False):
                g = r.gpu if r.gpu is not None else "<none>"
                for m in ("gr_active", "sm_active", "dram_active"):
                    want = ref.loc[(g, r.window_start, m)] if (g, r.window_start, m) in ref.index else None
                    assert getattr(r, m + "__n") == (0 if want is None else want["n"])
                    if want is not None:
                        assert getattr(r, m + "__sum") == pytest.approx(want["s"], rel=1e-12)
                        assert getattr(r, m + "__zero") == want["z"]
                assert (r.first_ts, r.last_ts) == tuple(span.loc[(g, r.window_start)])
                assert (r.pod, r.pod__n) == top.get((g, r.window_start), (None, 0))


def test_a_mostly_idle_capture_without_workload_labels_is_a_finding() -> None:
    """Captured on an H100 (fixtures/README.md#capture): the GPU idled through ncu's replays; was "no
    findings". Idle time no label claims is reported, with no saving (allocation unknown)."""
    r = parse_path(FIX.parent / "capture" / "h100" / "nvsmi_query.csv")
    wa = analyze_windows(r.samples)
    (f,) = [x for x in wa.findings if x["rule"] == "dcgm-idle-unattributed"]
    idle_h = wa.windows.loc[wa.windows["label"] == "idle", "covered_s"].sum() / 3600.0
    assert f["gpu_hours"] == pytest.approx(idle_h)
    assert f["time_share"] == pytest.approx(idle_h / (wa.windows["covered_s"].sum() / 3600.0))
    assert f["time_share"] > 0.9 and f["est_saving_s"] is None and f["label"] == "idle"
    assert "no workload label" in f["title"] and "pod" in f["recommendation"]


def test_idle_windows_with_a_workload_are_allocated_not_unattributed() -> None:
    wa = analyze_windows(parse_path(FIX / "prom_tsdb_mig.prom").samples)
    assert not [x for x in wa.findings if x["rule"] == "dcgm-idle-unattributed"]


def test_unattributed_idle_below_a_quarter_is_no_finding() -> None:
    r = parse_path(FIX / "prom_scrapes_phases.prom", ParseOptions(start=START))
    w = analyze_windows(r.samples).windows
    w = w.assign(idle_s=w["covered_s"].where(w["label"].eq("idle") & w["namespace"].isna(), 0.0),
                 key=w["host"] + "/" + w["gpu"])
    sums = w.groupby("key")[["idle_s", "covered_s"]].sum()
    shares = sums["idle_s"] / sums["covered_s"]
    found = {x["group"] for x in analyze_windows(r.samples).findings if x["rule"] == "dcgm-idle-unattributed"}
    assert found == {f"GPU {g}" for g, s in shares.items() if s >= 0.25}
    assert 0 < len(found) < len(shares)  # one GPU at or above the cut, one below
