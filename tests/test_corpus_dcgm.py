"""Every DCGM corpus file: data streams parse with the accounting invariant and the expected
sample count; reference/other files are refused with InputError (decided per file below)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooftop.analyzer.windows.analysis import analyze_windows
from rooftop.analyzer.windows.fields import PROFILE_METRICS
from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.source import ParseOptions
from tests.conftest import manifest

DATA_FORMATS = {"dmon", "prometheus-text", "prom-json", "nvidia-smi"}
ROWS = manifest("dcgm")

# Expected (records + missing + rejected) where it is not the manifest's n_samples, and why.
# For dmon / nvidia-smi streams the manifest counts ROWS (entity ticks); we count value cells, and
# check the row count separately (``ROW_COUNTS``).
CELLS: dict[str, tuple[int, int, int]] = {
    # (records, missing, rejected)
    "docs.nvidia.com__datacenter__dcgm__latest__user-guide__feature-overview.html.dmon_A100_grTensorDram.txt":
        (45, 0, 0),  # 15 rows x 3 fields
    "liguodongiot__llm-action__docs__llm-base__dcgmi.md.dmon_gpu0.txt": (12, 8, 0),  # 5 rows x 4, 2 rows N/A
    # 63 rows (the manifest says 120): 24x2 + 16x2 + 16x4 + 7x4 = 172 cells; 17 N/A; the 4
    # hand-annotated cells on line 57 rejected
    "liguodongiot__llm-action__docs__llm-base__dcgmi.md.dmon_nvlink_pcie.txt": (151, 17, 4),
    "unattributed__azure-h100nvl-gpumon__tests__test_collector.py.dmon_3fields.txt": (3, 3, 0),
    "unattributed__zhihu-MIG-article-mirror__dmon_mig_5fields.txt": (15, 0, 0),
    # 52 data rows (the manifest says 60): 32 rows x 9 + 20 rows x 9 = 468 cells; 8 PCIe values above
    # any PCIe link rejected
    "liguodongiot__llm-action__docs__llm-base__nvidia-smi-dmon.md.nvsmi_dmon.txt": (460, 0, 8),
    "xypp3__gpu_glasses__nvidia_smi.csv": (172, 0, 0),  # 43 rows x 4 mapped columns
    "AkshayRoyal__gpu-usage__gpu_usage.csv": (1120, 0, 0),  # 224 rows x 5 mapped columns
    # the manifest says 25; the file has 23 metric lines (grep -c '^DCGM_FI' gives 23)
    "cncf__k8s-ai-conformance__v1.35__kops__tests__TestObservability_AcceleratorMetrics_ViaDCGM__output.md"
    ".metrics.prom": (23, 0, 0),
    # the one line has no value and a Markdown-bold label: rejected
    "NVIDIA__gpu-monitoring-tools__issues__193.metrics_excerpt.prom": (0, 0, 1),
}
# rows (distinct entity ticks) where the manifest's n_samples is a row count we can check
ROW_COUNTS = {
    "docs.nvidia.com__datacenter__dcgm__latest__user-guide__feature-overview.html.dmon_A100_grTensorDram.txt": 15,
    "liguodongiot__llm-action__docs__llm-base__dcgmi.md.dmon_gpu0.txt": 5,
    "liguodongiot__llm-action__docs__llm-base__dcgmi.md.dmon_nvlink_pcie.txt": 63,
    "liguodongiot__llm-action__docs__llm-base__nvidia-smi-dmon.md.nvsmi_dmon.txt": 52,
    "unattributed__azure-h100nvl-gpumon__tests__test_collector.py.dmon_3fields.txt": 2,
    "unattributed__zhihu-MIG-article-mirror__dmon_mig_5fields.txt": 3,
    "xypp3__gpu_glasses__nvidia_smi.csv": 43,
    "AkshayRoyal__gpu-usage__gpu_usage.csv": 224,
}
MANIFEST_ROWS_WRONG = {"liguodongiot__llm-action__docs__llm-base__dcgmi.md.dmon_nvlink_pcie.txt",
                       "liguodongiot__llm-action__docs__llm-base__nvidia-smi-dmon.md.nvsmi_dmon.txt"}
# data-format files that are unusable on purpose
UNUSABLE = {
    "NVIDIA__DCGM__issues__3.dmon_error.txt": "Error setting watches",  # DCGM error, no data rows
    # a single data row pasted without dmon's header: the columns' field IDs cannot be known
    "unattributed__azure-h100nvl-gpumon__tests__test_collector.py.dmon_9fields_row.txt": "header",
}


def _ids(row: dict[str, str]) -> str:
    return row["file"][:70]


@pytest.mark.parametrize("row", [r for r in ROWS if r["format"] in DATA_FORMATS], ids=_ids)
def test_data_file(row: dict[str, str], dcgm_corpus: Path) -> None:
    path = dcgm_corpus / row["file"]
    name = row["file"]
    if name in UNUSABLE:
        with pytest.raises(InputError, match=UNUSABLE[name]):
            parse_path(path)
        return
    r = parse_path(path, ParseOptions(host="corpus"))
    a = r.accounting
    assert a.records == r.samples.num_rows
    assert (a.rejected == 0) == (not r.rejected)
    for rej in r.rejected:
        assert rej.path == str(path) and rej.reason
    if name in CELLS:
        assert (a.records, a.missing, a.rejected) == CELLS[name]
    else:  # Prometheus text / JSON: one sample per metric line / per series value
        assert a.total == int(row["n_samples"])
    if name in ROW_COUNTS:
        assert r.meta["rows"] == ROW_COUNTS[name]
        if name not in MANIFEST_ROWS_WRONG:
            assert r.meta["rows"] == int(row["n_samples"])
    # and the windows run on it
    wa = analyze_windows(r.samples)
    windowed = set(r.samples.column("field_id").to_pylist()) & set(PROFILE_METRICS)
    assert (len(wa.windows) >= 1) == bool(windowed)


@pytest.mark.parametrize("row", [r for r in ROWS if r["format"] not in DATA_FORMATS], ids=_ids)
def test_reference_files_are_not_streams(row: dict[str, str], dcgm_corpus: Path) -> None:
    # field tables, counter CSVs, YAML/JSON capability lists, Markdown docs, the pydcgm dict:
    # none is a GPU sample stream, and each says so with one InputError line
    with pytest.raises(InputError):
        parse_path(dcgm_corpus / row["file"])


def test_manifest_present_or_skipped(dcgm_corpus: Path) -> None:
    assert ROWS, "MANIFEST.tsv is empty"
    assert {r["format"] for r in ROWS} >= {"dmon", "prometheus-text", "prom-json", "nvidia-smi"}


def test_known_values(dcgm_corpus: Path) -> None:
    # NVIDIA's example: dcgmproftester -t 1004 -> tensor-bound after the ramp
    r = parse_path(dcgm_corpus / "docs.nvidia.com__datacenter__dcgm__latest__user-guide__feature-overview.html"
                   ".dmon_A100_grTensorDram.txt", ParseOptions(interval_s=1.0))
    df = r.samples.to_pandas()
    assert df[df.field_id == 1004]["value"].max() == 0.932
    wa = analyze_windows(r.samples, window_s=5.0)
    assert wa.windows["label"].iloc[-1] == "compute-bound" and wa.windows["limiter"].iloc[-1] == "tensor"
    # MIG scrape: instances keep their own rows
    r = parse_path(dcgm_corpus / "NVIDIA__dcgm-exporter__issues__317.metrics_excerpt.prom")
    df = r.samples.to_pandas()
    assert sorted(set(df[df.gpu == "0"]["mig"])) == ["3", "4", "5", "6"]
    assert set(df["mig_profile"]) == {"1g.6gb"}
    # lower-case 'hostname' label
    r = parse_path(dcgm_corpus / "NVIDIA__dcgm-exporter__pull__736.metrics_excerpt.prom")
    assert set(r.samples.column("host").to_pylist()) == {"dcgm-exporter-wwwjh"}
