"""``rooftop fleet``: the nightly analysis over a dataset, on the local or the Dask engine.

Period: ``[since, until)``; by default the 24 hours ending at the newest sample. The previous
period of equal length is read in the same pass (each fragment's samples are split into the two
time slices before windowing), so night-over-night change costs no second scan.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.analyzer.document import build_document, jsonable
from rooftop.analyzer.fleet import engines
from rooftop.analyzer.fleet.join import JoinRequest, fleet_join
from rooftop.analyzer.fleet.owners import allocated_idle, host_coverage, owner_rows
from rooftop.analyzer.fleet.rollup import (
    GROUPABLE,
    fleet_findings,
    gpu_count,
    group_columns,
    group_records,
    rollup,
    trend,
)
from rooftop.analyzer.health.gpus import gpu_health, health_findings, health_first, health_summary
from rooftop.analyzer.schema import Document
from rooftop.analyzer.store.layout import MS_PER_DAY, file_date, host_dir, iso_ms, parse_iso
from rooftop.analyzer.store.manifest import Manifest
from rooftop.analyzer.windows.links import link_rows
from rooftop.errors import InputError
from rooftop.parsers.model import SAMPLE_SCHEMA

DEFAULT_PERIOD = timedelta(hours=24)
_STRING_COLUMNS = frozenset(f.name for f in SAMPLE_SCHEMA if pa.types.is_string(f.type))
MAX_WINDOWS = 2000  # windows listed in the document; the roll-ups use all of them


def _ms(t: datetime) -> int:
    t = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
    return int(t.timestamp() * 1000)


def resolve_period(manifest: Manifest, since: datetime | None,
                   until: datetime | None) -> tuple[int, int, list[dict[str, Any]]]:
    """``[since, until)`` in epoch ms and the lint of hosts set aside while choosing it; defaults:
    until = newest sample + 1 ms, since = until - 24 h. The newest sample is taken over the hosts
    whose clock is not ahead of the others' (:func:`ahead_of_the_others`): one host with a skewed
    clock does not move the whole fleet's day (docs/formulas.md#fleet, "Period")."""
    lint: list[dict[str, Any]] = []
    if until is None:
        newest_by_host = host_newest(manifest)
        ahead = ahead_of_the_others(newest_by_host)
        kept = [t for h, t in newest_by_host.items() if h not in ahead]
        if not kept:  # no readable partition statistics: the entries' recorded ends
            kept = [t for e in manifest.entries if (t := parse_iso(e.get("end"))) is not None]
        if not kept:
            raise InputError(str(manifest.root), "holds no samples", "ingest DCGM inputs first")
        newest = max(kept)
        hi = _ms(newest) + 1
        if ahead:
            shown = ", ".join(f"{unquote(h)} (to {t.isoformat()})" for h, t in list(ahead.items())[:3])
            lint.append({"code": "fleet-clock-ahead", "kernels": [],
                         "message": f"{len(ahead)} host(s) hold samples more than {AHEAD.total_seconds() / 3600:g} h "
                                    f"ahead of every other host's newest ({newest.isoformat()}): a clock ahead? "
                                    f"They do not choose the default period: {shown}. Give --until to include "
                                    "them"})
    else:
        hi = _ms(until)
    lo = _ms(since) if since is not None else hi - int(DEFAULT_PERIOD.total_seconds() * 1000)
    if lo >= hi:
        raise InputError("--since/--until", "the period is empty (since is not before until)",
                         "give --since earlier than --until")
    return lo, hi, lint


AHEAD = timedelta(hours=6)  # a host's newest sample this far past every other host's: a clock ahead


