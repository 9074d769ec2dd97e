"""Timeline readers, metrics and labels on hand-built traces (fixtures/make_trace.py), and bad input."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sqlite3
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.findings.severity import SEVERITY_ORDER
from rooftop.analyzer.timeline import analyze_timelines
from rooftop.analyzer.timeline.metrics import device_metrics, union
from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.kineto.reader import to_ns
from rooftop.parsers.model import EVENT_COLUMNS
from tests.conftest import CORPUS, FIXTURES, ROOT

TRACE = FIXTURES / "trace"
CORPUS_TRACE = CORPUS / "trace"


def _make_trace() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_trace", FIXTURES / "make_trace.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def nsys_new(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(_make_trace().write_nsys(tmp_path_factory.mktemp("nsys") / "labels.sqlite"))


@pytest.fixture(scope="module")
def nsys_old(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(_make_trace().write_nsys(tmp_path_factory.mktemp("nsys") / "old.sqlite", "3.16.1"))


def _timeline(path: Path) -> Any:
    return analyze_timelines([parse_path(path)])


# -- exact time ------------------------------------------------------------------------------------

def test_to_ns_is_exact_where_float64_is_not() -> None:
    ts, dur = Decimal("6520618861901.021"), Decimal("4.439")  # 16 significant digits
    assert to_ns(ts) + to_ns(dur) == 6520618861905460
    assert round((float(ts) + float(dur)) * 1000) != 6520618861905460  # what a float reader gets
    assert to_ns(3) == 3000 and to_ns(Decimal("0.0005")) == 0 and to_ns(Decimal("0.0015")) == 2  # half-even
    with pytest.raises(ValueError):
        to_ns("abc")


def test_fixture_steps_exact_durations() -> None:
    r = parse_path(TRACE / "steps.json")
    k = r.events[r.events["kind"] == "kernel"]
    assert set((k["end_ns"] - k["start_ns"]).tolist()) == {3001}  # "dur": 3.001 µs
    assert k["start_ns"].iloc[0] == 6520618861903001
    assert list(r.events.columns) == list(EVENT_COLUMNS)
    assert {str(t) for t in r.events.dtypes} == set(EVENT_COLUMNS.values())


# -- metrics on hand-computed cases -------------------------------------------------------------------

def _act(rows: list[tuple[str, str, int, int]]) -> pd.DataFrame:
    return pd.DataFrame({"kind": [r[0] for r in rows], "name": pd.array([r[1] for r in rows], dtype="string"),
                         "start_ns": np.array([r[2] for r in rows], dtype=np.int64),
                         "end_ns": np.array([r[3] for r in rows], dtype=np.int64),
                         "stream": pd.array([7] * len(rows), dtype="Int64")})


def test_union_merges_touching_and_drops_zero_length() -> None:
    u = union(np.array([0, 10, 10, 30, 50]), np.array([10, 20, 10, 40, 50]))
    assert u.starts.tolist() == [0, 30] and u.ends.tolist() == [20, 40]
    assert u.busy == 30 and u.span == 40 and u.gaps.tolist() == [10]


def test_gap_and_short_kernel_edges() -> None:
    # kernels: 10 µs (not short), 5 µs, 0 ns (counted, no length); gaps of exactly 10 µs and 100 µs
    m = device_metrics(_act([("kernel", "a", 0, 10_000), ("kernel", "b", 20_000, 25_000),
                             ("kernel", "c", 60_000, 60_000), ("memcpy", "m", 125_000, 135_000),
                             ("kernel", "b", 135_000, 140_000)])).metrics
    assert m["kernels"] == 4 and m["memcpy"] == 1 and m["zero_or_negative_duration"] == 1
    assert m["gaps"] == {"count": 2, "lt_10us": 0, "10_to_100us": 2, "gt_100us": 0, "le_5ns": 0, "max_s": 1e-4}
    assert m["span_s"] == 0.00014 and m["gpu_busy_s"] == 0.00003 and m["idle_s"] == 0.00011
    assert m["short_kernels"]["count"] == 3  # b, c, b (strictly < 10 µs)
    assert m["short_kernels"]["share_of_kernel_busy"] == 0.5  # 10 µs of b over 20 µs of kernel union
    assert m["top_kernels"][0] == {"name": "a", "count": 1, "total_s": 1e-05}
    assert m["top_kernels"][1] == {"name": "b", "count": 2, "total_s": 1e-05}  # tie -> name order


# -- labels, one synthetic device each ------------------------------------------------------------------

EXPECTED = {"0": ("overhead-bound", "launch"), "1": ("overhead-bound", "host"),
            "2": ("overhead-bound", "host"), "3": ("transfer-bound", "transfer"),
            "4": ("kernel-bound", "unknown"), "5": ("idle", "host"), "6": ("overhead-bound", "sync")}


@pytest.mark.parametrize("which", ["new", "old"])
def test_labels_per_device(which: str, nsys_new: Path, nsys_old: Path) -> None:
    a = _timeline(nsys_new if which == "new" else nsys_old)
    got = {e["device"]: (e["label"], e["limiter"]) for e in a.timeline}
    assert got == EXPECTED
    names = {e["device"]: e["gpu_name"] for e in a.timeline}
    assert names["0"] == ("Synthetic GPU 0" if which == "new" else None)
    launch = next(e for e in a.timeline if e["device"] == "0")
    assert launch["idle_fraction"] == round(99 * 4_000 / (100 * 3_000 + 99 * 4_000), 9)
    assert launch["gaps"]["lt_10us"] == 99 and launch["short_kernels"]["share_of_kernel_busy"] == 1.0
    assert any("idle by cause" in s for s in launch["evidence"])


def test_nsys_accounting_and_nvtx(nsys_new: Path) -> None:
    r = parse_path(nsys_new)
    assert r.accounting.records == len(r.events) and r.accounting.rejected == 1
    assert "never closed" not in set(r.events["name"].dropna())
    assert "NVTX_EVENTS" in r.rejected[0].reason
    runtime = r.events[r.events["kind"] == "runtime"]
    assert "cudaStreamSynchronize" in set(runtime["name"])
    k = r.events[r.events["kind"] == "kernel"]
    assert set(k["grid_dim"]) == {"(64, 1, 1)"} and set(k["block_dim"]) == {"(256, 1, 1)"}
    steps = _timeline(nsys_new).steps
    assert [(s["name"], s["device"], s["kernels"]) for s in steps] == [("first half", "0", 51)]


def test_kineto_profiler_steps_new_and_legacy() -> None:
    for name in ("steps.json", "legacy_2021.json"):
        a = _timeline(TRACE / name)
        steps = [(s["name"], s["kernels"], s["label"], s["limiter"]) for s in a.steps]
        assert steps == [("ProfilerStep#0", 50, "overhead-bound", "launch"),
                         ("ProfilerStep#1", 50, "overhead-bound", "launch")], name
        (e,) = a.timeline
        assert e["kernels"] == 100 and e["device"] == "0"
    assert _timeline(TRACE / "steps.json").timeline[0]["gpu_name"] == "Synthetic A100"


def test_gzip_is_transparent(tmp_path: Path) -> None:
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress((TRACE / "steps.json").read_bytes()))
    assert _timeline(gz).timeline[0]["kernels"] == 100


def test_nsys_stats_summary_only() -> None:
    (e,) = _timeline(TRACE / "kern_sum.csv").timeline
    assert e["kernels"] == 37 and e["kernel_sum_s"] == 1e-05 and e["span_s"] is None
    assert e["top_kernels"][0]["name"].startswith("void gemm<float, 128>")
    assert e["label"] == "unknown" and e["idle_fraction"] is None and e["gaps"] is None
    runs = _timeline(TRACE / "stats_console.txt").timeline
    assert [(x["kernels"], x["memcpy"]) for x in runs] == [(11, 3), (5, None)]  # two runs kept apart
    assert runs[0]["top_kernels"][0] == {"name": "big_kernel", "count": 2, "total_s": 0.00161288}


# -- bad input ------------------------------------------------------------------------------------------

def test_truncated_json_and_gzip(tmp_path: Path) -> None:
    data = (TRACE / "steps.json").read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="damaged or truncated"):
        parse_path(cut)
    gz = tmp_path / "cut.json.gz"
    gz.write_bytes(gzip.compress(data)[:-200])
    with pytest.raises(InputError, match=r"truncated|corrupt"):
        parse_path(gz)


def test_sqlite_without_nsys_tables_and_corrupt(tmp_path: Path, nsys_new: Path) -> None:
    plain = tmp_path / "plain.sqlite"
    con = sqlite3.connect(plain)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(InputError, match="without Nsight Systems tables"):
        parse_path(plain)
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(nsys_new.read_bytes()[:100] + b"\xff" * 5000)
    with pytest.raises(InputError, match="damaged or truncated"):
        parse_path(bad)


def test_nsys_export_without_kernel_table(tmp_path: Path) -> None:
    p = tmp_path / "nokernels.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE META_DATA_EXPORT (name, value)")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId)")
    con.commit()
    con.close()
    a = _timeline(p)
    assert a.timeline[0]["label"] == "unknown" and a.timeline[0]["kernels"] == 0
    assert a.lint[0]["code"] == "trace-no-gpu-activity"


def test_empty_trace_and_other_vendor(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    assert _timeline(empty).timeline[0]["label"] == "unknown"
    other = tmp_path / "chrome.json"  # a browser trace: Chrome trace format, no GPU activity
    other.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "blink", "name": "Layout", "pid": 1, "tid": 2, "ts": 5, "dur": 3}]}))
    r = parse_path(other)
    assert r.accounting.records == 0 and r.meta["skipped_by_category"] == {"blink": 1}
    (e,) = analyze_timelines([r]).timeline
    assert e["label"] == "unknown" and any("blink x1" in s for s in e["evidence"])


def test_bad_event_is_rejected_and_counted(tmp_path: Path) -> None:
    p = tmp_path / "bad_ts.json"
    p.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "soon", "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 1}]}))
    r = parse_path(p)
    assert (r.accounting.records, r.accounting.rejected) == (1, 1)
    assert "event 1" in r.rejected[0].reason


def test_nsys_rep_without_nsys_names_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"NVIDIA Tegra Profiler Report 2026@1@1\x00\x00\x01\x02" + bytes(range(256)) * 4)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InputError, match="nsys export --type sqlite"):
        parse_path(rep)


def test_cli_bad_trace_is_one_line_exit_2(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json"
    cut.write_bytes((TRACE / "steps.json").read_bytes()[:5000])
    proc = subprocess.run([sys.executable, "-m", "rooftop", "analyze", str(cut), "--html", str(tmp_path / "r.html"),
                           "-q"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "cut.json" in proc.stderr and "Traceback" not in proc.stderr


def test_analyze_document_carries_timeline_and_validates(nsys_new: Path) -> None:
    from rooftop.analyzer.pipeline import run_analysis
    from rooftop.analyzer.schema import validate_document

    doc = run_analysis([str(nsys_new), str(TRACE / "steps.json"), str(TRACE / "kern_sum.csv"),
                        str(TRACE / "stats_console.txt")])
    validate_document(doc)
    assert [(e["input"].rsplit("/", 1)[-1], e["device"]) for e in doc["timeline"]][:2] == \
        [("labels.sqlite", "0"), ("labels.sqlite", "1")]
    assert len(doc["timeline"]) == 7 + 1 + 1 + 2
    assert {s["kind"] for s in doc["steps"]} == {"profiler-step", "range"}
    formats = {i["path"].rsplit("/", 1)[-1]: i["format"] for i in doc["inputs"]}
    assert formats == {"labels.sqlite": "nsys-sqlite", "steps.json": "kineto-json",
                       "kern_sum.csv": "nsys-stats-csv", "stats_console.txt": "nsys-stats-console"}


def test_reports_draw_timeline_sections(nsys_new: Path) -> None:
    from rooftop.analyzer.pipeline import run_analysis
    from rooftop.reports.html import render_html
    from rooftop.reports.markdown import render_markdown

    doc = run_analysis([str(nsys_new), str(TRACE / "steps.json")])
    strip = doc["timeline"][0]["busy_strip"]
    assert len(strip["busy_fraction"]) == 200 and 0 <= min(strip["busy_fraction"]) <= max(strip["busy_fraction"]) <= 1
    hist = doc["timeline"][0]["gap_histogram"]
    assert hist["count"][1] == 99 and sum(hist["count"]) == doc["timeline"][0]["gaps"]["count"]
    page = render_html(doc)
    assert 'id="timelines"' in page and 'id="steps"' in page and "not rendered" not in page
    assert "GPU busy / idle per device" in page and "Idle gaps between GPU activity" in page
    md = render_markdown(doc)
    assert "## Timelines" in md and "## Steps" in md and "ProfilerStep" in md
    assert "overhead-bound | launch" in md


def test_join_with_ncu_waterfall_and_ranked_findings(tmp_path: Path) -> None:
    """The matched pair: fixtures/ncu/demo.raw.csv and its trace half (make_trace.write_join_nsys)."""
    from rooftop.analyzer.pipeline import run_analysis
    from rooftop.analyzer.schema import validate_document

    trace = _make_trace().write_join_nsys(tmp_path / "join.sqlite")
    doc = run_analysis([str(trace), str(FIXTURES / "ncu" / "demo.raw.csv")])
    validate_document(doc)
    (w,) = doc["waterfall"]
    parts = {p["part"]: p["seconds"] for p in w["parts"]}
    assert abs(sum(parts.values()) - w["span_s"]) < 1e-8
    assert (w["matched_names"], w["trace_names"]) == (5, 6)
    how = {m["name"]: m["how"] for m in w["matches"]}
    assert how["gemv_kernel"] == "base name + grid + block"
    assert parts["kernels without an ncu match"] == 3 * 10_000 / 1e9
    # fills: no work in ncu -> all their time above the roofline (launch); 3 steps x 20 x 2 µs
    assert parts["above roofline: overhead-bound / launch"] == 3 * 20 * 2_000 / 1e9
    # idle: 3 steps x (4 gaps of 50 µs + 20 of 3 µs) + 2 x (3 + 200) µs between steps
    assert parts["idle: host"] == (3 * 4 * 50_000 + 2 * 203_000) / 1e9
    assert parts["idle: launch"] == 3 * 20 * 3_000 / 1e9
    eff = {m["name"][:8]: m["eff"] for m in w["matches"]}
    gemm_s = 3 * 1_208_000 / 1e9
    assert abs(parts["above roofline: compute-bound / tensor"] - (1 - eff["void gem"]) * gemm_s) < 1e-9
    ranks = [(f["rank"], SEVERITY_ORDER[f["severity"]], -(f["est_saving_s"] or 0.0)) for f in doc["findings"]]
    assert [r for r, _, _ in ranks] == list(range(1, len(ranks) + 1))
    assert [k[1:] for k in ranks] == sorted(k[1:] for k in ranks)  # severity, then saving (largest first)
    assert doc["findings"][0]["rule"] == "timeline-idle-host"
    assert {"timeline", "roofline"} <= {f["rule"].split("-")[0].split(".")[0] for f in doc["findings"]}


def test_diff_of_two_traces_compares_idle_and_gates_the_span_of_the_same_work(tmp_path: Path) -> None:
    """Before: 100 kernels 4 µs apart; after: the same kernels 40 µs apart. The idle time moves
    from < 10 µs gaps into 10-100 µs gaps and leads; both captures hold the same launches, so the
    span is the time of the same work and is gated (docs/formulas.md#timeline-diff)."""
    from rooftop.analyzer.diff.sides import run_diff
    from rooftop.analyzer.schema import validate_document

    def trace(path: Path, gap_us: int) -> Path:
        ev = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": i * (3 + gap_us), "dur": 3,
               "args": {"device": 0, "stream": 7}} for i in range(100)]
        path.write_text(json.dumps({"traceEvents": ev}))
        return path

    before, after = trace(tmp_path / "b.json", 4), trace(tmp_path / "a.json", 40)
    doc = run_diff(str(before), str(after), fail_on=5.0, device=None, command="test")
    validate_document(doc)
    (row,) = doc["timeline_diff"]
    assert row["idle_fraction"]["baseline"] == round(99 * 4 / (100 * 3 + 99 * 4), 9)
    assert row["idle_by_gap_s"]["10_to_100us"] == {"baseline": 0.0, "candidate": 99 * 40e-6, "delta": 99 * 40e-6,
                                                   "change": None}
    lead = doc["timeline_changes"][0]
    assert (lead["what"], lead["name"]) == ("idle-gaps", "gaps 10–100 µs")
    assert lead["text"] == "GPU 0 idle in gaps 10–100 µs: 0 ms → 3.96 ms (new; 0 → 99 gaps)"
    assert [s["series"] for s in doc["timeline_series"]] == ["GPU 0: k"]  # the idle gaps are no series
    v = doc["verdict"]
    assert v["fail"] and v["throughput_by"] == "span" and not v["regressions"]
    assert "Slower beyond 5 %: GPU 0 span 696 µs → 4.26 ms (+512 %) for the same kernel launches" in v["reason"]
    same = run_diff(str(before), str(before), fail_on=0.0, device=None, command="test")
    assert not same["verdict"]["fail"]


