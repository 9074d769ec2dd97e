"""Binary Nsight Compute reports (``.ncu-rep``, legacy ``.nsight-cuprof-report``) via ``ncu_report``.

Every profiled result becomes one kernel-table row, ranges in order and actions in order
(``index``). Numeric metrics are stored in SI base units (``metric.unit()`` →
:func:`parsers.units.si_factor`); instanced metrics as their aggregate value; string metrics only
where they feed identity columns (``device__attribute_display_name`` → ``device``). Launch
geometry and compute capability come from ``launch__*`` and ``device__attribute_*`` metrics,
``gpu__time_duration.sum`` becomes ``duration_s``. NVTX push/pop and start/end ranges become
``nvtx`` (``domain:range`` joined by `` > ``, outermost first). Rule results (incl. the
``SOLBottleneck`` verdict) fill the rules table with their estimated speedup.

``meta``: ``ncu_version`` and ``command_line`` (read from the container, see
:mod:`parsers.ncu_rep_container`; absent in reports older than ~2020.3), ``ncu_report_version``
(the reading library), ``unknown_units`` (units kept unscaled).

Accounting: the container's block headers declare how many results the file holds. Results that
``ncu_report`` cannot return (a truncated file, an unreadable action) are rejected, one entry each;
a file with no readable result at all is an :class:`~parsers.model.InputError`. ``ncu_report`` was
fuzzed with corrupted corpus reports (160 mutations) and only ever raised Python exceptions, so it
runs in-process, every call guarded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

from parsers.model import (
    IDENTITY_COLUMNS,
    RULE_COLUMNS,
    InputAccounting,
    InputError,
    ParseResult,
    Rejected,
    empty_rules,
    normalize_kernels,
)
from parsers.ncu_rep_container import ContainerInfo, read_container
from parsers.source import ParseOptions, Source
from parsers.units import si_factor

FORMAT = "ncu-rep"
INSTALL_HINT = "pip install 'rooftop[ncu-rep]'"
REEXPORT_HINT = "re-export it with ncu --export, or export a CSV with ncu --import FILE --csv --page raw"

# ncu_report.IMetric.ValueKind_* and MsgType_* / SpeedupType_* values (stable across releases).
_KIND_STRING = 2
_KIND_FLOATS = (3, 4)
_KIND_INTS = (5, 6)
_MSG_TYPE = {0: "INF", 1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
_SPEEDUP_TYPE = {1: "local", 2: "global"}

_DURATION = "gpu__time_duration.sum"


def _import_ncu_report(path: str) -> Any:
    try:
        import ncu_report  # type: ignore[import-not-found,unused-ignore]
    except Exception as exc:  # ImportError, or a broken native library (OSError)
        raise InputError(
            path, "is an Nsight Compute report, and reading it needs NVIDIA's ncu_report module", INSTALL_HINT
        ) from exc
    return ncu_report


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """Parse one report file into the kernel and rules tables."""
    path = src.path
    info = read_container(path)
    ncu_report = _import_ncu_report(path)
    try:
        ctx = ncu_report.load_report(path)
        n_ranges = int(ctx.num_ranges())
    except Exception as exc:
        raise InputError(path, f"cannot be read as an Nsight Compute report ({exc})", REEXPORT_HINT) from exc

    rows: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    rejected: list[Rejected] = []
    unknown_units: set[str] = set()
    index = 0
    for r in range(n_ranges):
        try:
            rng = ctx.range_by_idx(r)
            n_actions = int(rng.num_actions())
        except Exception as exc:
            rejected.append(Rejected(path, None, f"range {r} cannot be read: {exc}"))
            continue
        for a in range(n_actions):
            try:
                action = rng.action_by_idx(a)
                row = _action_row(action, unknown_units)
                action_rules = _action_rules(action)
            except Exception as exc:
                rejected.append(Rejected(path, None, f"result {index} (range {r}, action {a}) cannot be read: {exc}"))
                index += 1
                continue
            problem = _incomplete(row, index, info)
            if problem:
                rejected.append(Rejected(path, None, f"result {index} (range {r}, action {a}) {problem}"))
                index += 1
                continue
            row.update(input=path, index=index, id=str(index))
            rows.append(row)
            for rule in action_rules:
                rule.update(input=path, index=index)
            rules.extend(action_rules)
            index += 1

    declared = info.declared_results
    if not rows:
        raise InputError(path, _no_results_reason(info), REEXPORT_HINT)
    where = f" (the block at byte {info.truncated_at} runs past the end of the file)" if info.truncated_at else ""
    if declared is not None and declared > index:
        for k in range(index, declared):
            rejected.append(
                Rejected(path, None, f"result {k} of {declared} declared by the report cannot be read{where}")
            )

    kernels = normalize_kernels(pd.DataFrame(rows))
    rules_df = pd.DataFrame(rules, columns=list(RULE_COLUMNS)) if rules else empty_rules()
    rules_df = rules_df.astype(RULE_COLUMNS)
    accounting = InputAccounting(path=path, format=FORMAT, records=len(rows), rejected=len(rejected))
    meta: dict[str, Any] = {
        "ncu_version": info.ncu_version,
        "command_line": info.command_line,
        "declared_results": declared,
    }
    if info.truncated_at is not None:
        meta["truncated_at_byte"] = info.truncated_at
        meta["truncation_note"] = f"the report is cut short{where}; results stored after it are lost"
    try:
        meta["ncu_report_version"] = str(ctx.get_version())
    except Exception:
        meta["ncu_report_version"] = None
    if unknown_units:
        meta["unknown_units"] = sorted(unknown_units)
    return ParseResult(accounting=accounting, kernels=kernels, rules=rules_df, rejected=rejected, meta=meta)


def _incomplete(row: dict[str, Any], index: int, info: ContainerInfo) -> str | None:
    """Why a result read by ``ncu_report`` cannot be used, or ``None``."""
    if info.truncated_at is not None and info.complete_results is not None and index >= info.complete_results:
        return f"lies in the block cut off at byte {info.truncated_at}: its data is incomplete"
    if not row.get("name"):
        return "has no kernel name: the result is incomplete"
    return None


def _no_results_reason(info: ContainerInfo) -> str:
    if not info.has_magic:
        n = f" (its blocks declare {info.declared_results} result(s))" if info.declared_results else ""
        return (
            "has no Nsight Compute report header (no NVR magic) and ncu_report finds no profiled "
            f"result in it{n}: the file is a corrupt or headless fragment of a report"
        )
    if info.truncated_at is not None:
        return f"is truncated (a block at byte {info.truncated_at} runs past the end) and holds no readable result"
    return "holds no profiled kernel results"


def _metric_value(metric: Any) -> float | str | None:
    """The metric's (aggregate) value: float, string, or None when it has none."""
    if not metric.has_value():
        return None
    kind = metric.kind()
    if kind in _KIND_FLOATS:
        return float(metric.as_double())
    if kind in _KIND_INTS:
        return float(metric.as_uint64())
    if kind == _KIND_STRING:
        s = metric.as_string()
        return None if s is None else str(s)
    return None


