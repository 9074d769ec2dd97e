"""Nsight Compute console logs (ncu's default stdout, no ``--csv``) into the canonical tables.

Layouts (corpus FORMATS.md §2, §5):

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

Table rows are cut into cells by the column spans of the ``----`` rule above them (labels such as
``Compute (SM) Throughput`` contain single spaces; values are right-aligned); rows that do not fit
the spans are split on runs of two or more spaces. Units are auto-scaled per row and brought to SI
with :func:`parsers.units.si_factor`. Section labels map to metric IDs via
:func:`parsers.ncu_labels.metric_for_label`; a label that is itself a metric ID (``--metrics``
runs, section ``Command line profiler metrics``) is used as is. A label whose mapped ID disagrees
with the row's unit (a ``%`` metric with a ``byte/second`` unit) is kept as ``"<section>: <label>"``.
String values (``CachePreferNone``) are not metrics and are skipped.

Rule paragraphs (``WRN``/``INF``/``OPT``/``ERR`` plus indented continuation lines) go to the rules
table: ``section`` is the section's display name, ``rule`` the rule name where the text names it
(``Rule Bottleneck returned an error``), ``title`` the first sentence, ``speedup_pct`` and
``speedup_type`` from ``Est. Speedup: 50%`` (global) or ``Est. Local Speedup: 19.35%`` (local).

Noise is skipped anywhere: ``==PROF==``/``==WARNING==``/``==ERROR==`` lines, process headers
``[pid] exe@host`` (they set ``pid``, ``process``, ``host`` for the launches below them) and the
application's own output. Accounting per launch: a launch whose every value is missing
(``(!) nan``, a failed profile, dims ``(0, 0, 0)x(0, 0, 0)``) is ``missing`` and stays in the table
with null metrics; a launch cut off by the end of the file (inside a table, or a header with no
section after it) is rejected with its line; the rest are records. A log with no kernel at all is
an :class:`~parsers.model.InputError` quoting ncu's error line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from rooftop.parsers.model import (
    RULE_COLUMNS,
    InputAccounting,
    InputError,
    ParseResult,
    Rejected,
    empty_rules,
    normalize_kernels,
)
from rooftop.parsers.ncu_hints import scan as scan_hints
from rooftop.parsers.ncu_labels import metric_for_label
from rooftop.parsers.numbers import is_missing_token, parse_number
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.units import si_factor

FORMAT = "ncu-console"
DURATION = "gpu__time_duration.sum"
MIN_SUFFIX = ".min_over_invocations"
MAX_SUFFIX = ".max_over_invocations"

_NOISE = re.compile(r"^==(PROF|ERROR|WARNING)==\s?(.*)$")
_PROCESS = re.compile(r"^\[(\d+)\] (.+)@(\S+)\s*$")
_SECTION = re.compile(r"^\s+Section: (.+?)\s*$")
_DASHES = re.compile(r"^(\s*)-{3,}( -{3,})*\s*$")
_RULE_START = re.compile(r"^(\s+)(WRN|INF|OPT|ERR)(\s+)(\S.*?)\s*$")
_HEADER_LEAD = re.compile(r"^(\s+)(\S.*?)\s*$")
_HEADER_KEY = re.compile(r", (Context|Stream|Device|CC|Invocations|Block Size|Grid Size) ([0-9][0-9.]*)$")
_HEADER_HINTS = (", Context ", ", Stream ", ", Invocations ", " invocations")
_HEADER_INVOC = re.compile(r", (\d+) invocations$")
_HEADER_TIME = re.compile(r", (\d{4}-[A-Za-z]{3}-\d{2} \d{2}:\d{2}:\d{2})$")
_HEADER_DIMS = re.compile(r" \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\)$")
_METRIC_ID = re.compile(r"^[A-Za-z0-9_]+__[A-Za-z0-9_.]+$")
_SPEEDUP = re.compile(r"Est\. (?:(Local|Global) )?Speedup:? ([0-9][0-9,]*(?:\.[0-9]+)?)\s?%", re.I)
_RULE_NAME = re.compile(r"^Rule (.+?) returned an error")
_SPLIT2 = re.compile(r"\s{2,}")
_SUMMARY_DEVICE = re.compile(r"^\s+Device (\d+), CC (\d+\.\d+)\s*$")  # --print-summary per-kernel group header
_NVTX_HEAD = re.compile(r"^(\s+)NVTX (?:Push/Pop Stack for Thread \d+|Start/End Ranges)\s*:?\s*$")
_NVTX_RANGE = re.compile(r"^<\s*\d+\s*,\s*(.*?)\s*>$")
DEFAULT_NVTX_DOMAIN = "<default domain>"

PERM_HINT = "profiling permission denied: run ncu as root or enable NVreg_RestrictProfilingToAdminUsers=0"


@dataclass
class _Launch:
    line: int
    name: str
    ident: dict[str, Any]
    metrics: dict[str, float] = field(default_factory=dict)
    mins: dict[str, float] = field(default_factory=dict)
    maxs: dict[str, float] = field(default_factory=dict)
    values_seen: int = 0  # numeric value cells, missing ones included
    values_present: int = 0  # numeric value cells that held a number
    sections: int = 0
    nvtx: list[str] = field(default_factory=list)  # NVTX ranges, outermost first


@dataclass
class _Table:
    spans: list[tuple[int, int]]
    columns: list[str] | None = None  # from the "Metric Name ..." header row
    header_pending: bool = True  # the next dash line may close the header


@dataclass
class _Rule:
    line: int
    section: str | None
    type: str
    indent: int
    parts: list[str]


@dataclass
class _State:
    path: str
    launches: list[_Launch] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    process: dict[str, Any] = field(default_factory=dict)
    section: str | None = None
    table: _Table | None = None
    rule: _Rule | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    nvtx_indent: int | None = None  # inside an "NVTX ..." block of the last launch
    nvtx_domain: str | None = None
    unparsed: list[tuple[int, str]] = field(default_factory=list)
    unknown_units: set[str] = field(default_factory=set)
    conflicts: set[str] = field(default_factory=set)
    bad_cells: list[Rejected] = field(default_factory=list)  # listed, not counted: the launch is kept
    summary: bool = False


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """Parse a console log; see the module docstring for the layouts and the accounting."""
    st = _State(path=src.path)
    decimal_comma = bool(opts.decimal_comma)
    last_line = 0
    app_lines: list[tuple[int, str]] = []  # unindented lines naming a GPU: device hints
    for n, raw in src.lines():
        last_line = n
        if raw[:1] not in (" ", "=", "\t", "") and ("gpu" in raw.lower() or "device" in raw.lower()):
            app_lines.append((n, raw.rstrip("\r")))
        _feed(st, n, raw.rstrip("\r").replace("\t", "    "), decimal_comma)
    _close_rule(st)
    cut = st.table is not None or (bool(st.launches) and st.launches[-1].sections == 0)
    if not st.launches:
        raise _no_kernel_error(st)
    result = _result(st, cut, last_line)
    hints = scan_hints(app_lines)
    if hints:
        result.meta["device_hints"] = hints
    return result


# --- line dispatch ----------------------------------------------------------------------------


def _feed(st: _State, n: int, line: str, decimal_comma: bool) -> None:
    if not line.strip():
        _close_rule(st)
        return
    m = _NOISE.match(line)
    if m:
        _close_rule(st)
        (st.errors if m.group(1) == "ERROR" else st.warnings if m.group(1) == "WARNING" else []).append(
            line.strip()
        )
        return
    if st.table is not None:
        _table_line(st, n, line, decimal_comma)
        return
    if _nvtx_line(st, line):
        return
    m = _PROCESS.match(line)
    if m:
        _close_rule(st)
        st.process = {"pid": _fits(int(m.group(1))), "process": m.group(2), "host": m.group(3)}
        return
    m = _SUMMARY_DEVICE.match(line)
    if m:  # the device and CC of the summary rows that follow it
        _close_rule(st)
        st.process = {**st.process, "device_index": int(m.group(1)), "cc": m.group(2)}
        return
    m = _SECTION.match(line)
    if m and st.launches:
        _close_rule(st)
        st.section = m.group(1)
        st.launches[-1].sections += 1
        return
    m = _DASHES.match(line)
    if m:
        _close_rule(st)
        spans = _spans(line)
        if len(spans) >= 3 and st.launches and st.section is not None:
            st.table = _Table(spans=spans)
        return  # a 2-column rule separates rule paragraphs
    m = _RULE_START.match(line)
    if m and st.launches:
        _close_rule(st)
        st.rule = _Rule(n, st.section, m.group(2), len(m.group(1)) + len(m.group(2)) + len(m.group(3)), [m.group(4)])
        return
    if st.rule is not None and len(line) - len(line.lstrip()) >= st.rule.indent:
        st.rule.parts.append(line.strip())
        return
    header = _kernel_header(line)
    if header is not None:
        _close_rule(st)
        name, ident = header
        ident = {**st.process, **ident}
        st.summary = st.summary or ident.get("invocations") is not None
        st.launches.append(_Launch(line=n, name=name, ident=ident))
        st.section = None
        return
    # Anything else is application output (or a wrapped line we do not know): skipped.
    _close_rule(st)


def _nvtx_line(st: _State, line: str) -> bool:
    """An ``NVTX Push/Pop Stack for Thread N:`` / ``NVTX Start/End Ranges:`` block of the last launch
    (ncu --nvtx): domain lines, then ``<level,name>`` range lines; attribute lines (``RGB: ...``) skipped.
    Ranges of the default domain keep their bare name, others become ``domain:name`` (docs/formulas.md#work-bytes)."""
    m = _NVTX_HEAD.match(line)
    if m and st.launches:
        _close_rule(st)
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


def _kernel_header(line: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, identity)`` when ``line`` is a kernel header, else ``None``."""
    if not any(key in line for key in _HEADER_HINTS):
        return None
    m = _HEADER_LEAD.match(line)
    if not m:
        return None
    text = m.group(2)
    keys: dict[str, str] = {}
    while True:
        k = _HEADER_KEY.search(text) or _HEADER_INVOC.search(text)
        if not k:
            break
        if k.re is _HEADER_INVOC:
            keys["Invocations"] = k.group(1)
        else:
            keys[k.group(1)] = k.group(2)
        text = text[: k.start()]
    if not ({"Context", "Stream", "Invocations"} & keys.keys()):
        return None
    ident: dict[str, Any] = {}
    t = _HEADER_TIME.search(text)
    if t:
        text = text[: t.start()]
    d = _HEADER_DIMS.search(text)
    if d:
        g = tuple(int(x) for x in d.groups()[:3])
        b = tuple(int(x) for x in d.groups()[3:])
        ident.update(grid_dim=f"({g[0]}, {g[1]}, {g[2]})", block_dim=f"({b[0]}, {b[1]}, {b[2]})",
                     grid=_fits(math.prod(g)), block=_fits(math.prod(b)))
        text = text[: d.start()]
    if not text.strip():
        return None
    for key, col in (("Context", "context"), ("Stream", "stream"), ("Device", "device_index"),
                     ("Invocations", "invocations"), ("Block Size", "block"), ("Grid Size", "grid")):
        if key in keys and ident.get(col) is None:
            try:
                ident[col] = _as_int(float(keys[key]))
            except ValueError:
                ident[col] = None
    if "CC" in keys:
        ident["cc"] = keys["CC"]
    return text, ident


# --- tables -----------------------------------------------------------------------------------


def _spans(line: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", line)]


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """Cells by the rule's column spans; falls back to splitting on 2+ spaces."""
    ok = all(e >= len(line) or line[e] == " " for _, e in spans[:-1])
    first = spans[0][0]
    ok = ok and not line[:first].strip()
    if ok:
        cells = []
        for i, (s, e) in enumerate(spans):
            cells.append(line[s:] if i == len(spans) - 1 else line[s:e])
        cells = [c.strip() for c in cells]
        if all(cells[1:]) or not _SPLIT2.search(cells[0]):
            return cells
    parts = _SPLIT2.split(line.strip())
    n = len(spans)
    if len(parts) == n - 1 and n >= 3:  # blank unit column
        parts = [parts[0], "", *parts[1:]]
    return parts


def _table_line(st: _State, n: int, line: str, decimal_comma: bool) -> None:
    table = st.table
    assert table is not None
    if _DASHES.match(line):
        if table.header_pending and table.columns is not None:
            table.header_pending = False  # closes the "Metric Name ..." header row
        else:
            st.table = None
        return
    if _SECTION.match(line) or _RULE_START.match(line) or _kernel_header(line) is not None:
        # The closing rule never came (should not happen in ncu output): leave the table.
        st.table = None
        _feed(st, n, line, decimal_comma)
        return
    cells = _cells(line, table.spans)
    if table.header_pending and table.columns is None and cells and cells[0] == "Metric Name":
        table.columns = cells
        return
    table.header_pending = False
    if len(cells) != len(table.spans):
        st.unparsed.append((n, line.strip()))
        return
    _store_row(st, n, cells, table.columns, decimal_comma)


def _store_row(st: _State, n: int, cells: list[str], columns: list[str] | None, decimal_comma: bool) -> None:
    launch = st.launches[-1]
    label, unit = cells[0], cells[1]
    values = cells[2:]
    names = columns[2:] if columns and len(columns) == len(cells) else []
    if "Average" in names:
        avg_i = names.index("Average")
        min_i = names.index("Minimum") if "Minimum" in names else None
        max_i = names.index("Maximum") if "Maximum" in names else None
    else:
        avg_i, min_i, max_i = len(values) - 1, None, None
    value_text = values[avg_i]
    value = parse_number(value_text, decimal_comma)
    if value is None and not is_missing_token(value_text):
        return  # a string-valued row (CachePreferNone, PolicySpread, all)
    launch.values_seen += 1
    metric = _metric_id(st.section, label, unit)
    factor = si_factor(unit)
    if factor is None:
        st.unknown_units.add(unit)
        metric = f"{metric} [{unit}]"
        factor = 1.0
    if value is None or not math.isfinite(value):
        return
    launch.values_present += 1
    if metric == DURATION and value < 0:
        st.bad_cells.append(Rejected(st.path, n, f"negative duration {value_text} {unit}: set to null"))
        return
    _put(st, launch.metrics, metric, value * factor)
    for idx, store in ((min_i, launch.mins), (max_i, launch.maxs)):
        if idx is not None:
            v = parse_number(values[idx], decimal_comma)
            if v is not None and math.isfinite(v):
                _put(st, store, metric, v * factor)


def _put(st: _State, store: dict[str, float], metric: str, value: float) -> None:
    old = store.get(metric)
    if old is None:
        store[metric] = value
    elif not math.isclose(old, value, rel_tol=1e-2, abs_tol=1e-12):
        st.conflicts.add(metric)  # first value kept; listed in meta


def _metric_id(section: str | None, label: str, unit: str) -> str:
    if _METRIC_ID.match(label):
        return label
    metric = metric_for_label(section, label)
    if metric == label or ": " in metric:
        return metric
    is_pct_metric = "pct" in metric
    if (unit == "%") != is_pct_metric and not (is_pct_metric and unit == ""):
        return f"{section}: {label}" if section else label
    return metric


# --- rules ------------------------------------------------------------------------------------


def _close_rule(st: _State) -> None:
    rule = st.rule
    if rule is None:
        return
    st.rule = None
    text = " ".join(p for p in rule.parts if p)
    speedup_pct = speedup_type = None
    m = _SPEEDUP.search(text)
    if m:
        speedup_pct = float(m.group(2).replace(",", ""))
        speedup_type = "local" if (m.group(1) or "").lower() == "local" else "global"
        if m.start() == 0:
            text = text[m.end() :].strip()
    name = _RULE_NAME.match(text)
    st.rules.append(
        {
            "index": len(st.launches) - 1,
            "section": rule.section,
            "rule": name.group(1) if name else None,
            "type": rule.type,
            "title": _first_sentence(text),
            "description": text,
            "speedup_type": speedup_type,
            "speedup_pct": speedup_pct,
        }
    )


def _first_sentence(text: str) -> str:
    m = re.search(r"[.:](\s|$)", text)
    head = text[: m.start()] if m else text
    return head if len(head) <= 120 else head[:117].rstrip() + "..."


# --- results ----------------------------------------------------------------------------------


def _result(st: _State, cut: bool, last_line: int) -> ParseResult:
    path = st.path
    rows: list[dict[str, Any]] = []
    rejected: list[Rejected] = []
    records = missing = cut_launches = 0
    for i, launch in enumerate(st.launches):
        if cut and i == len(st.launches) - 1:
            where = f"inside section {st.section!r}" if st.section else "before its first section"
            rejected.append(Rejected(path, launch.line, f"launch cut off by the end of the file at line {last_line}, {where}"))
            cut_launches = max(1, int(launch.ident.get("invocations") or 1))
            continue
        failed = launch.values_present == 0 or launch.ident.get("grid") == 0
        row: dict[str, Any] = {"input": path, "index": i, "line": launch.line, "name": launch.name,
                               "duration_s": None}
        row.update(launch.ident)
        if row.get("invocations") is None:
            row["invocations"] = 1
        if launch.nvtx:
            row["nvtx"] = " > ".join(launch.nvtx)
        launches = max(1, int(row["invocations"]))  # a --print-summary row stands for N launches
        if failed:
            missing += launches
        else:
            records += launches
            metrics = dict(launch.metrics)
            row["duration_s"] = metrics.pop(DURATION, None)
            for col, metric in (("grid", "launch__grid_size"), ("block", "launch__block_size")):
                if row.get(col) is None:
                    row[col] = _as_int(metrics.get(metric))
            row.update(metrics)
            row.update({k + MIN_SUFFIX: v for k, v in launch.mins.items()})
            row.update({k + MAX_SUFFIX: v for k, v in launch.maxs.items()})
        rows.append(row)
    kernels = normalize_kernels(pd.DataFrame(rows)) if rows else normalize_kernels(pd.DataFrame({"input": []}))
    kept = {r["index"] for r in rows}
    rules = [dict(r, input=path) for r in st.rules if r["index"] in kept]
    rules_df = pd.DataFrame(rules, columns=list(RULE_COLUMNS)).astype(RULE_COLUMNS) if rules else empty_rules()
    meta: dict[str, Any] = {"layout": _layout(st), "summary": st.summary}
    if st.errors:
        meta["ncu_errors"] = st.errors[:20]
    if cut:
        meta["truncated_at_line"] = last_line
    if st.unparsed:
        meta["unparsed_rows"] = [{"line": n, "text": t} for n, t in st.unparsed[:50]]
        meta["unparsed_row_count"] = len(st.unparsed)
    if st.unknown_units:
        meta["unknown_units"] = sorted(st.unknown_units)
    if st.conflicts:
        meta["conflicting_labels"] = sorted(st.conflicts)
    # launches, not rows: records + missing + rejected = the launches the file stands for
    acc = InputAccounting(path=path, format=FORMAT, records=records, missing=missing, rejected=cut_launches)
    rejected.extend(st.bad_cells)
    return ParseResult(accounting=acc, kernels=kernels, rules=rules_df, rejected=rejected, meta=meta)


def _as_int(v: float | None) -> int | None:
    return None if v is None or not math.isfinite(v) else _fits(round(v))


def _fits(v: int) -> int | None:
    """``v`` when it fits the Int64 identity columns, else ``None`` (a corrupt header)."""
    return v if -(2**63) <= v < 2**63 else None


def _layout(st: _State) -> str:
    has_dims = any("grid_dim" in launch.ident for launch in st.launches)
    return "new" if has_dims else "old"


def _no_kernel_error(st: _State) -> InputError:
    perm = next((e for e in st.errors if "ERR_NVGPUCTRPERM" in e), None)
    quoted = perm or (st.errors[0] if st.errors else None) or next(
        (w for w in st.warnings if "No kernels were profiled" in w), None
    )
    reason = "holds no profiled kernel"
    if quoted:
        q = quoted if len(quoted) <= 200 else quoted[:197] + "..."
        reason += f"; ncu printed: {q}"
    if perm:
        hint = PERM_HINT
    elif quoted and "No kernels were profiled" in quoted:
        hint = "check the --kernel-name/--launch-skip filters, or add --target-processes all for child processes"
    elif quoted and "returned an error code" in quoted:
        hint = "the application failed under ncu; fix it, then profile again"
    else:
        hint = "profile again; the file holds only ncu status lines and application output"
    return InputError(st.path, reason, hint)
