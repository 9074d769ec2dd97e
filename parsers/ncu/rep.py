"""Binary Nsight Compute reports (``.ncu-rep``, legacy ``.nsight-cuprof-report``) via ``ncu_report``.

Every profiled result becomes one kernel-table row, ranges in order and actions in order
(``index``). Numeric metrics are stored in SI base units (``metric.unit()`` →
:func:`parsers.units.si_factor`); instanced metrics as their aggregate value; string metrics only
where they feed identity columns (``device__attribute_display_name`` → ``device``). Launch
geometry and compute capability come from ``launch__*`` and ``device__attribute_*`` metrics,
``gpu__time_duration.sum`` becomes ``duration_s``. NVTX push/pop and start/end ranges become
``nvtx`` (ranges joined by `` > ``, outermost first; the default domain's by bare name, others ``domain:range``). Rule results (incl. the
``SOLBottleneck`` verdict) fill the rules table with their estimated speedup.

``meta``: ``ncu_version`` and ``command_line`` (read from the container, see
:mod:`parsers.ncu.rep_container`; absent in reports older than ~2020.3), ``ncu_report_version``
(the reading library), ``unknown_units`` (units kept unscaled).

Isolation: ``ncu_report`` is native code that aborts the whole process on some corrupt reports
(found by fuzzing), so the report is read by :mod:`parsers.ncu._rep_worker` in a child process
(``sys.executable``) under a timeout (120 s + 2 s/MB; ``ROOFTOP_NCU_REP_TIMEOUT`` overrides). The
child streams one JSON line per result; units are scaled here.

Accounting: the container's block headers declare how many results the file holds. Results that
cannot be used (a truncated file, an unreadable or incomplete action, results lost when the reader
crashes part-way) are rejected, one entry each; a file with no usable result at all is an
:class:`~rooftop.errors.InputError` (so is a reader crash or timeout before the first result).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rooftop.errors import InputError
from rooftop.parsers.model import (
    IDENTITY_COLUMNS,
    RULE_COLUMNS,
    InputAccounting,
    ParseResult,
    Rejected,
    empty_rules,
    normalize_kernels,
)
from rooftop.parsers.ncu.rep_container import ContainerInfo, read_container
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.units import si_factor

FORMAT = "ncu-rep"
INSTALL_HINT = "pip install 'rooftop[ncu-rep]'"
REEXPORT_HINT = "re-export it with ncu --export, or export a CSV with ncu --import FILE --csv --page raw"
WORKER = Path(__file__).with_name("_rep_worker.py")
TIMEOUT_ENV = "ROOFTOP_NCU_REP_TIMEOUT"

# ncu_report MsgType_* and SpeedupType_* values (stable across releases).
_MSG_TYPE = {0: "INF", 1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
_SPEEDUP_TYPE = {1: "local", 2: "global"}

_DURATION = "gpu__time_duration.sum"


def _module_available() -> bool:
    try:
        return importlib.util.find_spec("ncu_report") is not None
    except (ImportError, ValueError):
        return False


def _timeout_s(size: int) -> float:
    """Time allowed for the reader: 120 s plus 2 s per MB (``ROOFTOP_NCU_REP_TIMEOUT`` overrides)."""
    env = os.environ.get(TIMEOUT_ENV)
    if env:
        try:
            return float(env)
        except ValueError:
            pass
    return 120.0 + 2.0 * size / 1e6


def _run_worker(path: str, timeout_s: float) -> tuple[list[dict[str, Any]], int | None, str]:
    """Run the reader in a child process: ``(messages, returncode or None on timeout, stderr tail)``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, str(WORKER), path], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            rc: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
        out.seek(0)
        err.seek(0)
        messages = []
        for raw in out:
            try:
                messages.append(json.loads(raw))
            except ValueError:
                break  # a line cut short by a crash
        stderr_tail = err.read()[-2000:].decode("utf-8", "replace")
    return messages, rc, stderr_tail


