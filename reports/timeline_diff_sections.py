"""Sections of ``rooftop diff`` of two timelines (HTML and Markdown), drawn only from the document's
``timeline_changes``, ``timeline_diff`` and ``timeline_series`` (docs/formulas.md#timeline-diff).

Order: what changed, largest time change first (idle by gap size and cause, host activity, kernel
time per family, step time); the per-GPU numbers (span, busy, idle, kernel time); the series the
test calls significant, with what decided each (the effect size holds back a significant change
within the threshold); families on one side only. p-values to 2 significant digits
(docs/formulas.md#diff, 'Readable reasons').
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rooftop.analyzer.schema import Document
from rooftop.reports.ci import verdict_of
from rooftop.reports.escape import esc
from rooftop.reports.escape import md as md_esc
from rooftop.reports.formatting import fmt_pct, fmt_time, num
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.widgets import Column, Section, table

CHANGE_ROWS = 20      # change rows in the HTML table (the JSON has up to 200)
MD_CHANGE_ROWS = 12   # ... in the Markdown
SERIES_ROWS = 200
MD_SERIES_ROWS = 15
WHAT = {"step": "step time (median)", "range": "range wall time (median)", "idle-gaps": "idle, by gap size",
        "idle-cause": "idle, by cause", "host-activity": "idle, host was running", "kernel": "kernel time",
        "copies": "copies and sets"}
COUNTED = {"idle-gaps": "gaps", "kernel": "launches", "step": "steps", "range": "ranges"}


def change(v: Any) -> str:
    """A relative change (fraction) as ``+30.2 %``; ``—`` when undefined."""
    f = num(v)
    return "—" if f is None else f"{100 * f:+.1f} %"


def p_value(v: Any) -> str:
    """A p-value to 2 significant digits; ``—`` when there is none."""
    f = num(v)
    return "—" if f is None else f"{f:.2g}"


def unprefixed(name: Any, device: Any) -> str:
    """A series name without its leading ``GPU <device>: `` (the table has a GPU column)."""
    text, head = str(name or ""), f"GPU {device}: "
    return text[len(head):] if text.startswith(head) else text


def _both(b: Any, c: Any, fmt: Any = fmt_time) -> str:
    return f"{fmt(b)} → {fmt(c)}"


def _count(v: Any) -> str:
    f = num(v)
    return "?" if f is None else f"{int(f)}"


def change_rows(doc: Document) -> list[dict[str, Any]]:
    """``timeline_changes`` as table rows, in the document's order (largest absolute change first)."""
    out = []
    for r in doc.get("timeline_changes") or []:
        what = str(r.get("what") or "")
        n = r.get("count") or {}
        counted = (f"{_count(n.get('baseline'))} → {_count(n.get('candidate'))} {COUNTED.get(what, '')}".strip()
                   if n else "")
        out.append({"device": r.get("device"), "what": WHAT.get(what, what),
                    "name": unprefixed(r.get("name"), r.get("device")), "baseline": r.get("baseline"),
                    "candidate": r.get("candidate"), "delta": r.get("delta"),
                    "change": r.get("change") if r.get("baseline") else None, "count": counted})
    return out


def _side(r: Mapping[str, Any], key: str, side: str) -> Any:
    v = r.get(key)
    return v.get(side) if isinstance(v, Mapping) else None


def _ratio(b: Any, c: Any) -> float | None:
    fb, fc = num(b), num(c)
    return None if fb is None or fc is None or fb == 0 else fc / fb - 1.0


