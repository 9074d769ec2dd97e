"""Plain-text terminal summary (no colours), and :func:`escape_terminal`, which every line rooftop
prints passes through: a kernel, host or file name cannot move the cursor, write the clipboard
(OSC 52), clear the screen, split a line or reorder the text (bidi overrides).

Imports only the standard library at import time: the command line imports it for every run.
"""

from __future__ import annotations

import re
import shutil
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rooftop.analyzer.schema import Document, Finding

NAME_LIMIT = 90
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})  # controls, format (bidi), separators


def escape_terminal(text: str) -> str:
    """``text`` with C0/C1 controls (ESC, CR, LF, DEL, ...), format characters (bidi embeddings,
    overrides and isolates U+202A-U+202E, U+2066-U+2069, LRM/RLM, zero-width ones), line and
    paragraph separators shown as visible escapes (``\\x1b``, ``\\n``, ``\\u202e``). Tabs stay."""
    if text.isprintable():
        return text
    return "".join(_escape(c) if c != "\t" and unicodedata.category(c) in _ESCAPED_CATEGORIES else c
                   for c in text)


def _escape(c: str) -> str:
    named = {"\n": "\\n", "\r": "\\r"}.get(c)
    if named:
        return named
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def plain(value: Any, limit: int | None = NAME_LIMIT) -> str:
    """One printable line: control and bidi characters escaped (:func:`escape_terminal`), cut at ``limit``."""
    s = escape_terminal("" if value is None else str(value))
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def summary_text(doc: Document, top: int = 10, outputs: list[str] | None = None) -> str:
    """The summary printed after a run."""
    from rooftop.reports.formatting import device_sources, fmt_time, kernel_label_shares, num

    kind = doc["kind"]
    kernels = doc["kernels"]
    windows = doc["windows"]
    lines = [f"rooftop {kind}: {len(doc['inputs'])} input(s), "
             f"{len(doc['rejected'])} rejected record(s)"]
    for name, sources in device_sources(doc["devices"]):
        lines.append(f"  device: {plain(name)} (ceilings: {plain(sources)})")
    if kernels:
        shares, total = kernel_label_shares(kernels)
        lines.append(f"  kernels: {len(kernels)} launches, {fmt_time(total)} GPU time")
        if total > 0:
            lines.append("  by label: " + ", ".join(
                f"{plain(lab)} {100 * v:.1f}%" for lab, v in sorted(shares.items(), key=lambda kv: -kv[1])))
    if windows:
        counts: dict[str, int] = {}
        for w in windows:
            counts[w["label"]] = counts.get(w["label"], 0) + 1
        lines.append(f"  DCGM windows: {len(windows)} (" + ", ".join(
            f"{plain(k)} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) + ")")
    lines += _timeline_lines(doc)
    lines += _ops_lines(doc)
    verdict = doc.get("verdict")
    if kind == "diff" and verdict is not None:
        lines.append(f"  verdict: {plain(verdict.get('summary') or ('FAIL' if verdict['fail'] else 'ok'))}")
    trend = doc.get("trend")
    if kind == "trend" and trend is not None:
        lines.append(f"  {plain(str(trend.get('summary') or ''), 600)}")
    lines += _unusable_lines(doc)
    findings = doc["findings"][: max(top, 0)]
    if findings:
        lines.append("top findings:")
        width = max(60, shutil.get_terminal_size((100, 24)).columns)
        lines += [_finding_line(f, width, fmt_time, num) for f in findings]
    else:
        lines.append("no findings")
    if outputs:
        lines.append("wrote: " + ", ".join(plain(p, None) for p in outputs))
    return "\n".join(lines)


def _timeline_lines(doc: Document, limit: int = 8) -> list[str]:
    """Per traced device: its label (limiter), idle share and its top finding (docs/formulas.md#timelines)."""
    entries = [e for e in doc.get("timeline") or [] if e["device"] is not None]
    out = []
    for e in entries[:limit]:
        where = f"{str(e['input']).rsplit('/', 1)[-1]} GPU {e['device']}"
        idle = e["idle_fraction"]
        short = f"{plain(str(e['input']).rsplit('/', 1)[-1], 40)} GPU {plain(e['device'], 12)}"
        line = (f"  timeline {short}: {plain(e['label'], None)} ({plain(e['limiter'], None)})"
                + (f", idle {100 * idle:.1f}%" if idle is not None else ""))
        top = next((f for f in doc["findings"] if f.get("group") == where), None)
        if top is not None:
            line += f"; top: {plain(str(top['title']).removeprefix(where + ': '), 120)}"
        out.append(line)
    if len(entries) > limit:
        out.append(f"  … and {len(entries) - limit} more traced device(s) (listed in the report and the JSON)")
    return out


def _ops_lines(doc: Document, limit: int = 8) -> list[str]:
    """Per traced device: the share of GPU time attributed to ops and modelled, and its top op finding
    (docs/formulas.md#ops)."""
    cov = doc.get("ops_coverage") or []
    out = []
    for c in cov[:limit]:
        name = str(c["input"]).rsplit("/", 1)[-1]
        att, mod = c["attributed"], c["modelled"]
        line = (f"  ops {plain(name, 40)} GPU {plain(c['device'], 12)}: "
                + (f"{100 * att:.1f}% of launched GPU time attributed" if att is not None else "no GPU time attributed")
                + (f", {100 * mod:.1f}% of it modelled" if mod is not None else ""))
        top = next((f for f in doc["findings"] if f.get("source") == "ops" and f"({name} GPU {c['device']})"
                    in str(f["title"])), None)
        if top is not None:
            line += f"; top op: {plain(str(top['title']).split(': ')[0], 120)}"
        out.append(line)
    if len(cov) > limit:
        out.append(f"  … and {len(cov) - limit} more traced device(s) with ops (listed in the report and the JSON)")
    return out


def _unusable_lines(doc: Document, limit: int = 5) -> list[str]:
    """Inputs that could not be used, each named with its reason (not only counted)."""
    bad = [i["path"] for i in doc["inputs"] if i["format"] == "unusable"]
    reasons = {r["path"]: r["reason"] for r in doc["rejected"] if r["path"] in bad}
    out = [f"  unusable: {plain(p, None)}: {plain(reasons.get(p, 'not a format rooftop reads'), None)}"
           for p in bad[:limit]]
    if len(bad) > limit:
        out.append(f"  … and {len(bad) - limit} more unusable input(s) (listed in the report and the JSON)")
    return out


_CONFIG = re.compile(r"\s\(grid [^()]*, block [^()]*\)(\s\[[^\[\]]*\])?$")


def shorten_name(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at its end, keeping a launch configuration suffix
    (``(grid G, block B)``, and a split ``[label limiter]``) whole: it tells launches apart."""
    if len(text) <= limit:
        return text
    m = _CONFIG.search(text)
    tail = m.group(0) if m else ""
    base = text[: len(text) - len(tail)]
    keep = max(limit - len(tail) - 1, 12)
    return base[:keep] + "…" + tail


def _finding_line(f: Finding, width: int, fmt_time: Callable[[Any], str],
                  num: Callable[[Any], float | None]) -> str:
    """``N. [severity] label (limiter) · share · saving · name``: the label and the numbers always
    whole; the name shortened in the middle to fit ``width``."""
    share = num(f["time_share"])
    saving = f["est_saving_s"]
    facts = [f"{100 * share:.1f}% of time"] if share is not None else []
    if saving is not None:
        facts.append(f"est. saving {fmt_time(saving)}")
    label = f.get("label")
    if label:
        verdict = plain(label, None) + (f" ({plain(f.get('limiter'), None)})" if f.get("limiter") else "")
        name = plain(f.get("family") or f["title"], None)
    else:  # window and fleet findings carry their verdict in the title
        verdict, name = "", plain(f["title"], None)
    head = f"  {f['rank']}. [{plain(f['severity'], 10)}] " + " · ".join([x for x in (verdict, *facts) if x])
    room = width - len(head) - 3
    return f"{head} · {shorten_name(name, max(room, 40))}"
