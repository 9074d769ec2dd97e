"""Nsight Compute console logs (ncu's default stdout, no ``--csv``) into the canonical tables.

Layouts (docs/formulas.md#inputs; corpus FORMATS.md §2, §5):

* new (2023+): kernel header ``  name(args) (gx, gy, gz)x(bx, by, bz), Context 1, Stream 7, Device 0,
  CC 8.6``; each ``    Section: <name>`` has a ``Metric Name  Metric Unit  Metric Value`` header
  row between two ``----`` rules;
* old (≤2022): header ``  name(args), 2022-Dec-04 20:05:20, Context 1, Stream 7``, no header row;
* ``--print-summary per-kernel``: header ends in ``, Invocations N``; columns ``Minimum Maximum
  Average``. The row's metrics are the **Average**; ``invocations`` is N; minimum and maximum are
  kept as extra columns ``<metric>.min_over_invocations`` / ``<metric>.max_over_invocations``
  (same SI units; for the duration ``gpu__time_duration.sum.min_over_invocations``). These suffixes
  are not ncu rollups, so no metric lookup mistakes them for one. The accounting counts launches:
  such a row adds N to ``records`` (or ``missing``), so records + missing + rejected = launches.

This module reads the lines and hands each to its rule: kernel headers
(:mod:`rooftop.parsers.ncu.console.header`), section table rows
(:mod:`rooftop.parsers.ncu.console.table`), rule paragraphs and the final tables and accounting
(:mod:`rooftop.parsers.ncu.console.result`). Noise is skipped anywhere: ``==PROF==``/
``==WARNING==``/``==ERROR==`` lines, process headers ``[pid] exe@host`` (they set ``pid``,
``process``, ``host`` for the launches below them) and the application's own output.
"""

from __future__ import annotations

import re

from rooftop.parsers.model import ParseResult
from rooftop.parsers.ncu.console.header import fits, kernel_header
from rooftop.parsers.ncu.console.result import close_rule, no_kernel_error, result
from rooftop.parsers.ncu.console.state import (
    DASHES,
    RULE_START,
    SECTION,
    Launch,
    Rule,
    State,
    Table,
)
from rooftop.parsers.ncu.console.table import rule_spans, split_cells, store_row
from rooftop.parsers.ncu.hints import scan as scan_hints
from rooftop.parsers.source import ParseOptions, Source

__all__ = ["parse"]

_NOISE = re.compile(r"^==(PROF|ERROR|WARNING)==\s?(.*)$")
_REPORT = re.compile(r"^Report:\s*(.+)$")  # ==PROF== Report: /path/run.ncu-rep (ncu -o)
_PROCESS = re.compile(r"^\[(\d+)\] (.+)@(\S+)\s*$")
_SUMMARY_DEVICE = re.compile(r"^\s+Device (\d+), CC (\d+\.\d+)\s*$")  # --print-summary per-kernel group header
_NVTX_HEAD = re.compile(r"^(\s+)NVTX (?:Push/Pop Stack for Thread \d+|Start/End Ranges)\s*:?\s*$")
_NVTX_RANGE = re.compile(r"^<\s*\d+\s*,\s*(.*?)\s*>$")
DEFAULT_NVTX_DOMAIN = "<default domain>"


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """Parse a console log; see the module docstring for the layouts and the accounting."""
    st = State(path=src.path)
    decimal_comma = bool(opts.decimal_comma)
    last_line = 0
    app_lines: list[tuple[int, str]] = []  # unindented lines naming a GPU: device hints
    for n, raw in src.lines():
        last_line = n
        if raw[:1] not in (" ", "=", "\t", "") and ("gpu" in raw.lower() or "device" in raw.lower()):
            app_lines.append((n, raw.rstrip("\r")))
        _feed(st, n, raw.rstrip("\r").replace("\t", "    "), decimal_comma)
    close_rule(st)
    cut = st.table is not None or (bool(st.launches) and st.launches[-1].sections == 0)
    if not st.launches:
        raise no_kernel_error(st)
    parsed = result(st, cut, last_line)
    hints = scan_hints(app_lines)
    if hints:
        parsed.meta["device_hints"] = hints
    return parsed