def device_rows(doc: Document) -> list[dict[str, Any]]:
    """Per GPU: span, busy, idle (time and share), kernel time, launches, gaps, steps, label, each as
    ``before → after`` (and the change of the times)."""
    out = []
    for r in doc.get("timeline_diff") or []:
        row: dict[str, Any] = {"device": r.get("device")}
        for key in ("span_s", "gpu_busy_s", "idle_s", "kernel_sum_s"):
            b, c = _side(r, key, "baseline"), _side(r, key, "candidate")
            row[key] = f"{_both(b, c)} ({change(_ratio(b, c))})"
            row[f"{key}_delta"] = None if num(b) is None or num(c) is None else float(c) - float(b)
        row["idle_fraction"] = _both(_side(r, "idle_fraction", "baseline"), _side(r, "idle_fraction", "candidate"),
                                     fmt_pct)
        row["kernels"] = _both(_side(r, "kernels", "baseline"), _side(r, "kernels", "candidate"), _count)
        row["gaps"] = _both(_side(r, "gaps", "baseline"), _side(r, "gaps", "candidate"), _count)
        row["steps"] = _both(_side(r, "steps", "baseline"), _side(r, "steps", "candidate"), _count)
        row["label"] = f"{_side(r, 'label', 'baseline') or '?'} → {_side(r, 'label', 'candidate') or '?'}"
        out.append(row)
    return out


def series_rows(doc: Document) -> list[dict[str, Any]]:
    """The series the test calls significant, largest change first, with their verdict."""
    rows = [s for s in doc.get("timeline_series") or [] if s.get("significant")]
    rows.sort(key=lambda s: -abs(num(s.get("change")) or 0.0))
    return [{**s, "name": unprefixed(s.get("short_name") or s.get("series"), s.get("device")),
             "n": f"{s.get('n_base')} → {s.get('n_cand')}"} for s in rows]


def one_side_rows(doc: Document) -> list[dict[str, Any]]:
    """Kernel families on one side only (new or vanished), longest first."""
    rows = []
    for s in doc.get("timeline_series") or []:
        if s.get("kind") != "kernel" or (s.get("n_base") and s.get("n_cand")):
            continue
        new = not s.get("n_base")
        rows.append({"device": s.get("device"), "name": unprefixed(s.get("short_name"), s.get("device")),
                     "side": "new" if new else "vanished", "n": s.get("n_cand") if new else s.get("n_base"),
                     "time": s.get("time_cand_s") if new else s.get("time_base_s")})
    rows.sort(key=lambda r: -(num(r["time"]) or 0.0))
    return rows


def _threshold(doc: Document) -> str:
    f = num(verdict_of(doc).get("classify_pct"))
    return "?" if f is None else f"{f:g} %"


CHANGE_COLUMNS = [Column("device", "GPU"), Column("what", "what"), Column("name", "which", css="name"),
                  Column("baseline", "before", fmt_time, numeric=True),
                  Column("candidate", "after", fmt_time, numeric=True),
                  Column("delta", "Δ time", fmt_time, numeric=True), Column("change", "change", change, numeric=True),
                  Column("count", "count")]
DEVICE_COLUMNS = [Column("device", "GPU"), Column("span_s", "capture span"), Column("gpu_busy_s", "busy"),
                  Column("idle_s", "idle"), Column("idle_fraction", "idle share"),
                  Column("kernel_sum_s", "kernel time"), Column("kernels", "launches"), Column("gaps", "gaps"),
                  Column("steps", "steps"), Column("label", "label")]
SERIES_COLUMNS = [Column("device", "GPU"), Column("name", "series", css="name"), Column("n", "repeats"),
                  Column("median_base_s", "median before", fmt_time, numeric=True),
                  Column("median_cand_s", "median after", fmt_time, numeric=True),
                  Column("change", "median Δ", change, numeric=True),
                  Column("p_adjusted", "p (Holm)", p_value, numeric=True), Column("status", "verdict"),
                  Column("decided_by", "decided by")]
ONE_SIDE_COLUMNS = [Column("device", "GPU"), Column("name", "kernel family", css="name"), Column("side", "side"),
                    Column("n", "launches", numeric=True), Column("time", "kernel time", fmt_time, numeric=True)]


def _more(shown: int, total: int, where: str = "the JSON output") -> str:
    return f"{total - shown} more in {where}." if total > shown else ""


def _none_significant(doc: Document) -> str:
    tested = any(s.get("method") == "mann-whitney" for s in doc.get("timeline_series") or [])
    return ("No series changed significantly." if tested else
            "No series has enough repeats on both sides for the test: each was judged by the effect size alone.")


