"""Every input format rooftop reads, turned into canonical tables (see :mod:`parsers.model`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from rooftop.parsers.detect import detect_format
from rooftop.parsers.model import (
    IDENTITY_COLUMNS,
    SAMPLE_SCHEMA,
    InputAccounting,
    InputError,
    ParseResult,
    Rejected,
    SchemaError,
    normalize_kernels,
    validate_kernels,
    validate_samples,
)
from rooftop.parsers.source import ParseOptions, Source

__all__ = [
    "IDENTITY_COLUMNS",
    "SAMPLE_SCHEMA",
    "InputAccounting",
    "InputError",
    "ParseOptions",
    "ParseResult",
    "Rejected",
    "SampleStream",
    "SchemaError",
    "detect_format",
    "expand_inputs",
    "normalize_kernels",
    "parse_path",
    "stream_path",
    "validate_kernels",
    "validate_samples",
]

# format name -> "module:function"; each function is ``parse(src: Source, opts: ParseOptions)``.
PARSERS: dict[str, str] = {
    "ncu-rep": "rooftop.parsers.ncu_rep:parse",
    "ncu-raw-csv": "rooftop.parsers.ncu_raw:parse",
    "ncu-details-csv": "rooftop.parsers.ncu_details:parse",
    "ncu-console": "rooftop.parsers.ncu_console:parse",
    "dcgm-dmon": "rooftop.parsers.dcgm_dmon:parse",
    "prometheus-text": "rooftop.parsers.prom_text:parse",
    "prometheus-json": "rooftop.parsers.prom_json:parse",
    "nvidia-smi-csv": "rooftop.parsers.nvsmi:parse_csv",
    "nvidia-smi-dmon": "rooftop.parsers.nvsmi:parse_dmon",
}

KNOWN = (
    "ncu raw/details CSV, ncu console log, .ncu-rep, dcgmi dmon, Prometheus text or query JSON, "
    "nvidia-smi CSV/dmon"
)


def _parser_for(fmt: str) -> Callable[[Source, ParseOptions], ParseResult]:
    module, func = PARSERS[fmt].split(":")
    parser: Callable[[Source, ParseOptions], ParseResult] = getattr(importlib.import_module(module), func)
    return parser


def parse_path(path: str | Path, options: ParseOptions | None = None) -> ParseResult:
    """Parse one file, format detected from content. Raises :class:`InputError` for unusable input."""
    src, fmt = _open(path)
    return _parser_for(fmt)(src, options or ParseOptions())


def _open(path: str | Path, limit: int | None = None) -> tuple[Source, str]:
    """The input (its first ``limit`` bytes: see :class:`Source`) and its detected format;
    :class:`InputError` when it cannot be read or is unknown."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(path), "no such file", "check the path")
    if p.is_dir():
        raise InputError(str(path), "is a directory", "pass the files, or use expand_inputs()")
    try:
        src = Source(p, limit=limit)
    except OSError as exc:
        raise InputError(str(path), f"cannot be read: {exc.strerror or exc}", "check permissions") from exc
    if src.size == 0:
        raise InputError(str(path), "is empty", "re-run the export; the file has no bytes")
    fmt = detect_format(src)
    if fmt is None:
        raise InputError(str(path), "is not a format rooftop reads", f"expected one of: {KNOWN}")
    return src, fmt


STREAM_BATCH_ROWS = 1 << 20  # rows per batch when a parser without parse_batches returns one table


class SampleStream:
    """The sample batches of one input (``SAMPLE_SCHEMA``, validated, file order), then its result.

    Iterate once; afterwards :attr:`result` is the :class:`ParseResult` (accounting, rejected, meta;
    ``samples`` empty). :attr:`format` and :attr:`kind` are known before iterating.
    """

    def __init__(self, path: str, fmt: str, batches: Generator[pa.Table, None, ParseResult]) -> None:
        self.path = path
        self.format = fmt
        self.result: ParseResult | None = None
        self._gen = batches

    @property
    def kind(self) -> str:
        """``"dcgm"`` for GPU sample streams, ``"ncu"`` for kernel profiles (see ``ParseResult.kind``)."""
        return "dcgm" if self.format.startswith(("dcgm", "prometheus", "nvidia-smi")) else "ncu"

    def __iter__(self) -> Iterator[pa.Table]:
        try:
            while True:
                try:
                    batch = next(self._gen)
                except StopIteration as stop:
                    self.result = stop.value
                    return
                yield validate_samples(batch)
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
    """Like :func:`parse_path`, but the samples come as bounded batches: the module's
    ``<function>_batches(src, opts)`` when it has one (``parse_batches`` next to ``parse``), else the
    registered function sliced.
    ``limit``: parse only the first ``limit`` bytes (detection may read the head beyond it).
    Detection errors raise :class:`InputError` here; parse errors while iterating."""
    src, fmt = _open(path, limit)
    opts = options or ParseOptions()
    module, func = PARSERS[fmt].split(":")
    batches = getattr(importlib.import_module(module), f"{func}_batches", None)  # parse -> parse_batches
    gen = batches(src, opts) if batches is not None else _whole(_parser_for(fmt), src, opts)
    return SampleStream(str(path), fmt, gen)


def expand_inputs(paths: list[str] | tuple[str, ...]) -> list[Path]:
    """Files named on the command line; a directory means every regular file in it, sorted."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(".")))
        else:
            out.append(p)
    return out
