"""Child process that reads one ``.ncu-rep`` with NVIDIA's ``ncu_report`` and streams JSON lines.

Run as ``python _ncu_rep_worker.py REPORT``. ``ncu_report`` is native code that aborts the whole
process on some corrupt reports (seen while fuzzing), so :mod:`parsers.ncu.rep` never loads a report
in its own process. This script is self-contained (no ``parsers`` import) so it runs from any
working directory. Output, one JSON object per line, flushed as it goes (a crash keeps what came
before it):

* ``{"kind": "start", "ranges": N, "library_version": str}``
* ``{"kind": "result", "range": r, "action": a, "name": str|null, "metrics": {name: [value, unit]},
  "strings": {name: str}, "nvtx": str|null, "rules": [...]}``
* ``{"kind": "error", "range": r, "action": a|null, "error": str}``
* ``{"kind": "fatal", "what": "import"|"load", "error": str}``
* ``{"kind": "end"}``
"""

from __future__ import annotations

import json
import sys
from typing import Any

_KIND_STRING = 2
_KIND_FLOATS = (3, 4)
_KIND_INTS = (5, 6)


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _value(metric: Any) -> float | str | None:
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


def _nvtx(action: Any) -> str | None:
    state = action.nvtx_state()
    if state is None:
        return None
    parts: list[str] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is None:
            continue
        dname = str(domain.name())
        for rname in [*domain.push_pop_ranges(), *domain.start_end_ranges()]:
            # the default domain's ranges by their bare name, as ncu's --nvtx-include writes them
            parts.append(str(rname) if dname in ("", "<default domain>") else f"{dname}:{rname}")
    return " > ".join(parts) if parts else None


def _rules(action: Any) -> list[dict[str, Any]]:
    out = []
    for res in action.rule_results_as_dicts():
        msg = dict(res.get("rule_message") or {})
        speedup = dict(res.get("speedup_estimation") or {})
        out.append(
            {
                "rule_identifier": str(res.get("rule_identifier") or ""),
                "name": str(res.get("name") or ""),
                "section_identifier": str(res.get("section_identifier") or ""),
                "title": str(msg.get("title") or ""),
                "message": str(msg.get("message") or ""),
                "type": int(msg.get("type") or 0),
                "speedup_type": int(speedup["type"]) if "type" in speedup else None,
                "speedup": float(speedup["speedup"]) if speedup.get("speedup") is not None else None,
            }
        )
    return out


def _action(action: Any) -> dict[str, Any]:
    metrics: dict[str, list[Any]] = {}
    strings: dict[str, str] = {}
    for name in action.metric_names():
        metric = action.metric_by_name(name)
        if metric is None:
            continue
        value = _value(metric)
        if value is None:
            continue
        if isinstance(value, str):
            strings[str(name)] = value
        else:
            metrics[str(name)] = [value, str(metric.unit())]
    try:
        name = action.name(action.NameBase_DEMANGLED) or action.name()
    except Exception:
        name = action.name()
    nvtx = None
    try:
        nvtx = _nvtx(action)
    except Exception:
        nvtx = None
    return {"name": name, "metrics": metrics, "strings": strings, "nvtx": nvtx, "rules": _rules(action)}


def main(path: str) -> int:
    try:
        import ncu_report  # type: ignore[import-not-found,unused-ignore]
    except Exception as exc:
        _emit({"kind": "fatal", "what": "import", "error": f"{type(exc).__name__}: {exc}"})
        return 0
    try:
        ctx = ncu_report.load_report(path)
        n_ranges = int(ctx.num_ranges())
    except Exception as exc:
        _emit({"kind": "fatal", "what": "load", "error": f"{type(exc).__name__}: {exc}"})
        return 0
    try:
        version = str(ctx.get_version())
    except Exception:
        version = None
    _emit({"kind": "start", "ranges": n_ranges, "library_version": version})
    for r in range(n_ranges):
        try:
            rng = ctx.range_by_idx(r)
            n_actions = int(rng.num_actions())
        except Exception as exc:
            _emit({"kind": "error", "range": r, "action": None, "error": f"{type(exc).__name__}: {exc}"})
            continue
        for a in range(n_actions):
            try:
                record = _action(rng.action_by_idx(a))
            except Exception as exc:
                _emit({"kind": "error", "range": r, "action": a, "error": f"{type(exc).__name__}: {exc}"})
                continue
            _emit({"kind": "result", "range": r, "action": a, **record})
    _emit({"kind": "end"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
