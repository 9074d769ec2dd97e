"""What pinning a device's pageable host copies recovers (``docs/formulas.md#timeline-copies``), measured
on the same capture: per pageable copy kind of a host-link direction (``HtoD``, ``DtoH``), its time less its
bytes at the achieved rate of the same device's pinned copies of that direction, when those are no larger
(median size) than the pageable ones. A copy's achieved bandwidth grows with its size (the fixed cost of
each copy is spread over more bytes), so the rate of pinned copies no larger than the pageable ones is a
rate the pageable copies would at least reach once pinned; larger pinned copies would overstate it, and no
pinned copy leaves the saving unknown (rooftop has no table of host-link peaks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rooftop.analyzer.timeline.copies import HOST_LINK, PINNED
from rooftop.analyzer.timeline.text import duration as _ms
from rooftop.analyzer.timeline.text import size as _gb

RULE = "docs/formulas.md#timeline-copies"
_WORDS = {"HtoD": "host-to-device", "DtoH": "device-to-host"}


@dataclass
class PinSaving:
    """``seconds``: the recoverable time summed over the decided kinds (None when none is decided);
    ``undecided``: the kinds whose saving the capture cannot decide; ``evidence``: one line per kind;
    ``rate_gb_s``: the pinned rate used per direction."""

    seconds: float | None = None
    undecided: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    rate_gb_s: dict[str, float] = field(default_factory=dict)


def _complete(c: Mapping[str, Any]) -> bool:
    return c.get("bytes") is not None and not c.get("bytes_missing") and c.get("size_median") is not None


def pin_saving(pageable: Sequence[Mapping[str, Any]], copies: Sequence[Mapping[str, Any]]) -> PinSaving:
    """The time pinning recovers for the ``pageable`` copy kinds of one device entry, whose ``copies``
    (its whole copy table) supply the pinned rate. Kinds of other directions are left out (they do not
    cross the host link)."""
    out = PinSaving()
    total = 0.0
    for c in pageable:
        d = c.get("direction")
        if d not in HOST_LINK:
            continue
        word = _WORDS[str(d)]
        pinned = [p for p in copies if p.get("op") == "memcpy" and p.get("direction") == d
                  and PINNED in str(p.get("memory") or "")]
        if not _complete(c):
            out.undecided.append(str(c["kind"]))
            out.evidence.append(f"{c['kind']}: not every copy records its bytes, so what pinning recovers is not "
                                f"decided ({RULE})")
            continue
        usable = [p for p in pinned if _complete(p) and float(p["time_s"]) > 0 and int(p["bytes"]) > 0]
        largest = max((float(p["size_median"]) for p in usable), default=None)
        mine = float(c["size_median"])
        if largest is None or largest > mine:
            out.undecided.append(str(c["kind"]))
            why = (f"the {word} pinned copies here are larger (median {_gb(largest)} against "
                   f"{_gb(mine)}) and a larger copy runs faster, so their rate would overstate it"
                   if largest is not None else f"the capture holds no pinned {word} copy with its bytes")
            out.evidence.append(f"{c['kind']}: what pinning recovers is unknown: {why}; a pinned {word} copy of "
                                f"at least {_gb(mine)} in the same capture would decide it ({RULE})")
            continue
        moved = sum(int(p["bytes"]) for p in usable)
        rate = moved / sum(float(p["time_s"]) for p in usable)  # bytes per second
        t, b = float(c["time_s"]), int(c["bytes"])
        pinned_t = b / rate
        # the GPU gains at most the copies' busy time (their union), whatever their plain sum
        gain = min(max(0.0, t - pinned_t), float(c.get("busy_s") or t))
        total += gain
        out.rate_gb_s[str(d)] = round(rate / 1e9, 3)
        out.evidence.append(
            f"{c['kind']}: {_gb(b)} in {_ms(t)}; at the {rate / 1e9:.1f} GB/s the {word} pinned copies of "
            f"this capture reach (median size {_gb(largest)}, no larger than these {_gb(mine)}) they would "
            f"take {_ms(pinned_t)}: {_ms(gain)} to gain ({RULE})")
    if len(out.undecided) < len([c for c in pageable if c.get("direction") in HOST_LINK]):
        out.seconds = round(total, 9)
    return out
