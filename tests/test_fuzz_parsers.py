"""Bad and hostile input for every parser: nothing crashes, nothing hangs, nothing is lost.

Three sources of input, each checked with :func:`tests.fuzzing.check_parse` (accounting holds, or a
one-line ``InputError``; never another exception, never a hang):

1. small synthetic files from ``bench/gen_inputs.py`` with exactly known launch/sample counts, and
   targeted edits whose effect on the count is known (drop/duplicate a record, NaN, negative
   duration, truncation) -> ``records + missing + rejected`` is checked against that count;
2. every file in ``fixtures/`` and in ``../shared/corpus/{ncu,dcgm}`` (skipped when absent), each
   through seeded byte-level mutations (``tests/fuzzing.py``);
3. hypothesis-generated files in each text format.

Budget: ``ROOFTOP_FUZZ=nightly`` for the large one (``docs/fuzzing.md``). No timing assertions.
"""

from __future__ import annotations

import importlib
import random
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.formats import FORMATS
from tests.conftest import CORPUS, FIXTURES
from tests.fuzzing import CHEAP, MUTATIONS, budget, check_parse, mutate_file, seed

from bench.gen_inputs import (  # isort: skip  (tests.fuzzing put the repo root on sys.path)
    KERNEL_NAMES,
    NCU_METRICS,
    ncu_raw_header,
    ncu_raw_row,
    write_dmon,
    write_prom_text,
)

