"""The format registry: every input format rooftop reads, as data (docs/architecture.md).

Each :class:`Format` names its **kind** (``kernels``: ncu profiles; ``samples``: GPU metric streams;
``events``: timelines), its **traits** and its parser entry point. Code that needs a trait asks the
registry (``FORMATS[name].appendable``), never the name's prefix. Detection (:func:`detect`) tries
the registered *sniffers* in order on the first bytes of the input (:class:`~parsers.source.Source`,
decompressed when compressed) and stops at the first match; detection never reads more than a
bounded head and tail of the file (docs/formulas.md#inputs).

To add a format: write ``parse(src, opts) -> ParseResult`` (and ``parse_batches`` for bounded
streaming), then ``register(Format(...), sniffer, before="...")`` -- here for the built-ins, or in
the new module's own registration function called from :mod:`parsers`.

Parser entry points are ``"module:function"`` strings on purpose: a parser module (pandas, pyarrow,
the ncu reader) is imported only when a file of its format is read, which keeps ``rooftop --help``
and the reading of one format fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from rooftop.parsers import detect as d

if TYPE_CHECKING:
    import pyarrow as pa

    from rooftop.parsers.model import ParseResult
    from rooftop.parsers.source import ParseOptions, Source

Kind = Literal["kernels", "samples", "events"]
Parser = Callable[["Source", "ParseOptions"], "ParseResult"]
BatchParser = Callable[["Source", "ParseOptions"], Generator["pa.Table", None, "ParseResult"]]
Sniffer = Callable[["Source"], bool]

# A longer line in a line-based format is a rejection of the file (docs/formulas.md#inputs).
MAX_LINE_BYTES = 1 << 20  # 1 MiB: an ncu console line (demangled template kernel names run to ~10 kB)
MAX_SAMPLE_LINE_BYTES = 64 << 10  # 64 KiB: a GPU sample line (a dcgm-exporter line is ~300-600 bytes); caps every label
MAX_CSV_LINE_BYTES = 64 << 20  # ncu raw-page header: one column per metric (~40 bytes each)
MAX_FIELD_CHARS = MAX_SAMPLE_LINE_BYTES  # a label value of a whole-document format (query JSON)


@dataclass(frozen=True)
class Format:
    """One input format and what the pipeline may assume about it.

    ``line_based``: records are lines; a line longer than ``max_line_bytes`` rejects the file, and an
    unterminated last line of a file still being written can be held back.
    ``appendable``: prefix-stable in line order -- a longer file's first records are the shorter
    file's (``rooftop ingest`` appends only the new tail). ``streamable``: the parser module has
    ``<function>_batches`` yielding bounded sample batches. ``binary``: not text (its sniffer sees
    binary heads; text sniffers never do). ``reads_file``: the parser opens the file by path (a
    native reader), so a compressed input is first decompressed to a temporary file.
    """

    name: str
    kind: Kind
    parser: str  # "module:function", function(src: Source, opts: ParseOptions) -> ParseResult
    label: str  # how the user calls it, for messages
    line_based: bool = False
    appendable: bool = False
    streamable: bool = False
    binary: bool = False
    reads_file: bool = False
    max_line_bytes: int = MAX_LINE_BYTES
    ticked: bool = False  # sample times are ticks the parser counts: each series moves forward by construction

    @property
    def legacy_kind(self) -> str:
        """``"dcgm"`` for sample streams, ``"ncu"`` otherwise (``ParseResult.kind``'s vocabulary)."""
        return "dcgm" if self.kind == "samples" else "ncu"

    def load(self) -> Parser:
        module, func = self.parser.split(":")
        parser: Parser = getattr(importlib.import_module(module), func)
        return parser

    def load_batches(self) -> BatchParser | None:
        """``<function>_batches`` of the parser's module when the format is streamable."""
        if not self.streamable:
            return None
        module, func = self.parser.split(":")
        batches: BatchParser = getattr(importlib.import_module(module), f"{func}_batches")
        return batches


FORMATS: dict[str, Format] = {}
_SNIFFERS: list[tuple[Sniffer, str]] = []  # detection order


def register(fmt: Format, *sniffers: Sniffer, before: str | None = None) -> Format:
    """Add (or replace) ``fmt`` and its sniffers: at the end of the detection order, or just
    before the first sniffer of format ``before``."""
    FORMATS[fmt.name] = fmt
    for sniff in sniffers:
        add_sniffer(fmt.name, sniff, before=before)
    return fmt


def add_sniffer(name: str, sniff: Sniffer, before: str | None = None) -> None:
    """A further detection rule for registered format ``name`` (see :func:`register`)."""
    if name not in FORMATS:
        raise KeyError(f"format {name!r} is not registered")
    at = next((i for i, (_, n) in enumerate(_SNIFFERS) if n == before), len(_SNIFFERS))
    _SNIFFERS.insert(at, (sniff, name))


def detect(src: Source) -> Format | None:
    """The format of ``src`` from its content (never its name), or ``None``."""
    binary = src.is_binary
    for sniff, name in _SNIFFERS:
        fmt = FORMATS[name]
        if binary and not fmt.binary:
            continue
        if sniff(src):
            return fmt
    return None


def detect_format(src: Source) -> str | None:
    """The format name of ``src``, or ``None`` when nothing rooftop reads is recognised."""
    fmt = detect(src)
    return None if fmt is None else fmt.name


def known_formats() -> str:
    """The registered formats for an "expected one of" message."""
    return ", ".join(dict.fromkeys(f.label for f in FORMATS.values()))


def _stream(name: str, parser: str, label: str) -> Format:
    """A GPU sample stream read line by line in bounded batches, prefix-stable (appendable)."""
    return Format(name, "samples", parser, label, line_based=True, appendable=True, streamable=True,
                  max_line_bytes=MAX_SAMPLE_LINE_BYTES)


def _builtins() -> None:
    register(Format("ncu-rep", "kernels", "rooftop.parsers.ncu.rep:parse", "Nsight Compute report (.ncu-rep/.ncu-repz)",
                    binary=True, reads_file=True), d.is_ncu_report)
    register(Format("prometheus-json", "samples", "rooftop.parsers.prometheus.json:parse", "Prometheus query JSON",
                    streamable=True),
             d.is_prom_json)
    register(Format("ncu-raw-csv", "kernels", "rooftop.parsers.ncu.raw:parse", "ncu raw/details CSV",
                    line_based=True, max_line_bytes=MAX_CSV_LINE_BYTES), d.is_ncu_raw)
    register(Format("ncu-details-csv", "kernels", "rooftop.parsers.ncu.details:parse", "ncu raw/details CSV",
                    line_based=True, max_line_bytes=MAX_CSV_LINE_BYTES), d.is_ncu_details)
    register(replace(_stream("dcgm-dmon", "rooftop.parsers.dcgm.dmon.reader:parse", "dcgmi dmon"), ticked=True),
             d.is_dcgm_dmon)
    register(_stream("nvidia-smi-dmon", "rooftop.parsers.nvsmi.reader:parse_dmon", "nvidia-smi CSV/dmon"), d.is_smi_dmon)
    register(_stream("nvidia-smi-csv", "rooftop.parsers.nvsmi.reader:parse_csv", "nvidia-smi CSV/dmon"), d.is_smi_csv)
    register(_stream("prometheus-text", "rooftop.parsers.prometheus.text:parse", "Prometheus text"), d.is_prom_text)
    add_sniffer("dcgm-dmon", d.is_dmon_rows)  # dmon rows pasted without their header: after the others
    register(Format("ncu-console", "kernels", "rooftop.parsers.ncu.console.reader:parse", "ncu console log",
                    line_based=True), d.is_ncu_console)


_builtins()
