"""The kernel table shows NCU's facts beside every verdict (issue 29 item 5, docs/formulas.md#kernel-labels
"NCU's facts"): SM and memory %, the busiest unit, bandwidth and % of peak per level, occupancy and its
limit, registers, shared memory, waves, and NCU's rules with their estimated speedup."""

from __future__ import annotations

from typing import Any

import pytest

from rooftop.analyzer.pipeline import run_analysis
from rooftop.reports.kernel_table import kernel_table_section, ncu_facts
from tests.conftest import corpus_dir


def test_facts_of_a_hand_built_kernel() -> None:
    """1 MB of DRAM in 1 ms = 1 GB/s at 40 % of its ceiling; occupancy 30 of 50 % limited by registers."""
    k: Any = {"duration_s": 1e-3, "sol": {"compute_pct": 12.0, "memory_pct": 45.0},
              "bytes": {"l1": None, "l2": None, "dram": 1e6},
              "extra": {"top_unit_name": "DRAM", "busiest_pct": 45.0, "bw_util_dram": 0.4,
                        "occupancy_achieved_pct": 30.0, "occupancy_theoretical_pct": 50.0,
                        "occupancy_limiter": "registers", "registers_per_thread": 128.0,
                        "shared_mem_per_block": 49152.0, "waves": 2.5},
              "ncu_rules": [{"rule": "A", "speedup_pct": 5.0, "speedup_type": "local"},
                            {"rule": "B", "speedup_pct": 20.0, "speedup_type": "global"},
                            {"rule": "SOLBottleneck", "speedup_pct": None}]}
    f = ncu_facts(k)
    assert f["sm_pct"] == 12.0 and f["mem_pct"] == 45.0
    assert f["facts"] == ("busiest DRAM 45% · DRAM 1 GB/s 40% · occupancy 30% of 50% (registers) · 128 regs/thread · "
                          "49.2 kB shared/block · 2.50 waves · NCU rules: B 20% global; A 5% local")
    full: Any = {**k, "extra": {**k["extra"], "occupancy_theoretical_pct": 100.0}}
    assert "(registers)" not in ncu_facts(full)["facts"]  # nothing limits a full theoretical occupancy


def test_set_full_report_shows_its_facts() -> None:
    """armleth report.ncu-rep (--set full, Tesla T4): SM 27.8 %, memory 88.4 %, DRAM the busiest unit."""
    doc = run_analysis([str(corpus_dir("ncu") / "armleth__cuda-mlp-inference__report.ncu-rep")])
    sec = kernel_table_section(doc)
    assert sec is not None
    html = sec.html_body
    assert ">SM %<" in html and ">NCU facts<" in html
    assert "busiest DRAM 88%" in html and "occupancy 79% of 100%" in html and "16 regs/thread" in html
    assert "AchievedOccupancy 12% global" in html


def test_a_launch_without_speedoflight_still_gets_its_row() -> None:
    """A failed profile has no SM %/Mem %: the kernel table said 'not rendered' (TypeError on None) for the
    corpus ESMM .ncu-rep, one of whose four launches NCU could not profile."""
    from rooftop.reports.kernel_table import whole_pct

    assert (whole_pct(None), whole_pct(77.6), whole_pct(float("nan"))) == ("—", "78", "—")


@pytest.mark.corpus
def test_the_esmm_report_renders_its_kernel_table() -> None:
    from rooftop.reports.html import render_html

    doc = run_analysis([str(corpus_dir("ncu") / "AveryClapp__ESMM-Research__profile.ncu-rep")])
    html = render_html(doc)
    assert "not rendered" not in html and html.count("esmm_shmem_multi") >= 4
