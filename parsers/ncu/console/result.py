"""Rule paragraphs and the final tables of Nsight Compute console logs (docs/formulas.md#inputs).

Rule paragraphs (``WRN``/``INF``/``OPT``/``ERR`` plus indented continuation lines) go to the rules
table: ``section`` is the section's display name, ``rule`` the rule name where the text names it
(``Rule Bottleneck returned an error``), ``title`` the first sentence, ``speedup_pct`` and
``speedup_type`` from ``Est. Speedup: 50%`` (global) or ``Est. Local Speedup: 19.35%`` (local).
Accounting per launch: a launch whose every value is missing is ``missing`` and stays in the table
with null metrics; a launch cut off by the end of the file is rejected with its line; a
``--print-summary`` row counts its N launches. A log with no kernel is an :class:`InputError`.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from rooftop.errors import InputError
from rooftop.parsers.model import (
    RULE_COLUMNS,
    InputAccounting,
    ParseResult,
    Rejected,
    empty_rules,
    normalize_kernels,
)
from rooftop.parsers.ncu.console.header import as_int
from rooftop.parsers.ncu.console.state import DURATION, MAX_SUFFIX, MIN_SUFFIX, State

FORMAT = "ncu-console"
PERM_HINT = "profiling permission denied: run ncu as root or enable NVreg_RestrictProfilingToAdminUsers=0"
_SPEEDUP = re.compile(r"Est\. (?:(Local|Global) )?Speedup:? ([0-9][0-9,]*(?:\.[0-9]+)?)\s?%", re.I)
_RULE_NAME = re.compile(r"^Rule (.+?) returned an error")


def close_rule(st: State) -> None:
    """The rule paragraph in progress, ended: one row of the rules table."""
    rule = st.rule
    if rule is None:
        return
    st.rule = None
    text = " ".join(p for p in rule.parts if p)
    speedup_pct = speedup_type = None
    m = _SPEEDUP.search(text)
    if m:
        speedup_pct = float(m.group(2).replace(",", ""))
        speedup_type = "local" if (m.group(1) or "").lower() == "local" else "global"
        if m.start() == 0:
            text = text[m.end() :].strip()
    name = _RULE_NAME.match(text)
    st.rules.append(
        {
            "index": len(st.launches) - 1,
            "section": rule.section,
            "rule": name.group(1) if name else None,
            "type": rule.type,
            "title": _first_sentence(text),
            "description": text,
            "speedup_type": speedup_type,
            "speedup_pct": speedup_pct,
        }
    )


def _first_sentence(text: str) -> str:
    m = re.search(r"[.:](\s|$)", text)
    head = text[: m.start()] if m else text
    return head if len(head) <= 120 else head[:117].rstrip() + "..."


# --- results ----------------------------------------------------------------------------------


def result(st: State, cut: bool, last_line: int) -> ParseResult:
    """The kernels and rules tables, accounting and meta of a parsed log (``cut``: the last launch is cut off)."""
    path = st.path
    rows: list[dict[str, Any]] = []
    rejected: list[Rejected] = []
    records = missing = cut_launches = 0
    for i, launch in enumerate(st.launches):
        if cut and i == len(st.launches) - 1:
            where = f"inside section {st.section!r}" if st.section else "before its first section"
            rejected.append(Rejected(path, launch.line, f"launch cut off by the end of the file at line {last_line}, {where}"))
            cut_launches = max(1, int(launch.ident.get("invocations") or 1))
            continue
        failed = launch.values_present == 0 or launch.ident.get("grid") == 0
        row: dict[str, Any] = {"input": path, "index": i, "line": launch.line, "name": launch.name,
                               "duration_s": None}
        row.update(launch.ident)
        if row.get("invocations") is None:
            row["invocations"] = 1
        if launch.nvtx:
            row["nvtx"] = " > ".join(launch.nvtx)
        launches = max(1, int(row["invocations"]))  # a --print-summary row stands for N launches
        if failed:
            missing += launches
        else:
            records += launches
            metrics = dict(launch.metrics)
            row["duration_s"] = metrics.pop(DURATION, None)
            for col, metric in (("grid", "launch__grid_size"), ("block", "launch__block_size")):
                if row.get(col) is None:
                    row[col] = as_int(metrics.get(metric))
            row.update(metrics)
            row.update({k + MIN_SUFFIX: v for k, v in launch.mins.items()})
            row.update({k + MAX_SUFFIX: v for k, v in launch.maxs.items()})
        rows.append(row)
    kernels = normalize_kernels(pd.DataFrame(rows)) if rows else normalize_kernels(pd.DataFrame({"input": []}))
    kept = {r["index"] for r in rows}
    rules = [dict(r, input=path) for r in st.rules if r["index"] in kept]
    rules_df = pd.DataFrame(rules, columns=list(RULE_COLUMNS)).astype(RULE_COLUMNS) if rules else empty_rules()
    meta: dict[str, Any] = {"layout": _layout(st), "summary": st.summary}
    if st.errors:
        meta["ncu_errors"] = st.errors[:20]
    if cut:
        meta["truncated_at_line"] = last_line
    if st.unparsed:
        meta["unparsed_rows"] = [{"line": n, "text": t} for n, t in st.unparsed[:50]]
        meta["unparsed_row_count"] = len(st.unparsed)
    if st.unknown_units:
        meta["unknown_units"] = sorted(st.unknown_units)
    if st.conflicts:
        meta["conflicting_labels"] = sorted(st.conflicts)
    # launches, not rows: records + missing + rejected = the launches the file stands for
    acc = InputAccounting(path=path, format=FORMAT, records=records, missing=missing, rejected=cut_launches)
    rejected.extend(st.bad_cells)
    return ParseResult(accounting=acc, kernels=kernels, rules=rules_df, rejected=rejected, meta=meta)


def _layout(st: State) -> str:
    has_dims = any("grid_dim" in launch.ident for launch in st.launches)
    return "new" if has_dims else "old"


def no_kernel_error(st: State) -> InputError:
    """The :class:`InputError` for a log with no kernel, quoting the ncu line that says why."""
    perm = next((e for e in st.errors if "ERR_NVGPUCTRPERM" in e), None)
    quoted = perm or (st.errors[0] if st.errors else None) or next(
        (w for w in st.warnings if "No kernels were profiled" in w), None
    )
    reason = "holds no profiled kernel"
    if st.reports and not perm:  # ncu -o: the log only names the report
        shown = ", ".join(st.reports[:3])
        return InputError(st.path, f"{reason}: ncu wrote its results to {shown} (ncu -o)",
                          f"analyze that file instead: rooftop analyze {st.reports[0]}")
    if quoted:
        q = quoted if len(quoted) <= 200 else quoted[:197] + "..."
        reason += f"; ncu printed: {q}"
    if perm:
        hint = PERM_HINT
    elif quoted and "No kernels were profiled" in quoted:
        hint = "check the --kernel-name/--launch-skip filters, or add --target-processes all for child processes"
    elif quoted and "returned an error code" in quoted:
        hint = "the application failed under ncu; fix it, then profile again"
    else:
        hint = "profile again; the file holds only ncu status lines and application output"
    return InputError(st.path, reason, hint)
