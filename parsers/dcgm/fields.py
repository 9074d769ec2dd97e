"""DCGM field IDs and every name they go by; blank sentinels; nvidia-smi column mapping.

The field ID is the stable key. A field is known by its classic enum name (what dcgm-exporter
emits, ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``), by the DCGM 4.6 canonical name
(``DCGM_FI_PROF_TENSOR_UTIL_RATIO``), and by its ``dcgmi dmon`` short name (``TENSO``).
IDs, names and short names were checked against NVIDIA/DCGM ``dcgm_fields.h``/``dcgm_fields.cpp``
(v3.3.9 and v4.6.0) and the real ``dcgmi dmon -l`` output of DCGM 3.1.8.

DCGM 4.6.1 adds fields in SI units under new IDs (1600-1612: clocks in Hz, energy in J, fan speed
as a ratio, BAR1 in bytes) and deprecates the fields they replace (:data:`SI_SUCCESSORS`, from
NVIDIA go-dcgm's DCGM 4.6.1 ``dcgm_fields.h``). They are stored as the replaced field, converted.

dcgm-exporter 4.9.0 (DCGM 4.7) renamed 23 default fields and changed 11 units (its release text);
the new names are not in any source at hand, so none is listed: a name not listed is read by DCGM's
field-naming standard (:func:`by_grammar`: unit suffix, stem of a listed field), else rejected as
an unknown field, never guessed. Field 203 under ``DCGM_FI_DEV_GPU_UTIL_RATIO`` may be a percent or
a ratio: its value decides (:func:`percent_or_ratio`, docs/formulas.md#inputs).

Canonical units in the sample table: DCGM's own units of the classic fields (MHz, mJ, %, MiB),
except that the NVML utilisation percentages (203 GPU_UTIL, 204 MEM_COPY_UTIL, 206 ENC_UTIL,
207 DEC_UTIL) are stored as ratios 0..1 (:data:`TO_CANONICAL`), so nvidia-smi and DCGM streams
agree; :func:`canonical_factor` gives the factor for any name (docs/formulas.md#inputs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Field:
    id: int
    name: str  # classic enum name (dcgm-exporter metric name)
    short: str  # dcgmi dmon short name
    new_name: str | None = None  # DCGM 4.6 canonical name, when renamed


_F = Field
FIELDS: tuple[Field, ...] = (
    _F(1, "DCGM_FI_DRIVER_VERSION", "DRVER", "DCGM_FI_SYSTEM_DRIVER_VERSION"),
    _F(4, "DCGM_FI_DEV_COUNT", "DVCNT", "DCGM_FI_SYSTEM_GPU_QUANTITY"),
    _F(52, "DCGM_FI_DEV_NVML_INDEX", "NVIDX"),
    _F(90, "DCGM_FI_DEV_BAR1_TOTAL", "B1TTL"),  # MiB (DcgmCacheManager: NVML bytes / 1024 / 1024)
    _F(92, "DCGM_FI_DEV_BAR1_USED", "B1USE"),
    _F(93, "DCGM_FI_DEV_BAR1_FREE", "B1FRE"),
    _F(67, "DCGM_FI_DEV_MIG_MODE", "MGMOD"),
    _F(69, "DCGM_FI_DEV_MIG_MAX_SLICES", "MIGMS"),
    _F(100, "DCGM_FI_DEV_SM_CLOCK", "SMCLK"),
    _F(101, "DCGM_FI_DEV_MEM_CLOCK", "MMCLK"),
    _F(102, "DCGM_FI_DEV_VIDEO_CLOCK", "VICLK"),
    _F(110, "DCGM_FI_DEV_APP_SM_CLOCK", "SACLK"),
    _F(111, "DCGM_FI_DEV_APP_MEM_CLOCK", "MACLK"),
    # DCGM 3.x DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, renamed CLOCKS_EVENT_REASONS by 4.x (fieldtable v3.3.9 / v4.6.0)
    _F(112, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DVCCTR", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"),
    _F(113, "DCGM_FI_DEV_MAX_SM_CLOCK", "SMMAX"),
    _F(114, "DCGM_FI_DEV_MAX_MEM_CLOCK", "MMMAX"),
    _F(115, "DCGM_FI_DEV_MAX_VIDEO_CLOCK", "VIMAX"),
    _F(140, "DCGM_FI_DEV_MEMORY_TEMP", "MMTMP", "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS"),
    _F(150, "DCGM_FI_DEV_GPU_TEMP", "TMPTR", "DCGM_FI_DEV_GPU_TEMP_CELSIUS"),
    _F(151, "DCGM_FI_DEV_MEM_MAX_OP_TEMP", "GMMOT", "DCGM_FI_DEV_MEMORY_MAX_OP_TEMP_CELSIUS"),
    _F(152, "DCGM_FI_DEV_GPU_MAX_OP_TEMP", "GGMOT", "DCGM_FI_DEV_GPU_MAX_OP_TEMP_CELSIUS"),
    _F(155, "DCGM_FI_DEV_POWER_USAGE", "POWER", "DCGM_FI_DEV_BOARD_POWER_WATTS"),
    _F(156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "TOTEC"),
    _F(157, "DCGM_FI_DEV_POWER_USAGE_INSTANT", "POWINST", "DCGM_FI_DEV_BOARD_POWER_RAW_WATTS"),
    _F(158, "DCGM_FI_DEV_SLOWDOWN_TEMP", "SDTMP", "DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS"),
    _F(159, "DCGM_FI_DEV_SHUTDOWN_TEMP", "SHTMP", "DCGM_FI_DEV_GPU_TEMP_SHUTDOWN_CELSIUS"),
    _F(160, "DCGM_FI_DEV_POWER_MGMT_LIMIT", "PMLMT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS"),
    _F(164, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "EPLMT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS"),
    _F(190, "DCGM_FI_DEV_PSTATE", "PSTAT", "DCGM_FI_DEV_GPU_PSTATE"),
    _F(191, "DCGM_FI_DEV_FAN_SPEED", "FANSP"),
    _F(200, "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "TXTPT"),
    _F(201, "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "RXTPT"),
    _F(202, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "RPCTR", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL"),
    _F(203, "DCGM_FI_DEV_GPU_UTIL", "GPUTL", "DCGM_FI_DEV_GPU_UTIL_RATIO"),
    _F(204, "DCGM_FI_DEV_MEM_COPY_UTIL", "MCUTL"),
    _F(206, "DCGM_FI_DEV_ENC_UTIL", "ECUTL"),
    _F(207, "DCGM_FI_DEV_DEC_UTIL", "DCUTL"),
    _F(230, "DCGM_FI_DEV_XID_ERRORS", "XIDER", "DCGM_FI_DEV_XID_ERROR"),
    # PCIe link state (docs/formulas.md#links, "% of peak"): max and current generation and width
    _F(235, "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "PCIMG"),
    _F(236, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "PCIMW"),
    _F(237, "DCGM_FI_DEV_PCIE_LINK_GEN", "PCILG"),
    _F(238, "DCGM_FI_DEV_PCIE_LINK_WIDTH", "PCILW"),
    _F(240, "DCGM_FI_DEV_POWER_VIOLATION", "PVIOL"),
    _F(241, "DCGM_FI_DEV_THERMAL_VIOLATION", "TVIOL"),
    _F(250, "DCGM_FI_DEV_FB_TOTAL", "FBTTL"),
    _F(251, "DCGM_FI_DEV_FB_FREE", "FBFRE"),
    _F(252, "DCGM_FI_DEV_FB_USED", "FBUSD"),
    _F(253, "DCGM_FI_DEV_FB_RESERVED", "FBRSV"),
    _F(254, "DCGM_FI_DEV_FB_USED_PERCENT", "FBUSP", "DCGM_FI_DEV_FB_USED_RATIO"),  # a ratio 0..1 under both names
    _F(310, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "ESVTL"),
    _F(311, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "EDVTL"),
    _F(312, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "ESATL"),
    _F(313, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "EDATL"),
    _F(390, "DCGM_FI_DEV_RETIRED_SBE", "RPSBE", "DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL"),
    _F(391, "DCGM_FI_DEV_RETIRED_DBE", "RPDBE", "DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL"),
    _F(392, "DCGM_FI_DEV_RETIRED_PENDING", "RPPEN", "DCGM_FI_DEV_PAGE_RETIRED_PENDING"),
    _F(393, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "URMPS",
       "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL"),
    _F(394, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "CRMPS", "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL"),
    _F(395, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "RRF", "DCGM_FI_DEV_ROW_REMAP_FAILED"),
    _F(396, "DCGM_FI_DEV_ROW_REMAP_PENDING", "RRP"),
    _F(409, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "NFELT", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL"),
    _F(419, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "NDELT", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL"),
    _F(429, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "NRELT", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL"),
    _F(439, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "NRCLT", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL"),
    _F(449, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "NBWLT", "DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL"),
    _F(526, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "VLCST"),
    _F(1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "GRACT", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO"),
    _F(1002, "DCGM_FI_PROF_SM_ACTIVE", "SMACT", "DCGM_FI_PROF_SM_UTIL_RATIO"),
    _F(1003, "DCGM_FI_PROF_SM_OCCUPANCY", "SMOCC", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO"),
    _F(1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "TENSO", "DCGM_FI_PROF_TENSOR_UTIL_RATIO"),
    _F(1005, "DCGM_FI_PROF_DRAM_ACTIVE", "DRAMA", "DCGM_FI_PROF_DRAM_UTIL_RATIO"),
    _F(1006, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "FP64A", "DCGM_FI_PROF_FP64_UTIL_RATIO"),
    _F(1007, "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "FP32A", "DCGM_FI_PROF_FP32_UTIL_RATIO"),
    _F(1008, "DCGM_FI_PROF_PIPE_FP16_ACTIVE", "FP16A", "DCGM_FI_PROF_FP16_UTIL_RATIO"),
    _F(1009, "DCGM_FI_PROF_PCIE_TX_BYTES", "PCITX"),
    _F(1010, "DCGM_FI_PROF_PCIE_RX_BYTES", "PCIRX"),
    _F(1011, "DCGM_FI_PROF_NVLINK_TX_BYTES", "NVLTX"),
    _F(1012, "DCGM_FI_PROF_NVLINK_RX_BYTES", "NVLRX"),
    _F(1013, "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", "TIMMA", "DCGM_FI_PROF_IMMA_UTIL_RATIO"),
    _F(1014, "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", "THMMA", "DCGM_FI_PROF_HMMA_UTIL_RATIO"),
    _F(1015, "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", "TDFMA", "DCGM_FI_PROF_DFMA_UTIL_RATIO"),
    _F(1016, "DCGM_FI_PROF_PIPE_INT_ACTIVE", "INTAC", "DCGM_FI_PROF_INT_UTIL_RATIO"),
    *(_F(1017 + i, f"DCGM_FI_PROF_NVDEC{i}_ACTIVE", f"NVDEC{i}", f"DCGM_FI_PROF_NVDEC_UTIL_{i}_RATIO")
      for i in range(8)),
    *(_F(1025 + i, f"DCGM_FI_PROF_NVJPG{i}_ACTIVE", f"NVJPG{i}", f"DCGM_FI_PROF_NVJPG_UTIL_{i}_RATIO")
      for i in range(8)),
    *(_F(1033 + i, f"DCGM_FI_PROF_NVOFA{i}_ACTIVE", f"NVOFA{i}", f"DCGM_FI_PROF_NVOFA_UTIL_{i}_RATIO")
      for i in range(2)),
    *(_F(1040 + 2 * i + j, f"DCGM_FI_PROF_NVLINK_L{i}_{d}_BYTES", f"NVL{i}{d[0]}")
      for i in range(18) for j, d in enumerate(("TX", "RX"))),
    _F(1076, "DCGM_FI_PROF_C2C_TX_ALL_BYTES", "C2CTXAB"),
    _F(1077, "DCGM_FI_PROF_C2C_TX_DATA_BYTES", "C2CTXDB"),
    _F(1078, "DCGM_FI_PROF_C2C_RX_ALL_BYTES", "C2CRXAB"),
    _F(1079, "DCGM_FI_PROF_C2C_RX_DATA_BYTES", "C2CRXDB"),
    _F(1080, "DCGM_FI_PROF_HOSTMEM_CACHE_HIT", "HMCACHEHT"),
    _F(1081, "DCGM_FI_PROF_HOSTMEM_CACHE_MISS", "HMCACHEMS"),
    _F(1082, "DCGM_FI_PROF_PEERMEM_CACHE_HIT", "PMCACHEHT"),
    _F(1083, "DCGM_FI_PROF_PEERMEM_CACHE_MISS", "PMCACHEMS"),
    _F(1084, "DCGM_FI_PROF_SM_CYCLES_ELAPSED_TOTAL", "SMCELAP"),
    _F(1085, "DCGM_FI_PROF_SM_CYCLES_ACTIVE_TOTAL", "SMCACT"),
    _F(1086, "DCGM_FI_PROF_MMA_CYCLES_ACTIVE_TOTAL", "MMACACT"),
    _F(1087, "DCGM_FI_PROF_DMMA_CYCLES_ACTIVE_TOTAL", "DMMACACT"),
    _F(1088, "DCGM_FI_PROF_HMMA_CYCLES_ACTIVE_TOTAL", "HMMACACT"),
    _F(1089, "DCGM_FI_PROF_IMMA_CYCLES_ACTIVE_TOTAL", "IMMACACT"),
    _F(1090, "DCGM_FI_PROF_DFMA_CYCLES_ACTIVE_TOTAL", "DFMACACT"),
    _F(1091, "DCGM_FI_PROF_PCIE_TX_BYTES_TOTAL", "PCICTX"),
    _F(1092, "DCGM_FI_PROF_PCIE_RX_BYTES_TOTAL", "PCICRX"),
    _F(1093, "DCGM_FI_PROF_INT_CYCLES_ACTIVE_TOTAL", "INTCACT"),
    _F(1094, "DCGM_FI_PROF_FP64_CYCLES_ACTIVE_TOTAL", "FP64CACT"),
    _F(1095, "DCGM_FI_PROF_FP32_CYCLES_ACTIVE_TOTAL", "FP32CACT"),
    _F(1096, "DCGM_FI_PROF_FP16_CYCLES_ACTIVE_TOTAL", "FP16CACT"),
    _F(1532, "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK", "NVLPTX"),
    _F(1533, "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK", "NVLPRX"),
)



@dataclass(frozen=True)
class Successor:
    """A DCGM 4.6.1 field in SI units (its own ID) that replaces a deprecated field: its values are
    stored as the replaced field, times ``factor`` (from the successor's unit to the replaced one's)."""

    id: int
    name: str
    replaces: int
    factor: float


_MIB = 1.0 / (1 << 20)  # bytes -> MiB (DCGM's BAR1 "MB" is bytes / 1024 / 1024)
# NVIDIA go-dcgm b7fa315 (DCGM 4.6.1 headers, pkg/dcgm/dcgm_fields.h): "Deprecated: Use ... instead."
SI_SUCCESSORS: tuple[Successor, ...] = (
    Successor(1600, "DCGM_FI_DEV_BAR1_CAPACITY_BYTES", 90, _MIB),
    Successor(1601, "DCGM_FI_DEV_BAR1_USED_BYTES", 92, _MIB),
    Successor(1602, "DCGM_FI_DEV_BAR1_FREE_BYTES", 93, _MIB),
    Successor(1603, "DCGM_FI_DEV_SM_CLOCK_HERTZ", 100, 1e-6),  # Hz -> MHz
    Successor(1604, "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", 101, 1e-6),
    Successor(1605, "DCGM_FI_DEV_VIDEO_CLOCK_HERTZ", 102, 1e-6),
    Successor(1606, "DCGM_FI_DEV_SM_APP_CLOCK_HERTZ", 110, 1e-6),
    Successor(1607, "DCGM_FI_DEV_MEMORY_APP_CLOCK_HERTZ", 111, 1e-6),
    Successor(1608, "DCGM_FI_DEV_SM_MAX_CLOCK_HERTZ", 113, 1e-6),
    Successor(1609, "DCGM_FI_DEV_MEMORY_MAX_CLOCK_HERTZ", 114, 1e-6),
    Successor(1610, "DCGM_FI_DEV_VIDEO_MAX_CLOCK_HERTZ", 115, 1e-6),
    Successor(1611, "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", 156, 1000.0),  # J -> mJ
    Successor(1612, "DCGM_FI_DEV_FAN_SPEED_RATIO", 191, 100.0),  # ratio -> %
)
SUCCESSOR_BY_ID: dict[int, Successor] = {s.id: s for s in SI_SUCCESSORS}
SUCCESSOR_BY_NAME: dict[str, Successor] = {s.name: s for s in SI_SUCCESSORS}

BY_ID: dict[int, Field] = {f.id: f for f in FIELDS}
BY_NAME: dict[str, int] = {}
for _f in FIELDS:
    BY_NAME[_f.name] = _f.id
    if _f.new_name:
        BY_NAME[_f.new_name] = _f.id
for _s in SI_SUCCESSORS:
    BY_NAME[_s.name] = _s.replaces  # stored as the field it replaces, in that field's unit
BY_SHORT: dict[str, int] = {f.short.upper(): f.id for f in FIELDS}

# Multiply a parsed value by this to get the canonical unit (NVML percentages -> ratios). By field
# ID: DCGM 4.6 renamed 203 DCGM_FI_DEV_GPU_UTIL_RATIO but still stores NVML's integer percent
# (DcgmCacheManager.cpp, v4.6.0), so the factor holds under both names.
TO_CANONICAL: dict[int, float] = {203: 0.01, 204: 0.01, 206: 0.01, 207: 0.01}

# Names whose unit the sources leave open: DCGM 4.6.0 stores NVML's integer percent under
# DCGM_FI_DEV_GPU_UTIL_RATIO (INT64 in v4.6.0 dcgm_fields.cpp), while dcgm-exporter 4.9 (DCGM 4.7)
# announces "% to 0..1 ratio" changes without naming the fields. The value decides (see
# :func:`percent_or_ratio`; docs/formulas.md#inputs).
UNIT_BY_VALUE = frozenset({"DCGM_FI_DEV_GPU_UTIL_RATIO"})


def percent_or_ratio(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(factor, ambiguous)`` per value of a :data:`UNIT_BY_VALUE` name, to the canonical ratio:
    a non-integer in (0, 1) cannot be an integer percent, so it is a ratio (x 1); exactly 1 is 1 %
    or 100 % and is ``ambiguous`` (counted missing, never guessed); 0 and anything else is DCGM's
    integer percent (x 0.01; 0 is 0 either way)."""
    frac = (v > 0) & (v < 1) & (v != np.floor(v))
    return np.where(frac, 1.0, 0.01), v == 1