def host_newest(manifest: Manifest) -> dict[str, datetime]:
    """The newest sample time of each host (its ``host_key=`` partition folder), from the Parquet
    statistics of its files in its newest ``date=`` partition (footers only: no data is read)."""
    import pyarrow.parquet as pq

    newest_day: dict[str, tuple[str, list[str]]] = {}
    for rel in manifest.files():
        parts = rel.split("/")
        host = host_dir(parts[1]) if len(parts) == 3 else None
        if host is None or not parts[0].startswith("date="):
            continue
        day = parts[0][5:]
        have = newest_day.get(host)
        if have is None or day > have[0]:
            newest_day[host] = (day, [rel])
        elif day == have[0]:
            have[1].append(rel)
    out: dict[str, datetime] = {}
    for host, (_day, rels) in newest_day.items():
        for rel in rels:
            try:
                meta = pq.read_metadata(manifest.root / rel)
                col = meta.schema.names.index("timestamp")
                for g in range(meta.num_row_groups):
                    stats = meta.row_group(g).column(col).statistics
                    if stats is None or not stats.has_min_max:
                        continue
                    t = _as_utc(stats.max)
                    if t is not None and (host not in out or t > out[host]):
                        out[host] = t
            except (OSError, ValueError, KeyError):
                continue
    return out


def _as_utc(v: Any) -> datetime | None:
    if isinstance(v, datetime):
        return v if v.tzinfo else v.replace(tzinfo=timezone.utc)
    if isinstance(v, int):
        return datetime.fromtimestamp(v / 1000, timezone.utc)
    return None


def ahead_of_the_others(newest: dict[str, datetime]) -> dict[str, datetime]:
    """The hosts whose newest sample lies more than :data:`AHEAD` after the newest of every host
    not ahead (newest first, while the gap to the next holds); never every host, so a fleet of one
    host, or of one host per night, is never set aside."""
    order = sorted(newest.items(), key=lambda ht: ht[1], reverse=True)
    ahead: dict[str, datetime] = {}
    for i, (h, t) in enumerate(order[:-1]):
        if t - order[i + 1][1] > AHEAD:
            ahead[h] = t
        else:
            break
    return ahead


def select_files(manifest: Manifest, lo: int, hi: int) -> list[str]:
    """Manifest files whose input and date partition overlap ``[lo, hi)``, in manifest order."""
    out: list[str] = []
    for e in manifest.entries:
        s, t = parse_iso(e.get("start")), parse_iso(e.get("end"))
        if s is not None and t is not None and (_ms(t) < lo or _ms(s) >= hi):
            continue
        for f in e.get("files", []):
            d = file_date(f)
            if d is not None:
                day0 = _ms(datetime.fromisoformat(d).replace(tzinfo=timezone.utc))
                if day0 + MS_PER_DAY <= lo or day0 >= hi:
                    continue
            out.append(f)
    return list(dict.fromkeys(out))  # small inputs of one ingest share files (fleet/batch.py): each once


def compute_windows(dataset: Path, files: list[str], spec: engines.ScanSpec, *, engine: str,
                    scheduler: str | None, workers: int
                    ) -> tuple[tuple[pd.DataFrame | None, ...], int, pd.DataFrame | None, list[dict[str, Any]]]:
    """Map-reduce the window partials of every file on ``engine``: finished windows per slice, how
    many samples of the last slice (the period analysed) named no GPU (set aside:
    :func:`~rooftop.analyzer.windows.reduce.without_unplaced`), with ``spec.health`` the period's
    reduced health observations (docs/formulas.md#health; else None), and the lint of the
    cumulative counters in that period (``dcgm-counter-reset``, per host). Counter intervals
    between read runs and files are differenced after the reduction (:func:`counter_boundaries`)."""
    from rooftop.analyzer.windows.counters import reset_lint
    from rooftop.analyzer.windows.reduce import finish_windows, without_unplaced

    paths = [str(dataset / f) for f in files]
    if engine == "dask":
        with engines.dask_client(scheduler, workers) as client:
            reduced = engines.run_dask(paths, spec, client)
    elif engine == "local":
        reduced = engines.run_local(paths, spec, threads=workers)  # same result for any count
    else:
        raise InputError("--engine", f"unknown engine {engine!r}", "use local or dask")
    if reduced is None:
        return tuple(None for _ in spec.slices), 0, None, []
    health = reduced.parts[len(spec.slices)] if spec.health else None
    parts, b_ends, b_resets = counter_boundaries(reduced, spec)
    out: list[pd.DataFrame | None] = []
    unplaced = 0
    for p in parts:
        wide, unplaced = (None, 0) if p is None else without_unplaced(finish_windows(p))
        out.append(wide)
    lo, hi = spec.slices[-1]
    resets = [r for r in (*reduced.resets, *b_resets) if lo <= r[1] < hi]
    intervals = (reduced.intervals[-1] if reduced.intervals else 0) + int(((b_ends >= lo) & (b_ends < hi)).sum())
    return tuple(out), unplaced, health, reset_lint(len(resets), intervals, resets)


