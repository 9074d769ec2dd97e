"""The health rules' constants: which DCGM fields, which bits, which thresholds, which severity, and
their sources (docs/formulas.md#health).

* XID (field 230, ``DCGM_FI_DEV_XID_ERRORS``): the value is the last XID error code the driver
  reported, 0 for none. Every non-zero code is an event, named by NVIDIA's XID catalog
  (https://docs.nvidia.com/deploy/xid-errors/).
* ECC (311 ``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`` > 0: uncorrectable double-bit errors since the last
  driver load; 313 ``DCGM_FI_DEV_ECC_DBE_AGG_TOTAL`` rising: new ones in the lifetime count). The
  single-bit counters 310/312 are corrected by ECC: collected, never an event.
* Row remapping (A100 and later, NVIDIA's "GPU Memory Error Management" / row remapping docs,
  https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/): 393 uncorrectable remapped rows > 0,
  396 remap pending > 0 (a GPU reset applies it), 395 remap failure > 0 (the GPU could not remap a
  row; NVIDIA: the GPU should be serviced). 394 (correctable remapped rows) is not an event.
* Clock-event reasons (112 ``DCGM_FI_DEV_CLOCKS_EVENT_REASONS``, formerly CLOCK_THROTTLE_REASONS):
  the bitmask of NVML's ``nvmlClocksEventReasons`` (NVML API reference, "Clocks Event Reasons",
  https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html). :data:`EVENT_BITS`
  are events; GPU idle (0x1) and the applications-clocks setting (0x2) are not.
* Temperature: GPU temperature (150) at or above the slowdown temperature (158,
  ``DCGM_FI_DEV_SLOWDOWN_TEMP``: NVML's ``NVML_TEMPERATURE_THRESHOLD_SLOWDOWN``) in the same sample.
  Without 158 in the input no threshold is invented: the maximum is reported, no event.
* Power: power draw (155, else 157) at or above :data:`POWER_AT_LIMIT` of the enforced power limit
  (164; else the power-management limit 160, which NVML says the enforced limit never exceeds, so
  the rule stays one-sided) in the same sample. NVML averages the draw over a second and the
  controller holds it just under the limit, so a capped GPU reads slightly below it: 98 % is
  rooftop's margin, not NVIDIA's.
"""

from __future__ import annotations

from typing import Literal

XID = 230
ECC_SBE_VOL, ECC_DBE_VOL, ECC_SBE_AGG, ECC_DBE_AGG = 310, 311, 312, 313
ROWS_UNCORRECTABLE, ROWS_CORRECTABLE, REMAP_FAILURE, REMAP_PENDING = 393, 394, 395, 396
CLOCKS_EVENT_REASONS = 112
GPU_TEMP, SLOWDOWN_TEMP = 150, 158
POWER, POWER_INSTANT, POWER_ENFORCED, POWER_MGMT = 155, 157, 164, 160

POWER_AT_LIMIT = 0.98  # a sample at >= 98 % of the limit is "at the limit" (rooftop's margin)

HealthSeverity = Literal["high", "medium", "low"]

# aspect -> the fields that make it "collected" (any of them), in report order
ASPECTS: dict[str, tuple[int, ...]] = {
    "XID errors": (XID,),
    "ECC": (ECC_DBE_VOL, ECC_DBE_AGG, ECC_SBE_VOL, ECC_SBE_AGG),
    "row remapping": (ROWS_UNCORRECTABLE, REMAP_FAILURE, REMAP_PENDING, ROWS_CORRECTABLE),
    "clock-event reasons": (CLOCKS_EVENT_REASONS,),
    "temperature": (GPU_TEMP,),
    "power": (POWER, POWER_INSTANT),
}
HEALTH_IDS: tuple[int, ...] = tuple(sorted({f for fs in ASPECTS.values() for f in fs}
                                           | {SLOWDOWN_TEMP, POWER_ENFORCED, POWER_MGMT}))
NONZERO_IDS = (ECC_DBE_VOL, ROWS_UNCORRECTABLE, REMAP_FAILURE, REMAP_PENDING)  # value > 0: an event

# nvmlClocksEventReasons bits that are health events: (name, severity)
EVENT_BITS: dict[int, tuple[str, HealthSeverity]] = {
    0x4: ("SW power cap", "low"),
    0x8: ("HW slowdown", "medium"),
    0x10: ("sync boost", "low"),
    0x20: ("SW thermal slowdown", "medium"),
    0x40: ("HW thermal slowdown", "medium"),
    0x80: ("HW power brake slowdown", "medium"),
    0x100: ("display clock setting", "low"),
}
NOT_EVENT_BITS = {0x1: "GPU idle", 0x2: "applications clocks setting"}

# NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors): the names of the codes most seen in fleets
XID_NAMES: dict[int, str] = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    32: "invalid or corrupted push buffer stream",
    43: "GPU stopped processing",
    45: "preemptive cleanup, due to previous errors",
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint/warning",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure",
    68: "NVDEC0 exception",
    69: "graphics engine class error",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    109: "context switch timeout",
    119: "GSP RPC timeout",
    120: "GSP error",
}
XID_DOC = "https://docs.nvidia.com/deploy/xid-errors/"

SEVERITY_RANK: dict[str, int] = {"high": 0, "medium": 1, "low": 2}


def xid_title(code: int) -> str:
    name = XID_NAMES.get(code)
    return f"XID {code}" + (f" ({name})" if name else "")


def decode_bits(mask: int) -> list[int]:
    """The set bits of a clock-event-reasons mask, lowest first."""
    return [1 << i for i in range(64) if mask >> i & 1]
