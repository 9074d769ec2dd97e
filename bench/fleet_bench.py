"""Fleet benchmark: ingest throughput, the fleet pass vs an equivalent DuckDB query, peak memory,
Dask with 1 vs 2 workers. Prints a table and writes JSON (default ``bench/results/fleet.json``).

    python bench/fleet_bench.py --hosts 35 --gpus 8 --seconds 3600      # ~10M samples
    python bench/fleet_bench.py --tiny                                    # seconds, for a smoke test

Every measured step runs in its own subprocess so its peak RSS (``ru_maxrss``) is its own; Dask
workers are separate processes: their memory is not in the client's figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

START = datetime(2026, 11, 20, 22, 0, tzinfo=timezone.utc)

DUCKDB_SQL = """
WITH s AS (
  SELECT host, gpu, uuid, model, mig, epoch_ms(timestamp) // {win_ms} AS w,
         timestamp >= to_timestamp({lo_s}) AS cur, timestamp, field_id, value
  FROM read_parquet('{glob}', hive_partitioning = false)
  WHERE timestamp >= to_timestamp({prev_s}) AND timestamp < to_timestamp({hi_s})
    AND field_id BETWEEN 1001 AND 1010
), win AS (
  -- the same windows and per-window aggregates as the fleet pass: every windowed field's mean
  -- (the generator writes fields 1001-1010), sample count, first/last sample time
  SELECT host, gpu, uuid, model, mig, w, cur,
    avg(value) FILTER (WHERE field_id = 1001) AS gr,
    avg(value) FILTER (WHERE field_id = 1002) AS sm,
    avg(value) FILTER (WHERE field_id = 1003) AS occupancy,
    avg(value) FILTER (WHERE field_id = 1004) AS tensor,
    avg(value) FILTER (WHERE field_id = 1005) AS dram,
    avg(value) FILTER (WHERE field_id = 1006) AS fp64,
    avg(value) FILTER (WHERE field_id = 1007) AS fp32,
    avg(value) FILTER (WHERE field_id = 1008) AS fp16,
    avg(value) FILTER (WHERE field_id = 1009) AS pcie_tx,
    avg(value) FILTER (WHERE field_id = 1010) AS pcie_rx,
    count(*) AS n_samples, min(timestamp) AS first_ts, max(timestamp) AS last_ts
  FROM s GROUP BY ALL
), lab AS (
  SELECT *, greatest(coalesce(tensor, 0), coalesce(fp64, 0), coalesce(fp32, 0), coalesce(fp16, 0)) AS pipe,
    CASE
      WHEN greatest(coalesce(gr, 0), coalesce(sm, 0), coalesce(dram, 0), coalesce(tensor, 0),
                    coalesce(fp64, 0), coalesce(fp32, 0), coalesce(fp16, 0)) < 0.05 THEN 'idle'
      WHEN dram >= 0.5 AND dram / 0.8 >= greatest(coalesce(tensor, 0), coalesce(fp64, 0),
                                                  coalesce(fp32, 0), coalesce(fp16, 0)) THEN 'memory-bound'
      WHEN greatest(coalesce(tensor, 0), coalesce(fp64, 0), coalesce(fp32, 0), coalesce(fp16, 0)) >= 0.5
        THEN 'compute-bound'
      WHEN (gr >= 0.4 AND sm < 0.25) OR gr < 0.4 THEN 'overhead-bound'
      ELSE 'mixed' END AS label
  FROM win
)
SELECT host, cur, count(*) AS windows, count(DISTINCT (gpu, mig)) AS gpus,
  count(*) * {window_s} / 3600.0 AS gpu_hours,
  avg(gr) AS gr_active, avg(sm) AS sm_active, avg(occupancy) AS sm_occupancy, avg(tensor) AS tensor_active,
  avg(dram) AS dram_active, avg(fp64) AS fp64_active, avg(fp32) AS fp32_active, avg(fp16) AS fp16_active,
  sum(n_samples) AS samples,
  count(*) FILTER (WHERE label = 'idle') / count(*) AS share_idle,
  count(*) FILTER (WHERE label = 'compute-bound') / count(*) AS share_compute,
  count(*) FILTER (WHERE label = 'memory-bound') / count(*) AS share_memory,
  count(*) FILTER (WHERE label = 'overhead-bound') / count(*) AS share_overhead