def _action_row(action: Any, unknown_units: set[str]) -> dict[str, Any]:
    """One kernel-table row (without input/index/id) from an ``IAction``."""
    metrics: dict[str, float] = {}
    strings: dict[str, str] = {}
    for name in action.metric_names():
        metric = action.metric_by_name(name)
        if metric is None:
            continue
        value = _metric_value(metric)
        if value is None:
            continue
        if isinstance(value, str):
            strings[name] = value
            continue
        unit = metric.unit()
        factor = si_factor(unit)
        if factor is None:
            unknown_units.add(str(unit))
            factor = 1.0
        metrics[name] = value * factor if math.isfinite(value) else math.nan

    try:
        name_demangled = action.name(action.NameBase_DEMANGLED)
    except Exception:
        name_demangled = None
    row: dict[str, Any] = {"name": name_demangled or action.name()}
    row["device"] = strings.get("device__attribute_display_name")
    row["device_index"] = _int(metrics.get("launch__device_id", metrics.get("device__attribute_device_index")))
    row["context"] = _int(metrics.get("launch__context_id"))
    row["stream"] = _int(metrics.get("launch__stream_id"))
    major = _int(metrics.get("device__attribute_compute_capability_major"))
    minor = _int(metrics.get("device__attribute_compute_capability_minor"))
    row["cc"] = f"{major}.{minor}" if major is not None and minor is not None else None
    grid_dims = _dims(metrics, "launch__grid_dim_")
    block_dims = _dims(metrics, "launch__block_dim_")
    row["grid_dim"] = _dim_text(grid_dims)
    row["block_dim"] = _dim_text(block_dims)
    row["grid"] = _int(metrics.get("launch__grid_size")) or (math.prod(grid_dims) if grid_dims else None)
    row["block"] = _int(metrics.get("launch__block_size")) or (math.prod(block_dims) if block_dims else None)
    row["nvtx"] = _nvtx_text(action)
    row["invocations"] = 1
    row["duration_s"] = metrics.pop(_DURATION, None)
    for key, value in metrics.items():
        if key not in IDENTITY_COLUMNS:
            row[key] = value
    return row


def _int(value: float | None) -> int | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value)


def _dims(metrics: dict[str, float], prefix: str) -> tuple[int, int, int] | None:
    vals = [_int(metrics.get(prefix + axis)) for axis in "xyz"]
    if any(v is None for v in vals):
        return None
    x, y, z = (int(v) for v in vals if v is not None)
    return x, y, z


def _dim_text(dims: tuple[int, int, int] | None) -> str | None:
    return None if dims is None else f"({dims[0]}, {dims[1]}, {dims[2]})"


def _nvtx_text(action: Any) -> str | None:
    """``domain:range`` for every push/pop then start/end range, outermost first, joined by ``>``."""
    try:
        state = action.nvtx_state()
    except Exception:
        return None
    if state is None:
        return None
    parts: list[str] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is None:
            continue
        dname = str(domain.name())
        ranges: Iterable[str] = [*domain.push_pop_ranges(), *domain.start_end_ranges()]
        parts.extend(f"{dname}:{rname}" for rname in ranges)
    return " > ".join(parts) if parts else None


def _action_rules(action: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for res in action.rule_results_as_dicts():
        msg = res.get("rule_message") or {}
        speedup = res.get("speedup_estimation") or {}
        sp_value = speedup.get("speedup")
        try:
            msg_type = _MSG_TYPE.get(int(msg.get("type", 0)), "INF")
        except (TypeError, ValueError):
            msg_type = "INF"
        try:
            sp_type = _SPEEDUP_TYPE.get(int(speedup["type"])) if "type" in speedup else None
        except (TypeError, ValueError):
            sp_type = None
        title = str(msg.get("title") or "") or str(res.get("name") or "")
        out.append(
            {
                "section": res.get("section_identifier") or None,
                "rule": res.get("rule_identifier") or res.get("name") or None,
                "type": msg_type,
                "title": title or None,
                "description": str(msg.get("message") or "") or None,
                "speedup_type": sp_type,
                "speedup_pct": float(sp_value) if sp_value is not None else None,
            }
        )
    return out