@pytest.mark.corpus
def test_diff_corpus_before_after_pair() -> None:
    from rooftop.analyzer.diff.sides import run_diff
    from rooftop.reports.html import render_html

    d = CORPUS_TRACE / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"
    if not d.is_file():
        pytest.skip("trace corpus absent")
    doc = run_diff(str(d), str(d).replace("before", "after"), fail_on=5.0, device=None, command="test")
    rows = {r["device"]: r for r in doc["timeline_diff"]}
    assert rows["0"]["idle_fraction"]["baseline"] == 0.086813834
    assert rows["0"]["idle_fraction"]["candidate"] == 0.19763484
    assert rows["0"]["kernels"]["delta"] == 1793 - 1993
    assert "Per GPU: before → after" in render_html(doc)


def test_a_range_whose_gaps_other_work_fills_is_not_called_idle() -> None:
    """Range A launches two 1 µs kernels 100 µs apart; range B's 80 µs kernel runs between them on
    the same GPU. A's own activity leaves 98 % of its span without A's work, but 80 of its 98 µs of
    gaps the GPU was busy with B: 'idle' does not follow (docs/formulas.md#timelines)."""
    from rooftop.analyzer.timeline.labels import Verdict
    from rooftop.analyzer.timeline.metrics import Union
    from rooftop.analyzer.timeline.steps import interleaved

    def gpu(*spans: tuple[int, int]) -> Union:  # the device's busy union: A's and the others' work
        both = [(0, 1_000), (99_000, 100_000), *spans]
        return union(np.array([s for s, _ in both]), np.array([e for _, e in both]))

    a = union(np.array([0, 99_000]), np.array([1_000, 100_000]))
    idle = Verdict("idle", "sync", ["idle 98 %"])
    v = interleaved(idle, a, gpu((10_000, 90_000)))
    assert (v.label, v.limiter) == ("unknown", "unknown")
    assert v.evidence[0].startswith("the GPU ran other ranges' work in 82% of this range's gaps "
                                    "(0.000080 s of 0.000098 s)")
    assert interleaved(idle, a, gpu((200_000, 300_000))) is idle  # other work outside the span
    assert interleaved(idle, a, gpu((10_000, 12_000))) is idle   # 2 of 98 µs: below 10 %
    kernel = Verdict("kernel-bound", "unknown")
    assert interleaved(kernel, a, gpu((10_000, 90_000))) is kernel


