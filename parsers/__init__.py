"""Every input format rooftop reads, turned into canonical tables (see :mod:`parsers.model`)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa

from rooftop.errors import InputError
from rooftop.parsers.folders import scan_inputs
from rooftop.parsers.formats import FORMATS, Format, detect, known_formats
from rooftop.parsers.model import SAMPLE_SCHEMA, ParseResult, validate_samples
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.time_order import TimeOrder
from rooftop.parsers.trace_io import register_trace_formats

__all__ = [
    "NOT_A_FORMAT", "Input", "SampleStream", "expand_inputs", "open_input", "parse_input", "parse_path",
    "stream_input", "stream_path",
]

if __name__ != "rooftop.parsers":  # one name per module (docs/architecture.md#installing)
    raise ImportError(f"import rooftop.parsers, not {__name__}: the stage folders are installed as "
                      "rooftop.parsers, rooftop.analyzer and rooftop.reports (docs/architecture.md#installing)")

register_trace_formats()  # nsys / Kineto / nsys stats (parsers.trace_io; docs/formulas.md#timelines)

NOT_A_FORMAT = "is not a format rooftop reads"  # the reason of an input no sniffer recognises
KNOWN = known_formats()  # for "expected one of" messages (formats registered later: known_formats())


@dataclass(frozen=True)
class Input:
    """One input opened and detected once (:func:`open_input`): its source and its format."""

    source: Source
    format: Format

    @property
    def path(self) -> str:
        return self.source.path


def open_input(path: str | Path, limit: int | None = None) -> Input:
    """The one open-and-detect entry point (``analyze``, ``ingest``, ``diff``): the input's
    :class:`Source` (its first ``limit`` bytes) and its registered :class:`Format`.
    :class:`InputError` when it is missing, not a regular file, empty, or of no known format."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(path), "no such file", "check the path")
    if p.is_dir():
        raise InputError(str(path), "is a directory", "pass the files, or use expand_inputs()")
    try:
        src = Source(p, limit=limit)
    except OSError as exc:
        raise InputError(str(path), f"cannot be read: {exc.strerror or exc}", "check permissions") from exc
    if not src.head_bytes:
        raise InputError(str(path), "is empty", "re-run the export; the file has no bytes")
    try:
        fmt = detect(src)
    except RecursionError as exc:  # a sniffer must never recurse; one hostile file must not sink a run
        raise InputError(str(path), "could not be told apart (nesting too deep)", "check the file") from exc
    if fmt is None:
        raise InputError(str(path), NOT_A_FORMAT, f"expected one of: {known_formats()}")
    if fmt.line_based:
        src.max_line_bytes = fmt.max_line_bytes
    return Input(src, fmt)


def parse_input(inp: Input, options: ParseOptions | None = None) -> ParseResult:
    """Parse an opened input with its format's parser; GPU samples under the time-order rule
    (:mod:`parsers.time_order`)."""
    result = _parse_raw(inp, options or ParseOptions())
    if not result.samples.num_rows or inp.format.ticked:
        return result
    order = TimeOrder(inp.path)
    return _ordered(replace(result, samples=order.keep(result.samples)), order)


def _parse_raw(inp: Input, opts: ParseOptions) -> ParseResult:
    if inp.format.reads_file and inp.source.compression is not None:
        return _parse_decompressed(inp, opts)
    try:
        return inp.format.load()(inp.source, opts)
    except RecursionError as exc:
        raise _too_deep(inp) from exc


def _ordered(result: ParseResult, order: TimeOrder) -> ParseResult:
    """``result`` with the samples the time-order rule rejected moved from records to rejected."""
    if not order.dropped:
        return result
    acc = replace(result.accounting, records=result.accounting.records - order.dropped,
                  rejected=result.accounting.rejected + order.dropped)
    return replace(result, accounting=acc, rejected=[*result.rejected, *order.rejected()],
                   meta={**result.meta, "time_order": order.meta()})


def _too_deep(inp: Input) -> InputError:
    return InputError(inp.path, f"is nested too deeply to read as {inp.format.label}",
                      "check that the file is what it claims to be")