PROFILING_IDS = frozenset(range(1001, 1097))

_FIELD_ID = re.compile(r"^(?:DCGM_FI_)?(\d+)$")


# --- DCGM's field-naming standard (NVIDIA/DCGM dcgmlib/dcgm_field_naming.py, DCGM 4.6.0):
# field_name = "DCGM_FI" _ domain _ subsystem _ property [_ unit] [_ suffix], unit in BYTES CELSIUS
# HERTZ JOULES SECONDS WATTS, suffix in RATIO TOTAL. A name rooftop does not list is read by that
# grammar: its stem (the name less unit and suffix) must be the stem of a listed field's classic or
# 4.6 name, and its unit is converted to the unit rooftop stores that field in (docs/formulas.md#inputs).
UNITS = ("BYTES", "CELSIUS", "HERTZ", "JOULES", "SECONDS", "WATTS")
SUFFIXES = ("RATIO", "TOTAL")
# the unit rooftop stores each field in (DCGM's classic units; NVML utilisation as a ratio)
_STORED: dict[str, tuple[int, ...]] = {
    "MHz": (100, 101, 102, 110, 111, 113, 114, 115),
    "mJ": (156,),
    "W": (155, 157, 160, 164),
    "C": (140, 150, 151, 152, 158, 159),
    "MiB": (90, 92, 93, 250, 251, 252, 253),
    "%": (191,),
    "ratio": (203, 204, 206, 207, 254, *range(1001, 1009), *range(1013, 1041)),
    "B/s": (1009, 1010, 1011, 1012, *range(1040, 1080)),
    "bytes": (1091, 1092),
}
STORED_UNIT: dict[int, str] = {fid: unit for unit, ids in _STORED.items() for fid in ids}
# (unit word, suffix) of a name -> stored unit -> factor
_CONVERT: dict[tuple[str | None, str | None], dict[str, float]] = {
    ("HERTZ", None): {"MHz": 1e-6},
    ("JOULES", "TOTAL"): {"mJ": 1000.0},
    ("JOULES", None): {"mJ": 1000.0},
    ("WATTS", None): {"W": 1.0},
    ("CELSIUS", None): {"C": 1.0},
    ("BYTES", None): {"MiB": _MIB, "B/s": 1.0, "bytes": 1.0},  # PROF *_BYTES are rates (dcgm-exporter CSV)
    ("BYTES", "TOTAL"): {"bytes": 1.0},
    (None, "RATIO"): {"ratio": 1.0, "%": 100.0},
}


