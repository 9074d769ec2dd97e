"""The DCGM fields a window averages, the window key and label columns (docs/formulas.md#windows)."""

from __future__ import annotations

import numpy as np

from rooftop.analyzer.windows.counters import DELTA_COLUMNS

PROFILE_METRICS: dict[int, str] = {
    1001: "gr_active",
    1002: "sm_active",
    1003: "sm_occupancy",
    1004: "tensor_active",
    1005: "dram_active",
    1006: "fp64_active",
    1007: "fp32_active",
    1008: "fp16_active",
    1009: "pcie_tx_bytes",
    1010: "pcie_rx_bytes",
    1011: "nvlink_tx_bytes",
    1012: "nvlink_rx_bytes",
    1013: "imma_active",
    1014: "hmma_active",
    1015: "dfma_active",
    203: "gpu_util",
    204: "mem_copy_util",
    155: "power_w",
    252: "fb_used_mib",
}
# windows also average the clocks, drawn on the timeline as coarse signals (not used by any label)
# and the max SM clock (113), the OFU efficiency estimate's denominator (docs/formulas.md#ofu)
WINDOW_FIELDS: dict[int, str] = {**PROFILE_METRICS, 100: "sm_clock_mhz", 101: "mem_clock_mhz",
                                 113: "max_sm_clock_mhz",
                                 200: "pcie_tx_kbs", 201: "pcie_rx_kbs",
                                 # the PCIe link a throughput is a share of (docs/formulas.md#links)
                                 235: "pcie_max_link_gen", 236: "pcie_max_link_width",
                                 237: "pcie_link_gen", 238: "pcie_link_width",
                                 **DELTA_COLUMNS}  # DCGM 4.6 counters' increases (docs/formulas.md#counters)  # NVML PCIe throughput, KB/s (docs/formulas.md#links)
METRICS: tuple[str, ...] = tuple(WINDOW_FIELDS.values())
KEY_COLUMNS = ["host", "gpu", "uuid", "pci_bus_id", "model", "mig", "window_start"]
LABEL_COLUMNS = ("namespace", "pod", "container", "job", "mig_profile")
PIPES = {"tensor": "tensor_active", "fp64": "fp64_active", "fp32": "fp32_active", "fp16": "fp16_active"}
TIMELINE_RATIOS = ("gr_active", "sm_active", "tensor_active", "dram_active")
COARSE_SERIES = ("gpu_util", "mem_copy_util", "power_w", "sm_clock_mhz", "mem_clock_mhz")  # NVML, nvidia-smi
# series a GPU's timeline carries only where it has a value (docs/formulas.md#windows "Timelines")
LINK_SERIES = ("nvlink_tx_bytes", "nvlink_rx_bytes", "pcie_tx_bytes", "pcie_rx_bytes", "pcie_tx_kbs", "pcie_rx_kbs",
               "pcie_tx_total_bytes_s", "pcie_rx_total_bytes_s")
OPTIONAL_SERIES = (*COARSE_SERIES, "est_ofu", *LINK_SERIES)
RATIO_METRICS = ("gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp64_active",
                 "fp32_active", "fp16_active", "imma_active", "hmma_active", "dfma_active")

_KEY_KEEP = [c for c in KEY_COLUMNS if c != "window_start"]

Codes = tuple[np.ndarray, np.ndarray]  # (int64 codes sorted like the values, missing = len(uniques); uniques)
Slices = tuple[tuple[int, int], ...]
_FID_MAX = max(WINDOW_FIELDS) + 1
_FID_LUT = np.full(_FID_MAX + 1, -1, dtype="int8")  # field id -> metric column; -1 at both ends: "other"
_FID_LUT[list(WINDOW_FIELDS)] = np.arange(len(WINDOW_FIELDS))


def gpu_key(host: object, gpu: object, mig: object = None) -> str:
    """The one GPU key from analysis to report: ``[<host>/]<gpu>[/mig <id>]`` (host and MIG
    instance only when the data names them)."""
    h = host if isinstance(host, str) and host else None
    g = gpu if isinstance(gpu, str) and gpu else "-"
    m = f"/mig {mig}" if isinstance(mig, str) and mig else ""
    return (f"{h}/{g}" if h else g) + m
