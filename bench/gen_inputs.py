"""Synthetic inputs for the benchmarks and the fuzz/resource tests (deterministic, seeded).

Every writer streams to disk (bounded memory at any size) and returns the number of launches or
samples it wrote, counted independently of rooftop's parsers, so tests can check the accounting
``records + missing + rejected == total``.

* :func:`write_prom_text` — concatenated dcgm-exporter ``/metrics`` scrapes with millisecond
  timestamps on every sample (``promtool tsdb dump``-style), HELP/TYPE per scrape, several hosts,
  8 GPUs each, Kubernetes pod labels.
* :func:`write_dmon` — ``dcgmi dmon`` 3.x text (left-aligned, ``#Entity`` header and ``ID`` units
  row re-printed every 14 ticks, ``N/A`` for the first two ticks).
* :func:`write_ncu_raw` — an ``ncu --page raw --csv`` export: identity columns, units row, the
  hierarchical-roofline metrics, every field quoted.

Run ``python bench/gen_inputs.py OUTDIR`` to write the default benchmark set.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

T0_MS = 1_763_683_200_000  # 2025-11-21T00:00:00Z

# (DCGM field name, field id, prom type, value kind) — the default + DCP counters dcgm-exporter ships.
PROM_FIELDS: list[tuple[str, int, str, str]] = [
    ("DCGM_FI_DEV_SM_CLOCK", 100, "gauge", "int"),
    ("DCGM_FI_DEV_MEM_CLOCK", 101, "gauge", "int"),
    ("DCGM_FI_DEV_GPU_TEMP", 150, "gauge", "int"),
    ("DCGM_FI_DEV_POWER_USAGE", 155, "gauge", "float"),
    ("DCGM_FI_DEV_GPU_UTIL", 203, "gauge", "int"),
    ("DCGM_FI_DEV_FB_USED", 252, "gauge", "int"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1001, "gauge", "ratio"),
    ("DCGM_FI_PROF_SM_ACTIVE", 1002, "gauge", "ratio"),
    ("DCGM_FI_PROF_SM_OCCUPANCY", 1003, "gauge", "ratio"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004, "gauge", "ratio"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", 1005, "gauge", "ratio"),
    ("DCGM_FI_PROF_PIPE_FP64_ACTIVE", 1006, "gauge", "ratio"),
    ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", 1007, "gauge", "ratio"),
    ("DCGM_FI_PROF_PIPE_FP16_ACTIVE", 1008, "gauge", "ratio"),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", 1009, "gauge", "int"),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", 1010, "gauge", "int"),
]

# dmon short names for field ids 1001-1012 as DCGM 3.1.8 prints them.
DMON_FIELDS: list[tuple[str, int]] = [
    ("GRACT", 1001), ("SMACT", 1002), ("SMOCC", 1003), ("TENSO", 1004), ("DRAMA", 1005),
    ("FP64A", 1006), ("FP32A", 1007), ("FP16A", 1008), ("PCITX", 1009), ("PCIRX", 1010),
]


@dataclass(frozen=True)
class Written:
    """What a generator wrote: the file, its size, and the counts a parser must account for."""

    path: Path
    bytes: int
    total: int  # launches (ncu) or samples (DCGM)
    missing: int = 0  # of which the file itself says "no value" (N/A)


def _value(kind: str, rng: random.Random) -> str:
    if kind == "ratio":
        return f"{rng.random():.6f}"
    if kind == "float":
        return f"{rng.uniform(60, 700):.6f}"
    return str(rng.randrange(0, 2_000_000_000))


def write_prom_text(path: Path, *, hosts: int = 4, gpus: int = 8, scrapes: int = 60,
                    interval_ms: int = 1000, seed: int = 1,
                    fields: Sequence[tuple[str, int, str, str]] = PROM_FIELDS) -> Written:
    """Concatenated dcgm-exporter scrapes; ``total`` = scrapes x hosts x gpus x fields samples."""
    rng = random.Random(seed)
    labels = []
    for h in range(hosts):
        for g in range(gpus):
            uuid = f"GPU-{h:08x}-{g:04x}-4340-039d-25f2a83cdc{g:02x}"
            labels.append(
                f'gpu="{g}",UUID="{uuid}",pci_bus_id="00000000:{g + 16:02X}:00.0",device="nvidia{g}",'
                f'modelName="NVIDIA H100 80GB HBM3",Hostname="node-{h:03d}",'
                f'DCGM_FI_DRIVER_VERSION="580.95.05",container="main",namespace="team-{h % 3}",'
                f'pod="train-{h:03d}-{g}"'
            )
    pool = {kind: [_value(kind, rng) for _ in range(4096)] for kind in ("ratio", "float", "int")}
    n = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for s in range(scrapes):
            ts = T0_MS + s * interval_ms
            chunk: list[str] = []
            for name, _fid, ptype, kind in fields:
                chunk.append(f"# HELP {name} {name.lower()}\n# TYPE {name} {ptype}\n")
                vals = pool[kind]
                off = rng.randrange(4096)
                for i, lab in enumerate(labels):
                    chunk.append(f"{name}{{{lab}}} {vals[(off + i) % 4096]} {ts}\n")
                n += len(labels)
            fh.write("".join(chunk))
    return Written(path, path.stat().st_size, n)


def write_prom_text_bytes(path: Path, target_bytes: int, **kw: int) -> Written:
    """A Prometheus text file of about ``target_bytes`` (scrape count chosen to fit)."""
    probe = write_prom_text(path, scrapes=1, **kw)
    scrapes = max(1, target_bytes // max(1, probe.bytes))
    return write_prom_text(path, scrapes=scrapes, **kw)


def write_dmon(path: Path, *, gpus: int = 8, ticks: int = 1000, seed: int = 2,
               fields: Sequence[tuple[str, int]] = DMON_FIELDS, na_ticks: int = 2) -> Written:
    """``dcgmi dmon`` 3.x text; ``total`` = ticks x gpus x fields, ``missing`` = the N/A cells."""
    rng = random.Random(seed)
    widths = [28 if fid in (1009, 1010, 1011, 1012) else 13 for _, fid in fields]
    header = "#Entity   " + "".join(f"{name:<{w}}" for (name, _), w in zip(fields, widths, strict=True))
    units = "ID".ljust(len(header))
    n = missing = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(f"dcgmi dmon -e {','.join(str(f) for _, f in fields)} -d 1000\n")
        out: list[str] = []
        for t in range(ticks):
            if t % 14 == 0:
                out.append(header + "\n" + units + "\n")
            for g in reversed(range(gpus)):  # 3.1.x prints GPUs descending
                cells = []
                for (_, fid), w in zip(fields, widths, strict=True):
                    if t < na_ticks:
                        v = "N/A"
                        missing += 1
                    elif fid >= 1009:
                        v = str(rng.randrange(0, 40_000_000_000))
                    else:
                        v = f"{rng.random():.3f}"
                    cells.append(f"{v:<{w}}")
                    n += 1
                out.append(f"{f'GPU {g}':<10}" + "".join(cells) + "\n")
            if len(out) > 4096:
                fh.write("".join(out))
                out.clear()
        fh.write("".join(out))
    return Written(path, path.stat().st_size, n, missing)


# Raw-page metric columns: (metric, unit). Sorted alphabetically like ncu does.
NCU_METRICS: list[tuple[str, str]] = sorted([
    ("device__attribute_display_name", ""),
    ("device__attribute_multiprocessor_count", ""),
    ("dram__bytes.sum", "byte"),
    ("dram__bytes.sum.per_second", "byte/second"),
    ("dram__bytes.sum.peak_sustained", "byte/cycle"),
    ("dram__cycles_elapsed.avg.per_second", "hz"),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ("gpu__time_duration.sum", "ns"),
    ("l1tex__t_bytes.sum", "byte"),
    ("launch__block_size", ""),
    ("launch__grid_size", ""),
    ("launch__registers_per_thread", "register/thread"),
    ("launch__waves_per_multiprocessor", ""),
    ("lts__t_bytes.sum", "byte"),
    ("sm__cycles_elapsed.avg.per_second", "hz"),
    ("sm__inst_executed_pipe_tensor.sum", "inst"),
    ("sm__sass_thread_inst_executed_op_dadd_pred_on.sum", "inst"),
    ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum", "inst"),
    ("sm__sass_thread_inst_executed_op_dmul_pred_on.sum", "inst"),
    ("sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst"),
    ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst"),
    ("sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst"),
    ("sm__sass_thread_inst_executed_op_hadd_pred_on.sum", "inst"),
    ("sm__sass_thread_inst_executed_op_hfma_pred_on.sum", "inst"),
    ("sm__sass_thread_inst_executed_op_hmul_pred_on.sum", "inst"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "%"),
])
NCU_IDENTITY = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                "Block Size", "Grid Size", "Device", "CC"]
KERNEL_NAMES = [
    "void gemm_kernel<float, 128, 128, 8>(const float *, const float *, float *, int, int, int)",
    "void elementwise_add<__half>(const __half *, const __half *, __half *, unsigned long)",
    "ampere_sgemm_128x64_tn",
    "void reduce_sum<256>(const float *, float *, int)",
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10>(float *, const float *, int, int, int)",
    "void cutlass::Kernel2<cutlass_80_tensorop_h16816gemm_128x128_32x4_tn_align8>(Params)",
    "memcpy_tiny",
]


def _q(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def ncu_raw_header() -> str:
    """The header line and units row of the raw page (what a hand-made fixture also needs)."""
    head = ",".join(_q(c) for c in NCU_IDENTITY + [m for m, _ in NCU_METRICS])
    units = ",".join(_q(c) for c in [""] * len(NCU_IDENTITY) + [u for _, u in NCU_METRICS])
    return head + "\n" + units + "\n"


def ncu_raw_row(i: int, name: str, rng: random.Random, *, duration_ns: float | None = None) -> str:
    """One launch of the raw page, every field quoted."""
    block = rng.choice([32, 64, 128, 256, 512, 1024])
    grid = rng.choice([1, 8, 80, 132, 1024, 65536])
    dur = duration_ns if duration_ns is not None else rng.uniform(2_000, 5_000_000)
    sec = dur * 1e-9
    dram = rng.uniform(1e3, 2e9)
    vals: dict[str, str] = {
        "device__attribute_display_name": "NVIDIA H100 80GB HBM3",
        "device__attribute_multiprocessor_count": "132",
        "dram__bytes.sum": f"{dram:.0f}",
        "dram__bytes.sum.per_second": f"{dram / sec:.6g}",
        "dram__bytes.sum.peak_sustained": "64",
        "dram__cycles_elapsed.avg.per_second": "2619000000",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": f"{rng.uniform(0, 95):.2f}",
        "gpu__time_duration.sum": f"{dur:.0f}",
        "l1tex__t_bytes.sum": f"{dram * rng.uniform(1, 8):.0f}",
        "launch__block_size": str(block),
        "launch__grid_size": str(grid),
        "launch__registers_per_thread": str(rng.choice([32, 64, 128, 255])),
        "launch__waves_per_multiprocessor": f"{grid * block / (132 * 2048):.2f}",
        "lts__t_bytes.sum": f"{dram * rng.uniform(1, 3):.0f}",
        "sm__cycles_elapsed.avg.per_second": "1755000000",
        "sm__inst_executed_pipe_tensor.sum": str(rng.choice([0, 0, rng.randrange(1, 10**9)])),
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": f"{rng.uniform(0, 95):.2f}",
        "sm__warps_active.avg.pct_of_peak_sustained_active": f"{rng.uniform(5, 99):.2f}",
    }
    for m, _ in NCU_METRICS:
        if m not in vals:
            vals[m] = str(rng.choice([0, rng.randrange(0, 10**10)]))
    ident = [str(i), "4242", "python3.12", "127.0.0.1", name, "1", "7", f"({block}, 1, 1)",
             f"({grid}, 1, 1)", "0", "9.0"]
    return ",".join(_q(c) for c in ident + [vals[m] for m, _ in NCU_METRICS]) + "\n"


def write_ncu_raw(path: Path, *, kernels: int = 100_000, seed: int = 3,
                  names: Sequence[str] = KERNEL_NAMES, preamble: bool = True) -> Written:
    """An ``ncu --page raw --csv`` export with ``kernels`` launches; ``total`` = kernels."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        if preamble:
            fh.write("==PROF== Connected to process 4242 (/usr/bin/python3.12)\n")
        fh.write(ncu_raw_header())
        buf: list[str] = []
        for i in range(kernels):
            buf.append(ncu_raw_row(i, names[i % len(names)], rng))
            if len(buf) >= 2048:
                fh.write("".join(buf))
                buf.clear()
        fh.write("".join(buf))
        if preamble:
            fh.write("==PROF== Disconnected from process 4242\n")
    return Written(path, path.stat().st_size, kernels)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--kernels", type=int, default=100_000)
    ap.add_argument("--prom-scrapes", type=int, default=60)
    ap.add_argument("--dmon-ticks", type=int, default=20_000)
    a = ap.parse_args(argv)
    a.outdir.mkdir(parents=True, exist_ok=True)
    for w in (write_prom_text(a.outdir / "dcgm.prom", scrapes=a.prom_scrapes),
              write_dmon(a.outdir / "dcgm.dmon.txt", ticks=a.dmon_ticks),
              write_ncu_raw(a.outdir / "ncu.raw.csv", kernels=a.kernels)):
        print(f"{w.path}  {w.bytes / 1e6:.1f} MB  total={w.total} missing={w.missing}")


if __name__ == "__main__":
    main()