B = budget()
settings.register_profile("rooftop-fuzz-ci", max_examples=B.hypothesis_examples, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.register_profile("rooftop-fuzz-nightly", max_examples=B.hypothesis_examples, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings.get_profile(f"rooftop-fuzz-{B.name}")


def require(fmt: str) -> None:
    """Skip while the parser for ``fmt`` has not landed yet (its module does not exist)."""
    module = FORMATS[fmt].parser.split(":")[0]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            pytest.skip(f"{module} not written yet")
        raise


# ----------------------------------------------------------------------------- 1. synthetic, exact
N_KERNELS = 12


def _raw(tmp_path: Path, rows: list[str] | None = None) -> tuple[Path, int]:
    rng = random.Random(7)
    rows = rows if rows is not None else [ncu_raw_row(i, KERNEL_NAMES[i % 7], rng) for i in range(N_KERNELS)]
    p = tmp_path / "k.raw.csv"
    p.write_text("==PROF== Connected to process 4242 (/usr/bin/python3)\n" + ncu_raw_header() + "".join(rows))
    return p, len(rows)


def _rows(n: int = N_KERNELS) -> list[str]:
    rng = random.Random(7)
    return [ncu_raw_row(i, KERNEL_NAMES[i % 7], rng) for i in range(n)]


def test_raw_clean_counts_exact(tmp_path: Path) -> None:
    require("ncu-raw-csv")
    p, n = _raw(tmp_path)
    out = check_parse(p, "clean")
    assert out.result is not None, out.error
    assert out.result.accounting.records == n and out.result.accounting.rejected == 0
    assert list(out.result.kernels["name"]) == [KERNEL_NAMES[i % 7] for i in range(n)]


@pytest.mark.parametrize("edit", ["drop", "dup", "neg_duration", "nan_duration", "inf_metric",
                                  "huge_metric", "short_row", "long_row", "garbage_row",
                                  "dup_header", "crlf_bom", "utf16"])
def test_raw_targeted_edits_keep_count(tmp_path: Path, edit: str) -> None:
    """Each edit changes the number of launches in a known way; the accounting must follow it."""
    require("ncu-raw-csv")
    rows = _rows()
    expected = N_KERNELS
    dur_col = 11 + [m for m, _ in NCU_METRICS].index("gpu__time_duration.sum")

    def set_field(row: str, col: int, value: str) -> str:
        cells = row.rstrip("\n")[1:-1].split('","')
        cells[col] = value
        return '"' + '","'.join(cells) + '"\n'

    if edit == "drop":
        del rows[3]
        expected -= 1
    elif edit == "dup":
        rows.insert(5, rows[5])  # same ID twice: either both kept or one rejected, never lost
        expected += 1
    elif edit == "neg_duration":
        rows[2] = set_field(rows[2], dur_col, "-1500")
    elif edit == "nan_duration":
        rows[2] = set_field(rows[2], dur_col, "nan")
    elif edit == "inf_metric":
        rows[4] = set_field(rows[4], dur_col + 1, "inf")
    elif edit == "huge_metric":
        rows[4] = set_field(rows[4], dur_col + 1, "1e309")
    elif edit == "short_row":
        rows[6] = rows[6][: len(rows[6]) // 2].rsplit('","', 1)[0] + '"\n'
    elif edit == "long_row":
        rows[6] = rows[6].rstrip("\n") + ',"extra","cells"\n'
    elif edit == "garbage_row":
        rows.insert(6, '"7","this is not a launch\n')  # an unterminated quote in the middle
        expected += 1
    p, _ = _raw(tmp_path, rows)
    if edit == "dup_header":
        text = p.read_text()
        p.write_text(text + ncu_raw_header())  # ncu appends a second header when a file is reused
    elif edit == "crlf_bom":
        p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes().replace(b"\n", b"\r\n"))
    elif edit == "utf16":
        p.write_bytes("\ufeff".encode("utf-16-le") + p.read_text().encode("utf-16-le"))
    out = check_parse(p, edit)
    if edit == "garbage_row" and out.error is not None:
        return  # an unterminated quote may swallow the rest of the file: unusable is an honest answer
    assert out.result is not None, f"{edit}: {out.error}"
    acc = out.result.accounting
    if edit == "garbage_row":
        assert acc.total >= 6, acc  # rows before the broken quote are never lost
        return
    if edit == "dup" and acc.total == expected - 1:
        # counted as one launch (same ID and PID): then the repeated line must be listed
        assert 10 in {r.line for r in out.result.rejected}, f"repeated row not listed: {out.result.rejected}"
        return
    assert acc.total == expected, f"{edit}: accounting {acc} for {expected} launches"
    if edit in ("neg_duration", "nan_duration"):
        k = out.result.kernels
        row = k[k["index"] == 2]
        assert row.empty or row["duration_s"].isna().all(), f"{edit}: duration kept as {row['duration_s']}"
    if edit == "neg_duration":
        lines = {r.line for r in out.result.rejected}
        assert 6 in lines, f"negative duration (row 2, line 6) not listed: {out.result.rejected}"


@pytest.mark.parametrize("cut", [0.1, 0.37, 0.5, 0.83, 0.999])
def test_raw_truncated_never_invents_launches(tmp_path: Path, cut: float) -> None:
    require("ncu-raw-csv")
    p, n = _raw(tmp_path)
    data = p.read_bytes()
    p.write_bytes(data[: int(len(data) * cut)])
    out = check_parse(p, f"cut@{cut}")
    if out.result is not None:
        complete = sum(1 for ln in p.read_bytes().split(b"\n")[:-1] if re.match(rb'^"\d+",', ln))
        assert complete <= out.result.accounting.total <= complete + 1 <= n + 1, out.result.accounting


def _prom(tmp_path: Path, **kw: int) -> tuple[Path, int]:
    w = write_prom_text(tmp_path / "m.prom", hosts=1, gpus=2, scrapes=2, **kw)
    return w.path, w.total


def test_prom_clean_counts_exact(tmp_path: Path) -> None:
    require("prometheus-text")
    p, n = _prom(tmp_path)
    out = check_parse(p, "clean")
    assert out.result is not None, out.error
    acc = out.result.accounting
    assert (acc.records, acc.missing, acc.rejected) == (n, 0, 0)


@pytest.mark.parametrize("edit", ["drop", "dup", "nan", "inf", "neg", "huge", "sentinel",
                                  "no_value", "bad_label", "unclosed_brace", "crlf", "noise",
                                  "decimal_comma", "huge_ts", "neg_ts"])
def test_prom_targeted_edits_keep_count(tmp_path: Path, edit: str) -> None:
    require("prometheus-text")
    p, n = _prom(tmp_path)
    lines = p.read_text().split("\n")
    samples = [i for i, ln in enumerate(lines) if ln and not ln.startswith("#")]
    i = samples[5]
    head, _, rest = lines[i].rpartition("} ")
    value, ts = rest.split(" ")
    expected = n
    if edit == "drop":
        del lines[i]
        expected -= 1
    elif edit == "dup":
        lines.insert(i, lines[i])
        expected += 1
    elif edit in ("nan", "inf", "neg", "huge", "sentinel", "decimal_comma"):
        new = {"nan": "NaN", "inf": "+Inf", "neg": "-" + value, "huge": "1e309",
               "sentinel": "9223372036854775794", "decimal_comma": value.replace(".", ",") + "1,5"}[edit]
        lines[i] = f"{head}}} {new} {ts}"
    elif edit in ("huge_ts", "neg_ts"):  # 2**64 does not fit the int64 milliseconds
        lines[i] = f"{head}}} {value} " + ("18446744073709551616" if edit == "huge_ts" else "-5")
        expected = n
    elif edit == "no_value":
        lines[i] = head + "}"
    elif edit == "bad_label":
        lines[i] = lines[i].replace('gpu="', 'gpu=', 1)
    elif edit == "unclosed_brace":
        lines[i] = lines[i].replace("}", "", 1)
    elif edit == "noise":
        lines.insert(0, "Handling connection for 9400")
        lines.insert(i, "$ curl -s localhost:9400/metrics")
    text = "\n".join(lines)
    if edit == "crlf":
        text = text.replace("\n", "\r\n")
    p.write_text(text, newline="")
    out = check_parse(p, edit)
    assert out.result is not None, f"{edit}: {out.error}"
    acc = out.result.accounting
    if edit == "noise":
        assert acc.records == n, acc  # noise lines are not samples; every real sample is kept
        return
    assert acc.total == expected, f"{edit}: accounting {acc} for {expected} samples"
    if edit in ("nan", "sentinel", "no_value", "unclosed_brace", "huge_ts"):
        assert acc.records == expected - 1, f"{edit}: the edited sample was stored as a value: {acc}"


def _dmon(tmp_path: Path, ticks: int = 5, gpus: int = 2) -> tuple[Path, int, int]:
    w = write_dmon(tmp_path / "d.txt", ticks=ticks, gpus=gpus)
    return w.path, w.total, w.missing


def test_dmon_clean_counts_exact(tmp_path: Path) -> None:
    require("dcgm-dmon")
    p, n, miss = _dmon(tmp_path)
    out = check_parse(p, "clean")
    assert out.result is not None, out.error
    acc = out.result.accounting
    assert (acc.records, acc.missing, acc.rejected) == (n - miss, miss, 0)


@pytest.mark.parametrize("edit", ["drop_row", "dup_header", "stop_line", "short_row", "annotated",
                                  "nan", "neg", "crlf", "utf16"])
def test_dmon_targeted_edits_keep_count(tmp_path: Path, edit: str) -> None:
    require("dcgm-dmon")
    p, n, _miss = _dmon(tmp_path)
    fields = 10
    lines = p.read_text().split("\n")
    rows = [i for i, ln in enumerate(lines) if ln.startswith("GPU ")]
    i = rows[-2]
    expected = n
    if edit == "drop_row":
        del lines[i]
        expected -= fields
    elif edit == "dup_header":
        lines[i:i] = lines[1:3]
    elif edit == "stop_line":
        lines += ["", "", "dmon was stopped due to receiving a signal"]
    elif edit == "short_row":
        lines[i] = " ".join(lines[i].split()[:5])  # entity + 3 values of 10: the row is rejected
    elif edit == "annotated":
        lines[i] = lines[i].rstrip() + "   (36.07GB/s)"
    elif edit in ("nan", "neg"):  # one value cell of the row, entity and column count unchanged
        tok = lines[i][10:].split()
        tok[0] = "nan" if edit == "nan" else "-" + tok[0]
        lines[i] = lines[i][:10] + "".join(f"{t:<13}" for t in tok)
    text = "\n".join(lines)
    if edit == "crlf":
        text = text.replace("\n", "\r\n")
    p.write_text(text, newline="")
    if edit == "utf16":
        p.write_bytes("\ufeff".encode("utf-16-le") + text.encode("utf-16-le"))
    out = check_parse(p, edit)
    assert out.result is not None, f"{edit}: {out.error}"
    acc = out.result.accounting
    if edit in ("short_row", "annotated"):
        # the row is unusable as a whole (or in part); it is listed, and its samples are accounted:
        # the header says how many values the row owed, so the total is still known
        assert out.result.rejected, f"{edit}: malformed row not listed as rejected: {acc}"
        assert acc.records + acc.missing <= n - (fields if edit == "short_row" else 0), acc
    assert acc.total == expected, f"{edit}: accounting {acc} for {expected} samples"


@pytest.mark.parametrize(("ts", "value"), [("1e300", '"1"'), ("1773114089.184", '"1e400"'),
                                           ("-1", '"0.5"'), ('"x"', '"0.5"'), ("1773114089", "null")])
def test_prom_json_bad_sample_keeps_count(tmp_path: Path, ts: str, value: str) -> None:
    """A vector result with 3 series; the last one's [timestamp, value] pair is edited."""
    require("prometheus-json")
    res = []
    for g, (t, v) in enumerate([("1773114089.184", '"0.25"'), ("1773114089.184", '"0.5"'), (ts, value)]):
        res.append(f'{{"metric":{{"__name__":"DCGM_FI_PROF_SM_ACTIVE","gpu":"{g}","Hostname":"n1"}},'
                   f'"value":[{t},{v}]}}')
    p = tmp_path / "q.json"
    p.write_text('{"status":"success","data":{"resultType":"vector","result":[' + ",".join(res) + "]}}")
    out = check_parse(p, f"ts={ts} value={value}")
    assert out.result is not None, out.error
    assert out.result.accounting.total == 3, out.result.accounting
    if ts != "-1":  # 1969-12-31T23:59:59Z is odd but a valid time
        assert out.result.accounting.records == 2, out.result.accounting


# ----------------------------------------------------------------------------- 2. mutated files
def _inputs(kind: str) -> list[Path]:
    files: list[Path] = []
    if FIXTURES.is_dir():
        files += sorted(p for p in FIXTURES.rglob("*") if p.is_file() and kind in p.parts
                        and not p.name.startswith(".") and p.suffix not in (".md", ".py"))
    d = CORPUS / kind
    if d.is_dir():
        files += sorted(p for p in d.iterdir() if p.is_file() and p.name not in ("MANIFEST.tsv", "FORMATS.md"))
    return files


def _parsable(path: Path) -> bool:
    """Whether the unmutated file reaches a parser that exists (else the test would only test detect)."""
    from rooftop.parsers.formats import detect_format
    from rooftop.parsers.source import Source

    try:
        fmt = detect_format(Source(path))
    except OSError:
        return False
    if fmt is None:
        return True  # unknown files are fuzzed too: they must stay a clean InputError
    module = FORMATS[fmt].parser.split(":")[0]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError:
        return False
    return True


def _mutation_plan(path: Path, n: int) -> list[tuple[str, int]]:
    """``n`` (mutation, seed) pairs for ``path``, reproducible from ``ROOFTOP_FUZZ_SEED``."""
    rng = random.Random(f"{seed()}:{path.name}")
    names = list(CHEAP)
    rng.shuffle(names)
    return [(names[k % len(names)], rng.randrange(2**31)) for k in range(n)]


def _fuzz_file(path: Path, tmp_path: Path) -> None:
    if not _parsable(path):
        pytest.skip(f"parser for {path.name} not written yet")
    check_parse(path, "original")
    for name, s in _mutation_plan(path, B.mutations_per_file):
        mutated = mutate_file(path, tmp_path, name, random.Random(s))
        check_parse(mutated, f"{name} seed={s} (ROOFTOP_FUZZ_SEED={seed()})")


@pytest.mark.corpus
@pytest.mark.parametrize("path", _inputs("ncu"), ids=lambda p: p.name[:60])
def test_mutated_ncu_files(path: Path, tmp_path: Path) -> None:
    _fuzz_file(path, tmp_path)


@pytest.mark.corpus
@pytest.mark.parametrize("path", _inputs("dcgm"), ids=lambda p: p.name[:60])
def test_mutated_dcgm_files(path: Path, tmp_path: Path) -> None:
    _fuzz_file(path, tmp_path)


def _synthetic(tmp_path: Path) -> list[Path]:
    r, _ = _raw(tmp_path)
    return [r, _prom(tmp_path)[0], _dmon(tmp_path)[0]]


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_every_mutation_on_synthetic_inputs(mutation: str, tmp_path: Path) -> None:
    """Each mutation (incl. the 10 MB field and a 2 MB line) on each synthetic format."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for src in _synthetic(tmp_path):
        if not _parsable(src):
            continue
        for k in range(2 if mutation in CHEAP else 1):
            s = seed() + k
            m = mutate_file(src, out_dir, mutation, random.Random(s), suffix=f".{src.name}")
            check_parse(m, f"{mutation} seed={s}", timeout_s=60 if mutation == "huge_field" else None)


def test_binary_garbage_named_csv(tmp_path: Path) -> None:
    p = tmp_path / "report.csv"
    p.write_bytes(bytes(random.Random(1).randrange(256) for _ in range(5000)))
    out = check_parse(p, "garbage .csv")
    assert out.error is not None or out.total == 0


@pytest.mark.parametrize("content", [b"", b"\n\n\n", b"\xef\xbb\xbf", b"\xff\xfe", b"\x00" * 100,
                                     b'"ID","Process ID"\n', b"# HELP x y\n# TYPE x gauge\n",
                                     b"#Entity   GRACT\nID\n"])
def test_empty_and_header_only(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "in.csv"
    p.write_bytes(content)
    try:
        out = check_parse(p, repr(content[:20]))
    except ModuleNotFoundError as exc:  # a parser that is not written yet
        pytest.skip(str(exc))
    if out.result is not None:
        assert out.total == 0, f"header-only file produced {out.result.accounting}"


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        parse_path(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="directory"):
        parse_path(tmp_path)


# ----------------------------------------------------------------------------- 3. hypothesis
_text = st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=40)
_num = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                 st.integers(-(2**70), 2**70).map(str), st.sampled_from(["", "n/a", "N/A", "1,234.5",
                                                                         "1.234,5", "(!) nan", "-", "--"]),
                 _text)


def _check_text(text: str | bytes, suffix: str, fmt: str) -> None:
    require(fmt)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"h{suffix}"
        p.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        check_parse(p, "hypothesis")


@FUZZ
@given(names=st.lists(_text, min_size=1, max_size=4), cells=st.lists(_num, min_size=1, max_size=40))
def test_hypothesis_raw_csv(names: list[str], cells: list[str]) -> None:
    rng = random.Random(0)
    rows = [ncu_raw_row(i, n, rng) for i, n in enumerate(names)]
    ncell = len(ncu_raw_header().split("\n")[0].split('","'))
    bad = ",".join('"' + c.replace('"', '""') + '"' for c in cells[:ncell]) + "\n"
    _check_text("==PROF== x\n" + ncu_raw_header() + "".join(rows) + bad, ".csv", "ncu-raw-csv")


_metric = st.from_regex(r"DCGM_FI_[A-Z_]{1,20}", fullmatch=True)
_lval = st.text(st.characters(codec="utf-8", exclude_characters='\n\r'), max_size=20)


@FUZZ
@given(lines=st.lists(st.tuples(_metric, st.dictionaries(st.from_regex(r"[a-zA-Z_]{1,8}", fullmatch=True),
                                                         _lval, max_size=4),
                                _num, st.one_of(st.none(), st.integers(-(2**63), 2**64))),
                      min_size=1, max_size=20))
def test_hypothesis_prom_text(lines: list[tuple[str, dict[str, str], str, int | None]]) -> None:
    out = ["# HELP DCGM_FI_PROF_SM_ACTIVE x", "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge"]
    for name, labels, value, ts in lines:
        lab = ",".join(f'{k}="{v}"' for k, v in labels.items())
        out.append(f"{name}{{{lab}}} {value}" + (f" {ts}" if ts is not None else ""))
    _check_text("\n".join(out) + "\n", ".prom", "prometheus-text")


@FUZZ
@given(rows=st.lists(st.tuples(st.sampled_from(["GPU 0", "GPU 1", "GPU-I 3", "GPU 0 LINK 3", "CPU Core 5",
                                                "Switch 0", "XYZ", ""]),
                               st.lists(_num, min_size=0, max_size=5)), min_size=1, max_size=30))
def test_hypothesis_dmon(rows: list[tuple[str, list[str]]]) -> None:
    out = ["#Entity   GRACT        SMACT        DRAMA        ", "ID"]
    out += [f"{e:<10}" + "".join(f"{v:<13}" for v in vals) for e, vals in rows]
    _check_text("\n".join(out) + "\n", ".txt", "dcgm-dmon")


@FUZZ
@given(data=st.binary(max_size=2048), prefix=st.sampled_from([
    b"", b'"ID","Process ID","Process Name"\n', b"#Entity   GRACT\nID\n", b"# TYPE DCGM_FI_X gauge\n",
    b"==PROF== Connected to process 1\n", b"NVR\x00", b'{"status":"success","data":{"resultType":"vector",',
    b"timestamp, index, name, utilization.gpu [%]\n", b"# gpu   pwr  gtemp\n"]))
def test_hypothesis_any_bytes(data: bytes, prefix: bytes) -> None:
    """Arbitrary bytes behind each format's magic: every parser the sniffing can reach."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "h.csv"
        p.write_bytes(prefix + data)
        try:
            check_parse(p, "bytes")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("parsers."):
                return  # that parser has not landed yet
            raise
