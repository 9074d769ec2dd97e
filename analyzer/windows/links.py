"""NVLink and PCIe throughput per GPU from DCGM windows (docs/formulas.md#links).

Each window holds the mean of its samples of a link field; a GPU's figure per link and direction is
the mean over its windows weighted by the seconds each covers (``covered_s``; windows that cover no
time, single scrapes, count 1 s each so a capture of instants still has a figure) and the largest
window mean. Bytes per second throughout. No share of a link's peak: the device table holds no link
bandwidth with a source, so none is stated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.fields import gpu_key

# window column -> (link, direction, the field it comes from, factor to bytes/s)
LINK_SERIES: dict[str, tuple[str, str, str, float]] = {
    "nvlink_tx_bytes": ("NVLink", "tx", "DCGM_FI_PROF_NVLINK_TX_BYTES (1011)", 1.0),
    "nvlink_rx_bytes": ("NVLink", "rx", "DCGM_FI_PROF_NVLINK_RX_BYTES (1012)", 1.0),
    "pcie_tx_bytes": ("PCIe", "tx", "DCGM_FI_PROF_PCIE_TX_BYTES (1009)", 1.0),
    "pcie_rx_bytes": ("PCIe", "rx", "DCGM_FI_PROF_PCIE_RX_BYTES (1010)", 1.0),
    # NVML's PCIe throughput in KB/s (nvidia-smi dmon -s t rxpci/txpci, MB/s x 1000 at parse)
    "pcie_tx_kbs": ("PCIe", "tx", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT (200, NVML; nvidia-smi txpci)", 1000.0),
    "pcie_rx_kbs": ("PCIe", "rx", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT (201, NVML; nvidia-smi rxpci)", 1000.0),
    # DCGM 4.6 cumulative byte counters, differenced (analyzer/windows/counters.py)
    "pcie_tx_total_bytes_s": ("PCIe", "tx", "DCGM_FI_PROF_PCIE_TX_BYTES_TOTAL (1091, differenced)", 1.0),
    "pcie_rx_total_bytes_s": ("PCIe", "rx", "DCGM_FI_PROF_PCIE_RX_BYTES_TOTAL (1092, differenced)", 1.0),
}
MAX_ROWS = 200


def link_rows(windows: pd.DataFrame, busiest_first: bool = False) -> list[dict[str, Any]]:
    """Per GPU (``gpu_key``), link and direction: mean and max bytes/s and the seconds they cover;
    sorted by GPU key, then link and direction (``busiest_first``: by mean, largest first: the
    fleet's); the first :data:`MAX_ROWS`. Empty where no window carries a link field."""
    cols = [c for c in LINK_SERIES if c in windows.columns]
    if not len(windows) or not cols:
        return []
    keys = np.array([gpu_key(h, g, m) for h, g, m in zip(
        windows["host"].tolist(), windows["gpu"].tolist(),
        windows["mig"].tolist() if "mig" in windows.columns else [None] * len(windows), strict=True)], dtype=object)
    covered = (pd.to_numeric(windows["covered_s"], errors="coerce").fillna(0.0).to_numpy(dtype="float64")
               if "covered_s" in windows.columns else np.ones(len(windows)))
    weight = np.where(covered > 0, covered, 1.0)
    out: list[dict[str, Any]] = []
    for c in cols:
        link, direction, field, factor = LINK_SERIES[c]
        v = pd.to_numeric(windows[c], errors="coerce").to_numpy(dtype="float64") * factor
        ok = np.isfinite(v) & (v >= 0)
        if not ok.any():
            continue
        df = pd.DataFrame({"gpu_key": keys[ok], "v": v[ok], "w": weight[ok], "vw": v[ok] * weight[ok],
                           "covered": covered[ok]})
        g = df.groupby("gpu_key", sort=True).agg(vw=("vw", "sum"), w=("w", "sum"), peak=("v", "max"),
                                                 covered=("covered", "sum"), n=("v", "size"))
        for key, r in g.iterrows():
            out.append({"gpu_key": str(key), "link": link, "direction": direction, "field": field,
                        "mean_bytes_s": float(r["vw"] / r["w"]), "max_bytes_s": float(r["peak"]),
                        "windows": int(r["n"]), "covered_s": float(r["covered"]),
                        "share_of_peak": None})
    out.sort(key=lambda r: (r["gpu_key"], r["link"], r["direction"], r["field"]))
    if busiest_first:
        out.sort(key=lambda r: -r["mean_bytes_s"])
    return out[:MAX_ROWS]
