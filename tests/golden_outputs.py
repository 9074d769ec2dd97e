"""Golden outputs of whole command-line runs: every fixture, and a sample of corpus files.

Each case runs ``python -m rooftop`` in a subprocess from the repository root, with relative
paths and ``SOURCE_DATE_EPOCH=0`` so that the outputs are byte-identical run to run, and writes
JSON, Markdown and HTML. The fixture cases' outputs are committed under
``tests/golden/outputs/`` (reviewable diffs); the corpus cases' outputs are not ours to commit, so
only their SHA-256 digests are (``tests/golden/corpus.sha256``).

- ``python tests/golden_outputs.py regen`` (``make golden``) rewrites both; run it only after an
  intended change of output, and say why in the commit.
- ``python tests/golden_outputs.py check`` compares and lists every output that changed;
  ``tests/test_golden_outputs.py`` runs the same check.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
OUTPUTS = GOLDEN / "outputs"
CORPUS_DIGESTS = GOLDEN / "corpus.sha256"
SHARED = Path(os.environ.get("ROOFTOP_SHARED", ROOT.parent / "shared"))
CORPUS_REL = os.path.relpath(SHARED / "corpus", ROOT)

# A sample of the corpus: one or more files of every format family rooftop reads.
CORPUS_SAMPLE = [
    "ncu/LakshyaSingh354__CudaCode__gemm__reps__naive.ncu-rep",
    "ncu/NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__sample_report.ncu-rep",
    "ncu/AlpriElse__cs599k__silu__triton__silu-pytorch-ncu-report.txt",
    "ncu/Olajide-Badejo__GPU-Roofline-Profiler__results__sample_run__ncu__gemm_naive.csv",
    "ncu/CodeGandee__llm-perf-opt__reports__20251107-dsocr__ncu-v2__kernel_0001_67bdb7e29d1bb4e0ca0aec954ef18af3__ncu.details.csv",
    "ncu/leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__attention__actual_parameter_analysis__data__5-9__bert_torch_nsight.csv",
    "ncu/meinie0826__Roofline-Analysis__decodebench__results__ncu__flashinfer_paged_decode__gqa_bf16_b128_ctx2k_p64.ncu.csv",
    "ncu/liqiangxl__playground__ncu.log",
    "ncu/ishana23g__heat_eq__optimized_3d__profiler__ncu_summary_3D.txt",
    "ncu/wangzy0327__cuda-roofline__src__output.csv",
    "dcgm/docs.nvidia.com__datacenter__dcgm__latest__user-guide__feature-overview.html.dmon_A100_grTensorDram.txt",
    "dcgm/unattributed__zhihu-MIG-article-mirror__dmon_mig_5fields.txt",
    "dcgm/NVIDIA__dcgm-exporter__issues__68.metrics_excerpt.prom",
    "dcgm/cncf__k8s-ai-conformance__v1.35__ericsson-ccd__accelerator_metrics.md.metrics.prom",
    "dcgm/cncf__k8s-ai-conformance__v1.35__rafay__ai_service_metrics.md.prom_query.json",
    "dcgm/xypp3__gpu_glasses__nvidia_smi.csv",
    "dcgm/liguodongiot__llm-action__docs__llm-base__nvidia-smi-dmon.md.nvsmi_dmon.txt",
    "trace/GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite",
    "trace/GindaChen__nsys-ai__tests__fixtures__mock.sqlite",
    "trace/AMD-AGI__TraceLens__tests__traces__b200__eager_trace.json.gz",
    "trace/facebookresearch__HolisticTraceAnalysis__tests__data__negative_queue_length_values_check__rank0.json.gz",
    "trace/facebookresearch__HolisticTraceAnalysis__tests__data__triton_example__triton_example.json.gz",
    "ops/AMD-AGI__TraceLens__tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
]
CORPUS_DIFFS = [("trace/GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite",
                 "trace/GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_after.sqlite")]
FIXTURE_SUFFIXES = (".csv", ".txt", ".prom", ".json")
# Inputs without timestamps are placed in time from the file's mtime (docs/formulas.md#inputs),
# which differs per checkout: their cases pass an explicit start instead.
START = ("--start", "2026-11-20T00:00:00Z")
TIMELESS = {
    "fixtures/dcgm/dmon_v2_phases.txt", "fixtures/dcgm/dmon_v3_phases.txt",
    "fixtures/dcgm/dmon_v4_phases.txt", "fixtures/dcgm/prom_scrapes_phases.prom",
    "dcgm/docs.nvidia.com__datacenter__dcgm__latest__user-guide__feature-overview.html.dmon_A100_grTensorDram.txt",
    "dcgm/unattributed__zhihu-MIG-article-mirror__dmon_mig_5fields.txt",
    "dcgm/NVIDIA__dcgm-exporter__issues__68.metrics_excerpt.prom",
    "dcgm/cncf__k8s-ai-conformance__v1.35__ericsson-ccd__accelerator_metrics.md.metrics.prom",
    "dcgm/liguodongiot__llm-action__docs__llm-base__nvidia-smi-dmon.md.nvsmi_dmon.txt",
}
EXTS = ("json", "md", "html")


@dataclass(frozen=True)
class Case:
    """One command line; ``name`` names its outputs (``NAME.json``, ``NAME.md``, ``NAME.html``)."""

    name: str
    args: tuple[str, ...]
    corpus: bool
    setup: tuple[tuple[str, ...], ...] = ()  # commands run first (ingest before fleet)


def _slug(rel: str) -> str:
    return rel.replace("/", "__")[-120:]


def fixture_cases() -> list[Case]:
    files = sorted(p for p in (ROOT / "fixtures").rglob("*")  # provenance/: logs and notes, not inputs
                   if p.is_file() and p.suffix in FIXTURE_SUFFIXES and "provenance" not in p.parts)
    rels = [str(p.relative_to(ROOT)) for p in files]
    cases = [Case(_slug(r), ("analyze", r, *(START if r in TIMELESS else ())), False) for r in rels]
    cases.append(Case("analyze-demo-device", ("analyze", "fixtures/ncu/demo.raw.csv", "--device",
                                              "NVIDIA A100-SXM4-80GB"), False))
    cases.append(Case("diff-fixtures", ("diff", "fixtures/diff/baseline.raw.csv",
                                        "fixtures/diff/candidate.raw.csv"), False))
    cases.append(Case("diff-dcgm-fixtures", ("diff", "fixtures/diff/dcgm_baseline.prom",
                                             "fixtures/diff/dcgm_candidate.prom", "--fail-on", "5"), False))
    ds = "out/golden/dataset"
    proms = [f"fixtures/dcgm/{n}" for n in ("prom_era_classic.prom", "prom_scrapes_phases.prom",
                                           "prom_tsdb_mig.prom")]
    cases.append(Case("fleet-fixtures", ("fleet", ds), False,
                      setup=(("ingest", *proms, "--to", ds, "--finished", *START),)))
    return cases


def corpus_cases() -> list[Case]:
    if not (SHARED / "corpus").is_dir():
        return []
    cases = [Case(_slug(rel), ("analyze", f"{CORPUS_REL}/{rel}", *(START if rel in TIMELESS else ())),
                  True) for rel in CORPUS_SAMPLE if (SHARED / "corpus" / rel).exists()]
    cases += [Case("diff__" + _slug(a), ("diff", f"{CORPUS_REL}/{a}", f"{CORPUS_REL}/{b}"), True)
              for a, b in CORPUS_DIFFS if (SHARED / "corpus" / a).exists()]
    return cases


def _env() -> dict[str, str]:
    env = dict(os.environ, SOURCE_DATE_EPOCH="0", NO_COLOR="1", PYTHONHASHSEED="0")
    env.pop("ROOFTOP_DEBUG", None)
    return env


def run_case(case: Case, out: Path) -> dict[str, bytes]:
    """Run one case; its outputs by file name (a missing output is absent)."""
    rel_out = os.path.relpath(out, ROOT)
    for setup in case.setup:
        subprocess.run([sys.executable, "-m", "rooftop", *setup, "-q"], cwd=ROOT, env=_env(),
                       capture_output=True, check=False, timeout=600)
    cmd = [sys.executable, "-m", "rooftop", *case.args, "-q"]
    for ext in EXTS:
        cmd += [f"--{ext}", f"{rel_out}/{case.name}.{ext}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, timeout=600, check=False)
    got = {f"{case.name}.exit": f"{proc.returncode}\n".encode()}
    for ext in EXTS:
        p = out / f"{case.name}.{ext}"
        if p.exists():  # absolute paths (a dataset's manifest records them) differ per checkout
            got[p.name] = p.read_bytes().replace(str(ROOT).encode(), b"<ROOT>")
    return got


def run_all(cases: list[Case]) -> dict[str, bytes]:
    """Run the cases two at a time; every output by file name. Outputs are written under
    ``out/golden/o`` (the same spelling in every command line) and read back."""
    work = ROOT / "out" / "golden"
    work.mkdir(parents=True, exist_ok=True)
    with open(work / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the fixture and corpus tests may run on two workers
        return _run_all_locked(cases, work)


def _run_all_locked(cases: list[Case], work: Path) -> dict[str, bytes]:
    out = work / "o"
    for p in (out, work / "dataset"):
        shutil.rmtree(p, ignore_errors=True)
    out.mkdir(parents=True)
    merged: dict[str, bytes] = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for r in pool.map(lambda c: run_case(c, out), cases):
            merged.update(r)
    for p in (out, work / "dataset"):
        shutil.rmtree(p, ignore_errors=True)
    return merged


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_digests() -> dict[str, str]:
    if not CORPUS_DIGESTS.exists():
        return {}
    pairs = (line.split("  ", 1) for line in CORPUS_DIGESTS.read_text().splitlines() if line)
    return {name: h for h, name in pairs}


def regen() -> None:
    fixtures = run_all(fixture_cases())
    shutil.rmtree(OUTPUTS, ignore_errors=True)
    OUTPUTS.mkdir(parents=True)
    for name, data in fixtures.items():
        (OUTPUTS / name).write_bytes(data)
    corpus = run_all(corpus_cases())
    if corpus:
        CORPUS_DIGESTS.write_text("".join(f"{_digest(d)}  {n}\n" for n, d in sorted(corpus.items())))
    print(f"wrote {len(fixtures)} fixture outputs to {OUTPUTS.relative_to(ROOT)} and "
          f"{len(corpus)} corpus digests to {CORPUS_DIGESTS.relative_to(ROOT)}")


def differences(fixtures: bool = True, corpus: bool = False) -> Iterator[str]:
    """Every output that differs from its golden (the fixtures, the corpus sample, or both)."""
    if fixtures:
        got = run_all(fixture_cases())
        want = {p.name: p.read_bytes() for p in OUTPUTS.iterdir()} if OUTPUTS.is_dir() else {}
        for name in sorted(set(got) | set(want)):
            if got.get(name) != want.get(name):
                yield f"fixtures: {name}"
    if corpus:
        got_c = {n: _digest(d) for n, d in run_all(corpus_cases()).items()}
        want_c = _read_digests()
        for name in sorted(set(got_c) | set(want_c)):
            if got_c.get(name) != want_c.get(name):
                yield f"corpus: {name}"


def main(argv: list[str]) -> int:
    if argv[1:] == ["regen"]:
        regen()
        return 0
    if argv[1:] == ["check"]:
        diffs = list(differences(corpus=(SHARED / "corpus").is_dir()))
        print("\n".join(diffs) or "all outputs identical to the goldens")
        return 1 if diffs else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
