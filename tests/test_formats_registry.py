"""The format registry (traits as data), the one open-and-detect entry point, and the input limits:
non-regular files, bounded detection, deep nesting, line caps (issues 13 and 19)."""

from __future__ import annotations

import importlib
import os
import resource
import threading
from pathlib import Path

import pytest

from rooftop.analyzer.pipeline import read_inputs
from rooftop.analyzer.store.ingest import APPENDABLE, LINE_FORMATS, ingest_files
from rooftop.errors import InputError
from rooftop.parsers import formats as formats_mod
from rooftop.parsers import open_input, parse_path
from rooftop.parsers.formats import (
    FORMATS,
    MAX_FIELD_CHARS,
    MAX_LINE_BYTES,
    MAX_SAMPLE_LINE_BYTES,
    Format,
    register,
)
from rooftop.parsers.source import SNIFF_BYTES, ParseOptions, Source

PROM = ('# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization.\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 3 1700000000000\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 4 1700000001000\n')


def test_every_format_has_kind_parser_and_declared_traits() -> None:
    for fmt in FORMATS.values():
        assert fmt.kind in ("kernels", "samples", "events")
        module, func = fmt.parser.split(":")
        mod = importlib.import_module(module)
        assert callable(getattr(mod, func))
        # streamable is declared, and true exactly when the module has <function>_batches
        assert fmt.streamable == callable(getattr(mod, f"{func}_batches", None)), fmt.name
        assert not (fmt.appendable and not fmt.line_based), fmt.name  # append needs line order
    assert {"prometheus-text", "dcgm-dmon", "nvidia-smi-csv", "nvidia-smi-dmon"} == APPENDABLE
    assert LINE_FORMATS == APPENDABLE
    assert FORMATS["ncu-rep"].binary and FORMATS["ncu-rep"].reads_file


def test_register_a_new_format_with_its_sniffer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats_mod, "FORMATS", dict(FORMATS))
    monkeypatch.setattr(formats_mod, "_SNIFFERS", list(formats_mod._SNIFFERS))
    register(Format("toy-events", "events", "rooftop.parsers.prometheus.json:parse", "toy trace"),
             lambda src: src.head_text().startswith("TOY"), before="prometheus-json")
    p = tmp_path / "t.txt"
    p.write_text("TOY {\"data\": 1}\n")
    inp = open_input(p)
    assert inp.format.name == "toy-events" and inp.format.legacy_kind == "ncu"
    p.write_text(PROM)
    assert open_input(p).format.name == "prometheus-text"


