"""What NVIDIA's rule estimates may claim: each rule's fix by kind, and the physical bound on the
time it can save (docs/formulas.md#findings).

* **Work-preserving** fixes (tail effect, workload imbalance, occupancy, launch configuration, warp
  stalls, issue slots) leave the work unchanged: the busiest unit NCU measured (SpeedOfLight
  breakdown, :mod:`analyzer.metrics.units`) still needs ``busiest %`` of today's time, so the saving is
  at most ``duration × (1 − busiest % / 100)``.
* **Work-removing** fixes (uncoalesced accesses, shared-memory bank conflicts, excess sectors per
  request, non-fused FP32 instructions) cut the work of one unit. When that unit is the busiest, the
  time left is what the remaining work needs at its peak, ``busiest % × remaining`` (remaining =
  ideal / achieved sectors or wavefronts, from NVIDIA's own message), and never less than what the
  untouched units need: saving ≤ ``duration × (1 − max(busiest % × remaining, other units' %) / 100)``.
* A fix aimed at a unit that is not the busiest one (an L2-slice imbalance while L1 binds) cannot
  speed the kernel past the busiest unit: it is shown as NVIDIA's estimate, not counted as the saving.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PRESERVING, REMOVING = "preserving", "removing"
LEVEL_WORDS = {"l1": "L1", "l2": "L2", "dram": "DRAM", "compute": "SM (compute)"}


@dataclass(frozen=True)
class RuleFix:
    """What fixing one NCU rule changes: its ``kind`` (:data:`PRESERVING` or :data:`REMOVING`), a
    short ``what``, the units it works on (``targets``: levels ``l1``/``l2``/``dram`` or ``compute``;
    empty = the whole kernel), the share of the target's work left after it (``remaining``, when
    NVIDIA's message gives it) and a ``caveat`` on NVIDIA's estimate."""

    kind: str
    what: str
    targets: tuple[str, ...] = ()
    remaining: float | None = None
    caveat: str | None = None


_IMBALANCE_UNIT = re.compile(r"\b(SMSP|SM|L1 Slice|L2 Slice|DRAM Slice)s? (?:have|Workload)", re.IGNORECASE)
_PCT_OF_TOTAL = re.compile(r"\(\s*(\d+(?:\.\d+)?)\s*% of the total", re.IGNORECASE)
_EXPECTED_GOT = re.compile(r"expected (\d+) (?:sectors|wavefronts), got (\d+)", re.IGNORECASE)
_BYTES_PER_SECTOR = re.compile(r"only (\d+(?:\.\d+)?) of the 32 bytes transmitted per sector", re.IGNORECASE)
_NWAY = re.compile(r"(\d+(?:\.\d+)?)-way bank conflict", re.IGNORECASE)
_IMBALANCE_TARGET = {"sm": (), "smsp": (), "l1 slice": ("l1",), "l2 slice": ("l2",), "dram slice": ("dram",)}


def _remaining(text: str) -> float | None:
    """The share of the work left after the fix, from NVIDIA's message: "(P% of the total N sectors)"
    excessive, "expected E sectors, got G", "only B of the 32 bytes transmitted per sector", "N-way"."""
    m = _PCT_OF_TOTAL.search(text)
    if m:
        return max(0.0, 1.0 - float(m.group(1)) / 100.0)
    m = _EXPECTED_GOT.search(text)
    if m and float(m.group(2)) > 0:
        return min(1.0, float(m.group(1)) / float(m.group(2)))
    m = _BYTES_PER_SECTOR.search(text)
    if m:
        return min(1.0, float(m.group(1)) / 32.0)
    m = _NWAY.search(text)
    if m and float(m.group(1)) > 0:
        return min(1.0, 1.0 / float(m.group(1)))
    return None


_BARRIER = ("; barrier stalls wait on the slowest warp, so the estimate is optimistic unless the work per warp "
            "is evened out")
# NCU rule ids (Nsight Compute's section rules, docs/formulas.md#findings) -> the fix they ask for
_BY_ID: dict[str, RuleFix] = {
    "UncoalescedGlobalAccess": RuleFix(REMOVING, "uncoalesced global accesses", ("l1", "l2")),
    "UncoalescedSharedAccess": RuleFix(REMOVING, "uncoalesced shared accesses", ("l1",)),
    "SharedMemoryConflicts": RuleFix(REMOVING, "shared-memory bank conflicts", ("l1",)),
    "MemorySharedBankConflicts": RuleFix(REMOVING, "shared-memory bank conflicts", ("l1",)),
    "FPInstructions": RuleFix(REMOVING, "non-fused FP instructions", ("compute",)),
    "ThreadDivergence": RuleFix(REMOVING, "thread divergence", ("compute",)),
    "LaunchConfiguration": RuleFix(PRESERVING, "launch configuration"),
    "Launch Configuration": RuleFix(PRESERVING, "launch configuration"),
    "TheoreticalOccupancy": RuleFix(PRESERVING, "occupancy"),
    "AchievedOccupancy": RuleFix(PRESERVING, "occupancy"),
    "Occupancy": RuleFix(PRESERVING, "occupancy"),
    "IssueSlotUtilization": RuleFix(PRESERVING, "issue slots"),
    "WorkloadImbalance": RuleFix(PRESERVING, "workload imbalance"),
}


def rule_fix(item: Mapping[str, Any], grid: float = math.nan) -> RuleFix:
    """The kind of fix an NCU rule result asks for, from its rule id, or (console logs carry none) from
    its title and NVIDIA's message (docs/formulas.md#findings)."""
    rule = str(item.get("rule") or "")
    title = str(item.get("title") or "")
    text = f"{title} {item.get('message') or ''}"
    low = text.lower()
    one_block = "; NVIDIA's estimate assumes the work could spread over more blocks (grid of 1 block)" \
        if grid == 1 else None
    tail = "a wave of thread blocks" in low or "partial wave" in low or title == "Tail Effect"
    by_id = _BY_ID.get(rule)
    if by_id is not None and by_id.kind == REMOVING:
        return RuleFix(by_id.kind, by_id.what, by_id.targets, _remaining(text))
    if by_id is not None and not tail and rule != "WorkloadImbalance":
        return RuleFix(PRESERVING, by_id.what, caveat=one_block)
    if "uncoalesced global access" in low:
        return RuleFix(REMOVING, "uncoalesced global accesses", ("l1", "l2"), _remaining(text))
    if "uncoalesced shared access" in low:
        return RuleFix(REMOVING, "uncoalesced shared accesses", ("l1",), _remaining(text))
    if "bank conflict" in low:
        return RuleFix(REMOVING, "shared-memory bank conflicts", ("l1",), _remaining(text))
    if "bytes transmitted per sector" in low:
        from_l2 = "from l2" in low or title.lower().startswith(("l2", "dram"))
        return RuleFix(REMOVING, "excess sectors per request", ("l2", "dram") if from_l2 else ("l1", "l2"),
                       _remaining(text))
    if "non-fused" in low:
        return RuleFix(REMOVING, "non-fused FP instructions", ("compute",))
    if tail:
        return RuleFix(PRESERVING, "tail effect", caveat=one_block)
    if rule == "WorkloadImbalance" or "number of active cycles than the average" in low:
        m = _IMBALANCE_UNIT.search(text)
        unit = m.group(1).lower() if m else "sm"
        return RuleFix(PRESERVING, f"{m.group(1) if m else 'unit'} workload imbalance", _IMBALANCE_TARGET.get(unit, ()))
    if "occupancy" in low or "warps per scheduler" in low:
        return RuleFix(PRESERVING, "occupancy", caveat=one_block)
    if "grid is too small" in low or "threads per block" in low or "launch configuration" in low:
        return RuleFix(PRESERVING, "launch configuration", caveat=one_block)
    if "stall" in low:
        return RuleFix(PRESERVING, "warp stalls", caveat=_BARRIER if "barrier" in low else one_block)
    if "issue slot" in low or "issues an instruction every" in low:
        return RuleFix(PRESERVING, "issue slots")
    if "divergen" in low:
        return RuleFix(REMOVING, "thread divergence", ("compute",))
    return RuleFix(PRESERVING, "NVIDIA rule")


