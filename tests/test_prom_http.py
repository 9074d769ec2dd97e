"""A Prometheus server as the source (issue 18 item 4), against a real Prometheus (tests/prom_server.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rooftop.analyzer.windows.fields import PROFILE_METRICS
from rooftop.cli.commands import main
from rooftop.errors import InputError
from rooftop.parsers.prometheus import http as ph
from rooftop.parsers.prometheus.transport import TOKEN_ENV
from rooftop.parsers.source import ParseOptions
from tests.prom_server import FIELDS, GPUS, SCRAPES, STEP_S, Proxy, at, prometheus

__all__ = ["prometheus"]  # the fixture, imported for pytest

PER_HOUR = 3600 // STEP_S


def rooftop(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def proxy(prometheus: str) -> Iterator[Proxy]:
    p = Proxy(prometheus)
    yield p
    p.close()


def _manifest(ds: Path) -> dict[str, object]:
    return json.loads((ds / "_manifest.json").read_text()) if (ds / "_manifest.json").exists() else {}


def test_default_selector_covers_what_the_windows_analyse() -> None:
    assert set(ph.ANALYZED_FIELDS) == set(PROFILE_METRICS)
    names = ph.default_names()
    assert "DCGM_FI_PROF_SM_ACTIVE" in names and "DCGM_FI_PROF_SM_UTIL_RATIO" in names
    assert "DCGM_FI_DEV_BOARD_POWER_WATTS" in names and "DCGM_FI_DEV_SM_CLOCK" not in names


def test_grid_points_are_on_the_epoch_step_grid_and_cut_by_hour() -> None:
    since, until = at(0).timestamp() + 7, at(2).timestamp()
    cells = list(ph._grid(since, until, 15.0))
    assert len(cells) == 2 and cells[0][1] == at(0).timestamp() + 15 and cells[0][2] == at(1).timestamp() - 15
    assert cells[1][1] == at(1).timestamp() and cells[1][2] == at(2).timestamp() - 15


def test_pull_finds_the_scrape_interval_and_reads_every_point(prometheus: str, tmp_path: Path) -> None:
    got = ph.pull(prometheus, ph.PromQuery(since=at(0), until=at(2)), tmp_path / "out")
    assert got.step_s == STEP_S and got.series == len(FIELDS) * len(GPUS)
    assert got.points == len(FIELDS) * len(GPUS) * SCRAPES
    assert [f.name for f in got.files] == ["20250101T000000Z.prom", "20250101T010000Z.prom"]
    again = ph.pull(prometheus, ph.PromQuery(since=at(0), until=at(2)), tmp_path / "again")
    assert [f.read_bytes() for f in again.files] == [f.read_bytes() for f in got.files]  # same range, same bytes


def test_analyze_a_server(prometheus: str, tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    res = rooftop("analyze", prometheus, "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-01T01:00:00Z",
                  "--json", out, "--html", tmp_path / "a.html", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    [inp] = doc["inputs"]
    assert inp["path"] == f"{prometheus}@20250101T000000Z" and inp["format"] == "prometheus-text"
    assert inp["records"] == len(FIELDS) * len(GPUS) * PER_HOUR and inp["rejected"] == 0
    assert len(doc["windows"]) == len(GPUS) * 60  # one-minute windows of both GPUs
    busy = [w for w in doc["windows"] if w["gpu"] == "0"]
    assert all(abs(w["metrics"]["sm_active"] - 0.8) < 1e-9 and abs(w["metrics"]["gpu_util"] - 1.0) < 1e-9
               and w["host"] == "node-p" for w in busy)


def test_analyze_needs_a_range(prometheus: str, tmp_path: Path) -> None:
    res = rooftop("analyze", prometheus, "--json", tmp_path / "a.json", "--html", tmp_path / "a.html")
    assert res.exit_code == 2 and "needs a range" in res.output and "--since and --until" in res.output


def test_ingest_is_idempotent_and_adds_only_new_hours(prometheus: str, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    first = rooftop("ingest", prometheus, "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-01T01:00:00Z",
                    "--to", ds)
    assert first.exit_code == 0, first.output
    assert f"read {len(FIELDS) * len(GPUS) * PER_HOUR:,} samples" in first.output and "every 15 s" in first.output
    rows = sum(int(e["records"]) for e in _manifest(ds)["inputs"])  # type: ignore[union-attr]
    assert rows == len(FIELDS) * len(GPUS) * PER_HOUR
    again = rooftop("ingest", prometheus, "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-01T01:00:00Z",
                    "--to", ds)
    assert again.exit_code == 0 and "ingested 0 input(s)" in again.output and "same SHA-256" in again.output
    more = rooftop("ingest", prometheus, "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-01T02:00:00Z",
                   "--to", ds)
    assert more.exit_code == 0, more.output
    entries = _manifest(ds)["inputs"]
    assert sum(int(e["records"]) for e in entries) == len(FIELDS) * len(GPUS) * SCRAPES  # type: ignore[union-attr]
    assert len(entries) == 2  # type: ignore[arg-type]


def test_match_selects_series(prometheus: str, tmp_path: Path) -> None:
    got = ph.pull(prometheus, ph.PromQuery(since=at(0), until=at(1), match=('DCGM_FI_PROF_SM_ACTIVE{gpu="1"}',),
                                           step_s=60), tmp_path)
    assert got.points == 60 and got.step_s == 60
    assert all(line.startswith('DCGM_FI_PROF_SM_ACTIVE{UUID="GPU-00000001') for line in
               got.files[0].read_text().splitlines())


def _ingest_fails(server: str, ds: Path, *extra: str) -> Result:
    res = rooftop("ingest", server, "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-01T02:00:00Z",
                  "--to", ds, *extra)
    assert res.exit_code == 2, res.output
    assert not _manifest(ds).get("inputs")  # nothing stored
    assert not list(ds.glob("_prometheus/**/*.prom"))  # nothing half-written
    return res


def test_unreachable_server(tmp_path: Path) -> None:
    res = _ingest_fails("http://127.0.0.1:9", tmp_path / "ds")
    assert "cannot be reached" in res.output and "Traceback" not in res.output


def test_bad_selector_is_the_servers_400(prometheus: str, tmp_path: Path) -> None:
    res = _ingest_fails(prometheus, tmp_path / "ds", "--match", "sum(")
    assert "HTTP 400" in res.output and "parse error" in res.output


@pytest.mark.parametrize(("mode", "says"), [
    ("503", "answered HTTP 503"),
    ("cut", "not complete JSON"),
    ("partial", "partial answer"),
    ("slow", "did not answer within"),
])
def test_server_faults_write_nothing(proxy: Proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str,
                                     says: str) -> None:
    proxy.mode = mode
    if mode == "slow":
        with pytest.raises(InputError, match=says):
            ph.pull(proxy.url, ph.PromQuery(since=at(0), until=at(1), timeout_s=1.0), tmp_path / "out")
        assert not list((tmp_path / "out").glob("*.prom"))
        return
    res = _ingest_fails(proxy.url, tmp_path / "ds")
    assert says in res.output


def test_a_failure_after_some_hours_leaves_nothing(proxy: Proxy, tmp_path: Path) -> None:
    proxy.mode, proxy.fail_after = "fail_after", 3  # step discovery (2) + the first hour, then 503
    res = _ingest_fails(proxy.url, tmp_path / "ds")
    assert "HTTP 503" in res.output and proxy.seen == 4


def test_bearer_token_from_file_or_environment(proxy: Proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proxy.mode = "auth"
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    res = _ingest_fails(proxy.url, tmp_path / "ds0")
    assert "HTTP 401" in res.output and "--token-file" in res.output
    token = tmp_path / "token"
    token.write_text(Proxy.TOKEN + "\n")
    ok = rooftop("ingest", proxy.url, "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-01T01:00:00Z",
                 "--to", tmp_path / "ds1", "--token-file", token)
    assert ok.exit_code == 0, ok.output
    monkeypatch.setenv(TOKEN_ENV, Proxy.TOKEN)
    got = ph.read_server(proxy.url, ParseOptions(prometheus=ph.PromQuery(since=at(0), until=at(1))))
    assert sum(r.accounting.records for r in got) == len(FIELDS) * len(GPUS) * PER_HOUR
    assert proxy.auth_headers[-1] == f"Bearer {Proxy.TOKEN}"