def _parse_decompressed(inp: Input, opts: ParseOptions) -> ParseResult:
    """A compressed input whose parser reads the file by path (``.ncu-repz``: a zstd-compressed
    report): decompressed (streamed) into a temporary file that is removed afterwards."""
    suffix = ".ncu-rep" if inp.format.name == "ncu-rep" else ""
    with tempfile.TemporaryDirectory(prefix="rooftop-") as tmp:
        plain = Path(tmp) / f"input{suffix}"
        with inp.source.open_bytes() as fh, plain.open("wb") as out:
            shutil.copyfileobj(fh, out, 1 << 20)
        src = Source(inp.path, file=plain)
        return inp.format.load()(src, opts)


def parse_path(path: str | Path, options: ParseOptions | None = None) -> ParseResult:
    """Parse one file, format detected from content. Raises :class:`InputError` for unusable input."""
    return parse_input(open_input(path), options)


STREAM_BATCH_ROWS = 1 << 20  # rows per batch when a parser without parse_batches returns one table


class SampleStream:
    """The sample batches of one input (``SAMPLE_SCHEMA``, validated, file order), then its result.

    Iterate once; afterwards :attr:`result` is the :class:`ParseResult` (accounting, rejected, meta;
    ``samples`` empty). :attr:`format` and :attr:`kind` are known before iterating.
    """

    def __init__(self, path: str, fmt: str, batches: Generator[pa.Table, None, ParseResult]) -> None:
        self.path = path
        self.format = fmt  # the format's name (FORMATS[name] for its traits)
        self.result: ParseResult | None = None
        self._gen = batches

    @property
    def kind(self) -> str:
        """``"dcgm"`` for GPU sample streams, ``"ncu"`` for kernel profiles (see ``ParseResult.kind``)."""
        return FORMATS[self.format].legacy_kind

    def __iter__(self) -> Iterator[pa.Table]:
        order = None if FORMATS[self.format].ticked else TimeOrder(self.path)
        try:
            while True:
                try:
                    batch = next(self._gen)
                except StopIteration as stop:
                    self.result = stop.value if order is None else _ordered(stop.value, order)
                    return
                kept = validate_samples(batch) if order is None else order.keep(validate_samples(batch))
                if kept.num_rows:
                    yield kept
        finally:
            self._gen.close()  # an abandoned stream releases the parser's files

    def close(self) -> None:
        self._gen.close()


def _whole(parser: Callable[[Source, ParseOptions], ParseResult], src: Source, opts: ParseOptions
           ) -> Generator[pa.Table, None, ParseResult]:
    """A parser without ``parse_batches``: parse whole, hand the table on in zero-copy slices."""
    result = parser(src, opts)
    samples = result.samples
    for start in range(0, samples.num_rows, STREAM_BATCH_ROWS):
        yield samples.slice(start, STREAM_BATCH_ROWS)
    return replace(result, samples=SAMPLE_SCHEMA.empty_table())


def stream_path(path: str | Path, options: ParseOptions | None = None, limit: int | None = None) -> SampleStream:
    """Like :func:`parse_path`, but the samples come as bounded batches (see :func:`stream_input`)."""
    return stream_input(open_input(path), options, limit)


def stream_input(inp: Input, options: ParseOptions | None = None, limit: int | None = None) -> SampleStream:
    """The samples of an opened input as bounded batches: the module's ``<function>_batches(src, opts)``
    when its format is ``streamable``, else the parsed table sliced.
    ``limit``: parse only the first ``limit`` bytes of the file (detection read the head beyond it).
    Parse errors raise while iterating."""
    src = inp.source if limit is None else inp.source.with_limit(limit)
    opts = options or ParseOptions()
    batches = inp.format.load_batches()
    gen = batches(src, opts) if batches is not None else _whole(lambda s, o: _parse_raw(Input(s, inp.format), o),
                                                                 src, opts)
    return SampleStream(inp.path, inp.format.name, gen)


def expand_inputs(paths: list[str] | tuple[str, ...]) -> list[Path]:
    """Files named on the command line; a directory means every regular file in it, sorted
    (:func:`parsers.folders.scan_inputs`, whose skipped entries the commands list)."""
    return scan_inputs(paths).files
