"""Evidence sentences claim only what the export shows (sweep of the ncu corpus).

Rules: docs/formulas.md#kernel-labels (latency), docs/formulas.md#work-bytes (L1/L2 convention).
"""

from __future__ import annotations

import pytest

from rooftop.analyzer.pipeline import analyze_inputs
from tests.conftest import corpus_dir


def _file(prefix: str) -> str:
    [p] = [p for p in corpus_dir("ncu").iterdir() if p.name.startswith(prefix)]
    return str(p)


@pytest.mark.corpus
def test_latency_without_grid_does_not_claim_every_sm_has_work() -> None:
    # the interpolate export has no launch__grid_size: nothing shows the grid fills the SMs
    ai = analyze_inputs([_file("leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__interpolate")])
    lat = ai.results[ai.results["limiter"] == "latency"]
    assert len(lat) >= 1 and lat["grid"].isna().all()
    for ev in lat["evidence"]:
        assert not any("gives every SM work" in e for e in ev)
        assert any("grid or SM count not in the export: NCU's verdict rules out a small grid" in e for e in ev)


@pytest.mark.corpus
def test_nersc_bytes_without_l1_l2_ceiling_do_not_claim_table_ceilings() -> None:
    ai = analyze_inputs([_file("leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__interpolate")])
    r = ai.results
    for ev in r["evidence"]:
        assert not any("with the device table's L1/L2 ceilings" in e for e in ev)
        assert any("no L1/L2 ceiling" in e for e in ev)


@pytest.mark.corpus
def test_latency_with_a_full_grid_still_says_so() -> None:
    ai = analyze_inputs([_file("amitadate__GPU_Power_Model__PS1_100_profile")])
    lat = ai.results[ai.results["limiter"] == "latency"]
    assert len(lat) >= 1
    assert all(any("and the grid gives every SM work" in e for e in ev) for ev in lat["evidence"])
