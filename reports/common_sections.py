"""Sections every page kind shares (HTML and Markdown): overview, findings, data quality, inputs,
provenance, key numbers, how to reproduce. Rendered only from the document dict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rooftop.reports.escape import esc, md_fence
from rooftop.reports.escape import md as md_esc
from rooftop.reports.formatting import (
    device_sources,
    fmt_num,
    fmt_pct,
    fmt_time,
    kernel_label_shares,
)
from rooftop.reports.md_widgets import CELL_LIMIT, MdSection, md_table
from rooftop.reports.roofline import ceilings_of
from rooftop.reports.widgets import Column, Section, finding_html, kpi, table

LIST_ROWS = 300           # rejected records, lint rows shown in the page


def devices_table(doc: dict[str, Any]) -> str:
    rows = []
    for dev in doc.get("devices") or []:
        compute, bandwidth = ceilings_of(dev)
        for c in compute:
            rows.append({"device": dev.get("name"), "ceiling": c.name, "value": c.value,
                         "unit": "FLOP/s", "source": c.source or dev.get("source")})
        for b in bandwidth:
            rows.append({"device": dev.get("name"), "ceiling": b.name, "value": b.value,
                         "unit": "B/s", "source": b.source or dev.get("source")})
    if not rows:
        return '<p class="note">No device ceilings: the roofline shows measured points only.</p>'
    cols = [Column("device", "device"), Column("ceiling", "ceiling"),
            Column("value", "peak", lambda v: fmt_num(v), numeric=True), Column("unit", "unit"),
            Column("source", "source")]
    return table(rows, cols, sortable=False)


def overview_section(doc: dict[str, Any]) -> Section:
    """Generic header block for fleet/diff pages: counts and devices."""
    body = [f'<div class="kpis">{kpi(str(len(doc.get("inputs") or [])), "inputs")}'
            f'{kpi(str(len(doc.get("rejected") or [])), "rejected records")}'
            f'{kpi(str(len(doc.get("findings") or [])), "findings")}</div>']
    if doc.get("devices"):
        body += ["<h3>Devices and ceilings</h3>", devices_table(doc)]
    return Section("Overview", "".join(body), anchor="overview")




def findings_section(doc: dict[str, Any]) -> Section:
    findings = doc.get("findings") or []
    if not findings:
        return Section("Findings", '<p class="note">No findings.</p>', anchor="findings")
    kernels = list(doc.get("kernels") or [])
    items = "".join(finding_html(f, kernels) for f in findings)
    return Section("Findings", f'<ol class="findings">{items}</ol>', anchor="findings",
                   note="Ranked by estimated recoverable time, then share of GPU time.")


def lint_section(doc: dict[str, Any]) -> Section | None:
    lint = doc.get("lint") or []
    if not lint:
        return Section("Data quality", '<p class="note">No data-quality warnings.</p>', anchor="lint")
    rows = [{"code": x.get("code"), "message": x.get("message"),
             "n": len(x.get("kernels") or [])} for x in lint[:LIST_ROWS]]
    cols = [Column("code", "code"), Column("message", "message"), Column("n", "kernels", numeric=True)]
    more = f'<p class="note">{len(lint) - LIST_ROWS} more in the JSON output.</p>' if len(lint) > LIST_ROWS else ""
    return Section("Data quality", table(rows, cols) + more, anchor="lint")


def inputs_section(doc: dict[str, Any]) -> Section:
    inputs = doc.get("inputs") or []
    cols = [Column("path", "path"), Column("format", "format"), Column("records", "records", numeric=True),
            Column("missing", "missing", numeric=True), Column("rejected", "rejected", numeric=True)]
    body = [table(inputs, cols, sortable=False)]
    rejected = doc.get("rejected") or []
    if rejected:
        body.append(f"<h3>Rejected records ({len(rejected)})</h3>")
        rcols = [Column("path", "path"), Column("line", "line", numeric=True), Column("reason", "reason")]
        body.append(f'<div class="tablewrap">{table(rejected[:LIST_ROWS], rcols)}</div>')
        if len(rejected) > LIST_ROWS:
            body.append(f'<p class="note">First {LIST_ROWS} shown; all are in the JSON output.</p>')
    else:
        body.append('<p class="note">No rejected records.</p>')
    return Section("Inputs", "".join(body), anchor="inputs")


def provenance_section(doc: dict[str, Any]) -> Section:
    tool = doc.get("tool") or {}
    run = doc.get("run") or {}
    rows = [{"k": "rooftop version", "v": tool.get("version")},
            {"k": "schema version", "v": doc.get("schema_version")},
            {"k": "created", "v": run.get("created")}]
    body = [table(rows, [Column("k", "item"), Column("v", "value")], sortable=False)]
    body.append(f'<h3>Command</h3><p><code>{esc(run.get("command") or "")}</code></p>')
    sums = run.get("input_sha256") or {}
    if sums:
        srows = [{"path": p, "sha256": h} for p, h in sums.items()]
        body.append("<h3>Input checksums (SHA-256)</h3>")
        body.append(table(srows, [Column("path", "path"), Column("sha256", "sha256")], sortable=False))
    return Section("Provenance", "".join(body), anchor="provenance")


# ----------------------------------------------------------------------------- Markdown

def key_numbers_section(doc: dict[str, Any]) -> MdSection:
    kernels = doc.get("kernels") or []
    windows = doc.get("windows") or []
    lines = []
    devs = doc.get("devices") or []
    for name, sources in device_sources(devs):
        lines.append(f"- Device: **{md_esc(name)}** (ceilings: {md_esc(sources)})")
    if kernels:
        shares, total = kernel_label_shares(kernels)
        fams = {k.get("family") for k in kernels}
        lines.append(f"- Kernels: {len(kernels)} launches in {len(fams)} families, "
                     f"{fmt_time(total)} of GPU time")
        if total > 0:
            share = ", ".join(f"{md_esc(lab)} {fmt_pct(v)}"
                              for lab, v in sorted(shares.items(), key=lambda kv: -kv[1]))
            lines.append(f"- Time by label: {share}")
    if windows:
        lines.append(f"- DCGM windows: {len(windows)}")
    n_rej = len(doc.get("rejected") or [])
    lines.append(f"- Inputs: {len(doc.get('inputs') or [])} file(s), {n_rej} rejected record(s)")
    return MdSection("Key numbers", "\n".join(lines))


def findings_md_section(doc: dict[str, Any]) -> MdSection:
    findings = doc.get("findings") or []
    if not findings:
        return MdSection("Top findings", "No findings.")
    recs = _recommendation_ids(findings)
    rows = [{"rank": f.get("rank"), "severity": f.get("severity"), "title": f.get("title"),
             "share": f.get("time_share"), "saving": f.get("est_saving_s"), "rule": f.get("rule"),
             "bound": " / ".join(str(x) for x in (f.get("label"), f.get("limiter")) if x) or None,
             "rec": recs.get(str(f.get("recommendation") or ""))} for f in findings]
    cols: list[Any] = [("rank", "rank"), ("severity", "severity"), ("title", "finding"),
                       ("bound", "label / limiter"), ("share", "GPU time", fmt_pct),
                       ("saving", "est. saving", fmt_time), ("rule", "rule"), ("rec", "recommendation")]
    return MdSection("Top findings", md_table(rows, cols))


def _recommendation_ids(findings: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each distinct recommendation text once: ``R1``, ``R2``... in order of first finding."""
    out: dict[str, str] = {}
    for f in findings:
        text = str(f.get("recommendation") or "")
        if text and text not in out:
            out[text] = f"R{len(out) + 1}"
    return out