def _one_line(text: str, limit: int = 300) -> str:
    t = " ".join(text.split())
    return t if len(t) <= limit else t[: limit - 3] + "..."


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """Parse one report file into the kernel and rules tables (docs/formulas.md#inputs)."""
    path = src.path
    info = read_container(src.file)  # the bytes read: a decompressed copy of a .ncu-repz (parsers.open_input)
    if not _module_available():
        raise InputError(path, "is an Nsight Compute report, and reading it needs NVIDIA's ncu_report module", INSTALL_HINT)
    timeout = _timeout_s(info.size)
    messages, rc, stderr_tail = _run_worker(str(src.file), timeout)
    _raise_fatal(path, messages)
    crash = _reader_crash(path, messages, rc, timeout)
    got = _collect_results(path, messages, info)
    if not got.rows:
        reason = _no_results_reason(info) if crash is None else f"cannot be read: {crash}"
        raise InputError(path, reason, REEXPORT_HINT)
    rejected = got.rejected + _lost_results(path, info, got.count, crash)
    kernels = normalize_kernels(pd.DataFrame(got.rows))
    rules_df = pd.DataFrame(got.rules, columns=list(RULE_COLUMNS)) if got.rules else empty_rules()
    rules_df = rules_df.astype(RULE_COLUMNS)
    accounting = InputAccounting(path=path, format=FORMAT, records=len(got.rows), rejected=len(rejected))
    rejected.extend(got.bad_cells)
    meta = _meta(info, messages, crash, stderr_tail, got.unknown_units)
    return ParseResult(accounting=accounting, kernels=kernels, rules=rules_df, rejected=rejected, meta=meta)


def _raise_fatal(path: str, messages: list[dict[str, Any]]) -> None:
    """Raise :class:`InputError` when the reader reported a fatal error (module missing or file unreadable)."""
    fatal = next((m for m in messages if m.get("kind") == "fatal"), None)
    if fatal and fatal.get("what") == "import":
        raise InputError(path, "is an Nsight Compute report, and reading it needs NVIDIA's ncu_report module "
                         f"({_one_line(str(fatal.get('error')), 120)})", INSTALL_HINT)
    if fatal:
        raise InputError(path, f"cannot be read as an Nsight Compute report ({_one_line(str(fatal.get('error')), 200)})",
                         REEXPORT_HINT)


def _reader_crash(path: str, messages: list[dict[str, Any]], rc: int | None, timeout: float) -> str | None:
    """How the reader stopped before its end (timeout, signal, exit code), or ``None`` when it finished.

    A reader that stopped before its first result is an :class:`InputError` (docs/formulas.md#inputs).
    """
    if any(m.get("kind") == "end" for m in messages):
        return None
    if rc is None:
        crash = f"NVIDIA's ncu_report did not finish reading it within {timeout:.0f} s"
    else:
        how = f"signal {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"exit {rc}"
        crash = f"NVIDIA's ncu_report crashed reading it ({how})"
    if not any(m.get("kind") == "start" for m in messages):
        hint = f"set {TIMEOUT_ENV} to allow more time" if rc is None else REEXPORT_HINT
        raise InputError(path, f"cannot be read: {crash}; the file is likely corrupt", hint)
    return crash