def split_name(name: str) -> tuple[str, str | None, str | None]:
    """``(stem, unit, suffix)`` of a DCGM field name by the naming standard (unit and suffix None
    where the name has none): ``DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL`` -> ``(DCGM_FI_DEV_GPU_ENERGY,
    JOULES, TOTAL)``."""
    parts = name.split("_")
    suffix = parts.pop() if len(parts) > 3 and parts[-1] in SUFFIXES else None
    unit = parts.pop() if len(parts) > 3 and parts[-1] in UNITS else None
    return "_".join(parts), unit, suffix


_BY_STEM: dict[str, int] = {}
for _f in FIELDS:
    for _n in (_f.name, _f.new_name):
        if _n:
            _BY_STEM.setdefault(split_name(_n)[0], _f.id)


def by_grammar(name: str) -> tuple[int, float] | None:
    """``(field ID, factor to its stored unit)`` of a name rooftop does not list, read by the naming
    standard; None where the name has no unit or ratio suffix, its stem names no listed field, or
    its unit does not convert to the field's stored unit (never guessed)."""
    if not name.startswith("DCGM_FI_") or name in BY_NAME:
        return None
    stem, unit, suffix = split_name(name)
    if unit is None and suffix != "RATIO":
        return None
    fid = _BY_STEM.get(stem)
    if fid is None:
        return None
    factor = _CONVERT.get((unit, suffix), {}).get(STORED_UNIT.get(fid, ""))
    return None if factor is None else (fid, factor)


