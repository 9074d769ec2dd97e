"""What a CI system reads from a ``diff`` document (docs/contract.md#ci): a JUnit XML report, the
GitHub Actions job summary (Markdown) and workflow-command annotations. Drawn from the document
only; every input-derived string is escaped for its format.

* JUnit: one ``testcase`` per compared series (kernel families, steps, owners), plus the total
  kernel time and each timeline span when those are gated; ``failure`` for what failed the gate,
  ``skipped`` for what could not be judged. The XML is built by :mod:`xml.etree.ElementTree`, which
  escapes text and attributes; characters XML 1.0 forbids are replaced first.
* GitHub: ``::error`` per regression when the gate failed, ``::warning`` per regression in a
  report-only run and when there was nothing to judge (the workflow-command escaping of
  ``@actions/core``: ``%``, CR, LF in data; also ``:`` and ``,`` in properties).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from rooftop.analyzer.schema import Document, Verdict
from rooftop.reports.escape import md as md_esc
from rooftop.reports.md_widgets import md_table
from rooftop.reports.reason import clip_reason
from rooftop.reports.terminal import escape_terminal

MAX_ANNOTATIONS = 10
"""GitHub shows at most 10 error and 10 warning annotations per step; the rest are summarised."""
SUMMARY_ROWS = 15

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _series(doc: Document) -> list[Mapping[str, Any]]:
    """The compared rows of any diff: ncu series, timeline series or owners."""
    for rows in (doc.get("series"), doc.get("timeline_series"), doc.get("window_series")):
        if rows:
            return [r for r in rows if isinstance(r, Mapping)]
    return []


# a diff document without a verdict (none is written today) reads as one that gates nothing
_NO_VERDICT: Verdict = {"fail": False, "threshold_pct": None, "regressions": [], "improvements": [], "reason": ""}


def verdict_of(doc: Document) -> Verdict:
    """The document's verdict (one that gates nothing where it has none)."""
    return doc.get("verdict") or _NO_VERDICT


def _name(r: Mapping[str, Any]) -> str:
    return str(r.get("short_name") or r.get("series") or r.get("family") or r.get("owner") or "?")


def _pct(v: Any) -> str:
    return f"{100 * v:+.1f} %" if isinstance(v, (int, float)) and not isinstance(v, bool) else "n/a"


def _evidence(r: Mapping[str, Any]) -> str:
    p = r.get("p_adjusted")
    if r.get("method") == "mann-whitney" and isinstance(p, (int, float)):
        return f"p={p:.2g} Holm-adjusted"
    return str(r.get("note") or "threshold only")


def row_text(r: Mapping[str, Any]) -> str:
    """``name +30.0 % (p=1e-09 Holm-adjusted; decided by effect+significance)``."""
    decided = f"; decided by {r['decided_by']}" if r.get("decided_by") else ""
    return f"{_name(r)} {_pct(r.get('change'))} ({_evidence(r)}{decided})"


def verdict_word(doc: Document) -> str:
    """``FAIL``, ``NO VERDICT`` (nothing could be judged: docs/contract.md#ci), ``PASS`` (gated,
    nothing failed) or ``REPORT`` (no --fail-on)."""
    v = verdict_of(doc)
    if v["fail"]:
        return "FAIL"
    if _nothing_judged(v):
        return "NO VERDICT"
    return "PASS" if v["threshold_pct"] is not None else "REPORT"


def _nothing_judged(v: Verdict) -> bool:
    return "no verdict" in str(v.get("summary") or "")


# ----------------------------------------------------------------------------- JUnit


def _clean(text: str) -> str:
    return _XML_BAD.sub("\ufffd", text)


