"""Plain-text terminal summary (no colours). Input strings have control characters removed so a
kernel or host name cannot move the cursor or change the terminal (escape-sequence injection)."""

from __future__ import annotations

from typing import Any

from rooftop.reports.formatting import fmt_time, kernel_label_shares, num

NAME_LIMIT = 90


def plain(value: Any, limit: int | None = NAME_LIMIT) -> str:
    """One printable line: control characters (incl. ESC, CR, newlines) become spaces."""
    s = "" if value is None else str(value)
    s = "".join(" " if (ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029") else c for c in s)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def summary_text(doc: dict[str, Any], top: int = 10, outputs: list[str] | None = None) -> str:
    """The summary printed after a run."""
    kind = str(doc.get("kind") or "analyze")
    kernels = doc.get("kernels") or []
    windows = doc.get("windows") or []
    lines = [f"rooftop {kind}: {len(doc.get('inputs') or [])} input(s), "
             f"{len(doc.get('rejected') or [])} rejected record(s)"]
    for d in doc.get("devices") or []:
        lines.append(f"  device: {plain(d.get('name'))} (ceilings: {plain(d.get('source'))})")
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
    findings = (doc.get("findings") or [])[: max(top, 0)]
    if findings:
        lines.append("top findings:")
        for f in findings:
            share = num(f.get("time_share"))
            saving = f.get("est_saving_s")
            extra = f"{100 * share:.1f}% of time" if share is not None else ""
            if saving is not None:
                extra += f", est. saving {fmt_time(saving)}"
            lines.append(f"  {f.get('rank')}. [{plain(f.get('severity'), 10)}] {plain(f.get('title'))}"
                         + (f" ({extra})" if extra else ""))
    else:
        lines.append("no findings")
    if outputs:
        lines.append("wrote: " + ", ".join(plain(p, None) for p in outputs))
    return "\n".join(lines)