def _feed(st: State, n: int, line: str, decimal_comma: bool) -> None:
    """One line (``\\r`` and tabs already dealt with) to the rule it belongs to; a long dispatch:
    each branch is one kind of line, in the order ncu prints them."""
    if not line.strip():
        close_rule(st)
        return
    m = _NOISE.match(line)
    if m:
        close_rule(st)
        (st.errors if m.group(1) == "ERROR" else st.warnings if m.group(1) == "WARNING" else []).append(
            line.strip()
        )
        rep = _REPORT.match(m.group(2)) if m.group(1) == "PROF" else None
        if rep:  # ncu -o: the results went to this report, not to the log
            st.reports.append(rep.group(1).strip())
        return
    if st.table is not None:
        _table_line(st, n, line, decimal_comma)
        return
    if _nvtx_line(st, line):
        return
    m = _PROCESS.match(line)
    if m:
        close_rule(st)
        st.process = {"pid": fits(int(m.group(1))), "process": m.group(2), "host": m.group(3)}
        return
    m = _SUMMARY_DEVICE.match(line)
    if m:  # the device and CC of the summary rows that follow it
        close_rule(st)
        st.process = {**st.process, "device_index": int(m.group(1)), "cc": m.group(2)}
        return
    m = SECTION.match(line)
    if m and st.launches:
        close_rule(st)
        st.section = m.group(1)
        st.launches[-1].sections += 1
        return
    m = DASHES.match(line)
    if m:
        close_rule(st)
        spans = rule_spans(line)
        if len(spans) >= 3 and st.launches and st.section is not None:
            st.table = Table(spans=spans)
        return  # a 2-column rule separates rule paragraphs
    m = RULE_START.match(line)
    if m and st.launches:
        close_rule(st)
        st.rule = Rule(n, st.section, m.group(2), len(m.group(1)) + len(m.group(2)) + len(m.group(3)), [m.group(4)])
        return
    if st.rule is not None and len(line) - len(line.lstrip()) >= st.rule.indent:
        st.rule.parts.append(line.strip())
        return
    header = kernel_header(line)
    if header is not None:
        close_rule(st)
        name, ident = header
        ident = {**st.process, **ident}
        st.summary = st.summary or ident.get("invocations") is not None
        st.launches.append(Launch(line=n, name=name, ident=ident))
        st.section = None
        return
    # Anything else is application output (or a wrapped line we do not know): skipped.
    close_rule(st)


def _nvtx_line(st: State, line: str) -> bool:
    """An ``NVTX Push/Pop Stack for Thread N:`` / ``NVTX Start/End Ranges:`` block of the last launch
    (ncu --nvtx): domain lines, then ``<level,name>`` range lines; attribute lines (``RGB: ...``) skipped.
    Ranges of the default domain keep their bare name, others become ``domain:name`` (docs/formulas.md#work-bytes)."""
    m = _NVTX_HEAD.match(line)
    if m and st.launches:
        close_rule(st)
        st.nvtx_indent, st.nvtx_domain = len(m.group(1)), None
        return True
    if st.nvtx_indent is None:
        return False
    if len(line) - len(line.lstrip()) <= st.nvtx_indent:
        st.nvtx_indent = None
        return False
    text = line.strip()
    r = _NVTX_RANGE.match(text)
    if r:
        dom = st.nvtx_domain
        st.launches[-1].nvtx.append(r.group(1) if dom in (None, DEFAULT_NVTX_DOMAIN) else f"{dom}:{r.group(1)}")
    elif ":" not in text:
        st.nvtx_domain = text if text == DEFAULT_NVTX_DOMAIN else text.strip("<>")
    return True



def _table_line(st: State, n: int, line: str, decimal_comma: bool) -> None:
    """A line inside a section table: its header row, a data row, or the rule that closes it."""
    table = st.table
    assert table is not None
    if DASHES.match(line):
        if table.header_pending and table.columns is not None:
            table.header_pending = False  # closes the "Metric Name ..." header row
        else:
            st.table = None
        return
    if SECTION.match(line) or RULE_START.match(line) or kernel_header(line) is not None:
        # The closing rule never came (should not happen in ncu output): leave the table.
        st.table = None
        _feed(st, n, line, decimal_comma)
        return
    cells = split_cells(line, table.spans)
    if table.header_pending and table.columns is None and cells and cells[0] == "Metric Name":
        table.columns = cells
        return
    table.header_pending = False
    if len(cells) != len(table.spans):
        st.unparsed.append((n, line.strip()))
        return
    store_row(st, n, cells, table.columns, decimal_comma)