def counter_boundaries(reduced: engines.Fragment, spec: engines.ScanSpec
                       ) -> tuple[engines.Partials, np.ndarray, tuple[tuple[str | None, int], ...]]:
    """The reduced window partials (one per slice) with the counter intervals between read runs and files added
    (:func:`rooftop.analyzer.windows.counters.across`, docs/formulas.md#counters "Across files"),
    the ends of those intervals (epoch ms) and their resets. Done once, after the reduction, on the
    runs' first and last counter rows, so both engines add the same rows in the same order."""
    from rooftop.analyzer.windows.counters import across
    from rooftop.analyzer.windows.reduce import combine_partials
    from rooftop.analyzer.windows.scan import window_partials_arrow

    none = np.zeros(0, dtype="int64")
    windows = reduced.parts[:len(spec.slices)]  # without the health table (spec.health)
    if reduced.edges is None or not len(reduced.edges):
        return windows, none, ()
    cols = [c for c in spec.columns if c in reduced.edges.columns]
    b = across(reduced.edges, spec.window_s, cols)
    if not len(b.samples):
        return windows, b.ends_ms if b.ends_ms is not None else none, b.reset_hosts
    table = pa.Table.from_pandas(b.samples.astype({c: "object" for c in cols if c in _STRING_COLUMNS}),
                                 preserve_index=False)
    extra = window_partials_arrow(table, spec.window_s, spec.slices)
    parts = tuple(p if e is None else e if p is None else combine_partials([p, e])
                  for p, e in zip(windows, extra, strict=True))
    return parts, b.ends_ms if b.ends_ms is not None else none, b.reset_hosts


