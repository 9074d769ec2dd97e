"""rooftop.analyzer.diff core over constructed kernel-result frames: matching, deltas, explanations, verdicts."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.diff.compare import compare
from rooftop.analyzer.diff.deltas import group_deltas, pct, rel_change
from rooftop.analyzer.diff.match import identify, match_kernels
from rooftop.analyzer.diff.records import diff_payload, listing_lint
from rooftop.analyzer.diff.saved import read_document
from rooftop.analyzer.diff.sides import frame_from_document
from rooftop.analyzer.document import build_document
from rooftop.errors import InputError

SIGMA = math.sqrt(math.log1p(0.03**2))


def kernel(family: str, duration: float, *, grid: int = 128, block: int = 256, nvtx: str | None = None,
           flops: float = 2e9, dram: float = 1e8, l2: float = 2e8, l1: float = 4e8,
           label: str = "compute-bound", limiter: str = "fp32", name: str | None = None) -> dict[str, Any]:
    """One flat result row; intensity and achieved FLOP/s derived from the given totals."""
    return {
        "name": name or f"{family}(float*)", "family": family, "device": "NVIDIA A100-SXM4-80GB",
        "grid": grid, "block": block, "nvtx": nvtx, "duration_s": duration, "flops": flops,
        "bytes_l1": l1, "bytes_l2": l2, "bytes_dram": dram,
        "intensity_l1": flops / l1, "intensity_l2": flops / l2, "intensity_dram": flops / dram,
        "achieved_flops_s": flops / duration, "label": label, "limiter": limiter,
    }


def frame(rows: list[dict[str, Any]], input_path: str = "run.csv") -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df.insert(0, "input", input_path)
    df.insert(1, "index", range(len(df)))
    return df


def noisy_run(seed: int, *, launches: int = 20, families: int = 10,
              slow: dict[int, float] | None = None) -> pd.DataFrame:
    """Interleaved launches of ``families`` families; candidate families in ``slow`` scaled."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(launches):
        for f in range(families):
            factor = (slow or {}).get(f, 1.0)
            rows.append(kernel(f"fam{f}", 1e-4 * (f + 1) * factor * rng.lognormal(0, SIGMA)))
    return frame(rows)


# ----------------------------------------------------------------------------- matching


def test_identical_runs_pass_and_match_everything() -> None:
    run = noisy_run(1)
    r = compare(run, run.copy(), fail_on=1.0)
    assert not r.verdict["fail"]
    assert len(r.pairs) == len(run) and not len(r.new) and not len(r.vanished)
    assert (r.pairs["duration_s_change"] == 0).all()
    assert set(r.series["status"]) == {"within threshold"}
    assert r.pairs["explanation"].iloc[0] == "duration +0.0 %: no notable change"
    assert r.totals["change"]["duration"] == 0.0


def test_renamed_kernel_is_one_vanished_and_one_new() -> None:
    b = frame([kernel("gemm", 1e-3), kernel("old_name", 2e-3), kernel("relu", 1e-4)])
    c = frame([kernel("gemm", 1e-3), kernel("new_name", 2e-3), kernel("relu", 1e-4)])
    r = compare(b, c, fail_on=5)
    assert sorted(r.pairs["family"]) == ["gemm", "relu"]
    assert r.vanished["family"].tolist() == ["old_name"]
    assert r.new["family"].tolist() == ["new_name"]
    assert r.totals["new"] == {"launches": 1, "duration_s": 2e-3}
    assert r.totals["vanished"] == {"launches": 1, "duration_s": 2e-3}
    assert not r.verdict["fail"]  # unmatched launches of equal total time: the total gate holds
    status = r.series.set_index("family")["status"]
    assert status["old_name"] == "unmatched" and status["new_name"] == "unmatched"