def test_fifo_is_refused_at_once_not_waited_for(tmp_path: Path) -> None:
    fifo = tmp_path / "live.prom"
    os.mkfifo(fifo)
    good = tmp_path / "good.prom"
    good.write_text(PROM)
    result: dict[str, object] = {}

    def run() -> None:
        try:
            read_inputs([str(fifo)], ParseOptions())
        except InputError as exc:
            result["error"] = str(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(30)  # a hang would leave the thread alive (nobody ever writes to the FIFO)
    assert not t.is_alive()
    assert "is a FIFO (named pipe), not a regular file" in str(result["error"])
    # in a night's ingest, the FIFO is one unusable input and the others are stored
    summary = ingest_files([fifo, good], tmp_path / "ds", ParseOptions(), progress=False)
    assert [u.path for u in summary.unusable] == [str(fifo)] and summary.rows == 2


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_devices_are_refused() -> None:
    with pytest.raises(InputError, match="is a device, not a regular file"):
        parse_path("/dev/zero")


def test_json_detection_reads_only_head_and_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a 20 MB JSON array of no known format: rejected without parsing it
    p = tmp_path / "big.json"
    p.write_text("[" + ",".join(["{\"a\": 1}"] * 2_000_000) + "]")
    import json

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("detection must not parse the document")

    monkeypatch.setattr(json, "loads", boom)
    with pytest.raises(InputError, match="is not a format rooftop reads"):
        open_input(p)
    # a key-sorted query answer: resultType after a long result, found in the tail
    q = tmp_path / "sorted.json"
    one = '{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"N"},"values":[[1700000000,"1"]]}'
    series = ",".join(one.replace('"N"', f'"{i}"') for i in range(5000))
    q.write_text('{"data": {"result": [' + series + '], "resultType": "matrix"}, "status": "success"}')
    assert q.stat().st_size > 2 * SNIFF_BYTES
    assert open_input(q).format.name == "prometheus-json"


def test_deeply_nested_json_is_rejected_with_its_reason_others_go_on(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"status":"success","data":{"resultType":"matrix","result":' + "[" * 200_000 + "]" * 200_000
                    + "}}")
    good = tmp_path / "good.prom"
    good.write_text(PROM)
    with pytest.raises(InputError, match="nested too deeply"):
        parse_path(deep)
    parsed = read_inputs([str(tmp_path)], ParseOptions())
    assert [e.path for e in parsed.unusable] == [str(deep)] and len(parsed.results) == 1
    summary = ingest_files([deep, good], tmp_path / "ds", ParseOptions(), progress=False)
    assert [u.path for u in summary.unusable] == [str(deep)] and summary.rows == 2


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_huge_line_is_a_clear_rejection_in_bounded_memory(tmp_path: Path) -> None:
    p = tmp_path / "label.prom"
    with p.open("w") as fh:
        fh.write(PROM)
        fh.write('DCGM_FI_DEV_GPU_UTIL{gpu="0",pod="' + "x" * (64 << 20) + '"} 3 1700000002000\n')
        fh.write(PROM)
    before = _rss_mb()
    with pytest.raises(InputError, match=r"line 5 is longer than 65,536 bytes") as err:
        parse_path(p)
    assert err.value.line == 5
    assert _rss_mb() - before < 48  # a 64 MB line is never held whole (the cap is 64 KiB)


def test_a_huge_label_in_query_json_rejects_its_series_only(tmp_path: Path) -> None:
    import json

    series = [{"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": str(g), "pod": "p" * (1 + (g == 1) * MAX_FIELD_CHARS)},
               "values": [[1700000000 + i, "5"] for i in range(3)]} for g in range(2)]
    p = tmp_path / "q.json"
    p.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}))
    r = parse_path(p)
    assert (r.accounting.records, r.accounting.rejected) == (3, 3)
    assert "label 'pod' is longer than 65,536 characters" in r.rejected[0].reason


@pytest.mark.parametrize("fmt_line", [
    "timestamp, index, utilization.gpu [%]\n2023/06/22 18:56:00.000, 0, 3 %\n",  # nvidia-smi CSV: Source.lines
    "==PROF== Connected to process 1\n",  # ncu console log: Source.lines
])
def test_line_cap_in_the_line_readers(tmp_path: Path, fmt_line: str) -> None:
    p = tmp_path / "x.txt"
    p.write_text(fmt_line + "y" * (MAX_LINE_BYTES + 10) + "\n")
    with pytest.raises(InputError, match="longer than"):
        parse_path(p)


def test_unterminated_long_last_line_and_ingest(tmp_path: Path) -> None:
    p = tmp_path / "tail.prom"
    p.write_text(PROM + "#" + "z" * (MAX_SAMPLE_LINE_BYTES + 1))
    with pytest.raises(InputError, match="line 5 is longer"):
        parse_path(p)
    good = tmp_path / "good.prom"
    good.write_text(PROM)
    summary = ingest_files([p, good], tmp_path / "ds", ParseOptions(), progress=False, finished=True)
    assert [u.line for u in summary.unusable] == [5] and summary.rows == 2


def test_source_limit_copy_keeps_the_head(tmp_path: Path) -> None:
    p = tmp_path / "a.prom"
    p.write_text(PROM)
    src = Source(p)
    cut = src.with_limit(10)
    assert cut.head_bytes == src.head_bytes and cut.read_bytes() == PROM.encode()[:10] and src.limit is None