def _series_note(doc: Document) -> str:
    return (f"Mann–Whitney U over each series' launches (or steps), Holm-adjusted. A significant change within "
            f"{_threshold(doc)} is held back by the effect size: within one capture the test cannot see "
            "run-to-run noise (docs/formulas.md#diff).")


def sections(doc: Document) -> list[Section]:
    """The timeline diff's own sections (after the verdict)."""
    if not doc.get("timeline_diff"):
        return []
    changes = change_rows(doc)
    out = [Section("What changed (largest first)", table(changes[:CHANGE_ROWS], CHANGE_COLUMNS),
                   anchor="timeline-changes",
                   note=("Every compared quantity, the largest absolute time change first: idle time by gap size "
                         "and by cause, host idle by what the host ran, kernel time per family (summed over the "
                         "capture), step time. Sums over a capture are reported, not gated. "
                         + _more(min(len(changes), CHANGE_ROWS), len(changes))).strip()),
           Section("Per GPU: before → after", table(device_rows(doc), DEVICE_COLUMNS), anchor="timeline-diff")]
    series = series_rows(doc)
    body = (table(series[:SERIES_ROWS], SERIES_COLUMNS) if series
            else f'<p class="note">{esc(_none_significant(doc))}</p>')
    out.append(Section("Series the test calls significant", body, anchor="timeline-series",
                       note=(_series_note(doc) + " " + _more(min(len(series), SERIES_ROWS), len(series))).strip()))
    one = one_side_rows(doc)
    if one:
        out.append(Section("Kernel families on one side only", table(one[:SERIES_ROWS], ONE_SIDE_COLUMNS),
                           anchor="timeline-unmatched",
                           note="Not compared; their time is in the total kernel time. " + _more(
                               min(len(one), SERIES_ROWS), len(one))))
    return out


_CHANGE_MD: list[Any] = [("device", "GPU"), ("what", "what"), ("name", "which"), ("baseline", "before", fmt_time),
                         ("candidate", "after", fmt_time), ("change", "change", change), ("count", "count")]
_DEVICE_MD: list[Any] = [("device", "GPU"), ("span_s", "capture span"), ("gpu_busy_s", "busy"), ("idle_s", "idle"),
                         ("kernel_sum_s", "kernel time"), ("kernels", "launches"), ("steps", "steps")]
_SERIES_MD: list[Any] = [("device", "GPU"), ("name", "series"), ("n", "repeats"), ("change", "median Δ", change),
                         ("p_adjusted", "p (Holm)", p_value), ("status", "verdict"), ("decided_by", "decided by")]


def md_sections(doc: Document) -> list[MdSection]:
    """The same for a ticket: the first rows of each table."""
    if not doc.get("timeline_diff"):
        return []
    changes = change_rows(doc)
    more = _more(min(len(changes), MD_CHANGE_ROWS), len(changes))
    out = [MdSection("What changed (largest first)", md_table(changes[:MD_CHANGE_ROWS], _CHANGE_MD, limit=100)
                     + (f"\n\n_{more}_" if more else "")),
           MdSection("Per GPU: before → after", md_table(device_rows(doc), _DEVICE_MD))]
    series = series_rows(doc)
    more = _more(min(len(series), MD_SERIES_ROWS), len(series))
    body = (md_table(series[:MD_SERIES_ROWS], _SERIES_MD, limit=100) if series
            else md_esc(_none_significant(doc)))
    out.append(MdSection("Series the test calls significant",
                         body + f"\n\n{md_esc(_series_note(doc))}" + (f" _{more}_" if more else "")))
    one = one_side_rows(doc)
    if one:
        names = ", ".join(f"GPU {md_esc(r['device'])} {md_esc(r['name'], limit=80)} ({r['side']}, "
                          f"{fmt_time(r['time'])})" for r in one[:10])
        out.append(MdSection("Kernel families on one side only",
                             f"{len(one)}: {names}" + (" …" if len(one) > 10 else "")))
    return out

