"""Section table rows of Nsight Compute console logs into metrics (docs/formulas.md#inputs).

Rows are cut into cells by the column spans of the ``----`` rule above them (labels such as
``Compute (SM) Throughput`` contain single spaces; values are right-aligned); rows that do not fit
the spans are split on runs of two or more spaces. Units are auto-scaled per row and brought to SI
with :func:`rooftop.parsers.units.si_factor`. Section labels map to metric IDs via
:func:`rooftop.parsers.ncu.labels.metric_for_label`; a label that is itself a metric ID
(``--metrics`` runs) is used as is. A label whose mapped ID disagrees with the row's unit (a ``%``
metric with a ``byte/second`` unit) is kept as ``"<section>: <label>"``. String values
(``CachePreferNone``) are not metrics and are skipped. Summary rows keep the **Average**, and
minimum/maximum in their own stores.
"""

from __future__ import annotations

import math
import re

from rooftop.parsers.model import Rejected
from rooftop.parsers.ncu.console.state import DURATION, State
from rooftop.parsers.ncu.labels import is_count_metric, metric_for_label
from rooftop.parsers.numbers import is_missing_token, parse_number
from rooftop.parsers.units import si_factor

_METRIC_ID = re.compile(r"^[A-Za-z0-9_]+__[A-Za-z0-9_.]+$")
_SPLIT2 = re.compile(r"\s{2,}")


def rule_spans(line: str) -> list[tuple[int, int]]:
    """Column spans of a ``----`` rule line."""
    return [(m.start(), m.end()) for m in re.finditer(r"-+", line)]


def split_cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """Cells by the rule's column spans; falls back to splitting on 2+ spaces."""
    ok = all(e >= len(line) or line[e] == " " for _, e in spans[:-1])
    first = spans[0][0]
    ok = ok and not line[:first].strip()
    if ok:
        cells = []
        for i, (s, e) in enumerate(spans):
            cells.append(line[s:] if i == len(spans) - 1 else line[s:e])
        cells = [c.strip() for c in cells]
        if all(cells[1:]) or not _SPLIT2.search(cells[0]):
            return cells
    parts = _SPLIT2.split(line.strip())
    n = len(spans)
    if len(parts) == n - 1 and n >= 3:  # blank unit column
        parts = [parts[0], "", *parts[1:]]
    return parts


def store_row(st: State, n: int, cells: list[str], columns: list[str] | None, decimal_comma: bool) -> None:
    """One table row of the last launch: its value (or the summary's Average, Minimum, Maximum) in SI."""
    launch = st.launches[-1]
    label, unit = cells[0], cells[1]
    values = cells[2:]
    names = columns[2:] if columns and len(columns) == len(cells) else []
    if "Average" in names:
        avg_i = names.index("Average")
        min_i = names.index("Minimum") if "Minimum" in names else None
        max_i = names.index("Maximum") if "Maximum" in names else None
    else:
        avg_i, min_i, max_i = len(values) - 1, None, None
    value_text = values[avg_i]
    value = parse_number(value_text, decimal_comma)
    if value is None and not is_missing_token(value_text):
        return  # a string-valued row (CachePreferNone, PolicySpread, all)
    launch.values_seen += 1
    metric = _metric_id(st.section, label, unit)
    factor = si_factor(unit)
    if factor is None:
        st.unknown_units.add(unit)
        metric = f"{metric} [{unit}]"
        factor = 1.0
    if value is None or not math.isfinite(value):
        return
    launch.values_present += 1
    if metric == DURATION and value < 0:
        st.bad_cells.append(Rejected(st.path, n, f"negative duration {value_text} {unit}: set to null"))
        return
    if value < 0 and is_count_metric(metric):  # a count (bytes, sectors, instructions) is never negative
        st.bad_cells.append(Rejected(st.path, n, f"negative count {value_text} {unit} of {metric}: set to null"))
        return
    _put(st, launch.metrics, metric, value * factor)
    for idx, store in ((min_i, launch.mins), (max_i, launch.maxs)):
        if idx is not None:
            v = parse_number(values[idx], decimal_comma)
            if v is not None and math.isfinite(v):
                _put(st, store, metric, v * factor)


def _put(st: State, store: dict[str, float], metric: str, value: float) -> None:
    old = store.get(metric)
    if old is None:
        store[metric] = value
    elif not math.isclose(old, value, rel_tol=1e-2, abs_tol=1e-12):
        st.conflicts.add(metric)  # first value kept; listed in meta


def _metric_id(section: str | None, label: str, unit: str) -> str:
    if _METRIC_ID.match(label):
        return label
    metric = metric_for_label(section, label)
    if metric == label or ": " in metric:
        return metric
    is_pct_metric = "pct" in metric
    if (unit == "%") != is_pct_metric and not (is_pct_metric and unit == ""):
        return f"{section}: {label}" if section else label
    return metric