def run_fleet(dataset: Path, *, since: datetime | None, until: datetime | None, by: list[str],
              engine: str, scheduler: str | None, workers: int, window_s: float,
              device: str | None, top: int, command: str,
              join: JoinRequest | None = None) -> Document:
    """The whole ``fleet`` job; returns the contract document (kind ``fleet``); with ``join``,
    its ``kernel_join`` compares the profiled kernels with the selected windows.

    One piece because it is the job's script, one call per step (options, period, scan, classify,
    roll-up, lint, document), read in the order the job runs.
    """
    from rooftop.analyzer.windows.fields import KEY_COLUMNS
    from rooftop.analyzer.windows.rules import window_devices

    if window_s <= 0:
        raise InputError("--window", f"must be positive, got {window_s}", "e.g. --window 60")
    bad = [b for b in by if b not in GROUPABLE]
    if bad:
        raise InputError("--by", f"cannot group by {', '.join(bad)}",
                         f"choose from {', '.join(GROUPABLE)}")
    dataset = Path(dataset)
    manifest = Manifest.load(dataset, must_exist=True)
    lo, hi, period_lint = resolve_period(manifest, since, until)
    length = hi - lo
    prev_lo = lo - length
    files = select_files(manifest, prev_lo, hi)
    # workload labels kept per window (the owners of the morning table), MIG share
    labels = list(dict.fromkeys([*group_columns(by), "namespace", "pod", "job", "mig_profile"]))
    if join is not None and join.column and join.column not in labels:
        labels.append(join.column)
    spec = engines.ScanSpec(columns=engines.scan_columns(list(KEY_COLUMNS), labels),
                            slices=((prev_lo, lo), (lo, hi)), window_s=window_s, health=True)
    (prev_w, cur_w), unplaced, health_obs, counter_lint = compute_windows(
        dataset, files, spec, engine=engine, scheduler=scheduler, workers=workers)
    lint: list[dict[str, Any]] = list(period_lint) + counter_lint
    windows = _classify(cur_w, device, evidence=False)  # roll-ups need labels, not text
    previous = _classify(prev_w, device, evidence=False)
    cur_roll = rollup(windows, by, window_s)
    if len(previous):
        table = trend(cur_roll, rollup(previous, by, window_s), by)
    else:
        table = cur_roll
        lint.append({"code": "fleet-no-previous-period",
                     "message": f"no samples in the previous period ({iso_ms(prev_lo)} to "
                                f"{iso_ms(lo)}): no night-over-night change", "kernels": []})
    from rooftop.analyzer.windows.lint import coverage_lint, device_assumed_lint
    from rooftop.analyzer.windows.reduce import unplaced_lint

    lint += device_assumed_lint(windows, device)
    lint += coverage_lint(windows) + unplaced_lint(unplaced) + host_lint(manifest, prev_lo, hi)
    lint += assumed_lint(manifest, prev_lo, hi)
    if not len(windows):
        lint.append({"code": "fleet-empty-period",
                     "message": f"no samples between {iso_ms(lo)} and {iso_ms(hi)}", "kernels": []})
    kernel_join = {"kernel_join": jsonable(fleet_join(join, windows))} if join is not None else {}
    groups = group_records(table, by)
    health = fleet_health(health_obs, windows)
    findings = health_first(health_findings(health, top), fleet_findings(groups, top))  # docs/formulas.md#health
    # the listed windows again with evidence text (classification keeps the sorted row order)
    window_recs = window_records(_classify(None if cur_w is None else cur_w.iloc[:MAX_WINDOWS], device))
    if len(windows) > MAX_WINDOWS:
        lint.append({"code": "fleet-windows-capped",
                     "message": f"{len(windows)} windows; the document lists the first "
                                f"{MAX_WINDOWS} (roll-ups use all)", "kernels": []})
    inputs, rejected = _inputs(manifest, prev_lo, hi)
    doc = build_document(
        kind="fleet", inputs=[], rejected=rejected, devices=window_devices(windows, device),
        findings=findings, windows=window_recs, lint=lint, command=command,
        extra={
            "groups": groups,
            "fleet": {
                "dataset": str(dataset), "engine": engine, "by": list(by), "window_s": window_s,
                "period": {"since": iso_ms(lo), "until": iso_ms(hi)},
                "previous_period": {"since": iso_ms(prev_lo), "until": iso_ms(lo)},
                "files_scanned": len(files), "windows_total": len(windows),
                "gpus": gpu_count(windows),
                "gpu_hours": float(cur_roll["gpu_hours"].sum()) if len(cur_roll) else 0.0,
                "owners": owner_rows(windows, previous, window_s),
                "allocated_idle": allocated_idle(windows, window_s),
                "coverage": host_coverage(windows, window_s, lo, hi),
                "links": link_rows(windows, busiest_first=True),
                "health": jsonable(health_summary(health, every_gpu=False)),
            },
            **kernel_join,
        },
    )
    # inputs come from the manifest (checksums recorded at ingest; the files may be gone by now)
    doc["inputs"] = jsonable(inputs)
    doc["run"]["input_sha256"] = {i["path"]: i["sha256"] for i in inputs}
    return doc


