"""``dcgmi dmon`` text (DCGM 1.x/2.x ``# Entity``, 3.x ``#Entity``, 4.x wider columns).

Rules (see the corpus FORMATS.md §1):

* A header line ``#Entity``/``# Entity`` names the columns by dmon short name (``GRACT``); the
  units row (``ID``/``Id``) is skipped. Headers repeat every 14 ticks; a new header may change
  the columns. A shell command ``dcgmi dmon ... -e 1001,1004`` also announces the columns, which
  lets rows pasted without their header (seen in the corpus) be read.
* Data rows are split on whitespace and values are taken **from the right** (one per column);
  what is left is the entity: ``GPU 0``, ``GPU-I 1``, ``GPU-CI 2``, ``GPU 0 LINK 3``,
  ``Switch 0``, ``CPU Core 5``... Fixed widths are never used.
* ``N/A``, ``N/W`` and DCGM blank sentinels are missing; a value that is not a number (hand
  annotations like ``38735656050(36.07GB/s)``) is rejected with its line.
* ``Error ...`` lines are kept in ``meta["errors"]``; a file whose only content is an error
  raises :class:`InputError`. ``dmon was stopped ...`` (Ctrl-C trailer), prompts, Markdown fences,
  ``...`` elisions and prose are skipped.
* No timestamps in dmon output: a tick is one block of entity rows (a new tick starts when an
  entity repeats); tick *k* is stamped ``start + k * interval`` with ``start`` =
  ``ParseOptions.start`` or the file's mtime minus ``n_ticks * interval``; the interval is
  ``--interval``, else the file's own ``dcgmi dmon -d``, else 1 s (``parsers/dcgm/dmon/interval.py``). Ticks count on across
  several ``dcgmi dmon`` runs pasted in one file. A leading wall-clock prefix added by a wrapper
  (``2024-05-01 12:00:00`` / ``2024-05-01T12:00:00Z`` / epoch seconds) is used as the timestamp.
* Entities -> sample columns: ``GPU n`` -> gpu ``n``; ``GPU-I n`` -> mig ``n`` with gpu = the
  ``GPU`` row seen before it in the same tick (dmon lists GPUs then their instances), else null;
  ``GPU-CI n`` -> mig ``ci<n>``; ``GPU g LINK l`` -> gpu ``g``, field ``<SHORT>[link l]``; other
  entities (``Switch 0``, ``CPU 1``) -> gpu ``"Switch 0"``. host = ``ParseOptions.host``.

How (bounded memory, vectorized): the file is read in blocks of whole lines (:data:`BLOCK_BYTES`).
In a block, newlines and tokens are found with numpy over the bytes (``parsers/dcgm/dmon/scan.py``,
checked against a per-line reference by hypothesis in tests/test_dmon_scan.py); printable-ASCII lines whose
first tokens are ``GPU``/``GPU-I``/``GPU-CI`` and a number, with one value per header column, are
the fast rows (values sliced out of the block with one Arrow ``take``, cast at once). Every other
line goes through the per-line rules above. Column sets, entities, header events and the tick in
progress are carried from block to block, so nothing depends on where a block is cut.
:func:`parse_batches` yields one sample table per block.

Modules (docs/formulas.md#inputs): this one reads the blocks and stamps the ticks;
``dmon_block`` parses a block (``dmon_lines``: per-line rules, ``dmon_columns``: column sets,
``dmon_entities``: entities, ``dmon_ticks``: ticks, ``dmon_values``: value cells).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Generator, Iterator

import pyarrow as pa

from rooftop.parsers.dcgm.dmon.block import BlockParser, Part
from rooftop.parsers.dcgm.dmon.interval import Interval, delays, resolve, tap
from rooftop.parsers.model import ParseResult, drain_batches
from rooftop.parsers.prometheus.text import default_start_ms
from rooftop.parsers.source import ParseOptions, Source

__all__ = ["BLOCK_BYTES", "parse", "parse_batches"]

BLOCK_BYTES = 4 << 20  # bytes read and processed at once: bounded memory, still vectorized
CR, LF, CRLF = b"\r", b"\n", b"\r\n"


BOM = b"\xef\xbb\xbf"


def _crlf(data: bytes) -> bytes:
    """CRLF and a lone CR as ``\\n``."""
    return data.replace(CRLF, LF).replace(CR, LF)


def _blocks(src: Source) -> Iterator[bytes]:
    """The file as blocks of whole lines in UTF-8, ``\\n`` line ends only (CRLF and a lone CR
    end a line, as in :meth:`Source.lines`), each without the newline after its last line.
    Lines are numbered on across blocks: a block of ``m`` newlines holds ``m + 1`` lines."""
    if src.encoding != "utf-8":  # UTF-16: decoded (and newlines translated) by the text layer
        with src.open_bytes() as raw:
            raw.seek(src.bom_len)
            stream = io.TextIOWrapper(raw, encoding=src.encoding, errors="replace", newline=None)
            rest = ""
            while text := stream.read(max(BLOCK_BYTES // 2, 1)):
                chars = rest + text
                cut = chars.rfind("\n")
                if cut < 0:
                    rest = chars
                    continue
                rest = chars[cut + 1 :]
                yield chars[:cut].encode("utf-8", "replace").replace(BOM, b"   ")
            if rest:
                yield rest.encode("utf-8", "replace").replace(BOM, b"   ")
        return
    for view in src.line_blocks(BLOCK_BYTES):
        block = bytes(view)
        if BOM in block:  # a byte-order mark mid-file (files joined with `cat`): blank, same length
            block = block.replace(BOM, b"   ")
        if CR in block:
            # a final "\r" is the CR of a CRLF whose "\n" ended the block, or a lone CR ending the file
            block = _crlf(block[:-1] if block.endswith(CR) else block)
        yield block


def parse_batches(src: Source, opts: ParseOptions, *, hold: bool = False
                  ) -> Generator[pa.Table, None, ParseResult]:
    """Yield sample tables (``SAMPLE_SCHEMA``, file order), one per block of :data:`BLOCK_BYTES`
    (~230k samples per 4 MB of dmon text; at most 2 M, a sample takes >= 2 bytes); return the
    whole file's :class:`ParseResult` with empty ``samples``.

    Tick times need the start: ``opts.start``, or the file's mtime minus the number of ticks.
    Without ``opts.start`` the ticks are counted first in a rows-only pass over the file (bounded
    memory, ~half the parse time; it also finds the ``dcgmi dmon -d`` commands); ``hold=True``
    instead keeps the blocks' samples in memory and stamps them at the end (what :func:`parse`
    does). With ``opts.start`` but no ``opts.interval_s``, a byte scan for the commands comes first
    (parsers/dcgm/dmon/interval.py)."""
    found: list[tuple[int, int]] = []
    interval: Interval | None = None
    start_ms: int | None = None
    if opts.start is not None:  # batches go out at once: the interval first (a byte scan, unless given)
        interval = resolve(src.path, opts, delays(_blocks(src)) if opts.interval_s is None else [])
        start_ms = default_start_ms(src, opts, 0, interval.seconds)
    elif not hold:  # the rows-only count of ticks also finds the -d commands
        count = BlockParser(src.path, opts.host)
        for data in tap(_blocks(src), found):
            count.block(data, values=False)
        interval = resolve(src.path, opts, found)
        start_ms = default_start_ms(src, opts, count.ticks, interval.seconds)
    p = BlockParser(src.path, opts.host)
    held: list[Part] = []
    for data in tap(_blocks(src), found) if interval is None else _blocks(src):
        part = p.block(data)
        if part is None:
            continue
        if start_ms is None or interval is None:
            held.append(part)
        else:
            yield part.table(start_ms, round(interval.seconds * 1000))
    if interval is None:
        interval = resolve(src.path, opts, found)
    interval_ms = round(interval.seconds * 1000)
    final_start = start_ms if start_ms is not None else default_start_ms(src, opts, p.ticks, interval.seconds)
    result = p.finish(dataclasses.replace(opts, interval_s=interval.seconds), final_start)
    result.meta["interval_from"] = interval.source
    held.reverse()
    while held:  # each part released once handed out
        yield held.pop().table(final_start, interval_ms)
    return result


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """The whole file: :func:`parse_batches` drained (blocks held in memory) and joined."""
    return drain_batches(parse_batches(src, opts, hold=True))