@dataclass
class _Results:
    """What the reader's messages give: kernel rows, rule rows, rejections and the results seen."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    bad_cells: list[Rejected] = field(default_factory=list)  # listed, not counted: the launch is kept
    unknown_units: set[str] = field(default_factory=set)
    count: int = 0  # results seen (read or rejected): the next result's index


def _collect_results(path: str, messages: list[dict[str, Any]], info: ContainerInfo) -> _Results:
    """One row per usable result, one rejection per unusable one, in order (docs/formulas.md#inputs)."""
    got = _Results()
    for msg in messages:
        kind = msg.get("kind")
        if kind == "error":
            if msg.get("action") is None:
                got.rejected.append(Rejected(path, None, f"range {msg.get('range')} cannot be read: "
                                             f"{_one_line(str(msg.get('error')))}"))
                continue
            got.rejected.append(Rejected(path, None, f"result {got.count} (range {msg.get('range')}, action "
                                         f"{msg.get('action')}) cannot be read: {_one_line(str(msg.get('error')))}"))
            got.count += 1
        elif kind == "result":
            _add_result(path, msg, info, got)
            got.count += 1
    return got


def _add_result(path: str, msg: dict[str, Any], info: ContainerInfo, got: _Results) -> None:
    """Add one ``result`` message: its row and rules, or its rejection; a negative duration is nulled."""
    index = got.count
    where = f"result {index} (range {msg.get('range')}, action {msg.get('action')})"
    row = _build_row(msg, got.unknown_units)
    problem = _incomplete(row, index, info)
    if problem:
        got.rejected.append(Rejected(path, None, f"{where} {problem}"))
        return
    dur = row.get("duration_s")
    if dur is not None and dur < 0:
        got.bad_cells.append(Rejected(path, None, f"{where}: negative duration {dur} s set to null"))
        row["duration_s"] = None
    row.update(input=path, index=index, id=str(index))
    got.rows.append(row)
    got.rules.extend(dict(rule, input=path, index=index) for rule in _build_rules(msg.get("rules") or []))


def _truncation_where(info: ContainerInfo) -> str:
    """`` (the block at byte N runs past the end of the file)`` for a truncated report, else ``""``."""
    return f" (the block at byte {info.truncated_at} runs past the end of the file)" if info.truncated_at else ""


def _lost_results(path: str, info: ContainerInfo, seen: int, crash: str | None) -> list[Rejected]:
    """Rejections for results never seen: one line after a crash, else one per declared result not read."""
    if crash is not None:
        return [Rejected(path, None, f"results from {seen} on are lost: {crash}")]
    declared = info.declared_results
    if declared is None or declared <= seen:
        return []
    where = _truncation_where(info)
    return [Rejected(path, None, f"result {k} of {declared} declared by the report cannot be read{where}")
            for k in range(seen, declared)]


def _meta(
    info: ContainerInfo, messages: list[dict[str, Any]], crash: str | None, stderr_tail: str, unknown_units: set[str]
) -> dict[str, Any]:
    """``meta`` of the parse result: versions, command line, truncation, reader crash, unknown units."""
    meta: dict[str, Any] = {
        "ncu_version": info.ncu_version,
        "command_line": info.command_line,
        "declared_results": info.declared_results,
        "ncu_report_version": next((m.get("library_version") for m in messages if m.get("kind") == "start"), None),
    }
    if info.truncated_at is not None:
        meta["truncated_at_byte"] = info.truncated_at
        meta["truncation_note"] = f"the report is cut short{_truncation_where(info)}; results stored after it are lost"
    if crash is not None:
        meta["reader_crash"] = crash
        if stderr_tail.strip():
            meta["reader_stderr"] = stderr_tail[-500:]
    if unknown_units:
        meta["unknown_units"] = sorted(unknown_units)
    return meta


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


def _int(value: float | None) -> int | None:
    if value is None or not math.isfinite(value):
        return None
    v = round(value)
    return v if -(2**63) <= v < 2**63 else None


def _dims(metrics: dict[str, float], prefix: str) -> tuple[int, int, int] | None:
    vals = [_int(metrics.get(prefix + axis)) for axis in "xyz"]
    if any(v is None for v in vals):
        return None
    x, y, z = (int(v) for v in vals if v is not None)
    return x, y, z


def _dim_text(dims: tuple[int, int, int] | None) -> str | None:
    return None if dims is None else f"({dims[0]}, {dims[1]}, {dims[2]})"


# Reports written by ncu 2019.x store no units. Their CSV exports show that the only metric whose
# base unit is not already SI is the duration (``gpu__time_duration  nsecond``).
UNITLESS_DEFAULTS = (("gpu__time_duration", "nsecond"),)


def _default_unit(name: str, unit: str) -> str:
    if unit:
        return unit
    return next((u for prefix, u in UNITLESS_DEFAULTS if name.startswith(prefix)), unit)


def _build_row(msg: dict[str, Any], unknown_units: set[str]) -> dict[str, Any]:
    """One kernel-table row (without input/index/id) from a worker ``result`` message."""
    metrics: dict[str, float] = {}
    for name, (value, raw_unit) in (msg.get("metrics") or {}).items():
        unit = _default_unit(name, raw_unit)
        factor = si_factor(unit)
        if factor is None:  # never guessed: the metric is null, meta["unknown_units"] says why
            unknown_units.add(str(unit))
            factor = math.nan
        v = float(value)
        metrics[name] = v * factor if math.isfinite(v) else math.nan
    strings: dict[str, str] = msg.get("strings") or {}
    row: dict[str, Any] = {"name": msg.get("name")}
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
    row["grid"] = _int(metrics.get("launch__grid_size")) or (_int(math.prod(grid_dims)) if grid_dims else None)
    row["block"] = _int(metrics.get("launch__block_size")) or (_int(math.prod(block_dims)) if block_dims else None)
    row["nvtx"] = msg.get("nvtx")
    row["invocations"] = 1
    row["duration_s"] = metrics.pop(_DURATION, None)
    if row["duration_s"] is None:  # 2019.x name, as in the CSV parsers
        row["duration_s"] = metrics.get("gpu__time_duration")
    for key, value in metrics.items():
        if key not in IDENTITY_COLUMNS:
            row[key] = value
    return row


def _build_rules(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for res in raw:
        speedup = res.get("speedup")
        out.append(
            {
                "section": res.get("section_identifier") or None,
                "rule": res.get("rule_identifier") or res.get("name") or None,
                "type": _MSG_TYPE.get(int(res.get("type") or 0), "INF"),
                "title": res.get("title") or res.get("name") or None,
                "description": res.get("message") or None,
                "speedup_type": _SPEEDUP_TYPE.get(res["speedup_type"]) if res.get("speedup_type") is not None else None,
                "speedup_pct": float(speedup) if speedup is not None else None,
            }
        )
    return out