def fleet_health(observations: pd.DataFrame | None, windows: pd.DataFrame) -> list[dict[str, Any]]:
    """Per-GPU health of the period: every GPU with health fields or windows (docs/formulas.md#health)."""
    from rooftop.analyzer.health.partials import GPU_COLUMNS

    cols = [c for c in GPU_COLUMNS if c in windows.columns]
    gpus = windows[cols].drop_duplicates().to_dict("records") if len(windows) else []
    return gpu_health(observations if observations is not None else pd.DataFrame(), gpus)


def host_lint(manifest: Manifest, lo: int, hi: int) -> list[dict[str, Any]]:
    """Lint ``inputs-without-host``: inputs of the period whose samples named no host and that were
    ingested without ``--host``; their GPUs are keyed by the input (docs/formulas.md#fleet, "GPU identity")."""
    keys = [str(e["host_from_input"]) for e in manifest.entries if e.get("host_from_input")
            and not _outside(e, lo, hi)]
    if not keys:
        return []
    keys = list(dict.fromkeys(keys))
    return [{"code": "inputs-without-host", "kernels": [],
             "message": f"{len(keys)} input(s) name no host and were ingested without --host: each is its own "
                        f"host ({', '.join(keys[:3])}{', ...' if len(keys) > 3 else ''}), so two machines' GPU 0 "
                        "are never one GPU, but one machine's files without GPU UUIDs count its GPUs once per "
                        "file; ingest them with --host NAME"}]


def assumed_lint(manifest: Manifest, lo: int, hi: int) -> list[dict[str, Any]]:
    """Lint ``fleet-times-assumed``: inputs of the period whose times or interval rooftop assumed
    (recorded at ingest, docs/formulas.md#inputs "Assumed times"): their GPU-hours rest on it."""
    items = [(str(e["path"]), str(e["times_assumed"])) for e in manifest.entries
             if e.get("times_assumed") and not _outside(e, lo, hi)]
    if not items:
        return []
    shown = " | ".join(f"{p}: {t}" for p, t in items[:3])
    return [{"code": "fleet-times-assumed", "kernels": [],
             "message": f"GPU-hours of {len(items)} input(s) rest on times or intervals rooftop assumed, not "
                        f"read: {shown}{' | ...' if len(items) > 3 else ''}"}]


def _outside(e: dict[str, Any], lo: int, hi: int) -> bool:
    s, t = parse_iso(e.get("start")), parse_iso(e.get("end"))
    return s is not None and t is not None and (_ms(t) < lo or _ms(s) >= hi)


def _classify(wide: pd.DataFrame | None, device: str | None, evidence: bool = True) -> pd.DataFrame:
    """Classified windows sorted by host, gpu, mig, start (an empty frame when none)."""
    from rooftop.analyzer.windows.rules import classify_windows

    if wide is None or not len(wide):
        return pd.DataFrame({"host": [], "gpu": [], "mig": [], "model": [], "label": [], "start": []})
    return classify_windows(wide, device, evidence=evidence)


def window_records(windows: pd.DataFrame) -> list[dict[str, Any]]:
    """Contract ``windows`` entries (the DCGM helper's record shape), ordered by host, gpu, start."""
    if not len(windows):
        return []
    from rooftop.analyzer.windows.analysis import WindowAnalysis

    return WindowAnalysis(windows=windows).records()


def _inputs(manifest: Manifest, lo: int, hi: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    inputs: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    for e in manifest.entries:
        s, t = parse_iso(e.get("start")), parse_iso(e.get("end"))
        if s is not None and t is not None and (_ms(t) < lo or _ms(s) >= hi):
            continue
        inputs.append({k: e.get(k) for k in ("path", "format", "records", "missing", "rejected")}
                      | {"sha256": e.get("sha256")} | ({"ingested_at": e["ingested_at"]} if e.get("ingested_at") else {}))
        rejected.extend(e.get("rejected_examples", []))
    return inputs, rejected
