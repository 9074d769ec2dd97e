"""The peak a link's throughput is a share of (docs/formulas.md#links, "% of peak").

* PCIe: bytes per second per lane and direction by generation, the PCI-SIG Base Specification's
  transfer rate times its line encoding (Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b; Gen3 8, Gen4 16,
  Gen5 32 GT/s with 128b/130b; Gen6 64 GT/s PAM4 in FLIT mode, 242 of every 256 bytes carrying TLP
  data), times the link width. The generation and width are the input's current link (DCGM fields
  237/238, nvidia-smi ``pcie.link.gen.current``/``pcie.link.width.current``), else its max link
  (235/236, ``pcie.link.gen.max``/``pcie.link.width.max``), else the model's from its datasheet
  (:data:`MODEL_LINKS`: "assumed").
* NVLink: the model's total NVLink bandwidth per direction from NVIDIA's datasheets (quoted there as
  the bidirectional total: per direction is half).

Unknown (None, with the reason) where the model is not known or not in :data:`MODEL_LINKS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# PCIe bytes/s per lane and direction: GT/s x encoding / 8 bits (PCI-SIG Base Specification 1.0a-6.0)
PCIE_LANE_BYTES_S: dict[int, float] = {
    1: 2.5e9 * 8 / 10 / 8,  # 0.25 GB/s
    2: 5.0e9 * 8 / 10 / 8,  # 0.5 GB/s
    3: 8.0e9 * 128 / 130 / 8,  # 0.985 GB/s
    4: 16.0e9 * 128 / 130 / 8,  # 1.969 GB/s
    5: 32.0e9 * 128 / 130 / 8,  # 3.938 GB/s
    6: 64.0e9 * 242 / 256 / 8,  # 7.56 GB/s (FLIT mode)
}


@dataclass(frozen=True)
class ModelLinks:
    """A device-table model's links: NVLink bytes/s per direction (0.0: the model has none), PCIe
    generation and width, and the datasheet they come from."""

    nvlink_bytes_s: float
    pcie_gen: int
    pcie_width: int
    source: str


_GB = 1e9
# keyed by the device table's names (analyzer/data/devices.json), the names windows carry in
# ``device``; NVLink per direction = the datasheet's bidirectional total / 2, PCIe the card's link
MODEL_LINKS: dict[str, ModelLinks] = {
    "Tesla V100-SXM2": ModelLinks(150 * _GB, 3, 16, "NVIDIA V100 datasheet: NVLink 300 GB/s, PCIe Gen3"),
    "Tesla V100-PCIE": ModelLinks(0.0, 3, 16, "NVIDIA V100 datasheet: PCIe Gen3, no NVLink"),
    "Tesla V100S-PCIE": ModelLinks(0.0, 3, 16, "NVIDIA V100S datasheet: PCIe Gen3, no NVLink"),
    "NVIDIA A100-SXM4-40GB": ModelLinks(300 * _GB, 4, 16, "NVIDIA A100 datasheet: NVLink 600 GB/s, PCIe Gen4"),
    "NVIDIA A100-SXM4-80GB": ModelLinks(300 * _GB, 4, 16, "NVIDIA A100 datasheet: NVLink 600 GB/s, PCIe Gen4"),
    "NVIDIA A100-PCIE-40GB": ModelLinks(300 * _GB, 4, 16,
                                        "NVIDIA A100 datasheet: NVLink bridge 600 GB/s, PCIe Gen4"),
    "NVIDIA A100 80GB PCIe": ModelLinks(300 * _GB, 4, 16,
                                        "NVIDIA A100 datasheet: NVLink bridge 600 GB/s, PCIe Gen4"),
    "NVIDIA A30": ModelLinks(100 * _GB, 4, 16, "NVIDIA A30 datasheet: NVLink 200 GB/s, PCIe Gen4"),
    "NVIDIA H100 SXM5 80GB": ModelLinks(450 * _GB, 5, 16, "NVIDIA H100 datasheet: NVLink 900 GB/s, PCIe Gen5"),
    "NVIDIA H100 PCIe": ModelLinks(300 * _GB, 5, 16, "NVIDIA H100 datasheet: NVLink bridge 600 GB/s, PCIe Gen5"),
    "NVIDIA H200": ModelLinks(450 * _GB, 5, 16, "NVIDIA H200 datasheet: NVLink 900 GB/s, PCIe Gen5"),
    "NVIDIA B200": ModelLinks(900 * _GB, 0, 0, "NVIDIA HGX B200 datasheet: NVLink 1.8 TB/s"),
    "NVIDIA L4": ModelLinks(0.0, 4, 16, "NVIDIA L4 datasheet: PCIe Gen4 x16, no NVLink"),
    "NVIDIA L40S": ModelLinks(0.0, 4, 16, "NVIDIA L40S datasheet: PCIe Gen4 x16, no NVLink"),
    "NVIDIA A10": ModelLinks(0.0, 4, 16, "NVIDIA A10 datasheet: PCIe Gen4, no NVLink"),
    "Tesla T4": ModelLinks(0.0, 3, 16, "NVIDIA T4 datasheet: PCIe Gen3 x16, no NVLink"),
}


@dataclass(frozen=True)
class Peak:
    """A link's peak bytes/s per direction (None: unknown or not applicable) and how it was found."""

    bytes_s: float | None
    basis: str


