"""The kernel table of the ``analyze`` page: sortable, searchable, filterable by label.

Readable at 1400 px: kernel and family names are clamped to three lines (the whole name on hover,
the cell expands on click), the input is its file name (the path on hover), every launch says which
roofline chart (device and ceiling set, ``doc["roofline"]["panels"]``) its ceilings are drawn in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

import numpy as np

from rooftop.analyzer.schema import Document, Kernel, MemoryLevel
from rooftop.analyzer.schema.evidence import SENTENCE_KERNELS
from rooftop.reports.analyze_sections import family_rows
from rooftop.reports.escape import esc
from rooftop.reports.formatting import (
    DASH,
    fmt_num,
    fmt_pct,
    fmt_time,
    kernel_label_shares,
    launches_of,
    num,
    num_column,
)
from rooftop.reports.widgets import Column, Section, table

TABLE_ROWS = SENTENCE_KERNELS  # top rows by time: the launches whose evidence sentences the document holds


def file_name(path: Any) -> str:
    """The last component of a path (``—`` for none)."""
    if path in (None, ""):
        return "—"
    s = str(path)
    return PurePath(s.replace("\\", "/")).name or s


def nvtx_of(k: Kernel) -> str | None:
    """A kernel's NVTX range path (top-level ``nvtx`` or, in older documents, ``extra.nvtx``; lists
    joined with ``/``)."""
    v = k.get("nvtx")
    extra = k.get("extra")
    if v is None and extra is not None:
        v = extra.get("nvtx")
    if isinstance(v, (list, tuple)):
        v = " / ".join(str(x) for x in v)
    return None if v in (None, "") else str(v)


def kernel_panels(doc: Document) -> dict[int, str]:
    """Kernel position -> ``device (entries)`` text of the roofline panel its ceilings come from."""
    view = doc.get("roofline")
    panels = {p["id"]: p for p in view["panels"]} if view is not None else {}
    text: dict[str, str] = {}
    for pid, p in panels.items():
        srcs = sorted({str(c["source"]) for c in p["ceilings"]})
        text[pid] = f"{p['device']} ({', '.join(srcs) or 'no ceilings'})"
    out: dict[int, str] = {}
    for f in family_rows(doc):
        t = text.get(f["panel"])
        if t is None:
            continue
        for k in f["kernels"]:
            out[int(k)] = t
    return out


def _rows(kernels: Sequence[Kernel], doc: Document) -> list[dict[str, Any]]:
    d_all = num_column(kernels, "duration_s")  # longest first; stable, as sorted() on -(num(d) or 0.0)
    order = np.argsort(-np.where(np.isfinite(d_all), d_all, 0.0), kind="stable").tolist()
    _, total = kernel_label_shares(kernels)
    panel = kernel_panels(doc)
    rows = []
    for pos in order[:TABLE_ROWS]:
        k = kernels[pos]
        d = num(k["duration_s"])
        inten = k["intensity"]
        rows.append({
            "pos": pos, "name": k["name"], "family": k["family"], "label": k["label"],
            "limiter": k["limiter"], "duration_s": d, "nvtx": nvtx_of(k),
            "share": (d * launches_of(k) / total) if (d is not None and total > 0) else None,
            "achieved": num(k["achieved_flops_s"]), "attainable": num(k["attainable_flops_s"]),
            "ai_dram": num(inten["dram"]), "ai_l2": num(inten["l2"]),
            "ai_l1": num(inten["l1"]), "input": k["input"], "index": k["index"],
            "ceilings": panel.get(pos),
            **ncu_facts(k),
        })
    return rows


_LEVEL_NAMES: tuple[tuple[MemoryLevel, str], ...] = (("dram", "DRAM"), ("l2", "L2"), ("l1", "L1"))
RULES_SHOWN = 3  # NCU rules with a speedup estimate named per row, largest first


def ncu_facts(k: Kernel) -> dict[str, Any]:
    """NCU's facts beside the verdict (docs/formulas.md#kernel-labels, "NCU's facts"): SM % and memory %,
    the busiest SOL-breakdown unit, occupancy achieved of theoretical and its limiter, registers per
    thread, shared memory per block, waves, achieved bandwidth and % of peak per level, and the NCU rules
    with a speedup estimate (global: the whole kernel; local: the part the rule looks at)."""
    extra: Mapping[str, Any] = k.get("extra") or {}
    top, busiest = extra.get("top_unit_name"), num(extra.get("busiest_pct"))
    ach, theo = num(extra.get("occupancy_achieved_pct")), num(extra.get("occupancy_theoretical_pct"))
    lim = extra.get("occupancy_limiter")
    occ = None
    if ach is not None or theo is not None:
        occ = (f"{ach:.0f}%" if ach is not None else "?") + (f" of {theo:.0f}%" if theo is not None else "")
        if lim and (theo is None or theo < 100.0):
            occ += f" ({lim})"
    d = num(k["duration_s"])
    bw = []
    for lvl, name in _LEVEL_NAMES:
        b, util = num(k["bytes"][lvl]), num(extra.get(f"bw_util_{lvl}"))
        rate = b / d if b is not None and d else None
        if rate is None and util is None:
            continue
        bw.append(f"{name} {fmt_num(rate, 'B/s') if rate is not None else '?'}"
                  + (f" {100 * util:.0f}%" if util is not None else ""))
    rules = sorted(((num(r.get("speedup_pct")), r) for r in k.get("ncu_rules") or []
                    if num(r.get("speedup_pct")) is not None), key=lambda t: -(t[0] or 0.0))
    named = [f"{r.get('rule') or r.get('title')} {sp:.0f}% {r.get('speedup_type') or ''}".strip()
             for sp, r in rules[:RULES_SHOWN]]
    if len(rules) > RULES_SHOWN:
        named.append(f"+{len(rules) - RULES_SHOWN} more")
    regs, smem, waves = (num(extra.get(c)) for c in ("registers_per_thread", "shared_mem_per_block", "waves"))
    parts = [f"busiest {top} {busiest:.0f}%" if top and busiest is not None else "",
             " · ".join(bw), f"occupancy {occ}" if occ else "",
             f"{regs:.0f} regs/thread" if regs is not None else "",
             f"{fmt_num(smem, 'B')} shared/block" if smem is not None else "",
             f"{waves:.2f} waves" if waves is not None else "",
             "NCU rules: " + "; ".join(named) if named else ""]
    return {"sm_pct": num(k["sol"]["compute_pct"]), "mem_pct": num(k["sol"]["memory_pct"]),
            "facts": " · ".join(p for p in parts if p) or None}


def whole_pct(value: Any) -> str:
    """NCU's SpeedOfLight % (already in percent) as a whole number; ``—`` for a launch without it (a failed
    profile)."""
    x = num(value)
    return DASH if x is None else f"{x:.0f}"


COLUMNS = [Column("pos", "#", numeric=True), Column("name", "kernel", css="name"),
           Column("family", "family", css="name"), Column("nvtx", "NVTX range", css="name"),
           Column("label", "label"), Column("limiter", "limiter"),
           Column("duration_s", "duration", fmt_time, numeric=True),
           Column("share", "share", fmt_pct, numeric=True),
           Column("achieved", "FLOP/s", lambda v: fmt_num(v, "FLOP/s"), numeric=True),
           Column("attainable", "roof FLOP/s", lambda v: fmt_num(v, "FLOP/s"), numeric=True),
           Column("ai_dram", "FLOP/B DRAM", fmt_num, numeric=True),
           Column("ai_l2", "FLOP/B L2", fmt_num, numeric=True),
           Column("ai_l1", "FLOP/B L1", fmt_num, numeric=True),
           Column("sm_pct", "SM %", whole_pct, numeric=True),
           Column("mem_pct", "Mem %", whole_pct, numeric=True),
           Column("facts", "NCU facts", css="facts"),
           Column("ceilings", "ceilings of", css="file"),
           Column("input", "input", file_name, css="file"), Column("index", "launch", numeric=True)]


def _filters(rows: Sequence[Mapping[str, Any]]) -> str:
    labels = sorted({str(r.get("label")) for r in rows if r.get("label")})
    opts = "".join(f'<option value="{esc(lab)}">{esc(lab)}</option>' for lab in labels)
    return ('<div class="tfilter"><input type="search" class="tsearch" placeholder="search kernel, family, NVTX, '
            'input…" aria-label="search the kernel table"> <select class="tlabel" aria-label="label filter">'
            f'<option value="">all labels</option>{opts}</select> <span class="note tcount"></span></div>')


def kernel_table_section(doc: Document) -> Section | None:
    """The longest launches as a sortable, searchable table."""
    kernels = doc["kernels"]
    if not kernels:
        return None
    rows = _rows(kernels, doc)
    empty = [c for c in COLUMNS if c.key not in ("pos", "name") and not any(r.get(c.key) is not None for r in rows)]
    cols = [c for c in COLUMNS if c not in empty]
    html_table = table(rows, cols, css_class="kernels")
    note = (f"Top {TABLE_ROWS} of {len(kernels)} launches by duration; every launch is in the JSON "
            "output (--json)." if len(kernels) > TABLE_ROWS else
            f"All {len(kernels)} launches. Click a header to sort, a name to see it whole.")
    if any(r.get("facts") for r in rows):
        note += (" NCU facts: the busiest SpeedOfLight unit, achieved bandwidth and % of peak per level, occupancy "
                 "achieved of theoretical (its limit), registers per thread, shared memory per block, waves, and NCU's "
                 "rules with an estimated speedup (global: of the whole kernel; local: of the part the rule looks at).")
    if empty:
        note += f" Not in the input, so not shown: {', '.join(c.header for c in empty)}."
    if not any(r.get("nvtx") for r in rows):
        note += " (ncu --nvtx records NVTX ranges.)"
    return Section("Kernels", f'<p class="note">{esc(note)}</p>{_filters(rows)}<div class="tablewrap">{html_table}</div>',
                   anchor="kernels")
