"""Shared helpers for the fuzz tests: byte-level mutations of input files and the outcome check.

A mutation is a pure function ``(data: bytes, rng: random.Random) -> bytes``. :data:`MUTATIONS`
names them all; :func:`check_parse` runs ``parsers.parse_path`` on a file under a wall-clock limit
and asserts the contract every parser owes us for ANY input:

* either an :class:`rooftop.errors.InputError` whose message is one line naming the file,
* or a :class:`parsers.ParseResult` whose accounting holds: counts ``>= 0``; kernel table rows
  ``== records + missing``; sample rows ``== records``; every rejection listed with path, line and
  reason; the tables pass the schema validators the analyzer applies;
* never another exception, never a hang.

The budget (hypothesis examples, mutations per corpus file) comes from :func:`budget`:
``ROOFTOP_FUZZ=nightly`` selects the large one (see ``docs/fuzzing.md``).
"""

from __future__ import annotations

import codecs
import contextlib
import os
import random
import re
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a plain folder; its generators are shared with the tests
    sys.path.insert(0, str(ROOT))

from rooftop.errors import InputError  # noqa: E402
from rooftop.parsers import parse_path  # noqa: E402
from rooftop.parsers.model import (  # noqa: E402
    ParseResult,
    normalize_kernels,
    validate_kernels,
    validate_samples,
)

Mutation = Callable[[bytes, random.Random], bytes]


# --------------------------------------------------------------------------- budget
@dataclass(frozen=True)
class Budget:
    name: str
    hypothesis_examples: int  # per @given test
    mutations_per_file: int  # seeded mutations applied to each corpus/fixture file
    case_timeout_s: int  # wall-clock limit for one parse


CI = Budget("ci", hypothesis_examples=15, mutations_per_file=4, case_timeout_s=20)
NIGHTLY = Budget("nightly", hypothesis_examples=1000, mutations_per_file=200, case_timeout_s=60)


def budget() -> Budget:
    """``ROOFTOP_FUZZ=nightly`` for the large budget; anything else (or unset) is the CI budget."""
    return NIGHTLY if os.environ.get("ROOFTOP_FUZZ", "").lower() == "nightly" else CI


def seed() -> int:
    """Base seed for the seeded mutations: ``ROOFTOP_FUZZ_SEED`` replays a nightly failure."""
    return int(os.environ.get("ROOFTOP_FUZZ_SEED", "20261121"))


# --------------------------------------------------------------------------- mutations
_NUM = re.compile(rb"(?<![\w.])-?\d+(\.\d+)?(?![\w.])")


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)] if data else data