def test_a_range_whose_gpu_span_is_a_sliver_of_its_wall_is_not_transfer_bound() -> None:
    """A 10 ms range whose only GPU activity is one 800 ns copy: 'transfer-bound' describes 0.008 %
    of its wall time, so the range is unknown; at >= 10 % of the wall the verdict stands
    (docs/formulas.md#timelines)."""
    from rooftop.analyzer.timeline.labels import Verdict
    from rooftop.analyzer.timeline.metrics import Acts
    from rooftop.analyzer.timeline.steps import beyond_span

    copy = Acts.from_frame(pd.DataFrame({"kind": "memcpy", "name": "copy", "stream": 7,
                                         "start_ns": [5_000_000], "end_ns": [5_000_800]}))
    transfer = Verdict("transfer-bound", "transfer", ["copies 100 % of busy"])
    v = beyond_span(transfer, copy, 10_000_000)
    assert (v.label, v.limiter) == ("unknown", "unknown")
    assert v.evidence[0].startswith("this range's own GPU activity spans 0.000001 s of its 0.010000 s wall "
                                    "time (0.0%): 'transfer-bound' describes only that span")
    assert v.evidence[1:] == transfer.evidence
    assert beyond_span(transfer, copy, 8_000) is transfer   # 800 of 8,000 ns: exactly 10 %
    idle = Verdict("idle", "none")
    assert beyond_span(idle, copy, 10_000_000) is idle      # only kernel/transfer verdicts


@pytest.mark.corpus
def test_corpus_aten_to_ranges_with_a_sliver_of_gpu_work_are_unknown() -> None:
    """In the nsys before file, most aten::to ranges last ~10 ms while their own copy takes < 1 µs
    (they were labelled transfer-bound); aten::to op 990347 runs 12 kernels over 9.39 of its 9.48 ms."""
    from rooftop.analyzer.timeline import analyze_timelines
    from rooftop.parsers import parse_path
    from rooftop.parsers.source import ParseOptions

    p = CORPUS_TRACE / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"
    if not p.is_file():
        pytest.skip("trace corpus absent")
    steps = analyze_timelines([parse_path(p, ParseOptions())]).steps
    sliver = [s for s in steps if s["span_s"] < 0.1 * s["wall_s"]]
    assert any(str(s["name"]).startswith("aten::to") and s["label"] == "unknown" for s in sliver)
    assert not {s["label"] for s in sliver} & {"kernel-bound", "transfer-bound"}
    (whole,) = [s for s in steps if s["name"] == "aten::to, op_id = 990347"]
    assert whole["label"] == "kernel-bound" and whole["kernels"] == 12
