"""GPU health (the document's ``health``, or ``fleet.health``; docs/formulas.md#health) as an HTML
section, a Markdown section and the fleet first screen's "Health events" table (the terminal's lines:
``reports.terminal``). Every input-derived string is escaped: :func:`table`/:func:`esc`,
:func:`md_table`/:func:`md_esc`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rooftop.analyzer.schema import Document
from rooftop.reports.escape import esc
from rooftop.reports.escape import md as md_esc
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.widgets import Column, Section, table

NOTE = ("Per GPU, from the fields the input carries: XID errors (NVIDIA's XID catalog), uncorrectable ECC "
        "errors, row remapping (pending, failed, uncorrectable rows), clock-event reasons (NVML bits; idle and "
        "applications-clocks are not events), temperature at or above the slowdown temperature, power at >= 98 % "
        "of the enforced limit. 'not collected': the input has no field for it, so nothing is known; 'no "
        "threshold in the input': the value without the limit the rule needs (docs/formulas.md#health).")
MAX_ROWS = 200
MD_ROWS = 30


def health_of(doc: Document) -> Mapping[str, Any] | None:
    d: Mapping[str, Any] = doc
    h = d.get("health") or (d.get("fleet") or {}).get("health")
    return h if isinstance(h, Mapping) else None


def _events_text(rec: Mapping[str, Any], key: str = "title") -> str:
    return "; ".join(f"{e.get(key) or e.get('title')} [{e.get('severity')}]" for e in rec.get("events") or [])


def _status(rec: Mapping[str, Any]) -> str:
    """The events, else what was checked, what had no threshold and what was not collected."""
    if rec.get("events"):
        return _events_text(rec)
    parts = []
    if rec.get("checked"):
        parts.append("no events in the collected fields: " + ", ".join(map(str, rec["checked"])))
    if rec.get("no_threshold"):
        maxima = []
        temp, power = rec.get("max_temp_c"), rec.get("max_power_w")
        if "temperature" in rec["no_threshold"] and isinstance(temp, (int, float)):
            maxima.append(f"max {temp:.0f} °C")
        if "power" in rec["no_threshold"] and isinstance(power, (int, float)):
            maxima.append(f"max {power:.0f} W")
        parts.append("no threshold in the input: " + ", ".join(map(str, rec["no_threshold"]))
                     + (f" ({', '.join(maxima)})" if maxima else ""))
    if rec.get("not_collected"):
        parts.append("not collected: " + ", ".join(map(str, rec["not_collected"])))
    return "; ".join(parts)


def _span(rec: Mapping[str, Any]) -> tuple[str | None, str | None]:
    ev = rec.get("events") or []
    if not ev:
        return None, None
    return min(str(e.get("first")) for e in ev), max(str(e.get("last")) for e in ev)


def health_rows(records: list[Mapping[str, Any]], short: bool = False) -> list[dict[str, Any]]:
    """Table rows; ``short``: events by their short names (the fleet's first screen)."""
    rows = []
    for r in records:
        first, last = _span(r)
        rows.append({"gpu": r.get("gpu_key"), "uuid": r.get("uuid") or "—",
                     "gpu_uuid": f"{r.get('gpu_key')}" + (f" ({r.get('uuid')})" if r.get("uuid") else ""), "model": r.get("model") or "—",
                     "severity": r.get("severity") or "—",
                     "health": _events_text(r, "short") if short and r.get("events") else _status(r),
                     "first": first or "—", "last": last or "—"})
    return rows


COLUMNS = [Column("gpu", "GPU"), Column("uuid", "UUID"), Column("severity", "severity"),
           Column("health", "health"), Column("first", "first seen"), Column("last", "last seen")]


def health_section(doc: Document) -> Section | None:
    """analyze: one row per GPU (None when the document has no health, i.e. no GPU samples)."""
    h = health_of(doc)
    if h is None or doc["kind"] == "fleet":
        return None
    recs = list(h.get("gpus") or [])
    more = (f'<p class="note">{len(recs) - MAX_ROWS} more GPUs in the JSON output.</p>'
            if len(recs) > MAX_ROWS else "")
    return Section("Health", f'<p class="note">{esc(NOTE)}</p><div class="tablewrap">'
                             f"{table(health_rows(recs[:MAX_ROWS]), COLUMNS)}</div>{more}", anchor="health")


def health_md_section(doc: Document) -> MdSection | None:
    h = health_of(doc)
    if h is None or doc["kind"] == "fleet":
        return None
    recs = list(h.get("gpus") or [])
    body = md_table(health_rows(recs[:MD_ROWS]), [("gpu", "GPU"), ("uuid", "UUID"), ("severity", "severity"),
                                                  ("health", "health"), ("first", "first seen"),
                                                  ("last", "last seen")], limit=400)
    if len(recs) > MD_ROWS:
        body += f"\n\n{len(recs) - MD_ROWS} more GPUs in the HTML/JSON report."
    return MdSection("Health", md_esc(NOTE) + "\n\n" + body)


def _fleet_empty(h: Mapping[str, Any] | None) -> str | None:
    """The sentence a fleet page shows instead of the table, or None when there are events."""
    if h is None or not h.get("gpus_with_fields"):
        return "No health fields collected in this period (XID, ECC, row remapping, clock-event reasons, " \
               "temperature, power): health is unknown."
    if not h.get("gpus_with_events"):
        no_limit = [str(a) for a in h.get("no_threshold") or []]
        checked = [str(a) for a in h.get("collected") or [] if str(a) not in no_limit]
        parts = [f"checked: {', '.join(checked)}"] if checked else []
        parts += [f"no threshold in the input: {', '.join(no_limit)}"] if no_limit else []
        parts += [f"not collected: {', '.join(map(str, h.get('not_collected') or []))}"] if h.get("not_collected") else []
        return f"No health events on the {h.get('gpus_with_fields')} GPU(s) with health fields ({'; '.join(parts)})."
    return None


FLEET_COLUMNS = [Column("gpu_uuid", "GPU (UUID)"), Column("severity", "severity"),
                 Column("health", "events"), Column("first", "first seen"), Column("last", "last seen")]


def fleet_health_html(doc: Document) -> str:
    """The fleet first screen's "Health events" block (a heading and a table or a sentence)."""
    h = health_of(doc)
    empty = _fleet_empty(h)
    head = "<h3>Health events</h3>"
    if empty is not None or h is None:
        return head + f'<p class="note">{esc(empty)}</p>'
    recs = list(h.get("gpus") or [])
    missing = ", ".join(map(str, h.get("not_collected") or []))
    note = (f"{h.get('gpus_with_events')} of {h.get('gpus_with_fields')} GPU(s) with health fields had events"
            + (f"; not collected on any GPU: {missing}" if missing else "") + " (docs/formulas.md#health).")
    return (head + f'<p class="note">{esc(note)}</p><div class="tablewrap">'
            f"{table(health_rows(recs[:MAX_ROWS], short=True), FLEET_COLUMNS)}</div>")


def health_kpi(doc: Document) -> str:
    """The fleet overview's count: GPUs with health events (and how many high), or "unknown"
    where no health field was collected."""
    h = health_of(doc)
    if h is None or not h.get("gpus_with_fields"):
        return "unknown"
    n = int(h.get("gpus_with_events") or 0)
    high = sum(1 for r in h.get("gpus") or [] if r.get("severity") == "high")
    return f"{n} ({high} high)" if high else str(n)


def fleet_health_md(doc: Document) -> str:
    h = health_of(doc)
    empty = _fleet_empty(h)
    if empty is not None or h is None:
        return "Health events: " + md_esc(empty)
    recs = list(h.get("gpus") or [])
    return "Health events:\n\n" + md_table(health_rows(recs[:MD_ROWS], short=True), [
        ("gpu", "GPU"), ("uuid", "UUID"), ("severity", "severity"), ("health", "events"),
        ("first", "first seen"), ("last", "last seen")], limit=400)
