"""Hand-computed cases for the NVIDIA-sourced timeline thresholds (docs/formulas.md#timelines):
nsys gpu_time_util's strict 50 % in-use cut, and which host calls count as blocking (nsys
cuda_api_sync, cuda_memcpy_sync with its 64 KB host-to-device exception, cuda_memset_sync)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.timeline import sync_cover
from rooftop.analyzer.timeline.labels import label_device
from rooftop.analyzer.timeline.metrics import device_metrics, union
from rooftop.parsers.model import EVENT_COLUMNS


def _events(rows: list[dict[str, Any]]) -> pd.DataFrame:
    base = {c: None for c in EVENT_COLUMNS}
    full = [{**base, "input": "t", **r} for r in rows]
    return pd.DataFrame({c: pd.array([r[c] for r in full], dtype=t) for c, t in EVENT_COLUMNS.items()})


def _kernel(start: int, end: int, corr: int | None = None) -> dict[str, Any]:
    return {"kind": "kernel", "name": "k", "device": "0", "stream": 7, "start_ns": start, "end_ns": end,
            "correlation": corr, "pid": 1}


def test_exactly_half_idle_is_not_overhead_bound() -> None:
    """Kernels [0, 10 µs) and [30, 40 µs): busy 20 of a 40 µs span, idle fraction exactly 0.5. nsys
    gpu_time_util flags In-Use < 50 %, so 50 % in use is not low utilisation: kernel-bound."""
    ev = _events([_kernel(0, 10_000), _kernel(30_000, 40_000)])
    dt = device_metrics(ev)
    assert dt.metrics["idle_fraction"] == 0.5
    assert label_device(dt, union(np.zeros(0, np.int64), np.zeros(0, np.int64))).label == "kernel-bound"
    ev2 = _events([_kernel(0, 10_000), _kernel(30_001, 40_000)])  # 1 ns more idle than busy
    v = label_device(device_metrics(ev2), union(np.zeros(0, np.int64), np.zeros(0, np.int64)))
    assert v.label == "overhead-bound" and "gpu_time_util" in v.evidence[-1]


def _api(name: str, start: int, end: int, corr: int) -> dict[str, Any]:
    return {"kind": "runtime", "name": name, "start_ns": start, "end_ns": end, "correlation": corr, "pid": 1,
            "tid": 1}


@pytest.mark.parametrize(("call", "copy_bytes", "blocking"), [
    ("cudaStreamSynchronize", None, True),        # nsys cuda_api_sync
    ("cudaDeviceSynchronize", None, True),        # nsys cuda_api_sync
    ("cudaEventSynchronize", None, True),         # a host wait CUPTI records as synchronisation
    ("cudaStreamQuery", None, False),             # returns at once: never a wait
    ("cudaMemset", None, False),                  # asynchronous to the host on device memory
    ("cudaMemcpy", 65_536, False),                # host-to-device <= 64 KB: cuda_memcpy_sync leaves it out
    ("cudaMemcpy", 65_537, True),                 # larger: a synchronous copy that blocks the host
])
def test_which_host_calls_cover_a_gap(call: str, copy_bytes: int | None, blocking: bool) -> None:
    rows = [_kernel(0, 10_000), _kernel(50_000, 60_000), _api(call, 12_000, 48_000, 99)]
    if copy_bytes is not None:  # the copy the call made, joined on correlation id and process
        rows.append({"kind": "memcpy", "name": "[CUDA memcpy Host-to-Device]", "device": "0", "stream": 7,
                     "start_ns": 60_000, "end_ns": 60_500, "correlation": 99, "pid": 1, "bytes": copy_bytes})
    ev = _events(rows)
    cover = sync_cover(ev, "0")
    assert (len(cover.starts) == 1) is blocking
    if blocking:
        assert (cover.starts.tolist(), cover.ends.tolist()) == ([12_000], [48_000])


def test_a_device_to_host_copy_of_any_size_blocks() -> None:
    ev = _events([_api("cudaMemcpy", 12_000, 48_000, 5),
                  {"kind": "memcpy", "name": "[CUDA memcpy Device-to-Host]", "device": "0", "start_ns": 40_000,
                   "end_ns": 47_000, "correlation": 5, "pid": 1, "bytes": 4}])
    assert sync_cover(ev, "0").busy == 36_000
