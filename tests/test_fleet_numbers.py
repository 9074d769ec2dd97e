"""Fleet numbers an operator acts on (issue 24, "Numbers that are wrong today"): no GPU-hours
invented across gaps, one identity per physical GPU, MIG counted once, one GPU count everywhere
(docs/formulas.md#windows "Covered time", docs/formulas.md#fleet "GPU identity", "MIG")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from rooftop.cli.commands import main
from tests.conftest import corpus_dir

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
DAY = 86_400_000


def _run(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _fleet(tmp_path: Path, *inputs: Path, ingest: tuple[Any, ...] = (), fleet: tuple[Any, ...] = ()) -> dict[str, Any]:
    ds = tmp_path / "ds"
    res = _run("ingest", *inputs, "--to", ds, "-q", "--finished", *ingest)
    assert res.exit_code == 0, res.output
    out = tmp_path / "f.json"
    res = _run("fleet", ds, "--since", "2024-01-01", "--until", "2027-01-01", "--json", out, "--no-html", "-q",
               *fleet)
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def _prom(path: Path, rows: list[tuple[int, str, float]], host: str | None = "n1", uuid: str | None = None) -> Path:
    """Prometheus text lines ``DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu, Hostname} value t_ms``."""
    lines = []
    for t, gpu, v in rows:
        labels = [f'gpu="{gpu}"'] + ([f'Hostname="{host}"'] if host else []) + ([f'UUID="{uuid}"'] if uuid else [])
        lines.append(f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{','.join(labels)}}} {v} {t}")
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- defect 2: a gap is missing data, not a sampling interval --------------------------------

def test_two_instant_scrapes_months_apart_cover_nothing(tmp_path: Path) -> None:
    # the corpus case (vks / vsphere): two instant scrapes of one GPU 257 days apart were read as a
    # 257-day sampling interval, each instant a full 60 s window of "idle" GPU-time
    p = _prom(tmp_path / "two.prom", [(T0, "0", 0.0), (T0 + 257 * DAY, "0", 0.0)])
    doc = _fleet(tmp_path, p)
    assert doc["fleet"]["gpu_hours"] == 0.0
    assert not [f for f in doc["findings"] if f["rule"] == "fleet-idle"]
    assert any(x["code"] == "dcgm-single-sample-window" for x in doc["lint"])


def test_steady_scrapes_still_cover_their_time(tmp_path: Path) -> None:
    # 30 s scrapes for 10 minutes (20 samples) -> 600 s; 5-minute scrapes for an hour (13 samples)
    # in 60 s windows: each sample covers its 60 s window (the step is within 5 windows)
    p = _prom(tmp_path / "steady.prom", [(T0 + k * 30_000, "0", 0.5) for k in range(20)]
              + [(T0 + DAY + k * 300_000, "1", 0.5) for k in range(13)])
    doc = _fleet(tmp_path, p, fleet=("--by", "gpu"))
    hours = {g["key"]["gpu"]: g["gpu_hours"] for g in doc["groups"]}
    assert abs(hours["0"] * 3600 - 600.0) < 1e-6
    assert abs(hours["1"] * 3600 - 13 * 60.0) < 1e-6


# ---- defect 3: one identity per physical GPU -------------------------------------------------

def test_inputs_without_host_are_never_one_gpu(tmp_path: Path) -> None:
    # two machines' exports, neither names a host nor a UUID, both have GPU 0: two GPUs, not one
    a = _prom(tmp_path / "a.prom", [(T0 + k * 30_000, "0", 0.5) for k in range(10)], host=None)
    (tmp_path / "b").mkdir()
    b = _prom(tmp_path / "b" / "a.prom", [(T0 + k * 30_000, "0", 0.0) for k in range(10)], host=None)
    doc = _fleet(tmp_path, a, b)
    assert doc["fleet"]["gpus"] == 2
    assert sum(g["gpus"] for g in doc["groups"]) == 2 and len(doc["groups"]) == 2
    assert abs(doc["fleet"]["gpu_hours"] * 3600 - 2 * 300.0) < 1e-6
    [lint] = [x for x in doc["lint"] if x["code"] == "inputs-without-host"]
    assert "2 input(s)" in lint["message"]


def test_a_uuid_is_one_gpu_across_inputs(tmp_path: Path) -> None:
    # one GPU seen by two inputs that name no host (a rotated log): its UUID makes it one GPU
    u = "GPU-603a8873-0edd-c157-ce48-2078e8b1a935"
    a = _prom(tmp_path / "x.prom", [(T0 + k * 30_000, "0", 0.5) for k in range(10)], host=None, uuid=u)
    b = _prom(tmp_path / "y.prom", [(T0 + 300_000 + k * 30_000, "0", 0.5) for k in range(10)], host=None, uuid=u)
    doc = _fleet(tmp_path, a, b)
    assert doc["fleet"]["gpus"] == 1


# ---- defects 4 and 8: a MIG GPU counted once, one GPU count everywhere -----------------------

def _dmon_mig(path: Path, ticks: int) -> Path:
    head = ["# Entity  GRACT  SMACT  TENSO  DRAMA", "      Id"]
    rows = []
    for _ in range(ticks):
        rows += ["   GPU 0  0.429  0.429  0.011  0.400", "   GPU-I 0  0.000  0.000  0.000  0.000",
                 "   GPU-I 1  0.750  0.750  0.020  0.800"]
    path.write_text("\n".join(head + rows) + "\n")
    return path


def test_mig_gpu_counted_once(tmp_path: Path) -> None:
    # the corpus's zhihu MIG dmon shape (parent GPU 0 beside GPU-I 0 and 1), 60 ticks of 1 s: one
    # GPU, 60 GPU-seconds (was 3 GPUs and 180 s); the parent is not labelled
    p = _dmon_mig(tmp_path / "mig.txt", 60)
    doc = _fleet(tmp_path, p, ingest=("--host", "m1", "--start", "2025-01-01T00:00:00Z"), fleet=("--by", "gpu"))
    assert doc["fleet"]["gpus"] == 1
    assert abs(doc["fleet"]["gpu_hours"] * 3600 - 60.0) < 1e-6
    parent = [w for w in doc["windows"] if not w.get("mig")]
    assert parent and all(w["label"] == "unknown" for w in parent)
    assert any("MIG: 2 instance(s)" in e for e in parent[0]["evidence"])
    # one GPU count: the header's, and each group's (a MIG instance's group counts its physical GPU)
    assert {g["gpus"] for g in doc["groups"]} == {1}


def test_mig_corpus_file_is_one_gpu(tmp_path: Path) -> None:
    d = corpus_dir("dcgm")
    doc = _fleet(tmp_path, d / "unattributed__zhihu-MIG-article-mirror__dmon_mig_5fields.txt",
                 ingest=("--host", "z", "--start", "2025-01-01T00:00:00Z"))
    assert doc["fleet"]["gpus"] == 1 and doc["groups"][0]["gpus"] == 1


def test_mig_memory_share_is_memory_slices() -> None:
    from rooftop.analyzer.windows.identity import memory_share

    assert memory_share("1g.5gb", "NVIDIA A100-SXM4-40GB") == 1 / 8
    assert memory_share("3g.20gb", "NVIDIA A100-SXM4-40GB") == 4 / 8
    assert memory_share("1g.10gb", "NVIDIA H100 80GB HBM3") == 1 / 8
    assert memory_share("2g.12gb", "NVIDIA A30") == 1 / 2
    assert memory_share(None, "NVIDIA A30") is None


# ---- defect 5: scrapes split at a blank line or a # HELP/# TYPE block -----------------------

def _scrape_of(text: str, tmp_path: Path) -> dict[tuple[str, str], list[float]]:
    from datetime import datetime, timezone

    from rooftop.parsers import parse_path
    from rooftop.parsers.source import ParseOptions

    p = tmp_path / "s.prom"
    p.write_text(text)
    s = parse_path(p, ParseOptions(start=datetime(2025, 1, 1, tzinfo=timezone.utc))).samples.to_pandas()
    t0 = s["timestamp"].min()
    out: dict[tuple[str, str], list[float]] = {}
    for r in s.to_dict("records"):
        out.setdefault((r["field"], r["gpu"]), []).append((r["timestamp"] - t0).total_seconds())
    return out


def test_a_repeated_help_block_starts_a_scrape(tmp_path: Path) -> None:
    # scrape 2 repeats the # HELP/# TYPE block and lists a GPU scrape 1 did not have first: that
    # GPU's sample belongs to scrape 2 (t = 30 s); it was counted into scrape 1 (no repeat yet)
    block = "# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE gr\n# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n"
    one = block + 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"} 0.0\n'
    two = block + 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1"} 0.9\nDCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"} 0.9\n'
    got = _scrape_of(one + two, tmp_path)
    assert got[("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0")] == [0.0, 30.0]
    assert got[("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "1")] == [30.0]


def test_a_blank_line_before_a_repeat_starts_a_scrape(tmp_path: Path) -> None:
    # the issue 68 shape: scrape 2 begins after a blank line with a field scrape 1 did not have
    text = ('DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0"} 0.0\n\nDCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"} 0.4\n'
            'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0"} 0.1\n')
    got = _scrape_of(text, tmp_path)
    assert got[("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0")] == [30.0]


def test_blank_lines_inside_one_scrape_do_not_split_it(tmp_path: Path) -> None:
    text = ('DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"} 0.5\n\nDCGM_FI_PROF_SM_ACTIVE{gpu="0"} 0.5\n\n'
            'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"} 0.6\n\nDCGM_FI_PROF_SM_ACTIVE{gpu="0"} 0.6\n')
    got = _scrape_of(text, tmp_path)
    assert got[("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0")] == [0.0, 30.0]
    assert got[("DCGM_FI_PROF_SM_ACTIVE", "0")] == [0.0, 30.0]  # SM's rows are not moved: it repeats


def test_issue_68_scrapes_are_not_mixed() -> None:
    # corpus: an idle scrape (tensor 0, DRAM 0), a blank line, a busy one (GR 0.38, tensor 0.022);
    # the busy GR was counted into the idle scrape and the two labels came out swapped
    from rooftop.analyzer.pipeline import run_analysis  # noqa: F401 - the analysis path below
    from rooftop.analyzer.windows.analysis import analyze_windows
    from rooftop.parsers import parse_path
    from rooftop.parsers.source import ParseOptions

    f = corpus_dir("dcgm") / "NVIDIA__dcgm-exporter__issues__68.metrics_excerpt.prom"
    from datetime import datetime, timezone

    r = parse_path(f, ParseOptions(start=datetime(2025, 1, 1, tzinfo=timezone.utc)))
    w = analyze_windows(r.samples, window_s=30.0).windows.sort_values("start")
    assert w["label"].tolist() == ["idle", "overhead-bound"]


def _moved_by_loop(scrape: Any, inv: Any, nos: Any, bounds: Any) -> list[int]:
    """Plain-loop reference of records.move_to_boundaries (final chunk)."""
    out = list(scrape)
    inc = [i for i in range(1, len(scrape)) if scrape[i] > scrape[i - 1]]
    ends = [*inc[1:], len(scrape)] if inc else []
    prev = 0
    for i, end in zip(inc, ends, strict=True):
        later = set(inv[i:end])
        again = [r for r in range(prev, i) if inv[r] in later]
        after = nos[again[-1]] if again else nos[prev]
        cands = [b for b in bounds if after < b < nos[i]]
        if cands:
            for r in range(prev, i):
                if nos[r] > cands[0]:
                    out[r] = scrape[i]
        prev = i
    return out


def test_scrape_boundaries_vectorised_equal_the_loop() -> None:
    import numpy as np

    from rooftop.parsers.prometheus.records import move_to_boundaries

    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        nos = np.sort(rng.choice(np.arange(1, 200), size=n, replace=False)).astype("int64")
        inv = rng.integers(0, 5, size=n).astype("int64")
        seen: dict[int, int] = {}
        occ = []
        for v in inv.tolist():  # the repetition rule: a series' k-th occurrence is in scrape >= k
            occ.append(seen.get(v, 0))
            seen[v] = occ[-1] + 1
        scrape = np.maximum.accumulate(np.array(occ, dtype="int64"))
        free = np.setdiff1d(np.arange(1, 201), nos)
        bounds = np.sort(rng.choice(free, size=int(rng.integers(0, 15)), replace=False)).astype("int64")
        got = move_to_boundaries(scrape, inv, nos, bounds).tolist()
        assert got == _moved_by_loop(scrape.tolist(), inv.tolist(), nos.tolist(), bounds.tolist())


# ---- defect 6: every assumed time or interval said, in analyze and in fleet -----------------

def _analyze(path: Path, *args: Any) -> dict[str, Any]:
    res = _run("analyze", path, "--json", "-", "--no-html", "-q", *args)
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.output[res.output.index("{"):])
    return out


def test_nvsmi_dmon_reads_its_own_delay() -> None:
    # corpus: `nvidia-smi dmon -d 5` was read as 1 s samples (a 5x too short capture)
    from rooftop.parsers import parse_path
    from rooftop.parsers.source import ParseOptions

    f = corpus_dir("dcgm") / "liguodongiot__llm-action__docs__llm-base__nvidia-smi-dmon.md.nvsmi_dmon.txt"
    r = parse_path(f, ParseOptions())
    assert r.meta["interval_s"] == 5.0 and "-d 5" in r.meta["interval_from"]
    ts = r.samples.column("timestamp").to_pandas()
    assert (ts.max() - ts.min()).total_seconds() == 5.0 * (r.meta["ticks"] - 1)
    doc = _analyze(f)
    [lint] = [x for x in doc["lint"] if x["code"] == "times-assumed"]
    assert "modification time" in lint["message"] and "--start" in lint["message"]


def test_prometheus_text_without_times_says_its_times_are_assumed() -> None:
    # corpus issue 68: no timestamps; "samples of 1 GPU(s) are 30 s apart" was said as a fact
    doc = _analyze(corpus_dir("dcgm") / "NVIDIA__dcgm-exporter__issues__68.metrics_excerpt.prom")
    codes = [x["code"] for x in doc["lint"]]
    assert "times-assumed" in codes and "dcgm-exporter-30s-interval" not in codes
    [lint] = [x for x in doc["lint"] if x["code"] == "times-assumed"]
    assert "30 s apart, rooftop's assumption" in lint["message"]


def test_nvsmi_local_times_are_said_to_be_read_as_utc() -> None:
    doc = _analyze(corpus_dir("dcgm") / "AkshayRoyal__gpu-usage__gpu_usage.csv")
    [lint] = [x for x in doc["lint"] if x["code"] == "times-assumed"]
    assert "local time" in lint["message"] and "UTC" in lint["message"]


def test_fleet_says_which_gpu_hours_rest_on_assumed_times(tmp_path: Path) -> None:
    p = tmp_path / "untimed.prom"
    p.write_text("".join(f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0",Hostname="n1"}} 0.{k}\n' for k in range(2))
                 * 1)
    doc = _fleet(tmp_path, p)
    [lint] = [x for x in doc["lint"] if x["code"] == "fleet-times-assumed"]
    assert "untimed.prom" in lint["message"] and "rooftop's assumption" in lint["message"]
