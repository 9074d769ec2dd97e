"""NVTX ranges per kernel from console logs and .ncu-rep files reach the results and the JSON (issue 14 item 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooftop.analyzer.document import kernel_records
from rooftop.analyzer.pipeline import analyze_inputs
from rooftop.parsers import parse_path
from tests.conftest import corpus_dir

SECTION = """\
    Section: GPU Speed Of Light Throughput
    ----------------------- ------------- ------------
    Metric Name               Metric Unit Metric Value
    ----------------------- ------------- ------------
    Duration                      usecond         10.00
    Compute (SM) Throughput             %         5.00
    Memory Throughput                   %        70.00
    ----------------------- ------------- ------------

"""
LOG = (
    "[8821] a.out@127.0.0.1\n"
    "  attn(int) (32, 1, 1)x(128, 1, 1), Context 1, Stream 7, Device 0, CC 8.6\n"
    "    NVTX Push/Pop Stack for Thread 8821:\n"
    "      <default domain>\n"
    "        <0,decode>\n"
    "          RGB: 0xff00ff00, Payload: 0\n"
    "        <1,attention>\n"
    + SECTION
    + "  mlp(int) (32, 1, 1)x(128, 1, 1), Context 1, Stream 7, Device 0, CC 8.6\n"
    "    NVTX Start/End Ranges:\n"
    "      vllm\n"
    "        <0,step 3>\n"
    + SECTION
    + "  plain(int) (32, 1, 1)x(128, 1, 1), Context 1, Stream 7, Device 0, CC 8.6\n"
    + SECTION
)


def test_console_nvtx_blocks(tmp_path: Path) -> None:
    p = tmp_path / "log.txt"
    p.write_text(LOG)
    k = parse_path(p).kernels
    assert k["nvtx"].tolist()[:2] == ["decode > attention", "vllm:step 3"]
    assert k["nvtx"].isna().tolist() == [False, False, True]
    assert k["duration_s"].tolist() == pytest.approx([10e-6] * 3)  # the NVTX block does not hide the section
    ai = analyze_inputs([str(p)])
    assert ai.results["nvtx"].tolist()[:2] == ["decode > attention", "vllm:step 3"]
    docs = kernel_records(ai.results)
    assert docs[0]["nvtx"] == "decode > attention" and docs[2]["nvtx"] is None


@pytest.mark.corpus
def test_ncu_rep_nvtx_reaches_the_json() -> None:
    pytest.importorskip("ncu_report")
    p = corpus_dir("ncu") / "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx.ncu-rep"
    ai = analyze_inputs([str(p)])
    assert ai.results["nvtx"].tolist() == ["run_test > init_data", "run_test > daxpy", "run_test > check_results"]
    assert [d["nvtx"] for d in kernel_records(ai.results)] == ai.results["nvtx"].tolist()