def test_matching_uses_config_nvtx_and_ordinal() -> None:
    b = frame([
        kernel("gemm", 1.0, grid=64), kernel("gemm", 2.0, grid=128), kernel("gemm", 3.0, grid=64),
        kernel("copy", 1.0, nvtx="fwd"), kernel("copy", 1.0, nvtx="bwd"),
    ])
    c = frame([
        kernel("gemm", 1.1, grid=64), kernel("gemm", 2.2, grid=128), kernel("gemm", 3.3, grid=64),
        kernel("gemm", 9.0, grid=64),             # a 3rd launch with grid 64: new
        kernel("copy", 1.0, nvtx="bwd"),          # the fwd launch vanished
        kernel("gemm", 5.0, grid=32),             # a new configuration
    ])
    m = match_kernels(identify(b), identify(c))
    got = {(r.family, r.grid, r.nvtx, r.ordinal): (r.duration_s_base, r.duration_s_cand)
           for r in m.pairs.itertuples()}
    assert got == {
        ("gemm", 64, "", 0): (1.0, 1.1), ("gemm", 64, "", 1): (3.0, 3.3),
        ("gemm", 128, "", 0): (2.0, 2.2), ("copy", 128, "bwd", 0): (1.0, 1.0),
    }
    assert sorted(zip(m.new["grid"], m.new["ordinal"], m.new["duration_s"], strict=True)) == \
        [(32, 0, 5.0), (64, 2, 9.0)]
    assert m.vanished[["family", "nvtx"]].values.tolist() == [["copy", "fwd"]]


def test_launch_order_follows_input_then_index_not_row_order() -> None:
    b = frame([kernel("k", 1.0), kernel("k", 2.0)])
    c = frame([kernel("k", 1.0), kernel("k", 2.0)]).iloc[::-1]  # rows shuffled, index kept
    m = match_kernels(identify(b), identify(c))
    assert (m.pairs["duration_s_base"] == m.pairs["duration_s_cand"]).all()


def test_family_falls_back_to_name_and_missing_config() -> None:
    b = frame([{"name": "k1", "duration_s": 1.0}])
    c = frame([{"name": "k1", "duration_s": 1.2}])
    r = compare(b, c, fail_on=10)
    assert r.pairs["family"].tolist() == ["k1"]
    assert r.series["series"].tolist() == ["k1 ⟨grid ?, block ?⟩"]
    assert r.verdict["fail"]  # single launch +20 % > 10 %


# ----------------------------------------------------------------------------- deltas and explanations


def test_rel_change_edge_cases() -> None:
    got = rel_change(pd.Series([2.0, 0.0, 1.0, np.nan, 3.0]), pd.Series([1.0, 0.0, 0.0, 1.0, np.nan]))
    assert got.iloc[0] == 1.0 and got.iloc[1] == 0.0
    assert got.iloc[2:].isna().all()


def test_pct_format() -> None:
    assert pct(0.38) == "+38 %" and pct(-0.012) == "-1.2 %" and pct(float("nan")) == "n/a"


def test_regression_explained_by_dram_bytes() -> None:
    # baseline: 2 GFLOP / 100 MB DRAM = 20 FLOP/B; candidate: 138 MB -> +38 %, 14.49 FLOP/B (left)
    b = frame([kernel("stencil", 1e-3), kernel("other", 1e-3)])
    c = frame([kernel("stencil", 1.3e-3, dram=1.38e8, label="memory-bound", limiter="dram"),
               kernel("other", 1e-3)])
    r = compare(b, c, fail_on=10)
    row = r.pairs.set_index("family").loc["stencil"]
    assert row["duration_s_change"] == pytest.approx(0.3)
    assert row["bytes_dram_change"] == pytest.approx(0.38)
    assert row["intensity_dram_change"] == pytest.approx(1 / 1.38 - 1)
    assert row["achieved_flops_s_change"] == pytest.approx(1 / 1.3 - 1)
    assert row["label_changed"] and row["limiter_changed"]
    assert row["explanation"] == ("duration +30 %: DRAM bytes +38 %, moved left on the roofline, "
                                  "now memory-bound (dram), was compute-bound (fp32)")
    assert r.verdict["fail"]
    [reg] = r.verdict["regressions"]
    assert reg["family"] == "stencil" and reg["note"] == "single launch: threshold only"
    assert "stencil" in r.verdict["reason"]


def test_explanation_without_byte_change_and_flops_change() -> None:
    b = frame([kernel("a", 1e-3), kernel("b", 1e-3)])
    c = frame([kernel("a", 1.2e-3), kernel("b", 1.5e-3, flops=3e9)])
    ex = compare(b, c, fail_on=None).pairs.set_index("family")["explanation"]
    assert ex["a"].startswith("duration +20 %: same FLOPs and bytes, so slower per unit of work")
    # FLOPs +50 % with the same bytes: intensity up at every level, but only bytes name a level
    assert ex["b"] == "duration +50 %: FLOPs +50 %"


