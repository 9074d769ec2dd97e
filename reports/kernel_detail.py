"""``rooftop show -k REGEX``: everything behind one launch's verdict, as text (docs/formulas.md#kernel-filter).

Drawn from the analysis document only: the launch's identity, its label with the basis and the
finding that names it, the ceilings it was judged against, every evidence fact (values with units
and sources, then the sentence the rule draws), NVIDIA's rule results and the remaining measured
values. Every string passes :func:`rooftop.reports.terminal.plain`; lines fit ``width``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rooftop.analyzer.schema import MEMORY_LEVELS, Document, Kernel
from rooftop.analyzer.schema.evidence import render, si
from rooftop.reports.formatting import fmt_time, num
from rooftop.reports.terminal import fit, plain, terminal_width

LEVELS = MEMORY_LEVELS
PEAK_UNITS = {"int8": "OP/s"}


def chosen(doc: Document, limit: int, among: Sequence[int] | None = None) -> list[int]:
    """Positions of the launches to show (of ``among``, default all): the longest first, ``limit`` of them."""
    pool = range(len(doc["kernels"])) if among is None else among
    order = sorted(pool, key=lambda p: -(num(doc["kernels"][p]["duration_s"]) or 0.0))
    return order[: max(limit, 0)]


def detail_text(doc: Document, positions: Sequence[int], width: int | None = None,
                matching: int | None = None) -> str:
    """The detail view of the launches at ``positions`` of ``doc["kernels"]``, one after another,
    then how many of the ``matching`` launches (default: all of the document's) were not shown."""
    cols = terminal_width() if width is None else width
    lines: list[str] = []
    for n, p in enumerate(positions):
        if n:
            lines += ["", "=" * min(cols or 80, 80), ""]
        lines += _one(doc, p)
    rest = (len(doc["kernels"]) if matching is None else matching) - len(positions)
    if rest > 0:
        lines += ["", f"… and {rest:,} more matching launch(es), shorter (--limit N shows more; "
                      "--json PATH writes them all)"]
    return "\n".join(out for line in lines for out in fit(line, cols))


def _one(doc: Document, p: int) -> list[str]:
    k = doc["kernels"][p]
    extra: Mapping[str, Any] = k.get("extra") or {}
    lines = [f"kernel {p + 1} of {len(doc['kernels'])}: {plain(k['name'], None)}",
             f"  input: {plain(k['input'], None)} (id {plain(k['id'], None)}, row {k['index']})",
             f"  family: {plain(k['family'], None)}",
             f"  launch: grid {k['grid'] if k['grid'] is not None else '?'}, block "
             f"{k['block'] if k['block'] is not None else '?'}; duration {fmt_time(k['duration_s'])}"
             + (f"; {extra['invocations']} invocation(s)" if extra.get("invocations") not in (None, 1) else "")
             + f"; device {plain(k['device'], None)}" + (f"; NVTX {plain(k['nvtx'], None)}" if k.get("nvtx") else ""),
             "",
             f"verdict: {plain(k['label'], None)} ({plain(k['limiter'], None)})"
             + (f", basis {plain(extra['label_basis'], None)}" if extra.get("label_basis") else "")
             + " (docs/formulas.md#kernel-labels)"]
    lines += _finding(doc, p)
    lines += ["", *_ceilings(doc, k, extra)]
    lines += ["", *_measured(k)]
    lines += ["", *_facts(doc, p, k)]
    rules = k.get("ncu_rules") or []
    if rules:
        lines += ["", "NVIDIA rules (the export's own results):"]
        for r in rules:
            pct = num(r.get("speedup_pct"))
            lines.append(f"  {plain(r.get('rule'), None)}: {plain(r.get('title'), None)}"
                         + (f" (est. speedup {pct:.1f}%, {plain(r.get('speedup_type'), None)})" if pct is not None
                            else ""))
            if r.get("message"):
                lines.append(f"    {plain(r.get('message'), 600)}")
    if extra:
        lines += ["", "measured and derived values (kernels[].extra):"]
        lines += [f"  {plain(key, None)}: {_value(v)}" for key, v in extra.items()]
    return lines


def _finding(doc: Document, p: int) -> list[str]:
    out = []
    for f in doc["findings"]:
        if p in (f.get("kernels") or []):
            bound = f.get("saving_bound_s")
            out.append(f"  finding {f['rank']} [{plain(f['severity'], None)}]: {plain(f['title'], None)}")
            share = num(f["time_share"])
            out.append("    " + "; ".join(x for x in (
                f"{100 * share:.1f}% of kernel time" if share is not None else "",
                f"est. saving {fmt_time(f['est_saving_s'])}" if f["est_saving_s"] is not None else "",
                f"bound {fmt_time(bound)}" if bound is not None else "",
                f"basis {plain(f.get('saving_basis'), None)}" if f.get("saving_basis") else "") if x)
                + " (docs/formulas.md#findings)")
            if f.get("recommendation"):
                out.append(f"    {plain(f['recommendation'], 600)}")
    return out or ["  no finding names this launch (its family is not among the ranked findings)"]


def _ceilings(doc: Document, k: Kernel, extra: Mapping[str, Any]) -> list[str]:
    ref = str(extra.get("ceilings") or "")
    name, _, source = ref.partition("|")
    dev = next((d for d in doc["devices"] if d["name"] == name and d["source"] == source), None)
    dev = dev or next((d for d in doc["devices"] if d["name"] == k["device"]), None)
    if dev is None:
        return ["ceilings: none known for this launch's device (--device NAME or a ceilings file; "
                "docs/formulas.md#ceilings)"]
    lines = [f"ceilings: {plain(dev['name'], None)} ({plain(dev['source'], None)}; docs/formulas.md#ceilings)"]
    for key, value in dev["ceilings"].items():
        unit = "B/s" if key in LEVELS else PEAK_UNITS.get(key, "FLOP/s")
        src = (dev.get("sources") or {}).get(key)
        lines.append(f"  {plain(key, None)}: {si(num(value), unit)}" + (f" ({plain(src, None)})" if src else ""))
    mine = [f"{lvl.upper()} ridge {_value(extra.get(f'ridge_{lvl}'))} FLOP/B, attainable "
            f"{si(num(extra.get(f'attainable_{lvl}')), 'FLOP/s')}" for lvl in LEVELS if f"ridge_{lvl}" in extra]
    if mine:
        lines.append("  this launch: " + "; ".join(mine))
    return lines


def _measured(k: Kernel) -> list[str]:
    sol = k.get("sol") or {}
    by_class = ", ".join(f"{c} {si(num(v), 'FLOP')}" for c, v in (k.get("flops_by_class") or {}).items())
    per_level = "; ".join(f"{lvl.upper()} {si(num((k.get('bytes') or {}).get(lvl)), 'B')}, intensity "
                          f"{_value((k.get('intensity') or {}).get(lvl))} FLOP/B" for lvl in LEVELS)
    return ["measured:",
            f"  work: {si(num(k['flops']), 'FLOP')}" + (f" ({by_class})" if by_class else ""),
            f"  achieved {si(num(k['achieved_flops_s']), 'FLOP/s')} of attainable "
            f"{si(num(k['attainable_flops_s']), 'FLOP/s')}",
            f"  bytes: {per_level}",
            f"  NCU Speed Of Light: compute {_value(sol.get('compute_pct'))} %, memory {_value(sol.get('memory_pct'))} %"]


def _facts(doc: Document, p: int, k: Kernel) -> list[str]:
    facts = doc.get("evidence_facts") or []
    rules: Mapping[str, Any] = doc.get("evidence_rules") or {}
    lines = ["evidence (each fact: its values, then the sentence its rule draws):"]
    for group in facts:
        ks = group["kernels"]
        if p not in ks:
            continue
        j = ks.index(p)
        values = {**group["params"], **{name: col[j] for name, col in group["values"].items()}}
        rule = rules.get(group["rule"]) or {}
        units, sources = rule.get("units") or {}, rule.get("sources") or {}
        lines.append(f"  [{plain(group['rule'], None)}]")
        for name, v in values.items():
            unit = f" {units[name]}" if units.get(name) and v is not None else ""
            src = f" ({plain(sources[name], None)})" if sources.get(name) else ""
            lines.append(f"    {plain(name, None)} = {_value(v)}{unit}{src}")
        if rule.get("template"):
            lines.append(f"    -> {plain(render(rule['template'], values), None)}")
    if len(lines) == 1:  # a document without facts: the sentences it holds
        lines += [f"  {plain(s, None)}" for s in k.get("evidence") or []] or ["  none"]
    return lines


def _value(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "null" if v is None else str(v).lower()
    if isinstance(v, float):
        return f"{v:.4g}"
    return plain(v, None)