def _int(x: float | None) -> int | None:
    """A generation or width read from window means: a positive whole number, else None."""
    return round(x) if x is not None and math.isfinite(x) and x > 0 and abs(x - round(x)) < 1e-6 else None


def whole_max(values: list[float]) -> float | None:
    """The largest whole-number value (a window whose link changed inside it has a fractional mean
    and is left out): the fastest link the capture shows."""
    whole = [v for v in values if _int(v) is not None]
    return max(whole) if whole else None


def pcie_peak(device: str | None, gen: float | None, width: float | None, max_gen: float | None,
              max_width: float | None) -> Peak:
    """The PCIe peak of one GPU: the current link (``gen``/``width``, the highest the capture shows),
    else the input's max link, else the model's (assumed)."""
    model = MODEL_LINKS.get(device or "")
    g, w = _int(gen), _int(width)
    src_g = "current link (field 237)" if g else None
    src_w = "current link (field 238)" if w else None
    if g is None and _int(max_gen):
        g, src_g = _int(max_gen), "the link's max (field 235)"
    if w is None and _int(max_width):
        w, src_w = _int(max_width), "the link's max (field 236)"
    assumed = f"assumed: {device}'s link ({model.source})" if model is not None else None
    if model is not None and model.pcie_gen:
        if g is None:
            g, src_g = model.pcie_gen, assumed
        if w is None:
            w, src_w = model.pcie_width, assumed
    if g is None or w is None or g not in PCIE_LANE_BYTES_S:
        why = ("the input carries no PCIe link generation/width and names no GPU model (--device decides it)"
               if device is None else f"no PCIe generation/width in the input or the link table for {device}")
        return Peak(None, f"unknown: {why}")
    how = f"{src_g}" if src_g == src_w else f"generation {src_g}, width {src_w}"
    return Peak(PCIE_LANE_BYTES_S[g] * w, f"PCIe Gen{g} x{w}, {how}")


def nvlink_peak(device: str | None) -> Peak:
    """The model's NVLink bandwidth per direction (datasheet total / 2); None where unknown or none."""
    if device is None:
        return Peak(None, "unknown: the input names no GPU model (--device decides it)")
    model = MODEL_LINKS.get(device)
    if model is None:
        return Peak(None, f"unknown: no sourced NVLink bandwidth for {device}")
    if not model.nvlink_bytes_s:
        return Peak(None, f"n/a: {device} has no NVLink ({model.source})")
    return Peak(model.nvlink_bytes_s, f"{device}: total / 2 ({model.source})")
