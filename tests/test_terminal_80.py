"""The terminal summary at 80 columns (issue 27): for an ncu, a DCGM, a trace and a diff input no
line is longer than 80 and the summary names the top finding; kernel names keep their function name
and launch configuration; a diff says the reason of its verdict; a trace says each GPU's label and idle."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import rooftop
from rooftop.reports.terminal import distinct_kernel_names, shorten_kernel, summary_text
from tests.conftest import FIXTURES, ROOT, corpus_dir

START = "2025-01-01T00:00:00Z"
LONG_PATH = "a/very/long/path/to/the/report/" + "x" * 60 + ".html"
CASES: dict[str, Callable[[], Any]] = {
    "ncu": lambda: rooftop.analyze(FIXTURES / "ncu" / "demo.raw.csv"),
    "dcgm": lambda: rooftop.analyze(FIXTURES / "dcgm" / "dmon_v4_phases.txt", interval_s=1.0, start=START,
                                    host="n1"),
    "trace": lambda: rooftop.analyze(FIXTURES / "trace" / "steps.json"),
    "diff": lambda: rooftop.diff(FIXTURES / "diff" / "baseline.raw.csv", FIXTURES / "diff" / "candidate.raw.csv",
                                 fail_on=10),
    # real captures of known programs on an H100 (fixtures/capture): ncu --set full, torch.profiler + nvidia-smi
    "h100-ncu": lambda: rooftop.analyze(FIXTURES / "capture" / "h100" / "ncu_raw.csv.gz"),
    "h100-trace": lambda: rooftop.analyze([FIXTURES / "capture" / "h100" / "kineto_train.json.gz",
                                           FIXTURES / "capture" / "h100" / "nvsmi_query.csv"]),
}
CORPUS = {
    "ncu": ("ncu", "leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__attention__"
                   "actual_parameter_analysis__data__5-9__bert_torch_nsight.csv"),
    "dcgm": ("dcgm", "NVIDIA__dcgm-exporter__issues__68.metrics_excerpt.prom"),
    "trace": ("trace", "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"),
}


def _assert_fits_and_names_top(doc: Any, width: int = 80) -> list[str]:
    lines = summary_text(doc, top=10, outputs=["rooftop-report.html", LONG_PATH], width=width).splitlines()
    assert max(map(len, lines)) <= width, [ln for ln in lines if len(ln) > width]
    assert doc["findings"]
    top = doc["findings"][0]
    i = lines.index("top findings:")
    assert lines[i + 1].startswith(f"  1. [{top['severity']}]")
    if top.get("family") and top.get("label"):
        assert lines[i + 2] == "     " + shorten_kernel(top["family"], width - 6)
    else:
        assert " ".join(ln.strip() for ln in lines[i + 2:i + 5]).startswith(str(top["title"])[:40])
    return lines


@pytest.mark.parametrize("case", sorted(CASES))
def test_summary_fits_80_columns_and_names_the_top_finding(case: str) -> None:
    _assert_fits_and_names_top(CASES[case]())


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_corpus_summary_fits_80_columns(case: str) -> None:
    kind, name = CORPUS[case]
    path = corpus_dir(kind) / name
    if not path.exists():
        pytest.skip(f"{name} not in the corpus")
    _assert_fits_and_names_top(rooftop.analyze(path, start=START))


def test_corpus_diff_fits_80_columns() -> None:
    base = corpus_dir("trace") / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"
    cand = base.with_name(base.name.replace("before", "after"))
    if not cand.exists():
        pytest.skip("mfu_2gpu traces not in the corpus")
    doc: Any = rooftop.diff(base, cand)
    lines = summary_text(doc, width=80).splitlines()
    assert max(map(len, lines)) <= 80 and any(ln.startswith("  reason: ") for ln in lines)


def test_trace_summary_names_each_gpu_label_and_idle() -> None:
    doc: Any = CASES["trace"]()
    t = doc["timeline"][0]
    text = summary_text(doc, width=80)
    assert f"GPU {t['device']}: {t['label']} ({t['limiter']}), idle {100 * t['idle_fraction']:.1f}%" in text
    assert "no findings" not in text


def test_diff_summary_says_why() -> None:
    doc: Any = CASES["diff"]()
    lines = summary_text(doc, width=80).splitlines()
    assert "  verdict: FAIL: 1 regression(s) beyond 10 %" in lines
    start = next(i for i, ln in enumerate(lines) if ln.startswith("  reason: "))
    said = " ".join(ln.strip() for ln in lines[start:start + 4])
    assert said.startswith("reason: " + doc["verdict"]["reason"][:60])


def test_width_follows_columns_and_lines_stay_whole_when_not_a_terminal() -> None:
    """``COLUMNS`` (what a terminal sets) wins; output that is not a terminal (a pipe, a CI log)
    keeps each line whole for grep, kernel names shortened to 120 columns."""
    code = ("import rooftop; from rooftop.reports.terminal import summary_text; "
            f"print(summary_text(rooftop.analyze({str(FIXTURES / 'trace' / 'steps.json')!r})))")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(ROOT)
    narrow = subprocess.run([sys.executable, "-c", code], env={**env, "COLUMNS": "60"}, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    piped = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert max(map(len, narrow)) <= 60 < max(map(len, piped))
    assert ("     steps.json GPU 0: GPU idle 395.9 µs (56.9 % of the span) in 99 gaps < 10 µs between "
            "launches") in piped


def test_kernel_names_keep_function_name_and_launch_configuration() -> None:
    name = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t"
            "<float, at::native::sum_functor<float, float, float>::operator()>, unsigned int, float, 4>>(T3)"
            " (grid 1024, block 512)")
    assert shorten_kernel(name, 75) == "at::native::reduce_kernel<512, 1, …> (grid 1024, block 512)"
    assert shorten_kernel(name, 45) == "…reduce_kernel<…> (grid 1024, block 512)"
    assert shorten_kernel("gemv_kernel (grid 4096, block 128)", 60) == "gemv_kernel (grid 4096, block 128)"
    assert shorten_kernel("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_nn_align4>(Params)"
                          " (grid 64, block 256)", 60) == \
        "cutlass::Kernel2<cutlass_80_tensorop_…> (grid 64, block 256)"
    anon = ("void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, "
            "at::native::templates::cuda::uniform_and_transform<float, float>> (grid 768, block 256)")
    assert shorten_kernel(anon, 75) == "…distribution_elementwise_grid_stride_kernel<…> (grid 768, block 256)"
    twins = [name.replace("sum_functor", "max_functor"), name]
    assert distinct_kernel_names(twins, 75) == ["at::native::reduce_kernel<…max_functor…> (grid 1024, block 512)",
                                                "at::native::reduce_kernel<…sum_functor…> (grid 1024, block 512)"]
    assert distinct_kernel_names(twins, 55) == ["reduce_kernel<…max_functor…> (grid 1024, block 512)",
                                                "reduce_kernel<…sum_functor…> (grid 1024, block 512)"]
    for limit in range(20, 200, 7):  # never longer than asked, whatever the name
        assert len(shorten_kernel(anon, limit)) <= limit and len(shorten_kernel(name, limit)) <= limit


def test_a_number_and_its_unit_stay_on_one_line() -> None:
    """The corpus mfu_2gpu_before summary at 80 columns ended a finding's head with 'est. saving 11.4' and
    put 'ms' alone on the next line."""
    from rooftop.reports.terminal import fit

    head = "  4. [medium] overhead-bound (communication) · 3.8% of time · est. saving 11.4 ms"
    assert fit(head, 80) == ["  4. [medium] overhead-bound (communication) · 3.8% of time · est. saving",
                             "      11.4 ms"]
    assert fit("x " * 36 + "of the span (0.0 % of 33 kernels)", 80)[1].lstrip().startswith("span (0.0 %")
    assert fit("aaaa 3 s", 6) == ["aaaa", "   3 s"]  # seconds: kept with the number
    assert fit("aaaa 3 steps", 6)[0] == "aaaa 3"  # 'steps' is no unit: the line may break before it


@pytest.mark.corpus
def test_no_summary_line_starts_with_a_unit() -> None:
    path = corpus_dir("trace") / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"
    if not path.exists():
        pytest.skip("mfu_2gpu_before not in the corpus")
    lines = summary_text(rooftop.analyze(path, start=START), width=80).splitlines()
    assert max(map(len, lines)) <= 80
    assert not [ln for ln in lines if ln.split()[:1] in (["ms"], ["µs"], ["s"], ["%"], ["GB/s"])]