def test_group_deltas_time_weighted_hand_computed() -> None:
    # family x: baseline launches 1 s and 3 s (4 s, 8 GFLOP -> 2 GFLOP/s); candidate 2 s + 2 s
    # (4 s, 8 GFLOP): no change in time; DRAM 1e8 + 3e8 = 4e8 B -> 2e8 + 2e8 = 4e8 B.
    # label by time: baseline compute 1 s vs memory 3 s -> memory-bound; candidate compute 2+2 s.
    b = frame([kernel("x", 1.0, flops=4e9, dram=1e8), kernel("x", 3.0, flops=4e9, dram=3e8,
                                                                label="memory-bound", limiter="dram")])
    c = frame([kernel("x", 2.0, flops=4e9, dram=2e8), kernel("x", 2.0, flops=4e9, dram=2e8)])
    pairs = compare(b, c, fail_on=None).pairs
    g = group_deltas(pairs).set_index("family").loc["x"]
    assert g["duration_s_base"] == 4.0 and g["duration_s_cand"] == 4.0 and g["duration_s_change"] == 0
    assert g["achieved_flops_s_base"] == pytest.approx(2e9)
    assert g["intensity_dram_base"] == pytest.approx(8e9 / 4e8) and g["intensity_dram_change"] == 0
    assert g["label_base"] == "memory-bound" and g["label_cand"] == "compute-bound"
    assert g["launches"] == 2


# ----------------------------------------------------------------------------- verdicts


def test_thirty_percent_slower_family_trips_gate_and_is_named() -> None:
    b = noisy_run(11)
    c = noisy_run(12, slow={4: 1.3})
    r = compare(b, c, fail_on=10)
    assert r.verdict["fail"]
    assert [x["family"] for x in r.verdict["regressions"]] == ["fam4"]
    reg = r.verdict["regressions"][0]
    assert reg["method"] == "mann-whitney" and reg["significant"] and reg["p_adjusted"] < 0.05
    assert 0.2 < reg["change"] < 0.4
    assert "fam4" in r.verdict["reason"]


def test_one_percent_slower_everywhere_does_not_trip() -> None:
    b = noisy_run(21)
    c = noisy_run(22, slow=dict.fromkeys(range(10), 1.01))
    r = compare(b, c, fail_on=5)
    assert not r.verdict["fail"] and not r.verdict["regressions"]
    assert r.verdict["reason"].startswith("no regression beyond 5 %")


def test_noise_only_full_pipeline_no_false_alarm() -> None:
    """The whole core (not just the statistics) on 10 noise-only pairs: never fails at 5 %.

    (The 200-seed false-alarm budget is tested on the statistics in test_diff_stats.py.)"""
    for seed in range(10):
        r = compare(noisy_run(100 + seed), noisy_run(200 + seed), fail_on=5)
        assert not r.verdict["fail"], r.verdict["reason"]


def test_single_launch_threshold_only() -> None:
    b = frame([kernel("a", 1.0), kernel("b", 1.0)])
    c = frame([kernel("a", 1.03), kernel("b", 1.5)])
    r = compare(b, c, fail_on=10)
    s = r.series.set_index("family")
    assert (s["method"] == "threshold-only").all()
    assert s.loc["a", "status"] == "within threshold" and s.loc["b", "status"] == "regressed"
    assert s.loc["b", "note"] == "single launch: threshold only"
    assert r.verdict["fail"]
    assert [x["family"] for x in r.verdict["regressions"]] == ["b"]


def test_improvement_reported_never_fails() -> None:
    b = noisy_run(31)
    c = noisy_run(32, slow={2: 0.6})
    r = compare(b, c, fail_on=5)
    assert not r.verdict["fail"]
    assert [x["family"] for x in r.verdict["improvements"]] == ["fam2"]
    assert r.families.set_index("family").loc["fam2", "status"] == "improved"


def test_no_threshold_reports_but_never_fails() -> None:
    r = compare(noisy_run(41), noisy_run(42, slow={0: 1.5}), fail_on=None)
    assert not r.verdict["fail"] and r.verdict["threshold_pct"] is None
    assert [x["family"] for x in r.verdict["regressions"]] == ["fam0"]
    assert r.verdict["reason"].startswith("report only")


def test_negative_threshold_is_unusable() -> None:
    run = frame([kernel("a", 1.0)])
    with pytest.raises(InputError, match="--fail-on"):
        compare(run, run, fail_on=-1)


# ----------------------------------------------------------------------------- documents


