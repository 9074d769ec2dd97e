"""PCI bus ids in one form (docs/formulas.md#windows, "GPU identity").

NVML prints a GPU's bus id as ``domain:bus:device.function`` with an 8-hex-digit domain in upper
case (``nvmlPciInfo_t.busId``, ``"%08X:%02X:%02X.0"``; nvidia-smi ``pci.bus_id``, dcgm-exporter's
``pci_bus_id`` label, DCGM field 57 ``DCGM_FI_DEV_PCI_BUSID``: ``00000000:3B:00.0``); Linux sysfs and
``lspci -D`` print a 4-digit domain in lower case (``0000:3b:00.0``), ``lspci`` none (``3b:00.0``).
All become NVML's form: domain zero-padded to 8 digits (0 when absent), bus and device to 2,
hex digits upper case. Anything else is not a bus id (null), so a garbled label never names a GPU.
"""

from __future__ import annotations

import re
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc

_BUS_ID = re.compile(r"^\s*(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-7])\s*$")


@lru_cache(maxsize=4096)
def normalise_bus_id(value: str | None) -> str | None:
    """``0000:3b:00.0``, ``3B:00.0``, ``00000000:3B:00.0`` -> ``00000000:3B:00.0``; None if not a bus id."""
    if value is None:
        return None
    m = _BUS_ID.match(value)
    if m is None:
        return None
    dom, bus, dev, fn = m.groups()
    return f"{int(dom or '0', 16):08X}:{int(bus, 16):02X}:{int(dev, 16):02X}.{fn}"


def normalise_array(values: pa.Array) -> pa.Array:
    """:func:`normalise_bus_id` over a string array, each distinct value once."""
    if not len(values) or values.null_count == len(values):
        return pa.nulls(len(values), pa.string())
    enc = pc.dictionary_encode(values)
    uniq = pa.array([normalise_bus_id(v) for v in enc.dictionary.to_pylist()], pa.string())
    return uniq.take(enc.indices)
