"""NVLink and PCIe throughput per GPU (the document's ``links``, docs/formulas.md#links) as an HTML
section and a Markdown section, for analyze and fleet pages alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rooftop.analyzer.schema import Document
from rooftop.reports.escape import esc
from rooftop.reports.formatting import fmt_num, fmt_pct, fmt_time
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.widgets import Column, Section, table

NOTE = ("Bytes per second per GPU, link and direction: the mean over its windows weighted by the time each "
        "covers, and the largest window mean; each as a share of the link's peak per direction: PCIe by "
        "generation x width (PCI-SIG rates; the current link where the input carries it, else the model's, "
        "marked assumed), NVLink by the model's datasheet total / 2. 'unknown' where no peak can be sourced, "
        "'n/a' for a model without NVLink; 'peak from' says which (docs/formulas.md#links).")
MD_ROWS = 40


def _links(doc: Document) -> list[Mapping[str, Any]]:
    d: Mapping[str, Any] = doc
    fl = d.get("fleet") or {}
    return list(d.get("links") or fl.get("links") or [])


def _share(r: Mapping[str, Any], key: str) -> str:
    """A share of the link's peak as a percentage, else why there is none (``unknown``, ``n/a``)."""
    v = r.get(key)
    if v is not None:
        return fmt_pct(v)
    return "n/a" if str(r.get("peak_basis") or "").startswith("n/a") else "unknown"


def _rows(links: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"gpu": r.get("gpu_key"), "link": f"{r.get('link')} {r.get('direction')}",
             "mean": r.get("mean_bytes_s"), "share": _share(r, "share_of_peak"), "max": r.get("max_bytes_s"),
             "max_share": _share(r, "max_share_of_peak"), "peak": r.get("peak_bytes_s"),
             "windows": r.get("windows"), "covered": r.get("covered_s"), "field": r.get("field"),
             "basis": r.get("peak_basis") or ""} for r in links]


COLUMNS = [Column("gpu", "GPU"), Column("link", "link"),
           Column("mean", "mean", lambda v: fmt_num(v, "B/s"), numeric=True),
           Column("share", "% of peak", numeric=True),
           Column("max", "max window", lambda v: fmt_num(v, "B/s"), numeric=True),
           Column("max_share", "max % of peak", numeric=True),
           Column("peak", "peak / direction", lambda v: fmt_num(v, "B/s") if v is not None else "unknown",
                  numeric=True),
           Column("windows", "windows", numeric=True), Column("covered", "time covered", fmt_time, numeric=True),
           Column("field", "field"), Column("basis", "peak from")]


def links_section(doc: Document) -> Section | None:
    """The per-GPU NVLink / PCIe table (None where no input carries a link field)."""
    links = _links(doc)
    if not links:
        return None
    body = f'<p class="note">{esc(NOTE)}</p><div class="tablewrap">{table(_rows(links), COLUMNS)}</div>'
    return Section("NVLink and PCIe throughput", body, anchor="links")


def links_md_section(doc: Document) -> MdSection | None:
    """The same table for Markdown (the first :data:`MD_ROWS` rows)."""
    links = _links(doc)
    if not links:
        return None
    def b(v: Any) -> str:
        return fmt_num(v, "B/s")

    def peak(v: Any) -> str:
        return b(v) if v is not None else "unknown"

    body = md_table(_rows(links)[:MD_ROWS], [("gpu", "GPU"), ("link", "link"), ("mean", "mean", b),
                                             ("share", "% of peak"), ("max", "max window", b),
                                             ("max_share", "max % of peak"),
                                             ("peak", "peak / direction", peak),
                                             ("windows", "windows"), ("field", "field"), ("basis", "peak from")])
    if len(links) > MD_ROWS:
        body += f"\n\n{len(links) - MD_ROWS} more rows in the HTML/JSON report."
    return MdSection("NVLink and PCIe throughput", body)
