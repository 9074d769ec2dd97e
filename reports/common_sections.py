"""Sections every page kind shares (HTML and Markdown): overview, findings, data quality, inputs,
provenance, key numbers, how to reproduce. Rendered only from the document (``Document``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rooftop.analyzer.schema import CEILING_UNITS, Document, Finding, Kernel
from rooftop.reports.escape import esc, md_fence
from rooftop.reports.escape import md as md_esc
from rooftop.reports.formatting import (
    device_sources,
    fmt_num,
    fmt_pct,
    fmt_saving,
    kernel_headline,
    kernel_label_shares,
)
from rooftop.reports.md_widgets import CELL_LIMIT, MdSection, md_table
from rooftop.reports.roofline import ceilings_of
from rooftop.reports.widgets import Column, Section, finding_html, kpi, table

LIST_ROWS = 300           # rejected records, lint rows shown in the page


def devices_table(doc: Document) -> str:
    """Every device entry's ceilings: value, unit (by the ceiling's kind) and source."""
    rows = []
    for dev in doc["devices"]:
        compute, bandwidth = ceilings_of(dev)
        for c in compute:
            rows.append({"device": dev["name"], "ceiling": c.name, "value": c.value,
                         "unit": CEILING_UNITS["compute"], "source": c.source or dev["source"]})
        for b in bandwidth:
            rows.append({"device": dev["name"], "ceiling": b.name, "value": b.value,
                         "unit": CEILING_UNITS["bandwidth"], "source": b.source or dev["source"]})
    if not rows:
        return '<p class="note">No device ceilings: the roofline shows measured points only.</p>'
    cols = [Column("device", "device"), Column("ceiling", "ceiling"),
            Column("value", "peak", lambda v: fmt_num(v), numeric=True), Column("unit", "unit"),
            Column("source", "source")]
    return table(rows, cols, sortable=False)


def overview_section(doc: Document) -> Section:
    """Generic header block for fleet/diff pages: counts and devices."""
    body = [f'<div class="kpis">{kpi(str(len(doc["inputs"])), "inputs")}'
            f'{kpi(str(len(doc["rejected"])), "rejected records")}'
            f'{kpi(str(len(doc["findings"])), "findings")}</div>']
    if doc["devices"]:
        body += ["<h3>Devices and ceilings</h3>", devices_table(doc)]
    return Section("Overview", "".join(body), anchor="overview")




def findings_section(doc: Document) -> Section:
    """The ranked findings, each with its evidence (collapsed)."""
    findings = doc["findings"]
    if not findings:
        return Section("Findings", '<p class="note">No findings.</p>', anchor="findings")
    kernels = doc["kernels"]
    items = "".join(finding_html(f, kernels) for f in findings)
    return Section("Findings", f'<ol class="findings">{items}</ol>', anchor="findings",
                   note=("GPUs with health events first (docs/formulas.md#health); the rest " + _ORDER
                         if any(f.get("label") == "health" for f in findings) else _ORDER[0].upper() + _ORDER[1:]))


_ORDER = ("ranked by severity (high, medium, low), then by estimated recoverable time, or by share of GPU time "
          "where no saving is estimated (docs/formulas.md#findings).")


def lint_section(doc: Document) -> Section | None:
    """Data-quality warnings: code, message, how many launches."""
    lint = doc["lint"]
    if not lint:
        return Section("Data quality", '<p class="note">No data-quality warnings.</p>', anchor="lint")
    rows = [{"code": x["code"], "message": x["message"], "n": len(x["kernels"])} for x in lint[:LIST_ROWS]]
    cols = [Column("code", "code"), Column("message", "message"), Column("n", "kernels", numeric=True)]
    more = f'<p class="note">{len(lint) - LIST_ROWS} more in the JSON output.</p>' if len(lint) > LIST_ROWS else ""
    return Section("Data quality", table(rows, cols) + more, anchor="lint")


def inputs_section(doc: Document) -> Section:
    """Every input with its record accounting, and the rejected records."""
    inputs = doc["inputs"]
    cols = [Column("path", "path"), Column("format", "format"), Column("records", "records", numeric=True),
            Column("missing", "missing", numeric=True), Column("rejected", "rejected", numeric=True)]
    body = [table(inputs, cols, sortable=False)]
    rejected = doc["rejected"]
    if rejected:
        body.append(f"<h3>Rejected records ({len(rejected)})</h3>")
        rcols = [Column("path", "path"), Column("line", "line", numeric=True), Column("reason", "reason")]
        body.append(f'<div class="tablewrap">{table(rejected[:LIST_ROWS], rcols)}</div>')
        if len(rejected) > LIST_ROWS:
            body.append(f'<p class="note">First {LIST_ROWS} shown; all are in the JSON output.</p>')
    else:
        body.append('<p class="note">No rejected records.</p>')
    return Section("Inputs", "".join(body), anchor="inputs")


def provenance_section(doc: Document) -> Section:
    """Version, schema, creation time, the command and the inputs' checksums."""
    tool = doc["tool"]
    run = doc["run"]
    rows: list[dict[str, Any]] = [{"k": "rooftop version", "v": tool["version"]},
                                  {"k": "schema version", "v": doc["schema_version"]},
                                  {"k": "created", "v": run["created"]}]
    body = [table(rows, [Column("k", "item"), Column("v", "value")], sortable=False)]
    body.append(f'<h3>Command</h3><p><code>{esc(run["command"])}</code></p>')
    sums = run["input_sha256"]
    if sums:
        srows = [{"path": p, "sha256": h} for p, h in sums.items()]
        body.append("<h3>Input checksums (SHA-256)</h3>")
        body.append(table(srows, [Column("path", "path"), Column("sha256", "sha256")], sortable=False))
    return Section("Provenance", "".join(body), anchor="provenance")


