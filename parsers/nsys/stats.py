"""``nsys stats`` output, summary only (per-kernel totals, no time axis): the CSV report
``cuda_gpu_kern_sum`` (and ``cuda_gpu_mem_time_sum``) and the console text of
``nsys profile --stats=true``. Rules: ``docs/formulas.md#timelines`` (corpus METHOD.md §7)."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from rooftop.errors import InputError
from rooftop.parsers.model import InputAccounting, ParseResult, Rejected
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.trace_io import NSYS_STATS_CONSOLE, NSYS_STATS_CSV

TOP = 5
_REPORT = re.compile(r"Executing '([a-z_]+)' stats report")
_DASHES = re.compile(r"-+")


def _num(text: str) -> int:
    return int(float(text.replace(",", "").strip()))


def _section(rows: list[dict[str, str]], mem: list[dict[str, str]] | None) -> dict[str, Any]:
    """One run's numbers from kernel-summary rows (``Total Time (ns)``, ``Instances``, ``Name``)."""
    totals = [(r["Name"], _num(r["Instances"]), _num(r["Total Time (ns)"])) for r in rows]
    top = sorted(totals, key=lambda t: (-t[2], t[0]))[:TOP]
    out: dict[str, Any] = {
        "kernels": sum(t[1] for t in totals),
        "kernel_sum_s": round(sum(t[2] for t in totals) / 1e9, 9),
        "top_kernels": [{"name": n, "count": c, "total_s": round(s / 1e9, 9)} for n, c, s in top],
        "memcpy": None, "memset": None,
    }
    if mem is not None:
        out["memcpy"] = sum(_num(r["Count"]) for r in mem if "memcpy" in r.get("Operation", "").lower())
        out["memset"] = sum(_num(r["Count"]) for r in mem if "memset" in r.get("Operation", "").lower())
    return out


def _result(src: Source, fmt: str, sections: list[dict[str, Any]], rows: int, rejected: list[Rejected]
            ) -> ParseResult:
    acc = InputAccounting(src.path, fmt, records=rows, rejected=len(rejected))
    meta = {"summary_only": True, "sections": sections}
    return ParseResult(accounting=acc, rejected=rejected, meta=meta)


def parse_csv(src: Source, opts: ParseOptions) -> ParseResult:
    """A ``--format csv`` report: rows of one kernel name each; ``mem_time_sum`` rows give counts."""
    del opts
    reader = csv.DictReader(io.StringIO(src.text().lstrip("\ufeff")))
    good: list[dict[str, str]] = []
    rejected: list[Rejected] = []
    is_mem = "Operation" in (reader.fieldnames or [])
    for line, row in enumerate(reader, start=2):
        try:
            _num(row["Count" if is_mem else "Instances"])
            _num(row["Total Time (ns)"])
            good.append(row)
        except (KeyError, ValueError, TypeError, AttributeError):
            rejected.append(Rejected(src.path, line, "row without numeric Instances/Total Time (ns)"))
    if is_mem:
        sec = {"kernels": None, "kernel_sum_s": None, "top_kernels": [],
               **{k: v for k, v in _section([], good).items() if k in ("memcpy", "memset")}}
    else:
        sec = _section(good, None)
    return _result(src, NSYS_STATS_CSV, [{"section": 1, **sec}], len(good), rejected)


def _table(lines: list[str], i: int) -> tuple[list[dict[str, str]], int]:
    """The fixed-width table starting at or after line ``i``: columns cut at the dash runs."""
    while i < len(lines) and not _DASHES.fullmatch(lines[i].strip().replace(" ", "") or "x"):
        if _REPORT.search(lines[i]) or lines[i].lstrip().startswith("SKIPPED"):
            return [], i
        i += 1
    if i >= len(lines) or i == 0:
        return [], i
    spans = [(m.start(), m.end()) for m in _DASHES.finditer(lines[i])]
    spans[-1] = (spans[-1][0], 1 << 30)  # the last column (the name) runs to the end of the line
    header = [lines[i - 1][a:b].strip() for a, b in spans]
    rows = []
    i += 1
    while i < len(lines) and lines[i].strip():
        rows.append(dict(zip(header, (lines[i][a:b].strip() for a, b in spans), strict=True)))
        i += 1
    return rows, i


def parse_console(src: Source, opts: ParseOptions) -> ParseResult:
    """Console text: a new section (run) at each ``osrt_sum`` report; kernel and memory tables."""
    del opts
    lines = src.text().split("\n")
    runs: list[dict[str, Any]] = []
    cur: dict[str, Any] = {}
    rejected: list[Rejected] = []
    n_rows = 0
    for i, line in enumerate(lines):
        m = _REPORT.search(line)
        if not m:
            continue
        report = m.group(1)
        if report == "osrt_sum" or not cur:
            cur = {"kern": None, "mem": None}
            runs.append(cur)
        if report in ("cuda_gpu_kern_sum", "gpukernsum"):
            rows, _ = _table(lines, i + 1)
            good = []
            for k, r in enumerate(rows):
                try:
                    _num(r["Instances"]), _num(r["Total Time (ns)"])
                    good.append(r)
                except (KeyError, ValueError):
                    rejected.append(Rejected(src.path, i + 3 + k, "kernel row without numbers"))
            cur["kern"] = good
            n_rows += len(good)
        elif report in ("cuda_gpu_mem_time_sum", "gpumemtimesum"):
            cur["mem"] = _table(lines, i + 1)[0]
    runs = [r for r in runs if r["kern"] is not None]
    if not runs:
        raise InputError(src.path, "nsys stats text without a cuda_gpu_kern_sum table",
                         "run `nsys stats --report cuda_gpu_kern_sum report.nsys-rep`")
    sections = [{"section": k + 1, **_section(r["kern"], r["mem"])} for k, r in enumerate(runs)]
    return _result(src, NSYS_STATS_CONSOLE, sections, n_rows, rejected)
