"""Every input format rooftop reads, turned into canonical tables (see :mod:`parsers.model`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from parsers.detect import detect_format
from parsers.model import (
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
from parsers.source import ParseOptions, Source

__all__ = [
    "IDENTITY_COLUMNS",
    "SAMPLE_SCHEMA",
    "InputAccounting",
    "InputError",
    "ParseOptions",
    "ParseResult",
    "Rejected",
    "SchemaError",
    "detect_format",
    "expand_inputs",
    "normalize_kernels",
    "parse_path",
    "validate_kernels",
    "validate_samples",
]

# format name -> "module:function"; each function is ``parse(src: Source, opts: ParseOptions)``.
PARSERS: dict[str, str] = {
    "ncu-rep": "parsers.ncu_rep:parse",
    "ncu-raw-csv": "parsers.ncu_raw:parse",
    "ncu-details-csv": "parsers.ncu_details:parse",
    "ncu-console": "parsers.ncu_console:parse",
    "dcgm-dmon": "parsers.dcgm_dmon:parse",
    "prometheus-text": "parsers.prom_text:parse",
    "prometheus-json": "parsers.prom_json:parse",
    "nvidia-smi-csv": "parsers.nvsmi:parse_csv",
    "nvidia-smi-dmon": "parsers.nvsmi:parse_dmon",
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
    p = Path(path)
    if not p.exists():
        raise InputError(str(path), "no such file", "check the path")
    if p.is_dir():
        raise InputError(str(path), "is a directory", "pass the files, or use expand_inputs()")
    try:
        src = Source(p)
    except OSError as exc:
        raise InputError(str(path), f"cannot be read: {exc.strerror or exc}", "check permissions") from exc
    if src.size == 0:
        raise InputError(str(path), "is empty", "re-run the export; the file has no bytes")
    fmt = detect_format(src)
    if fmt is None:
        raise InputError(str(path), "is not a format rooftop reads", f"expected one of: {KNOWN}")
    return _parser_for(fmt)(src, options or ParseOptions())


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