def drop_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    k = rng.randrange(1, max(2, len(lines) // 4 + 1))
    drop = set(rng.sample(range(len(lines)), min(k, len(lines))))
    return b"".join(ln for i, ln in enumerate(lines) if i not in drop)


def duplicate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n")
    return b"".join(lines)


def duplicate_header(data: bytes, rng: random.Random) -> bytes:
    """Repeat the first lines (header, units row, HELP/TYPE) somewhere later in the file."""
    lines = _lines(data)
    if len(lines) < 2:
        return data + data
    head = lines[: rng.randrange(1, min(4, len(lines)) + 1)]
    at = rng.randrange(1, len(lines) + 1)
    return b"".join(lines[:at] + head + lines[at:])


def random_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randrange(1, 16)):
        op = rng.randrange(3)
        pos = rng.randrange(len(b) + 1)
        if op == 0 and b and pos < len(b):
            b[pos] = rng.randrange(256)
        elif op == 1:
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif b:
            del b[pos : pos + rng.randrange(1, 8)]
    return bytes(b)


def decimal_comma(data: bytes, rng: random.Random) -> bytes:
    """German-locale numbers: ``1234.5`` -> ``1.234,5`` (and ``0.75`` -> ``0,75``)."""

    def conv(m: re.Match[bytes]) -> bytes:
        s = m.group(0).decode()
        neg = s.startswith("-")
        whole, _, frac = s.lstrip("-").partition(".")
        grouped = f"{int(whole):,}".replace(",", ".")
        return (("-" if neg else "") + grouped + ("," + frac if frac else "")).encode()

    return _NUM.sub(conv, data)


def semicolons(data: bytes, rng: random.Random) -> bytes:
    """Semicolon-separated (Excel in a decimal-comma locale): ``","`` -> ``";"``."""
    return data.replace(b'","', b'";"')


def crlf(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def utf8_bom(data: bytes, rng: random.Random) -> bytes:
    return codecs.BOM_UTF8 + data


def utf16(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", errors="replace").replace("\n", "\r\n")
    return codecs.BOM_UTF16_LE + text.encode("utf-16-le")


def utf16_no_bom(data: bytes, rng: random.Random) -> bytes:
    return data.decode("utf-8", errors="replace").encode("utf-16-le")


def empty(data: bytes, rng: random.Random) -> bytes:
    return b""


def whitespace_only(data: bytes, rng: random.Random) -> bytes:
    return b" \n\t\r\n\n"


def huge_field(data: bytes, rng: random.Random, size: int = 10 * 1024 * 1024) -> bytes:
    """A 10 MB field: a run of ``A`` inside the first quoted field of a random line (or appended)."""
    lines = _lines(data)
    blob = b"A" * size
    if not lines:
        return blob
    i = rng.randrange(len(lines))
    q = lines[i].find(b'"')
    lines[i] = lines[i][: q + 1] + blob + lines[i][q + 1 :] if q >= 0 else blob + lines[i]
    return b"".join(lines)


def binary_garbage(data: bytes, rng: random.Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096)))


def huge_numbers(data: bytes, rng: random.Random) -> bytes:
    big = [b"1e308", b"1e309", b"9223372036854775807", b"99999999999999999999999999999",
           b"18446744073709551616", b"-1e308", b"2147483647"]
    return _NUM.sub(lambda m: rng.choice(big) if rng.random() < 0.3 else m.group(0), data)


def nan_inf(data: bytes, rng: random.Random) -> bytes:
    toks = [b"NaN", b"nan", b"Inf", b"+Inf", b"-Inf", b"inf", b"-nan", b"Infinity"]
    return _NUM.sub(lambda m: rng.choice(toks) if rng.random() < 0.3 else m.group(0), data)


def negative(data: bytes, rng: random.Random) -> bytes:
    """Negative durations and counters: a minus sign in front of numbers."""
    return _NUM.sub(lambda m: b"-" + m.group(0).lstrip(b"-") if rng.random() < 0.3 else m.group(0), data)


def nul_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        b.insert(rng.randrange(len(b) + 1), 0)
    return bytes(b)


def long_line(data: bytes, rng: random.Random) -> bytes:
    """A single 2 MB line without any newline, then the file."""
    return b"x," * (1024 * 1024) + data


def stacked(data: bytes, rng: random.Random) -> bytes:
    """Two or three cheap mutations in a row."""
    cheap = [truncate, drop_lines, duplicate_lines, duplicate_header, random_bytes, decimal_comma,
             semicolons, crlf, utf8_bom, huge_numbers, nan_inf, negative, nul_bytes]
    for m in rng.sample(cheap, rng.randrange(2, 4)):
        data = m(data, rng)
    return data


MUTATIONS: dict[str, Mutation] = {
    f.__name__: f
    for f in (truncate, drop_lines, duplicate_lines, duplicate_header, random_bytes, decimal_comma,
              semicolons, crlf, utf8_bom, utf16, utf16_no_bom, empty, whitespace_only, huge_field,
              binary_garbage, huge_numbers, nan_inf, negative, nul_bytes, long_line, stacked)
}
"""Every mutation by name. ``huge_field`` and ``long_line`` are the expensive ones."""

CHEAP = [k for k in MUTATIONS if k not in ("huge_field", "long_line")]


# --------------------------------------------------------------------------- outcome check
class CaseTimeout(Exception):
    """A parse ran past its wall-clock limit: a hang as far as the contract is concerned."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """``signal.alarm`` limit for one case (main thread, POSIX); a no-op elsewhere."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def _raise(signum: int, frame: object) -> None:
        raise CaseTimeout(f"no result after {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    path: Path
    result: ParseResult | None = None
    error: InputError | None = None

    @property
    def total(self) -> int:
        return self.result.accounting.total if self.result else 0


def check_result(res: ParseResult, path: Path, context: str = "") -> None:
    """The accounting and listing contract of one :class:`ParseResult`."""
    acc = res.accounting
    where = f"{path.name} [{context}]"
    assert acc.records >= 0 and acc.missing >= 0 and acc.rejected >= 0, f"{where}: negative count {acc}"
    assert acc.format, f"{where}: accounting has no format"
    # Every rejected record is listed. The listing may hold more lines than the count (a bad cell
    # set to null in a kept launch is listed, not counted) or fewer (one line for a whole dmon row).
    assert not acc.rejected or res.rejected, f"{where}: {acc.rejected} rejected but none listed"
    for rej in res.rejected:
        assert rej.path == str(path), f"{where}: rejection names {rej.path!r}, not the input"
        assert rej.line is None or (isinstance(rej.line, int) and rej.line >= 1), f"{where}: bad line {rej}"
        assert isinstance(rej.reason, str) and rej.reason.strip(), f"{where}: rejection without reason"
        assert "\n" not in rej.reason, f"{where}: multi-line reason {rej.reason[:200]!r}"
    if res.kind == "ncu":
        inv = res.kernels["invocations"] if "invocations" in res.kernels else pd.Series(1, index=res.kernels.index)
        launches = int(pd.to_numeric(inv, errors="coerce").fillna(1).clip(lower=1).sum())
        assert launches == acc.records + acc.missing, (  # a --print-summary row is N launches
            f"{where}: kernel table stands for {launches} launches, accounting records+missing = "
            f"{acc.records}+{acc.missing}")
        if len(res.kernels):
            validate_kernels(normalize_kernels(res.kernels))
            assert (res.kernels["input"].astype(str) == str(path)).all(), f"{where}: input column wrong"
    else:
        assert res.samples.num_rows == acc.records, (
            f"{where}: sample table has {res.samples.num_rows} rows, accounting records = {acc.records}")
        validate_samples(res.samples)
        if res.samples.num_rows:
            v = res.samples.column("value").to_numpy(zero_copy_only=False)
            assert pd.notna(v).all(), f"{where}: NaN stored as a sample (should be counted missing)"


def check_error(err: InputError, path: Path, context: str = "") -> None:
    msg = str(err)
    assert msg.strip(), f"{path.name} [{context}]: empty InputError"
    assert "\n" not in msg, f"{path.name} [{context}]: InputError is not one line: {msg[:300]!r}"
    assert len(msg) < 1000, f"{path.name} [{context}]: InputError of {len(msg)} chars (echoes input?)"
    assert path.name in msg, f"{path.name} [{context}]: InputError does not name the file: {msg!r}"


def check_parse(path: Path, context: str = "", timeout_s: int | None = None) -> Outcome:
    """Parse ``path``; assert the contract above. Any other exception propagates (a test failure)."""
    limit = timeout_s or budget().case_timeout_s
    try:
        with time_limit(limit):
            res = parse_path(path)
    except InputError as err:
        check_error(err, path, context)
        return Outcome(path, error=err)
    except CaseTimeout as exc:
        raise AssertionError(f"{path.name} [{context}]: hang: {exc}") from None
    check_result(res, path, context)
    return Outcome(path, result=res)


def mutate_file(src: Path, dst_dir: Path, name: str, rng: random.Random, suffix: str | None = None) -> Path:
    """Write ``MUTATIONS[name](src bytes)`` under ``dst_dir`` (keeping the file's suffix)."""
    data = MUTATIONS[name](src.read_bytes(), rng)
    out = dst_dir / f"{name}{suffix if suffix is not None else src.suffix}"
    out.write_bytes(data)
    return out