FROM lab GROUP BY host, cur ORDER BY host, cur
"""


COMPARED_METRICS = ("gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp64_active",
                    "fp32_active", "fp16_active")
COMPARED = ("windows", "gpu_hours", *COMPARED_METRICS, "share_idle", "share_compute", "share_memory",
            "share_overhead")


def _cpu_s() -> float:
    """User + system CPU seconds of this process so far (all its threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _rss_mb() -> float:
    """Peak resident memory of this process, MB: VmHWM (reset at exec, unlike ru_maxrss, which a
    child inherits from the parent it was forked from)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


# ------------------------------------------------------------------------------ subprocess steps


def step_fleet(dataset: str, engine: str, workers: int) -> dict[str, Any]:
    from rooftop.analyzer.fleet.pipeline import run_fleet

    t0, c0 = time.perf_counter(), _cpu_s()
    doc = run_fleet(Path(dataset), since=None, until=None, by=["host"], engine=engine, scheduler=None,
                    workers=workers, window_s=60.0, device=None, top=10, command="bench")
    dt, cpu = time.perf_counter() - t0, _cpu_s() - c0
    groups = {g["key"]["host"]: {"windows": g["windows"], "gpu_hours": g["gpu_hours"],
                                 **{m: g["metrics"].get(m) for m in COMPARED_METRICS},
                                 "share_idle": g["labels"]["idle"]["share"],
                                 "share_compute": g["labels"]["compute-bound"]["share"],
                                 "share_memory": g["labels"]["memory-bound"]["share"],
                                 "share_overhead": g["labels"]["overhead-bound"]["share"]}
              for g in doc["groups"]}
    return {"seconds": dt, "cpu_s": cpu, "peak_rss_mb": _rss_mb(), "groups": groups,
            "windows": doc["fleet"]["windows_total"], "period": doc["fleet"]["period"]}


def step_duckdb(dataset: str, threads: int, period: dict[str, str]) -> dict[str, Any]:
    import duckdb

    until = datetime.fromisoformat(period["until"].replace("Z", "+00:00"))
    since = datetime.fromisoformat(period["since"].replace("Z", "+00:00"))
    prev = since - (until - since)
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET TimeZone = 'UTC'")
    sql = DUCKDB_SQL.format(glob=f"{dataset}/date=*/*/*.parquet", win_ms=60000, window_s=60.0,
                            lo_s=since.timestamp(), hi_s=until.timestamp(), prev_s=prev.timestamp())
    t0, c0 = time.perf_counter(), _cpu_s()
    rows = con.execute(sql).fetchall()
    dt, cpu = time.perf_counter() - t0, _cpu_s() - c0
    cols = [d[0] for d in con.description]
    groups = {}
    for r in rows:
        rec = dict(zip(cols, r, strict=True))
        if rec["cur"]:
            groups[rec["host"]] = {k: rec[k] for k in COMPARED}
    return {"seconds": dt, "cpu_s": cpu, "peak_rss_mb": _rss_mb(), "groups": groups, "threads": threads}


def step_ingest(source: str, dataset: str) -> dict[str, Any]:
    from rooftop.analyzer.store.ingest import ingest_files
    from rooftop.parsers.source import ParseOptions

    t0 = time.perf_counter()
    s = ingest_files([Path(source)], Path(dataset), ParseOptions())
    dt = time.perf_counter() - t0
    return {"seconds": dt, "peak_rss_mb": _rss_mb(), "samples": s.rows,
            "bytes": Path(source).stat().st_size}


def _child(args: list[str], timeout: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, __file__, "_step", *args], capture_output=True, text=True,
                         timeout=timeout, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"step {args[0]} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# ------------------------------------------------------------------------------ driver


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float]:
    """Largest absolute differences between our groups and DuckDB's (same hosts)."""
    diffs: dict[str, float] = {}
    for host, g in ours.items():
        d = theirs.get(host)
        if d is None:
            diffs["missing_hosts"] = diffs.get("missing_hosts", 0) + 1
            continue
        for k in COMPARED:
            a, b = g.get(k), d.get(k)
            if a is not None and b is not None:
                diffs[k] = max(diffs.get(k, 0.0), abs(float(a) - float(b)))
    return diffs


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(),
                            "cpus": os.cpu_count()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        info["mem_gb"] = round(int(mem) / 1024 / 1024, 1)
        info["loadavg_1m"] = os.getloadavg()[0]
    except OSError:
        pass
    import duckdb
    import pandas
    import pyarrow
    info.update({"pandas": pandas.__version__, "pyarrow": pyarrow.__version__, "duckdb": duckdb.__version__})
    try:
        import distributed
        info["distributed"] = distributed.__version__
    except ImportError:
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_step":
        name, rest = argv[1], argv[2:]
        if name == "fleet":
            res = step_fleet(rest[0], rest[1], int(rest[2]))
        elif name == "duckdb":
            res = step_duckdb(rest[0], int(rest[1]), json.loads(rest[2]))
        else:
            res = step_ingest(rest[0], rest[1])
        print(json.dumps(res))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=35)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=3600, help="per night, per GPU (two nights are written)")
    ap.add_argument("--ingest-seconds", type=int, default=625, help="Prometheus text for ingest: 8 GPUs x this")
    ap.add_argument("--work", type=Path, help="scratch folder (default: a temp dir, removed)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "fleet.json")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="keep the dataset already in --work/ds (same sizes)")
    ap.add_argument("--tiny", action="store_true", help="a few seconds: 2 hosts x 2 GPUs x 300 s")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--rounds", type=int, default=1, help="back-to-back rounds of ours vs DuckDB (1 and N threads)")
    args = ap.parse_args(argv)
    if args.tiny:
        args.hosts, args.gpus, args.seconds, args.ingest_seconds = 2, 2, 300, 60
    from gen_fleet import FIELD_IDS, host_samples, prometheus_text, write_fleet

    work = args.work or Path(tempfile.mkdtemp(prefix="rooftop-fleet-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    ds = work / "ds"
    results: dict[str, Any] = {"machine": machine(), "size": {
        "hosts": args.hosts, "gpus": args.hosts * args.gpus, "fields": len(FIELD_IDS),
        "seconds_per_night": args.seconds}}
    rows: list[tuple[str, str, str, str]] = []
    try:
        # 1. synthetic fleet, two nights, through the dataset writer
        t0 = time.perf_counter()
        n = 0
        if args.reuse and (ds / "_manifest.json").exists():
            n = sum(int(e.get("records", 0)) for e in json.loads((ds / "_manifest.json").read_text())["inputs"])
        else:
            for night in range(2):
                n += write_fleet(ds, hosts=args.hosts, gpus=args.gpus, seconds=args.seconds,
                                 start=START + timedelta(days=night), seed=night)["rows"]
        dt = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in ds.rglob("*.parquet"))
        results["write"] = {"samples": n, "seconds": dt, "parquet_bytes": size}
        rows.append(("write (gen + Parquet)", f"{n:,} samples", f"{dt:.1f} s", f"{n / dt / 1e6:.2f} M/s, "
                     f"{size / n:.1f} B/sample"))
        # 2. ingest through the real parser: Prometheus text with timestamps
        shutil.rmtree(work / "ds_ingest", ignore_errors=True)  # a kept --work folder: ingest anew
        src = work / "ingest.prom"
        src.write_text(prometheus_text(host_samples("ingest-host", gpus=8, seconds=args.ingest_seconds,
                                                    start=START)))
        ing = _child(["ingest", str(src), str(work / "ds_ingest")], args.timeout)
        results["ingest"] = ing
        rows.append(("ingest (Prometheus text)", f"{ing['samples']:,} samples",
                     f"{ing['seconds']:.1f} s", f"{ing['samples'] / ing['seconds'] / 1e3:.0f} k/s, "
                     f"{ing['bytes'] / ing['seconds'] / 1e6:.1f} MB/s, peak {ing['peak_rss_mb']:.0f} MB"))
        # 3. fleet pass (local) vs DuckDB at equal thread counts, back to back: ours 1 thread, DuckDB
        #    1 thread, ours N threads, DuckDB N threads; --rounds times (each ratio within one pair)
        threads_max = os.cpu_count() or 1
        per_night = n // 2
        local: dict[str, Any] | None = None
        results["rounds"] = []
        for rnd in range(1, args.rounds + 1):
            for threads in sorted({1, threads_max}):
                mine = _child(["fleet", str(ds), "local", str(threads)], args.timeout)
                if local is None:
                    local = results["fleet_local"] = mine
                mine["identical_to_1_thread"] = mine["groups"] == local["groups"]
                duck = _child(["duckdb", str(ds), str(threads), json.dumps(local["period"])], args.timeout)
                duck["vs_local"] = duck["seconds"] / mine["seconds"]
                duck["cpu_vs_local"] = duck["cpu_s"] / mine["cpu_s"]
                duck["max_abs_diff"] = compare(mine["groups"], duck["groups"])
                results["rounds"].append({"round": rnd, "threads": threads, "ours": mine, "duckdb": duck})
                results.setdefault(f"fleet_local_{threads}t", mine)
                results.setdefault(f"duckdb_{threads}t", duck)
                rows.append((f"fleet local, {threads} thread(s) #{rnd}", f"{n:,} samples", f"{mine['seconds']:.2f} s",
                             f"{n / mine['seconds'] / 1e6:.2f} M/s, CPU {mine['cpu_s']:.2f} s, peak "
                             f"{mine['peak_rss_mb']:.0f} MB, identical to 1 thread={mine['identical_to_1_thread']}"))
                rows.append((f"DuckDB SQL, {threads} thread(s) #{rnd}", f"{n:,} samples", f"{duck['seconds']:.2f} s",
                             f"ours/DuckDB speed = {duck['vs_local']:.3f}x (CPU {mine['cpu_s']:.2f} s vs "
                             f"{duck['cpu_s']:.2f} s: {duck['cpu_vs_local']:.2f}x), peak {duck['peak_rss_mb']:.0f} MB"))
        assert local is not None
        # 4. Dask with 1 and 2 workers
        if not args.no_dask:
            for w in (1, 2):
                d = _child(["fleet", str(ds), "dask", str(w)], args.timeout)
                d["identical_to_local"] = d["groups"] == local["groups"]
                results[f"fleet_dask_{w}w"] = d
                rows.append((f"fleet dask, {w} worker(s)", f"{n:,} samples", f"{d['seconds']:.1f} s",
                             f"identical={d['identical_to_local']}, client peak {d['peak_rss_mb']:.0f} MB"))
        results["samples_per_night"] = per_night
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'step':32} {'size':>22} {'time':>10}  notes")
    for r in rows:
        print(f"{r[0]:32} {r[1]:>22} {r[2]:>10}  {r[3]}")
    diffs = [r["duckdb"]["max_abs_diff"] for r in results.get("rounds", [])]
    if diffs:
        worst = {k: max(d.get(k, 0.0) for d in diffs) for k in diffs[0]}
        print("max |ours - DuckDB| per host, all runs:", {k: float(f"{v:.3g}") for k, v in worst.items()})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, default=str))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