# ----------------------------------------------------------------------------- Markdown

def key_numbers_section(doc: Document) -> MdSection:
    """Devices, launches, families, kernel time by label, windows, inputs."""
    kernels = doc["kernels"]
    windows = doc["windows"]
    lines = []
    for name, sources in device_sources(doc["devices"]):
        lines.append(f"- Device: **{md_esc(name)}** (ceilings: {md_esc(sources)})")
    if kernels:
        shares, total = kernel_label_shares(kernels)
        fams = {k["family"] for k in kernels}
        lines.append(f"- Kernels: {md_esc(kernel_headline(kernels))}, {len(fams)} families")
        if total > 0:
            share = ", ".join(f"{md_esc(lab)} {fmt_pct(v)}"
                              for lab, v in sorted(shares.items(), key=lambda kv: -kv[1]))
            lines.append(f"- Time by label: {share}")
    if windows:
        lines.append(f"- DCGM windows: {len(windows)}")
    n_rej = len(doc["rejected"])
    lines.append(f"- Inputs: {len(doc['inputs'])} file(s), {n_rej} rejected record(s)")
    return MdSection("Key numbers", "\n".join(lines))


def findings_md_section(doc: Document) -> MdSection:
    """The findings as one table; recommendations by their ``R<n>`` id."""
    findings = doc["findings"]
    if not findings:
        return MdSection("Top findings", "No findings.")
    recs = _recommendation_ids(findings)
    rows = [{"rank": f["rank"], "severity": f["severity"], "title": f["title"],
             "share": f["time_share"], "saving": fmt_saving(f), "rule": f["rule"],
             "bound": " / ".join(str(x) for x in (f.get("label"), f.get("limiter")) if x) or None,
             "rec": recs.get(f["recommendation"])} for f in findings]
    cols: list[Any] = [("rank", "rank"), ("severity", "severity"), ("title", "finding"),
                       ("bound", "label / limiter"), ("share", "GPU time", fmt_pct),
                       ("saving", "est. saving"), ("rule", "rule"), ("rec", "recommendation")]
    return MdSection("Top findings", md_table(rows, cols))


def _recommendation_ids(findings: Sequence[Finding]) -> dict[str, str]:
    """Each distinct recommendation text once: ``R1``, ``R2``... in order of first finding."""
    out: dict[str, str] = {}
    for f in findings:
        text = f["recommendation"]
        if text and text not in out:
            out[text] = f"R{len(out) + 1}"
    return out


def _ncu_rules(f: Finding, kernels: Sequence[Kernel]) -> list[str]:
    """NVIDIA's rules on the finding's launches: title (rule, est. speedup), quoting the rule's text
    where the export has it."""
    seen: dict[str, str] = {}
    for pos in f["kernels"][:50]:
        if not 0 <= pos < len(kernels):
            continue
        for r in kernels[pos]["ncu_rules"]:
            key = f"{r.get('rule')}|{r.get('title')}"
            if key in seen:
                continue
            sp = r.get("speedup_pct")
            text = r.get("message")
            seen[key] = (f"{r.get('title')} ({r.get('rule')}"
                         + (f", est. speedup {sp:.1f} %" if isinstance(sp, (int, float)) else "") + ")"
                         + (f': "{text}"' if text else ""))
    return list(seen.values())[:4]


def recommendations_md_section(doc: Document) -> MdSection | None:
    """Each recommendation once, with the findings it answers and the evidence behind it."""
    findings = doc["findings"]
    recs = _recommendation_ids(findings)
    if not recs:
        return None
    kernels = doc["kernels"]
    lines = []
    for text, rid in recs.items():
        mine = [f for f in findings if f["recommendation"] == text]
        ranks = ", ".join(f"#{f['rank']}" for f in mine)
        lines.append(f"- **{rid}** (findings {md_esc(ranks)}): {md_esc(text, limit=CELL_LIMIT)}")
        first = mine[0]
        for e in (first.get("evidence") or [])[:4]:
            lines.append(f"  - {md_esc(e, limit=300)}")
        for r in _ncu_rules(first, kernels):
            lines.append(f"  - NVIDIA rule: {md_esc(r, limit=400)}")
    return MdSection("Recommendations", "\n".join(lines))


def lint_md_section(doc: Document) -> MdSection | None:
    """The first data-quality warnings."""
    lint = doc["lint"]
    if not lint:
        return None
    lines = [f"- **{md_esc(x['code'])}** {md_esc(x['message'], limit=2000)}"
             for x in lint[:20]]
    if len(lint) > 20:
        lines.append(f"- … {len(lint) - 20} more in the JSON output")
    return MdSection("Data quality", "\n".join(lines))


def reproduce_md_section(doc: Document) -> MdSection:
    """The command, version and checksums that reproduce this report."""
    run = doc["run"]
    tool = doc["tool"]
    lines = [md_fence(run["command"]), "",
             f"rooftop {md_esc(tool['version'])}, schema {md_esc(doc['schema_version'])}, "
             f"created {md_esc(run['created'])}."]
    sums = run["input_sha256"]
    if sums:
        lines += ["", md_table([{"p": p, "h": h} for p, h in sums.items()],
                               [("p", "input"), ("h", "sha256")])]
    inputs = doc["inputs"]
    if inputs:
        lines += ["", md_table(inputs, [("path", "input"), ("format", "format"), ("records", "records"),
                                        ("missing", "missing"), ("rejected", "rejected")])]
    return MdSection("How to reproduce", "\n".join(lines))
