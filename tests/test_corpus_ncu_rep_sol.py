"""Real ``.ncu-rep`` reports with SpeedOfLight: our ``sol`` equals NCU's stored values, and our
label agrees with NCU's stored SOLBottleneck verdict on every decisive case.

Ground truth is read independently with NVIDIA's ``ncu_report`` module (stored metric values and
rule results), not through our parser. Decisive verdicts: "High Throughput" -> compute- or
memory-bound; "Latency Issue" and "Small Grid" -> overhead-bound (docs/research/formulas.md §3.1).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import corpus_dir

pytestmark = pytest.mark.corpus

SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DECISIVE = {"High Throughput": {"compute-bound", "memory-bound"},
            "Latency Issue": {"overhead-bound"}, "Small Grid": {"overhead-bound"}}
_MESSAGES = (("greater than 80", "High Throughput"), ("grid is too small", "Small Grid"),
             ("low compute throughput and memory bandwidth", "Latency Issue"))


def _verdict(rule: dict[str, Any]) -> str | None:
    msg = rule.get("rule_message")
    title, text = "", ""
    if isinstance(msg, dict):
        title, text = str(msg.get("title") or ""), str(msg.get("message") or "")
    else:
        text = str(msg or "")
    if title:
        return title
    for pat, name in _MESSAGES:
        if pat in text:
            return name
    return None


def _truth(path: Path) -> list[dict[str, Any]]:
    """Per launch, in report order: stored SOL % and the stored SOLBottleneck verdict."""
    import ncu_report

    ctx = ncu_report.load_report(str(path))
    out = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            names = set(act.metric_names())
            vals = {m: act.metric_by_name(m).as_double() for m in (SM, MEM) if m in names}
            verdicts = [_verdict(x) for x in act.rule_results_as_dicts() if x.get("rule_identifier") == "SOLBottleneck"]
            verdicts = [v for v in verdicts if v]
            out.append({"sm": vals.get(SM), "mem": vals.get(MEM), "verdict": verdicts[0] if verdicts else None})
    return out


def _reports() -> list[Path]:
    try:
        d = corpus_dir("ncu")
    except pytest.skip.Exception:
        return []
    return sorted(d.glob("*.ncu-rep"))


@pytest.mark.parametrize("path", _reports(), ids=lambda p: p.name[:60])
def test_sol_and_verdicts_match_ncu(path: Path) -> None:
    if importlib.util.find_spec("rooftop.parsers.ncu.rep") is None:
        pytest.skip("parsers/ncu/rep.py (binary .ncu-rep parser) is not in the tree yet")
    if importlib.util.find_spec("ncu_report") is None:
        pytest.skip("ncu_report (NVIDIA's Python module, extra 'ncu-rep') is not installed: no ground truth")
    from rooftop.analyzer.kernels.analyze import analyze_kernels
    from rooftop.errors import InputError
    from rooftop.parsers import parse_path

    try:
        truth = _truth(path)
    except Exception as exc:  # ncu_report cannot read it (headerless/corrupt file): nothing to compare
        pytest.skip(f"ncu_report cannot load {path.name}: {exc}")
    if not any(t["sm"] is not None for t in truth):
        pytest.skip("no SpeedOfLight metrics in this report")
    try:
        parsed = parse_path(path)
    except InputError as exc:
        pytest.fail(f"parser rejected a report ncu_report reads: {exc}")
    res = analyze_kernels(parsed.kernels, parsed.rules).results.sort_values("index").reset_index(drop=True)
    assert len(res) == len(truth)
    decisive = 0
    for i, t in enumerate(truth):
        row = res.iloc[i]
        for ours, theirs in ((row["sol_compute_pct"], t["sm"]), (row["sol_memory_pct"], t["mem"])):
            if theirs is None or pd.isna(theirs):
                assert pd.isna(ours), f"launch {i}: SOL invented"
            else:
                assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-9), f"launch {i}: SOL {ours} != NCU {theirs}"
        if t["verdict"] in DECISIVE:
            decisive += 1
            assert row["label"] in DECISIVE[t["verdict"]], \
                f"launch {i} ({row['name'][:40]}): NCU says {t['verdict']}, we say {row['label']} / {row['limiter']}"
    assert decisive or all(t["verdict"] not in DECISIVE for t in truth)


def test_corpus_has_decisive_cases() -> None:
    """Guard: the corpus run above must cover every decisive verdict at least once."""
    if importlib.util.find_spec("ncu_report") is None:
        pytest.skip("ncu_report not installed")
    seen = set()
    for path in _reports():
        try:
            seen |= {t["verdict"] for t in _truth(path)}
        except Exception:
            continue
    if not _reports():
        pytest.skip("corpus absent")
    assert set(DECISIVE) <= seen