def junit_xml(doc: Document) -> bytes:
    """The JUnit report of a diff document (UTF-8 XML with declaration)."""
    v = verdict_of(doc)
    gated = v["threshold_pct"] is not None
    suite = ET.Element("testsuite", name="rooftop diff")
    counts = {"tests": 0, "failures": 0, "skipped": 0}

    def case(name: str, classname: str, *, failure: str | None = None, skipped: str | None = None,
             out: str = "") -> None:
        tc = ET.SubElement(suite, "testcase", classname=_clean(classname), name=_clean(name))
        counts["tests"] += 1
        if failure is not None:
            ET.SubElement(tc, "failure", message=_clean(failure[:500]), type="regression").text = _clean(failure)
            counts["failures"] += 1
        elif skipped is not None:
            ET.SubElement(tc, "skipped", message=_clean(skipped))
            counts["skipped"] += 1
        if out:
            ET.SubElement(tc, "system-out").text = _clean(out)

    for r in _series(doc):
        status = str(r.get("status") or "")
        kind = str(r.get("kind") or r.get("owner_kind") or "kernel")
        text = row_text(r)
        if status == "regressed" and gated and v["fail"]:
            case(_name(r), f"rooftop.diff.{kind}", failure=f"regressed: {text}")
        elif status in ("unmatched", "no duration", ""):
            case(_name(r), f"rooftop.diff.{kind}", skipped=f"{status or 'not compared'}: {text}")
        else:
            case(_name(r), f"rooftop.diff.{kind}", out=f"{status}: {text}")
    reason = v["reason"]
    if v.get("gate") == "total" and gated:
        total = (doc.get("totals") or {}).get("change", {}).get("duration")
        thr = v.get("classify_pct")
        failed = isinstance(total, (int, float)) and isinstance(thr, (int, float)) and total * 100 > thr
        case("total kernel time", "rooftop.diff.total",
             failure=f"total kernel time {_pct(total)} beyond {thr:g} %" if failed and isinstance(thr, (int, float))
             else None, out=f"total kernel time {_pct(total)}")
    for s in v.get("span_regressions") or []:
        case(f"GPU {s.get('device')} span", "rooftop.diff.span",
             failure=f"span {_pct(s.get('change'))} for the same kernel launches" if v["fail"] else None)
    if not counts["tests"]:
        case("diff", "rooftop.diff", skipped=reason or "nothing compared")
    for k, n in counts.items():
        suite.set(k, str(n))
    suites = ET.Element("testsuites", name="rooftop", tests=str(counts["tests"]),
                        failures=str(counts["failures"]), skipped=str(counts["skipped"]))
    suites.append(suite)
    ET.SubElement(suite, "system-out").text = _clean(reason)
    return bytes(ET.tostring(suites, encoding="utf-8", xml_declaration=True)) + b"\n"


# ----------------------------------------------------------------------------- GitHub Actions


def _data(text: str) -> str:
    """Workflow-command data escaping (@actions/core ``escapeData``), after every control and bidi
    character is made visible (``reports.terminal.escape_terminal``: the line lands in a log)."""
    return escape_terminal(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    """Workflow-command property escaping (@actions/core ``escapeProperty``)."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_commands(doc: Document) -> list[str]:
    """``::error``/``::warning`` lines for the regressions (errors when they failed the gate)."""
    v = verdict_of(doc)
    level = "error" if v["fail"] else "warning"
    regs = [r for r in v["regressions"] if isinstance(r, Mapping)]
    out = [f"::{level} title={_prop('rooftop diff: regression')}::{_data(row_text(r))}" for r in regs[:MAX_ANNOTATIONS]]
    if len(regs) > MAX_ANNOTATIONS:
        out.append(f"::{level} title={_prop('rooftop diff')}::{_data(f'{len(regs) - MAX_ANNOTATIONS} more regression(s) in the report')}")
    if v["fail"] and not regs:  # a total or span gate
        out.append(f"::error title={_prop('rooftop diff')}::{_data(str(v.get('summary') or 'FAIL'))}")
    if _nothing_judged(v):
        out.append(f"::warning title={_prop('rooftop diff: nothing judged')}::{_data(v['reason'])}")
    return out


def step_summary(doc: Document) -> str:
    """The job summary: the verdict, its reason, and the regressions and improvements (Markdown)."""
    v = verdict_of(doc)
    lines = [f"### rooftop diff: {verdict_word(doc)}", "", md_esc(str(v.get("summary") or ""), limit=300), "",
             clip_reason(v["reason"], limit=3000), ""]
    cols: Sequence[Any] = [("name", "series"), ("change", "change"), ("evidence", "evidence"),
                           ("decided", "decided by")]
    for title, recs in (("Regressions", v["regressions"]), ("Improvements", v["improvements"])):
        rows = [{"name": _name(r), "change": _pct(r.get("change")), "evidence": _evidence(r),
                 "decided": r.get("decided_by") or ""} for r in recs if isinstance(r, Mapping)]
        if rows:
            more = f"\n\n{len(rows) - SUMMARY_ROWS} more in the report." if len(rows) > SUMMARY_ROWS else ""
            lines += [f"#### {title} ({len(rows)})", "", md_table(rows[:SUMMARY_ROWS], list(cols), limit=100) + more, ""]
    return "\n".join(lines) + "\n"
