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
from typing import Any

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


def summary_text(doc: dict[str, Any], top: int = 10, outputs: list[str] | None = None) -> str:
    """The summary printed after a run."""
    from rooftop.reports.formatting import device_sources, fmt_time, kernel_label_shares, num

    kind = str(doc.get("kind") or "analyze")
    kernels = doc.get("kernels") or []
    windows = doc.get("windows") or []
    lines = [f"rooftop {kind}: {len(doc.get('inputs') or [])} input(s), "
             f"{len(doc.get('rejected') or [])} rejected record(s)"]
    for name, sources in device_sources(doc.get("devices") or []):
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
            lab = str(w.get("label") or "mixed")
            counts[lab] = counts.get(lab, 0) + 1
        lines.append(f"  DCGM windows: {len(windows)} (" + ", ".join(
            f"{plain(k)} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) + ")")
    if kind == "diff" and isinstance(doc.get("verdict"), dict):
        v = doc["verdict"]
        lines.append(f"  verdict: {plain(v.get('summary') or ('FAIL' if v.get('fail') else 'ok'))}")
    lines += _unusable_lines(doc)
    findings = (doc.get("findings") or [])[: max(top, 0)]
    if findings:
        lines.append("top findings:")
        width = max(60, shutil.get_terminal_size((100, 24)).columns)
        lines += [_finding_line(f, width, fmt_time, num) for f in findings]
    else:
        lines.append("no findings")
    if outputs:
        lines.append("wrote: " + ", ".join(plain(p, None) for p in outputs))
    return "\n".join(lines)


def _unusable_lines(doc: dict[str, Any], limit: int = 5) -> list[str]:
    """Inputs that could not be used, each named with its reason (not only counted)."""
    bad = [str(i.get("path")) for i in doc.get("inputs") or [] if i.get("format") == "unusable"]
    reasons = {str(r.get("path")): str(r.get("reason")) for r in doc.get("rejected") or []
               if str(r.get("path")) in bad}
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


def _finding_line(f: dict[str, Any], width: int, fmt_time: Callable[[Any], str],
                  num: Callable[[Any], float | None]) -> str:
    """``N. [severity] label (limiter) · share · saving · name``: the label and the numbers always
    whole; the name shortened in the middle to fit ``width``."""
    share = num(f.get("time_share"))
    saving = f.get("est_saving_s")
    facts = [f"{100 * share:.1f}% of time"] if share is not None else []
    if saving is not None:
        facts.append(f"est. saving {fmt_time(saving)}")
    label = f.get("label")
    if label:
        verdict = plain(label, None) + (f" ({plain(f.get('limiter'), None)})" if f.get("limiter") else "")
        name = plain(f.get("family") or f.get("title"), None)
    else:  # window and fleet findings carry their verdict in the title
        verdict, name = "", plain(f.get("title"), None)
    head = f"  {f.get('rank')}. [{plain(f.get('severity'), 10)}] " + " · ".join([x for x in (verdict, *facts) if x])
    room = width - len(head) - 3
    return f"{head} · {shorten_name(name, max(room, 40))}"
