"""Synthetic fleet: DCGM profiling samples for many hosts × GPUs at 1 Hz, with workload labels.

Writes straight into a rooftop dataset (the same writer and manifest ``rooftop ingest`` uses), or
renders Prometheus exposition text with timestamps (dcgm-exporter names) for ingest tests.

Each GPU runs a sequence of jobs (``segment_s`` long); every job has a regime with a known DCGM
signature (see :data:`REGIMES`) plus Gaussian noise, and a namespace/pod/container/job label
(idle GPUs have none). Deterministic for a seed.

    python bench/gen_fleet.py DATASET --hosts 125 --gpus 8 --seconds 10000   # 100M samples
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rooftop.analyzer.store.dataset import PartitionWriter  # noqa: E402
from rooftop.analyzer.store.layout import iso_ms  # noqa: E402
from rooftop.analyzer.store.manifest import Manifest  # noqa: E402
from rooftop.parsers.model import SAMPLE_SCHEMA  # noqa: E402

# DCGM field id -> exporter name
FIELDS: dict[int, str] = {
    1001: "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    1002: "DCGM_FI_PROF_SM_ACTIVE",
    1003: "DCGM_FI_PROF_SM_OCCUPANCY",
    1004: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    1005: "DCGM_FI_PROF_DRAM_ACTIVE",
    1006: "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    1007: "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
    1008: "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
    1009: "DCGM_FI_PROF_PCIE_TX_BYTES",
    1010: "DCGM_FI_PROF_PCIE_RX_BYTES",
}
FIELD_IDS = list(FIELDS)

# regime -> mean value per field (same order as FIELD_IDS); PCIe in bytes/s
REGIMES: dict[str, list[float]] = {
    "idle":      [0.00, 0.00, 0.00, 0.00, 0.00, 0.0, 0.00, 0.00, 1e5, 1e5],
    "training":  [0.97, 0.92, 0.45, 0.62, 0.35, 0.0, 0.10, 0.05, 2e9, 4e9],
    "inference": [0.90, 0.80, 0.60, 0.08, 0.72, 0.0, 0.20, 0.02, 1e9, 1e9],
    "dataload":  [0.35, 0.20, 0.10, 0.10, 0.05, 0.0, 0.03, 0.01, 6e9, 6e9],
}
REGIME_NAMES = list(REGIMES)
REGIME_P = [0.2, 0.45, 0.25, 0.1]
MODELS = ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"]
NAMESPACES = ["llm-train", "search-infer", "research", "batch"]
DEFAULT_START = datetime(2026, 11, 20, 22, 0, tzinfo=timezone.utc)


def host_samples(host: str, *, gpus: int = 8, seconds: int = 3600, start: datetime = DEFAULT_START,
                 segment_s: int = 1800, seed: int = 0, model: str | None = None,
                 regime: str | None = None, fields: list[int] | None = None,
                 t0_s: int = 0) -> pa.Table:
    """One host's samples, ``gpus × seconds × fields`` rows in ``SAMPLE_SCHEMA``.

    ``regime`` forces one regime for every GPU and segment (for constructed tests); ``t0_s``
    offsets the first sample from ``start`` (chunked generation).
    """
    fids = fields or FIELD_IDS
    col = {f: FIELD_IDS.index(f) for f in fids}
    hh = hashlib.sha1(host.encode()).digest()
    rng = np.random.default_rng([seed, int.from_bytes(hh[:4], "little"), t0_s])
    model = model or MODELS[int(hashlib.sha1(host.encode()).digest()[0]) % len(MODELS)]
    t = np.arange(t0_s, t0_s + seconds, dtype=np.int64)
    n_seg = int((t0_s + seconds) // segment_s) + 1
    # regime per (gpu, segment), drawn from a host-seeded stream so chunks agree
    seg_rng = np.random.default_rng([seed, 7, int.from_bytes(hh[4:8], "little")])
    if regime is None:  # drawn segment-major so a longer draw keeps the earlier segments
        seg_regime = seg_rng.choice(len(REGIME_NAMES), size=(n_seg, gpus), p=REGIME_P).T
    else:
        seg_regime = np.full((gpus, n_seg), REGIME_NAMES.index(regime))
    means = np.array([REGIMES[r] for r in REGIME_NAMES])  # (regimes, all fields)
    g = np.repeat(np.arange(gpus), len(t))  # (gpus*seconds,)
    tt = np.tile(t, gpus)
    seg = tt // segment_s
    reg = seg_regime[g, seg]
    base_ms = int(start.timestamp() * 1000)
    n = len(tt)
    # labels per (gpu, segment): job index unique per host/gpu/segment, none when idle
    label_code = np.where(reg == 0, -1, seg * gpus + g)
    ns_idx = np.where(label_code < 0, -1, (label_code * 2654435761) % len(NAMESPACES))
    tables = []
    for f in fids:
        m = means[reg, col[f]]
        if f >= 1009:
            val = m * rng.lognormal(0.0, 0.3, n)
        else:
            val = np.clip(m + rng.normal(0.0, 0.03, n) * (m > 0), 0.0, 1.0)
        tables.append((f, val))
    ts = np.tile(base_ms + tt * 1000, len(fids))
    gpu_col = np.tile(g, len(fids))
    fid_col = np.repeat(np.array(fids, dtype=np.int32), n)
    value = np.concatenate([v for _, v in tables])
    lab = np.tile(label_code, len(fids))
    nsi = np.tile(ns_idx, len(fids))
    gpu_names = pa.array([str(i) for i in range(gpus)])
    uuids = pa.array([f"GPU-{hashlib.sha1(f'{host}/{i}'.encode()).hexdigest()[:8]}-0000" for i in range(gpus)])
    ns_dict = pa.array(NAMESPACES)
    uniq, inv = np.unique(lab, return_inverse=True)
    pod_dict = pa.array([None if u < 0 else f"{host}-job{u}-pod" for u in uniq.tolist()])
    job_dict = pa.array([None if u < 0 else f"{host}-job{u}" for u in uniq.tolist()])
    cont_dict = pa.array([None if u < 0 else "main" for u in uniq.tolist()])
    fname_dict = pa.array([FIELDS[f] for f in fids])
    fname_idx = np.repeat(np.arange(len(fids), dtype=np.int32), n)

    def dict_col(indices: np.ndarray, dictionary: pa.Array) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), dictionary).cast(pa.string())

    ns_mask = pa.array(nsi < 0)
    cols = {
        "timestamp": pa.array(ts, pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        "host": pa.array(np.full(1, host)).take(pa.array(np.zeros(len(ts), dtype=np.int32))),
        "gpu": dict_col(gpu_col, gpu_names),
        "uuid": dict_col(gpu_col, uuids),
        "pci_bus_id": pa.nulls(len(ts), pa.string()),
        "model": pa.array([model]).take(pa.array(np.zeros(len(ts), dtype=np.int32))),
        "mig": pa.nulls(len(ts), pa.string()),
        "mig_profile": pa.nulls(len(ts), pa.string()),
        "field_id": pa.array(fid_col, pa.int32()),
        "field": dict_col(fname_idx, fname_dict),
        "value": pa.array(value, pa.float64()),
        "namespace": pa.DictionaryArray.from_arrays(
            pa.array(np.where(nsi < 0, 0, nsi), pa.int32(), mask=ns_mask.to_numpy(zero_copy_only=False)),
            ns_dict).cast(pa.string()),
        "pod": dict_col(inv.astype(np.int32), pod_dict),
        "container": dict_col(inv.astype(np.int32), cont_dict),
        "job": dict_col(inv.astype(np.int32), job_dict),
    }
    return pa.table(cols).cast(SAMPLE_SCHEMA)


def write_fleet(dataset: Path, *, hosts: int = 2, gpus: int = 2, seconds: int = 600,
                start: datetime = DEFAULT_START, seed: int = 0, chunk_s: int = 3600,
                segment_s: int = 1800, prefix: str = "node",
                regime: str | None = None) -> dict[str, int]:
    """Write a synthetic fleet into ``dataset`` (one manifest entry per host); returns counts."""
    dataset.mkdir(parents=True, exist_ok=True)
    manifest = Manifest.load(dataset)
    rows = 0
    for h in range(hosts):
        host = f"{prefix}-{h:04d}"
        key = f"gen_fleet:{host}:{gpus}:{seconds}:{start.isoformat()}:{seed}:{segment_s}:{regime}"
        digest = hashlib.sha256(key.encode()).hexdigest()
        if digest in manifest.sha256s():
            continue
        writer = PartitionWriter(dataset, digest[:16])
        for t0 in range(0, seconds, chunk_s):
            table = host_samples(host, gpus=gpus, seconds=min(chunk_s, seconds - t0), start=start,
                                 segment_s=segment_s, seed=seed, t0_s=t0, regime=regime)
            writer.write(table)
        files = writer.commit()
        manifest.entries.append({
            "path": key, "size": 0, "sha256": digest, "format": "synthetic", "records": writer.rows,
            "missing": 0, "rejected": 0, "rows": writer.rows, "start": iso_ms(writer.start_ms),
            "end": iso_ms(writer.end_ms), "files": files, "rejected_examples": [],
            "ingested_at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        })
        rows += writer.rows
    manifest.save()
    return {"rows": rows, "hosts": hosts, "gpus": hosts * gpus}


def _label(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    esc = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{name}="{esc}"'


def prometheus_text(table: pa.Table) -> str:
    """Samples as dcgm-exporter exposition lines with millisecond timestamps (``promtool`` style)."""
    lines: list[str] = []
    seen: set[str] = set()
    for r in table.to_pylist():
        name = r["field"] or FIELDS.get(r["field_id"], f"DCGM_FI_{r['field_id']}")
        if name not in seen:
            seen.add(name)
            lines += [f"# HELP {name} synthetic", f"# TYPE {name} gauge"]
        labels = [_label("gpu", r["gpu"]), _label("UUID", r["uuid"]), _label("modelName", r["model"]),
                  _label("Hostname", r["host"]), _label("container", r["container"]),
                  _label("namespace", r["namespace"]), _label("pod", r["pod"])]
        ms = int(r["timestamp"].timestamp() * 1000)
        lines.append(f"{name}{{{','.join(x for x in labels if x)}}} {r['value']:.6f} {ms}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--gpus", type=int, default=2, help="GPUs per host")
    ap.add_argument("--seconds", type=int, default=600, help="seconds of 1 Hz samples per GPU")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", default=DEFAULT_START.isoformat())
    ap.add_argument("--prom", type=Path, help="also write host 0 as Prometheus text to this file")
    args = ap.parse_args(argv)
    start = datetime.fromisoformat(args.start.replace("Z", "+00:00"))
    t0 = time.perf_counter()
    out = write_fleet(args.dataset, hosts=args.hosts, gpus=args.gpus, seconds=args.seconds,
                      start=start, seed=args.seed)
    dt = time.perf_counter() - t0
    print(f"wrote {out['rows']:,} samples ({out['gpus']} GPUs) to {args.dataset} in {dt:.1f} s")
    if args.prom:
        args.prom.write_text(prometheus_text(host_samples("node-0000", gpus=args.gpus,
                                                          seconds=args.seconds, start=start,
                                                          seed=args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