@dataclass(frozen=True)
class Units:
    """One launch's measured unit percentages (of peak over elapsed time; NaN = not exported)."""

    busiest: float  # the busiest unit NCU measured
    word: str | None  # its limiter word (analyzer.metrics.units)
    name: str | None  # its name in words
    side: str | None  # compute | memory
    level: str | None  # l1 | l2 | dram for memory units
    compute: float  # NCU's Compute (SM) Throughput %
    levels: Mapping[str, float]  # l1, l2, dram unit throughput %

    @property
    def binding(self) -> str | None:
        """``l1``/``l2``/``dram``, ``compute``, ``memory`` (a memory level not told apart) or ``None``."""
        if not math.isfinite(self.busiest):
            return None
        if self.side == "compute":
            return "compute"
        return self.level or "memory"


@dataclass(frozen=True)
class Bound:
    """The physical bound on one rule's saving for one launch: ``seconds`` (NaN without SpeedOfLight %),
    whether the rule may be the headline saving (``counted``) and the sentence that states it."""

    seconds: float
    counted: bool
    text: str


def _pct(x: float) -> str:
    return f"{x:.1f} %"


def rule_bound(fix: RuleFix, duration: float, u: Units) -> Bound:
    """The bound on the saving of ``fix`` for a launch of ``duration`` seconds (module docstring)."""
    binding = u.binding
    if binding is None or not math.isfinite(duration):
        return Bound(math.nan, True, "no SpeedOfLight % in the export to bound it")
    name = u.name or binding
    preserving_s = duration * max(0.0, 1.0 - u.busiest / 100.0)
    on_binding = not fix.targets or binding in fix.targets or (binding == "memory" and "compute" not in fix.targets)
    if not on_binding:
        where = " and ".join(LEVEL_WORDS.get(t, t) for t in fix.targets)
        return Bound(preserving_s, False, f"its fix works on {where} while the busiest unit is {name} at "
                     f"{_pct(u.busiest)}, which the fix leaves as busy")
    if fix.kind == PRESERVING:
        return Bound(preserving_s, True, f"the fix keeps the work, so the busiest unit, {name} at {_pct(u.busiest)}, "
                     f"still needs that share of the time: ≤ duration × (1 − {_pct(u.busiest)})")
    others = [u.compute] if "compute" not in fix.targets else []
    others += [v for lvl, v in u.levels.items() if lvl not in fix.targets]
    rest = max([v for v in others if math.isfinite(v)], default=0.0)
    if fix.remaining is not None:
        need = max(u.busiest * fix.remaining, rest)
        how = (f"the remaining work at {name} ({_pct(u.busiest)} × {fix.remaining:.2f} left by NVIDIA's numbers = "
               f"{_pct(u.busiest * fix.remaining)}) or the untouched units ({_pct(rest)}) still need "
               f"{_pct(need)} of the time")
    else:
        need = rest
        how = f"the units the fix leaves alone still need {_pct(rest)} of the time (NVIDIA's message gives no ideal count)"
    return Bound(duration * max(0.0, 1.0 - need / 100.0), True, f"the fix removes work from {name}: {how}")