def name_id(name: str) -> int | None:
    """The field ID of a metric name: listed (:data:`BY_NAME`), else by the naming standard."""
    fid = BY_NAME.get(name)
    if fid is not None:
        return fid
    g = by_grammar(name)
    return g[0] if g else None


def field_id(name: str) -> int | None:
    """The ID of a field given by any of its names (enum, 4.6 name, 4.6.1 SI name, dmon short name,
    a name by the naming standard (:func:`by_grammar`), or a number); a 4.6.1 SI field gives the ID
    of the field it replaces (see :func:`canonical_factor`)."""
    n = name.strip()
    if n in BY_NAME:
        return BY_NAME[n]
    if n.upper() in BY_SHORT:
        return BY_SHORT[n.upper()]
    g = by_grammar(n)
    if g is not None:
        return g[0]
    m = _FIELD_ID.match(n)
    if not m:
        return None
    fid = int(m.group(1))
    succ = SUCCESSOR_BY_ID.get(fid)
    return succ.replaces if succ else fid


def canonical_factor(name: str) -> float:
    """Multiply a value reported under ``name`` by this to get rooftop's canonical unit of its field
    (docs/formulas.md#inputs): the SI successor's unit -> the replaced field's, then
    :data:`TO_CANONICAL`. 1.0 for names rooftop does not know."""
    n = name.strip()
    g = by_grammar(n)
    if g is not None:
        return g[1]
    m = _FIELD_ID.match(n)
    succ = SUCCESSOR_BY_NAME.get(n)
    if succ is None and m:
        succ = SUCCESSOR_BY_ID.get(int(m.group(1)))
    fid = field_id(n)
    if fid is None:
        return 1.0
    return (succ.factor if succ else 1.0) * TO_CANONICAL.get(fid, 1.0)