def _analysis_doc(results: pd.DataFrame, path: str = "run.csv") -> dict[str, Any]:
    return build_document(kind="analyze", inputs=[{"path": path, "format": "raw-csv", "records": len(results),
                                                   "missing": 0, "rejected": 0}],
                          rejected=[], devices=[], kernels=results, command="rooftop analyze")


def test_saved_analysis_round_trip(tmp_path: Path) -> None:
    run = noisy_run(51, launches=3, families=3)
    doc = _analysis_doc(run)
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    loaded = read_document(path)
    assert loaded is not None
    back = frame_from_document(loaded, str(path))
    assert back["nvtx"].isna().all()  # came back through "extra"
    r = compare(run, back, fail_on=0)
    assert len(r.pairs) == len(run) and not r.verdict["fail"]
    np.testing.assert_allclose(r.pairs["duration_s_change"], 0.0)


def test_read_document_ignores_other_json_and_rejects_wrong_kinds(tmp_path: Path) -> None:
    other = tmp_path / "prom.json"
    other.write_text('{"status": "success", "data": {}}', encoding="utf-8")
    assert read_document(other) is None
    csv = tmp_path / "x.csv"
    csv.write_text('"ID","Process ID"\n', encoding="utf-8")
    assert read_document(csv) is None
    diff_doc = {"schema_version": 1, "tool": {"name": "rooftop"}, "kind": "diff", "kernels": []}
    with pytest.raises(InputError, match="diff"):
        frame_from_document(diff_doc, "d.json")
    with pytest.raises(InputError, match="schema_version"):
        frame_from_document({**diff_doc, "schema_version": 99, "kind": "analyze"}, "d.json")


def test_payload_is_json_and_complete() -> None:
    b = frame([kernel("a", 1.0), kernel("gone", 1.0)])
    c = frame([kernel("a", 1.5, nvtx=None), kernel("fresh", 1.0)])
    payload = diff_payload(compare(b, c, fail_on=10))
    text = json.dumps(payload, allow_nan=False)
    assert "NaN" not in text
    assert set(payload) == {"pairs", "families", "series", "unmatched", "listed", "totals", "verdict"}
    assert payload["listed"] == {"pairs": [1, 1], "new": [1, 1], "vanished": [1, 1]}
    [pair] = payload["pairs"]
    assert pair["change"]["duration"] == pytest.approx(0.5) and pair["grid"] == 128 and pair["nvtx"] is None
    assert [k["family"] for k in payload["unmatched"]["vanished"]] == ["gone"]
    assert [k["family"] for k in payload["unmatched"]["new"]] == ["fresh"]
    assert payload["verdict"]["fail"] is True and payload["verdict"]["threshold_pct"] == 10
    fam = payload["families"][0]
    assert fam["baseline"]["intensity"]["dram"] == pytest.approx(20.0)


def test_unknown_config_matches_by_name_and_order() -> None:
    """Old exports have no Block/Grid: those launches pair by base name and k-th launch."""
    b = frame([{**kernel("gemm", 1.0), "grid": None, "block": None},
               {**kernel("gemm", 2.0), "grid": None, "block": None},
               {**kernel("copy", 5.0), "grid": None, "block": None}])
    c = frame([kernel("gemm (grid 128, block 256)", 1.0), kernel("gemm (grid 128, block 256)", 2.2),
               kernel("other (grid 128, block 256)", 7.0)])
    r = compare(b, c, fail_on=5)
    assert r.pairs["match"].tolist() == ["name-order", "name-order"]
    assert r.pairs["family"].tolist() == ["gemm (grid 128, block 256)"] * 2  # key from the side that knows
    assert r.pairs["duration_s_cand"].tolist() == [1.0, 2.2]
    assert r.vanished["family"].tolist() == ["copy"] and r.new["family"].tolist() == ["other (grid 128, block 256)"]
    # both sides of the pairs are one series: 1.0, 2.0 -> 1.0, 2.2; median 1.5 -> 1.6 = +6.7 %
    s = r.series.set_index("series").loc["gemm (grid 128, block 256)"]
    assert (s["n_base"], s["n_cand"]) == (2, 2) and s["change"] == pytest.approx(1.6 / 1.5 - 1)


def test_nvtx_missing_on_one_side_matches_by_name_and_order() -> None:
    b = frame([kernel("k", 1.0), kernel("k", 2.0)])                      # a CSV: no NVTX at all
    c = frame([kernel("k", 1.0, nvtx="a:fwd"), kernel("k", 2.0, nvtx="a:bwd")])
    r = compare(b, c, fail_on=1)
    assert r.pairs["nvtx"].tolist() == ["a:fwd", "a:bwd"] and (r.pairs["match"] == "name-order").all()
    assert not len(r.new) and not len(r.vanished) and not r.verdict["fail"]


