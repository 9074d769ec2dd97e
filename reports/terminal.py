"""Plain-text terminal summary (no colours), and :func:`escape_terminal`, which every line rooftop
prints passes through: a kernel, host or file name cannot move the cursor, write the clipboard
(OSC 52), clear the screen, split a line or reorder the text (bidi overrides).

Imports only the standard library at import time: the command line imports it for every run.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

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


MIN_WIDTH = 40
UNWRAPPED = 0  # a width that means "not a terminal: lines are not wrapped"
NAME_COLUMNS = 120  # kernel names are shortened to this when lines are not wrapped


def terminal_width(stream: TextIO | None = None) -> int:
    """Columns to lay terminal output out in: ``COLUMNS`` when set, else the width of the terminal
    ``stream`` (default standard output) writes to; :data:`UNWRAPPED` (0) when it is not a terminal
    (a pipe, a file, a CI log: each line stays whole for grep and scripts). Never under
    :data:`MIN_WIDTH`."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    out = stream if stream is not None else sys.stdout
    try:
        if out.isatty():
            return max(MIN_WIDTH, os.get_terminal_size(out.fileno()).columns)
    except (AttributeError, OSError, ValueError):
        pass
    return UNWRAPPED


def summary_text(doc: Document, top: int = 10, outputs: list[str] | None = None,
                 width: int | None = None) -> str:
    """The summary printed after a run, no line longer than ``width`` columns (default
    :func:`terminal_width`; 0: lines not wrapped): inputs, devices, kernel labels, DCGM window
    labels, each traced GPU's label, idle share and top finding, a diff's verdict and its reason, the
    top findings (verdict and numbers on one line, the kernel's name below it, shortened by
    :func:`shorten_kernel`)."""
    from rooftop.reports.formatting import (
        device_sources,
        fmt_time,
        kernel_headline,
        kernel_label_shares,
        num,
    )

    cols = terminal_width() if width is None else width
    cols = max(MIN_WIDTH, cols) if cols else UNWRAPPED
    kind = doc["kind"]
    kernels = doc["kernels"]
    windows = doc["windows"]
    lines = [f"rooftop {kind}: {len(doc['inputs'])} input(s), "
             f"{len(doc['rejected'])} rejected record(s)"]
    for name, sources in device_sources(doc["devices"]):
        lines.append(f"  device: {plain(name)} (ceilings: {plain(sources)})")
    lines += [f"  {plain(n['message'], 400)}" for n in doc.get("lint") or [] if n["code"] == "kernel-filter"]
    lines += [f"  DCGM windows: none: {plain(n['message'], 400)}" for n in doc.get("lint") or []
              if n["code"] == "dcgm-no-window-fields"]
    if kernels:
        shares, total = kernel_label_shares(kernels)
        lines.append(f"  kernels: {plain(kernel_headline(kernels))}")
        if total > 0:
            lines.append("  by label: " + ", ".join(
                f"{plain(lab)} {100 * v:.1f}%" for lab, v in sorted(shares.items(), key=lambda kv: -kv[1])))
    if windows:
        counts: dict[str, int] = {}
        for w in windows:
            counts[w["label"]] = counts.get(w["label"], 0) + 1
        lines.append(f"  DCGM windows: {len(windows)} (" + ", ".join(
            f"{plain(k)} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) + ")")
    lines += _health_lines(doc)  # one line per GPU with health events (docs/formulas.md#health)
    lines += _timeline_lines(doc)
    lines += _ops_lines(doc)
    verdict = doc.get("verdict")
    if kind == "diff" and verdict is not None:
        lines.append(f"  verdict: {plain(verdict.get('summary') or ('FAIL' if verdict['fail'] else 'ok'))}")
        if verdict.get("reason"):
            lines.append(f"  reason: {plain(verdict.get('reason'), 600)}")
    trend = doc.get("trend")
    if kind == "trend" and trend is not None:
        lines.append(f"  {plain(str(trend.get('summary') or ''), 600)}")
    lines += _unusable_lines(doc)
    findings = doc["findings"][: max(top, 0)]
    if findings:
        lines.append("top findings:")
        names = distinct_kernel_names([str(f.get("family") or "") for f in findings], (cols or NAME_COLUMNS) - 6)
        for f, short in zip(findings, names, strict=True):
            lines += _finding_lines(f, short, cols, fmt_time, num)
    else:
        lines.append("no findings")
    if outputs:
        lines += [("wrote: " if i == 0 else "       ") + plain(p, None) for i, p in enumerate(outputs)]
    return "\n".join(out for line in lines for out in fit(line, cols))


_GLUE = "\x00"  # stands for a space that must not break (never in printed text: plain() drops controls)
_UNIT = re.compile(r"(?<=\d) (?=(?:ms|µs|ns|s|GB/s|TB/s|GPU-h|GPU-s|MiB|GiB|MB|GB|W|MHz)\b|%)")


def fit(line: str, width: int) -> list[str]:
    """``line`` as lines of at most ``width`` columns (0: the line whole): broken at spaces, never
    between a number and its unit (``11.4 ms``), each continuation indented four columns deeper than
    the line's own indent; a word longer than the width (a path) is cut."""
    if not width or len(line) <= width:
        return [line]
    indent = " " * min(len(line) - len(line.lstrip(" ")) + 4, width // 2)
    return _wrap(line, width, indent, break_long_words=True) or [line[:width]]


def _wrap(text: str, width: int, indent: str, break_long_words: bool) -> list[str]:
    """``textwrap.wrap`` that never breaks between a number and its unit (``11.4 ms``)."""
    out = textwrap.wrap(_UNIT.sub(_GLUE, text), width=width, subsequent_indent=indent,
                        break_long_words=break_long_words, break_on_hyphens=False)
    return [x.replace(_GLUE, " ") for x in out]


def _health_lines(doc: Document, limit: int = 20) -> list[str]:
    """One line per GPU with health events (worst first), else one line saying none was seen or
    that no health field was collected (docs/formulas.md#health)."""
    d: Any = doc
    h = d.get("health") or (d.get("fleet") or {}).get("health")
    if not isinstance(h, dict):
        return []
    recs = [r for r in h.get("gpus") or [] if r.get("events")]
    if not recs:
        if not h.get("gpus_with_fields"):
            return ["  health: no health fields collected (XID, ECC, row remapping, clock-event reasons, "
                    "temperature, power): unknown"]
        no_limit = [str(a) for a in h.get("no_threshold") or []]
        checked = [str(a) for a in h.get("collected") or [] if str(a) not in no_limit]
        return [f"  health: no events on {h.get('gpus_with_fields')} GPU(s) with health fields (checked: "
                f"{plain(', '.join(checked) or 'none', 200)}"
                + (f"; no threshold in the input: {plain(', '.join(no_limit), 200)}" if no_limit else "") + ")"]
    out = [f"  health: GPU {plain(r.get('gpu_key'))}" + (f" ({plain(r.get('uuid'))})" if r.get("uuid") else "")
           + ": " + plain("; ".join(f"{e.get('title')} [{e.get('severity')}]" for e in r["events"]), 600)
           for r in recs[:limit]]
    if len(recs) > limit:
        out.append(f"  health: {len(recs) - limit} more GPU(s) with events in the report")
    return out


_SEVERITY = {"high": 0, "medium": 1, "low": 2}


def _timeline_lines(doc: Document, limit: int = 8) -> list[str]:
    """Per traced device: its label (limiter) and idle share, then on the next line its first finding
    of the highest severity in the ranked list (docs/formulas.md#timeline-findings: a warm-up's seconds
    rank a finding high in a trace's list, its severity stays low)."""
    entries = [e for e in doc.get("timeline") or [] if e["device"] is not None]
    out = []
    for e in entries[:limit]:
        where = f"{str(e['input']).rsplit('/', 1)[-1]} GPU {e['device']}"
        idle = e["idle_fraction"]
        short = f"{plain(str(e['input']).rsplit('/', 1)[-1], 40)} GPU {plain(e['device'], 12)}"
        out.append(f"  timeline {short}: {plain(e['label'], None)} ({plain(e['limiter'], None)})"
                   + (f", idle {100 * idle:.1f}%" if idle is not None else ""))
        mine = [f for f in doc["findings"] if f.get("group") == where]  # in the document's ranked order
        top = min(mine, key=lambda f: _SEVERITY.get(str(f.get("severity")), len(_SEVERITY)), default=None)
        if top is not None:
            out.append(f"    top: {plain(str(top['title']).removeprefix(where + ': '), 240)}")
    if len(entries) > limit:
        out.append(f"  … and {len(entries) - limit} more traced device(s) (listed in the report and the JSON)")
    return out


def _split_line(c: Any, width: int = 80) -> str:
    """``    by category: gemm 41.2% · … · unattributed 3.1%`` within ``width`` columns, or why it is unknown."""
    if c["categories_status"] != "known":
        line = f"    by category: unknown, {100 * (c['attributed_of_all'] or 0.0):.1f}% attributed"
        reasons = [plain(u["reason"], None) for u in sorted(c["unattributed"], key=lambda u: -u["time_s"])]
        for i, why in enumerate(reasons):
            nxt = f"{line}{' (rest: ' if i == 0 else ', '}{why}"
            if len(nxt) + 1 > width:
                break
            line = nxt
        return line + (")" if "(rest: " in line else "")
    head = "    by category: "
    words = [f"{plain(r['category'], 16)} {100 * (r['share'] or 0.0):.0f}%" for r in c["categories"]]
    line = head
    for i, w in enumerate(words):
        more = f" +{len(words) - i} more"
        nxt = w if line == head else f"{line[len(head):]} · {w}"
        if len(head) + len(nxt) + (len(more) if i < len(words) - 1 else 0) > width:
            return line + more
        line = head + nxt
    return line


def _attributed_text(att: float | None, of_all: float | None) -> str:
    """``56.2% of GPU time attributed (100.0% of what the trace launched)``: the share of all GPU time
    first, so kernels and copies launched outside the trace are never read as attributed
    (docs/formulas.md#ops)."""
    if att is None:
        return "no GPU time attributed"
    if of_all is None or round(100 * of_all, 1) == round(100 * att, 1):
        return f"{100 * att:.1f}% of GPU time attributed"
    return f"{100 * of_all:.1f}% of GPU time attributed ({100 * att:.1f}% of what the trace launched)"


def _ops_lines(doc: Document, limit: int = 8) -> list[str]:
    """Per traced device: the share of GPU time attributed to ops and modelled, and its top op finding
    (docs/formulas.md#ops)."""
    cov = doc.get("ops_coverage") or []
    out = []
    for c in cov[:limit]:
        name = str(c["input"]).rsplit("/", 1)[-1]
        att, of_all, mod = c["attributed"], c["attributed_of_all"], c["modelled"]
        out.append(f"  ops {plain(name, 40)} GPU {plain(c['device'], 12)}: " + _attributed_text(att, of_all)
                   + (f", {100 * mod:.1f}% of it modelled" if mod is not None else ""))
        if c["categories"]:
            out.append(_split_line(c))
        where = f" ({name} GPU {c['device']})"
        top = next((f for f in doc["findings"] if f.get("source") == "ops" and where in str(f["title"])), None)
        if top is not None:
            # the finding's title without the input and device this line already names
            out.append(f"    top op: {plain(str(top['title']).replace(where, ''), 240)}")
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


def _finding_lines(f: Finding, short: str, width: int, fmt_time: Callable[[Any], str],
                   num: Callable[[Any], float | None]) -> list[str]:
    """``N. [severity] label (limiter) · share · saving`` and, indented below it, the kernel's name
    shortened to the width by :func:`shorten_kernel` (a window's, a trace's or a fleet finding's
    title, which carries its verdict, wrapped instead)."""
    share = num(f["time_share"])
    saving = f["est_saving_s"]
    facts = [f"{100 * share:.1f}% of time"] if share is not None else \
        (["duration unknown"] if f.get("family") else [])  # a kernel family without durations: never 0 %
    if saving is not None:
        from rooftop.reports.formatting import fmt_saving
        facts.append(f"est. saving {fmt_saving(f)}")
    label = f.get("label")
    family = f.get("family")
    verdict = ""
    if label:
        verdict = plain(label, None) + (f" ({plain(f.get('limiter'), None)})" if f.get("limiter") else "")
    head = f"  {f['rank']}. [{plain(f['severity'], 10)}] " + " · ".join([x for x in (verdict, *facts) if x])
    indent = " " * min(len(f"  {f['rank']}. "), 8)
    if family and label:
        return [head, indent + plain(short, None)]
    title = indent + plain(f["title"], 600)
    return [head, *(_wrap(title, width, indent, break_long_words=True) if width else [title])]


def distinct_kernel_names(names: list[str], limit: int) -> list[str]:
    """:func:`shorten_kernel` of each name, where two different names would print alike with the
    first word of each that the other lacks kept inside its template arguments
    (``elementwise_kernel<…direct_copy_kernel_cuda…>``); ``""`` stays ``""``."""
    first = [shorten_kernel(n, limit) if n else "" for n in names]
    short = list(first)
    for i, n in enumerate(names):
        twins = [names[j] for j in range(len(names)) if first[j] == first[i] and names[j] != n]
        if not n or not twins:
            continue
        others = {w for t in twins for w in _WORD.findall(t)}
        word = next((w for w in _WORD.findall(n) if w not in others and w not in first[i]), None)
        if word is not None:
            short[i] = shorten_kernel(n, limit, hint=word)
    return short


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
_LEAD = re.compile(r"^(?:(?:void|__global__|static|inline|extern \"C\")\s+)+")


def shorten_kernel(text: str, limit: int, hint: str | None = None) -> str:
    """A kernel's name in at most ``limit`` characters, keeping what tells it apart: the launch
    configuration ``(grid G, block B)`` whole, the function name whole, and as much of its
    namespace and template arguments as fit; what goes first is the argument list, then nested
    template arguments, then the tail of the outer ones, then the namespaces (``…``). ``hint``: a
    word of the template arguments to keep (``fn<…hint…>``) where it fits."""
    if len(text) <= limit:
        return text
    m = _CONFIG.search(text)
    tail = m.group(0) if m else ""
    base = _LEAD.sub("", text[: len(text) - len(tail)].strip())
    room = limit - len(tail)
    opened = _drop_arguments(base).find("<")
    if hint and opened > 0:
        head = _drop_arguments(base)[:opened]
        for name in (head, re.split(r"::(?![^<]*>)", head)[-1]):
            if len(name) + len(hint) + 4 <= room:
                return f"{name}<…{hint}…>{tail}"
    for candidate in (base, _drop_arguments(base), _collapse(_drop_arguments(base), 1)):
        if len(candidate) <= room:
            return candidate + tail
    name = _collapse(_drop_arguments(base), 1)
    opened = name.find("<")
    head = name if opened < 0 else name[:opened]
    if opened >= 0 and len(head) + 3 <= room:  # the outer template arguments cut: fn<4, …>
        cut = name[: room - 2]
        comma = cut.rfind(", ")
        return (cut[: comma + 2] if comma > opened else cut) + "…>" + tail
    parts = re.split(r"(?<=::)(?![^<]*>)", head)  # namespaces go, whole, from the left: …::fn<…>
    short = parts[-1] + ("<…>" if opened >= 0 else "")
    kept = ""
    for part in reversed(parts[:-1]):
        if len(part + kept + short) + 1 > room:
            break
        kept = part + kept
    if len(short) + 1 <= room:
        return ("…" if len(kept) < len(head) - len(parts[-1]) else "") + kept + short + tail
    cut = shorten_name(base + tail, limit)
    return cut if len(cut) <= limit else cut[: limit - 1] + "…"


def _drop_arguments(name: str) -> str:
    """``fn<T>(float*, int)`` -> ``fn<T>``: a demangled name's trailing argument list."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i].rstrip() if i > 0 and name[:i].strip() else name
    return name


def _collapse(name: str, keep: int) -> str:
    """Template arguments nested deeper than ``keep`` levels written ``…``:
    ``f<4, Op<float, Add<x>>>`` with ``keep=1`` -> ``f<4, Op<…>>``."""
    out: list[str] = []
    depth = 0
    for c in name:
        if c == "<":
            depth += 1
            if depth <= keep + 1:
                out.append(c)
            if depth == keep + 1:
                out.append("…")
        elif c == ">" and depth > 0:
            if depth <= keep + 1:
                out.append(c)
            depth -= 1
        elif depth <= keep:
            out.append(c)
    return "".join(out)