def field_name(fid: int) -> str:
    f = BY_ID.get(fid)
    return f.name if f else f"DCGM_FI_{fid}"


# --- blank sentinels (NVIDIA/DCGM dcgm_structs.h: DCGM_*_BLANK and BLANK+1..3 = NOT_FOUND,
# NOT_SUPPORTED, NOT_PERMISSIONED). Matched exactly, never by magnitude: real byte and energy
# counters routinely exceed 2**31.
INT32_SENTINELS = (0x7FFFFFF0, 0x7FFFFFF1, 0x7FFFFFF2, 0x7FFFFFF3)
INT64_SENTINELS = (0x7FFFFFFFFFFFFFF0, 0x7FFFFFFFFFFFFFF1, 0x7FFFFFFFFFFFFFF2, 0x7FFFFFFFFFFFFFF3)
FP64_BLANK = 140737488355328.0  # 2**47
FP64_SENTINELS = (FP64_BLANK, FP64_BLANK + 1.0, FP64_BLANK + 2.0, FP64_BLANK + 3.0)
# As float64 every INT64 sentinel rounds to 2**63 (spacing there is 2048), which is also what a
# Prometheus server shows (9.223372036854776e18); no real reading comes near it.
_SENTINEL_FLOATS = np.array(
    [float(v) for v in INT32_SENTINELS] + [float(2**63)] + list(FP64_SENTINELS), dtype="float64"
)
STRING_SENTINELS = frozenset({"<<<NULL>>>", "<<<NOT_FOUND>>>", "<<<NOT_SUPPORTED>>>", "<<<NOT_PERM>>>"})