def test_known_configs_that_differ_never_pair_by_name() -> None:
    b = frame([kernel("k", 1.0, grid=64)])
    c = frame([kernel("k", 1.0, grid=128)])
    r = compare(b, c, fail_on=5)
    assert not len(r.pairs) and len(r.new) == 1 and len(r.vanished) == 1
    assert r.verdict["reason"].startswith("nothing to compare") and not r.verdict["fail"]


def test_long_lists_are_cut_largest_first_and_said_so() -> None:
    b = frame([kernel("a", 1.0), kernel("a", 1.0), kernel("a", 1.0)])
    c = frame([kernel("a", 1.0), kernel("a", 3.0), kernel("a", 2.0)])
    payload = diff_payload(compare(b, c, fail_on=None), limit=2)
    # |Δ| = 0, 2, 1 s: the two largest, kept in launch order
    assert [p["ordinal"] for p in payload["pairs"]] == [1, 2]
    assert payload["listed"]["pairs"] == [2, 3]
    [lint] = listing_lint(payload)
    assert lint["code"] == "diff-list-truncated" and "2 largest by time of 3" in lint["message"]
    assert payload["series"][0]["n_base"] == 3  # the verdict still covers every launch


def test_report_sections_escape_and_place_arrows() -> None:
    """HTML/Markdown diff sections from the document only; hostile names stay text."""
    from rooftop.reports.diff_sections import (
        markdown_sections,
        roofline_arrows,
        roofline_arrows_svg,
    )
    from rooftop.reports.html import render_html
    from rooftop.reports.markdown import render_markdown

    evil = "<img src=x onerror=alert(1)>|`x`"
    b = frame([kernel("stencil", 1e-3), kernel(evil, 1e-3)])
    c = frame([kernel("stencil", 1.3e-3, dram=1.38e8), kernel(evil, 1e-3)])
    doc = build_document(kind="diff", inputs=[], rejected=[], devices=[], kernels=None,
                         extra=diff_payload(compare(b, c, fail_on=10)))
    arrows, _ = roofline_arrows(doc)
    moved = [a for a in arrows if a.base != a.cand]
    [arrow] = moved  # the unchanged family gets no arrow
    # baseline AI 2e9/1e8 = 20, 2e9/1e-3 = 2e12 FLOP/s; candidate AI 2e9/1.38e8 = 14.49, 2e9/1.3e-3 = 1.538e12
    assert arrow.base == pytest.approx((20, 2e12)) and arrow.cand == pytest.approx((2e9 / 1.38e8, 2e9 / 1.3e-3))
    svg, _ = roofline_arrows_svg(doc)
    assert svg is not None and svg.count('<g class="arrow"') == len(arrows) == 2
    assert f'data-base="{20.0!r} {2e12!r}"' in svg and "&lt;img src=x" in svg and "<img" not in svg
    page = render_html(doc)
    assert "<img src=x" not in page and "Regressions" in page
    md = render_markdown(doc)
    assert "**FAIL**" in md and "<img" not in md
    assert [s.title for s in markdown_sections(doc)] == ["Verdict", "Regressions", "Improvements",
                                                         "New and vanished kernels"]


def test_family_split_by_label_in_one_run_still_pairs() -> None:
    """assign_families splits a key whose launches disagree in label (``key [label limiter]``);
    the diff pairs such launches with the same kernel of the other run by the unsplit key."""
    from rooftop.analyzer.kernels.families import assign_families

    rows_b = [kernel("x", 1e-3, name="gemm_kernel(float*)"), kernel("x", 1e-3, name="gemm_kernel(float*)")]
    rows_c = [kernel("x", 2e-3, name="gemm_kernel(float*)"),
              kernel("x", 2e-3, name="gemm_kernel(float*)", label="memory-bound", limiter="dram")]
    b, c = frame(rows_b), frame(rows_c)
    b["family"], c["family"] = assign_families(b), assign_families(c)
    assert c["family"].str.endswith("]").all() and not b["family"].str.endswith("]").any()
    r = compare(b, c, fail_on=5)
    assert len(r.pairs) == 2 and not len(r.new) and not len(r.vanished)
    assert set(r.pairs["family"]) == set(b["family"])