def _ncu_rules(f: Mapping[str, Any], kernels: Sequence[Mapping[str, Any]]) -> list[str]:
    """NVIDIA's rules on the finding's launches: title (rule, est. speedup), quoting the rule's text
    where the export has it."""
    seen: dict[str, str] = {}
    for pos in list(f.get("kernels") or [])[:50]:
        if not isinstance(pos, int) or not 0 <= pos < len(kernels):
            continue
        for r in kernels[pos].get("ncu_rules") or []:
            key = f"{r.get('rule')}|{r.get('title')}"
            if key in seen:
                continue
            sp = r.get("speedup_pct")
            text = next((r.get(k) for k in ("message", "text", "body", "description") if r.get(k)), None)
            seen[key] = (f"{r.get('title')} ({r.get('rule')}"
                         + (f", est. speedup {sp:.1f} %" if isinstance(sp, (int, float)) else "") + ")"
                         + (f': "{text}"' if text else ""))
    return list(seen.values())[:4]


def recommendations_md_section(doc: dict[str, Any]) -> MdSection | None:
    """Each recommendation once, with the findings it answers and the evidence behind it."""
    findings = doc.get("findings") or []
    recs = _recommendation_ids(findings)
    if not recs:
        return None
    kernels = list(doc.get("kernels") or [])
    lines = []
    for text, rid in recs.items():
        mine = [f for f in findings if str(f.get("recommendation") or "") == text]
        ranks = ", ".join(f"#{f.get('rank')}" for f in mine)
        lines.append(f"- **{rid}** (findings {md_esc(ranks)}): {md_esc(text, limit=CELL_LIMIT)}")
        first = mine[0]
        for e in list(first.get("evidence") or [])[:4]:
            lines.append(f"  - {md_esc(e, limit=300)}")
        for r in _ncu_rules(first, kernels):
            lines.append(f"  - NVIDIA rule: {md_esc(r, limit=400)}")
    return MdSection("Recommendations", "\n".join(lines))


def lint_md_section(doc: dict[str, Any]) -> MdSection | None:
    lint = doc.get("lint") or []
    if not lint:
        return None
    lines = [f"- **{md_esc(x.get('code'))}** {md_esc(x.get('message'), limit=300)}"
             for x in lint[:20]]
    if len(lint) > 20:
        lines.append(f"- … {len(lint) - 20} more in the JSON output")
    return MdSection("Data quality", "\n".join(lines))


def reproduce_md_section(doc: dict[str, Any]) -> MdSection:
    run = doc.get("run") or {}
    tool = doc.get("tool") or {}
    lines = [md_fence(str(run.get("command") or "")), "",
             f"rooftop {md_esc(tool.get('version'))}, schema {md_esc(doc.get('schema_version'))}, "
             f"created {md_esc(run.get('created'))}."]
    sums = run.get("input_sha256") or {}
    if sums:
        lines += ["", md_table([{"p": p, "h": h} for p, h in sums.items()],
                               [("p", "input"), ("h", "sha256")])]
    inputs = doc.get("inputs") or []
    if inputs:
        lines += ["", md_table(inputs, [("path", "input"), ("format", "format"), ("records", "records"),
                                        ("missing", "missing"), ("rejected", "rejected")])]
    return MdSection("How to reproduce", "\n".join(lines))