def sentinel_mask(values: np.ndarray) -> np.ndarray:
    """True where a parsed value is exactly one of DCGM's blank sentinels."""
    v = np.asarray(values, dtype="float64")
    return np.isin(v, _SENTINEL_FLOATS)


def is_string_sentinel(text: str) -> bool:
    return text.startswith("<<<") and text.endswith(">>>")


# --- nvidia-smi --query-gpu columns and nvidia-smi dmon columns -> (field ID, factor)
SMI_QUERY: dict[str, tuple[int, float]] = {
    "utilization.gpu": (203, 0.01),
    "utilization.memory": (204, 0.01),
    "utilization.encoder": (206, 0.01),
    "utilization.decoder": (207, 0.01),
    "memory.total": (250, 1.0),
    "memory.free": (251, 1.0),
    "memory.used": (252, 1.0),
    "memory.reserved": (253, 1.0),
    "power.draw": (155, 1.0),
    "power.draw.average": (155, 1.0),
    "power.draw.instant": (157, 1.0),
    "power.limit": (160, 1.0),
    "enforced.power.limit": (164, 1.0),
    "temperature.gpu": (150, 1.0),
    "temperature.memory": (140, 1.0),
    "clocks.sm": (100, 1.0),
    "clocks.current.sm": (100, 1.0),
    "clocks.mem": (101, 1.0),
    "clocks.current.memory": (101, 1.0),
    "clocks.video": (102, 1.0),
    "clocks.current.video": (102, 1.0),
    "clocks.max.sm": (113, 1.0),
    "clocks.max.memory": (114, 1.0),
    "fan.speed": (191, 1.0),
    "pstate": (190, 1.0),
    "pcie.link.gen.current": (237, 1.0),
    "pcie.link.gen.gpucurrent": (237, 1.0),
    "pcie.link.width.current": (238, 1.0),
    "pcie.link.gen.max": (235, 1.0),
    "pcie.link.gen.gpumax": (235, 1.0),
    "pcie.link.width.max": (236, 1.0),
    # health fields (docs/formulas.md#health): the clock-event reasons mask, printed in hex
    # ("0x0000000000000004", nvidia-smi --help-query-gpu; renamed from clocks_throttle_reasons), ECC counts
    "clocks_event_reasons.active": (112, 1.0),
    "clocks_throttle_reasons.active": (112, 1.0),
    "ecc.errors.corrected.volatile.total": (310, 1.0),
    "ecc.errors.uncorrected.volatile.total": (311, 1.0),
    "ecc.errors.corrected.aggregate.total": (312, 1.0),
    "ecc.errors.uncorrected.aggregate.total": (313, 1.0),
}
# nvidia-smi dmon: sm/mem are NVML utilisation % (NOT DCGM SM_ACTIVE); rxpci/txpci are MB/s and go
# to the NVML PCIe throughput fields 201/200, whose DCGM unit is KB/s.
SMI_DMON: dict[str, tuple[int, float]] = {
    "pwr": (155, 1.0),
    "gtemp": (150, 1.0),
    "mtemp": (140, 1.0),
    "sm": (203, 0.01),
    "mem": (204, 0.01),
    "enc": (206, 0.01),
    "dec": (207, 0.01),
    "mclk": (101, 1.0),
    "pclk": (100, 1.0),
    "rxpci": (201, 1000.0),
    "txpci": (200, 1000.0),
    "fb": (252, 1.0),
}
