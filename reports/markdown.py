"""Ticket-ready Markdown (GitHub and Jira), rendered only from the contract document dict.

Section API (how ``reports.fleet_sections`` / ``reports.diff_sections`` plug in)
-------------------------------------------------------------------------------
A Markdown report is a title line plus a list of :class:`MdSection` objects::

    MdSection(title: str, body: str)

``body`` is Markdown that the builder has ALREADY NEUTRALISED: pass every input-derived string
through :func:`md_esc` (or build tables with :func:`md_table`, which escapes cells). A builder is
``Callable[[dict], MdSection | list[MdSection] | None]``; ``MD_SECTIONS_BY_KIND[doc["kind"]]``
lists them in order. Kind-specific modules are imported lazily by name: the ``fleet`` report calls
``reports.fleet_sections.markdown_sections(doc) -> list[MdSection]`` and the ``diff`` report calls
``reports.diff_sections.markdown_sections(doc) -> list[MdSection]``. The generic sections
(key numbers, findings, data quality, inputs, how to reproduce) are added by this module.

Public helpers: :func:`md_esc`, :func:`md_table`, :func:`render_markdown`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rooftop.reports.escape import md as md_esc
from rooftop.reports.formatting import fmt_num, fmt_pct, fmt_time, kernel_label_shares, num

__all__ = ["MD_SECTIONS_BY_KIND", "MdSection", "md_esc", "md_lazy", "md_table", "render_markdown"]

TOP_KERNELS = 10
NAME_LIMIT = 120   # kernel names in the top-kernels table
CELL_LIMIT = 600   # any other cell (titles, recommendations)


@dataclass(frozen=True)
class MdSection:
    """One ``##`` section; ``body`` is pre-escaped Markdown."""

    title: str
    body: str


MdBuilder = Callable[[dict[str, Any]], "MdSection | list[MdSection] | None"]


def md_table(rows: Iterable[Mapping[str, Any]],
             columns: Sequence[tuple[str, str] | tuple[str, str, Callable[[Any], str]]],
             limit: int = CELL_LIMIT) -> str:
    """A pipe table; ``columns`` are ``(key, header)`` or ``(key, header, formatter)``. Every
    cell is escaped (formatter output too), so input strings cannot break the table; cells
    longer than ``limit`` characters are shortened with an ellipsis."""
    heads = [md_esc(c[1]) for c in columns]
    out = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = []
        for c in columns:
            value = row.get(c[0])
            text = c[2](value) if len(c) > 2 else ("—" if value is None else str(value))
            cells.append(md_esc(text, limit=limit) or " ")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def md_lazy(spec: str) -> MdBuilder:
    """A builder that imports ``"module:function"`` only when the report is rendered."""
    module_name, _, func_name = spec.partition(":")

    def build(doc: dict[str, Any]) -> MdSection | list[MdSection] | None:
        module = importlib.import_module(module_name)
        result: MdSection | list[MdSection] | None = getattr(module, func_name or "markdown_sections")(doc)
        return result

    build.__name__ = f"md_lazy({spec})"
    return build


# ----------------------------------------------------------------------------- formatting

# ----------------------------------------------------------------------------- generic sections

def key_numbers_section(doc: dict[str, Any]) -> MdSection:
    kernels = doc.get("kernels") or []
    windows = doc.get("windows") or []
    lines = []
    devs = doc.get("devices") or []
    for d in devs:
        lines.append(f"- Device: **{md_esc(d.get('name'))}** (ceilings: {md_esc(d.get('source'))})")
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
    rows = [{"rank": f.get("rank"), "severity": f.get("severity"), "title": f.get("title"),
             "share": f.get("time_share"), "saving": f.get("est_saving_s"),
             "rec": f.get("recommendation")} for f in findings]
    cols: list[Any] = [("rank", "rank"), ("severity", "severity"), ("title", "finding"),
                       ("share", "GPU time", fmt_pct), ("saving", "est. saving", fmt_time),
                       ("rec", "recommendation")]
    return MdSection("Top findings", md_table(rows, cols))


def top_kernels_md_section(doc: dict[str, Any]) -> MdSection | None:
    kernels = doc.get("kernels") or []
    if not kernels:
        return None
    total = sum(num(k.get("duration_s")) or 0.0 for k in kernels)
    top = sorted(kernels, key=lambda k: -(num(k.get("duration_s")) or 0.0))[:TOP_KERNELS]
    rows = [{"name": k.get("name"), "label": k.get("label"), "limiter": k.get("limiter"),
             "d": k.get("duration_s"),
             "share": (num(k.get("duration_s")) or 0.0) / total if total > 0 else None,
             "flops": k.get("achieved_flops_s"), "ai": (k.get("intensity") or {}).get("dram")}
            for k in top]
    cols: list[Any] = [("name", "kernel"), ("label", "label"), ("limiter", "limiter"),
                       ("d", "duration", fmt_time), ("share", "share", fmt_pct),
                       ("flops", "FLOP/s", lambda v: fmt_num(v)), ("ai", "AI DRAM", lambda v: fmt_num(v))]
    more = f"\n\n_Top {TOP_KERNELS} of {len(kernels)} launches by duration._" if len(kernels) > TOP_KERNELS else ""
    return MdSection("Top kernels", md_table(rows, cols, limit=NAME_LIMIT) + more)


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
    cmd = str(run.get("command") or "").replace("\r", " ").replace("\n", " ")
    fence = "```"
    while fence in cmd:
        fence += "`"
    lines = [f"{fence}\n{cmd}\n{fence}", "",
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


MD_SECTIONS_BY_KIND: dict[str, list[MdBuilder]] = {
    "analyze": [key_numbers_section, findings_md_section, top_kernels_md_section,
                md_lazy("rooftop.reports.fleet_sections:join_md_section"), lint_md_section, reproduce_md_section],
    "fleet": [key_numbers_section, md_lazy("rooftop.reports.fleet_sections:markdown_sections"),
              findings_md_section, lint_md_section, reproduce_md_section],
    "diff": [key_numbers_section, md_lazy("rooftop.reports.diff_sections:markdown_sections"), lint_md_section,
             reproduce_md_section],
}

TITLES = {"analyze": "rooftop report", "fleet": "rooftop fleet report", "diff": "rooftop diff report"}


def render_markdown(doc: dict[str, Any]) -> str:
    """The whole Markdown report."""
    kind = str(doc.get("kind") or "analyze")
    builders = MD_SECTIONS_BY_KIND.get(kind) or MD_SECTIONS_BY_KIND["analyze"]
    parts = [f"# {TITLES.get(kind, 'rooftop report')}"]
    for b in builders:
        res = b(doc)
        if res is None:
            continue
        for sec in res if isinstance(res, list) else [res]:
            parts.append(f"## {md_esc(sec.title)}\n\n{sec.body}")
    return "\n\n".join(parts) + "\n"
