"""NVLink and PCIe throughput per GPU from DCGM windows (docs/formulas.md#links).

Each window holds the mean of its samples of a link field; a GPU's figure per link and direction is
the mean over its windows weighted by the seconds each covers (``covered_s``; windows that cover no
time, single scrapes, count 1 s each so a capture of instants still has a figure) and the largest
window mean. Bytes per second throughout. Each figure is also a share of the link's peak per
direction (:mod:`.link_peaks`: PCIe by generation x width, NVLink by model, both sourced), null with
the reason where the peak cannot be sourced.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.fields import gpu_key
from rooftop.analyzer.windows.link_peaks import Peak, nvlink_peak, pcie_peak, whole_max

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
    """Per GPU (``gpu_key``), link and direction: mean and max bytes/s, the seconds they cover, and
    both as a share of the link's peak per direction (:mod:`.link_peaks`; null with the reason in
    ``peak_basis`` where it cannot be sourced); sorted by GPU key, then link and direction
    (``busiest_first``: by mean, largest first: the fleet's); the first :data:`MAX_ROWS`. Empty
    where no window carries a link field."""
    cols = [c for c in LINK_SERIES if c in windows.columns]
    if not len(windows) or not cols:
        return []
    keys = np.array([gpu_key(h, g, m) for h, g, m in zip(
        windows["host"].tolist(), windows["gpu"].tolist(),
        windows["mig"].tolist() if "mig" in windows.columns else [None] * len(windows), strict=True)], dtype=object)
    covered = (pd.to_numeric(windows["covered_s"], errors="coerce").fillna(0.0).to_numpy(dtype="float64")
               if "covered_s" in windows.columns else np.ones(len(windows)))
    weight = np.where(covered > 0, covered, 1.0)
    peaks = _peaks(windows, keys)
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
            pk = peaks[str(key)][link]
            mean = float(r["vw"] / r["w"])
            out.append({"gpu_key": str(key), "link": link, "direction": direction, "field": field,
                        "mean_bytes_s": mean, "max_bytes_s": float(r["peak"]),
                        "windows": int(r["n"]), "covered_s": float(r["covered"]),
                        "peak_bytes_s": pk.bytes_s, "peak_basis": pk.basis,
                        "share_of_peak": None if pk.bytes_s is None else mean / pk.bytes_s,
                        "max_share_of_peak": None if pk.bytes_s is None else float(r["peak"]) / pk.bytes_s})
    out.sort(key=lambda r: (r["gpu_key"], r["link"], r["direction"], r["field"]))
    if busiest_first:
        out.sort(key=lambda r: -r["mean_bytes_s"])
    return out[:MAX_ROWS]


def _peaks(windows: pd.DataFrame, keys: np.ndarray) -> dict[str, dict[str, Peak]]:
    """Per GPU key: the PCIe and NVLink peaks (:mod:`.link_peaks`) from its windows' device (the
    device-table name) and PCIe link fields (the fastest whole-number link its windows show)."""
    def col(name: str) -> list[Any]:
        return windows[name].tolist() if name in windows.columns else [None] * len(windows)

    link = {c: pd.to_numeric(pd.Series(col(c)), errors="coerce").to_numpy(dtype="float64")
            for c in ("pcie_link_gen", "pcie_link_width", "pcie_max_link_gen", "pcie_max_link_width")}
    devices = col("device")
    out: dict[str, dict[str, Peak]] = {}
    for key in dict.fromkeys(keys.tolist()):
        rows = np.flatnonzero(keys == key)
        dev = next((d for d in (devices[i] for i in rows) if isinstance(d, str) and d), None)
        vals = {c: whole_max([float(x) for x in a[rows] if np.isfinite(x)]) for c, a in link.items()}
        out[str(key)] = {"PCIe": pcie_peak(dev, vals["pcie_link_gen"], vals["pcie_link_width"],
                                           vals["pcie_max_link_gen"], vals["pcie_max_link_width"]),
                         "NVLink": nvlink_peak(dev)}
    return out
