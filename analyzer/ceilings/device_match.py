"""Which built-in device a kernel ran on, from the hints its export carries (docs/formulas.md#ceilings).

Hints, strongest first: the export's device name (``Device`` column, ``device__attribute_display_name``,
the report's device), a GPU named by the application's own output lines (``Detected GPU: ...``,
:mod:`parsers.ncu.hints`), then compute capability with SM count (``CC`` column or console header,
``device__attribute_multiprocessor_count`` / ``launch__sm_count``, an application line's "48 SMs").

* A name equal to a table entry (vendor words, punctuation and memory size aside, or one of its
  ``aliases``) is that device (``how="name"``).
* A name the table only matches by its family pattern (``V100S`` vs ``V100 PCIe``, a vGPU profile
  ``A10-24Q``, ``GH200 120GB`` vs ``480GB``) takes the nearest entry's ceilings and says so
  (``how="nearest-name"``, linted).
* A name the table does not know: no entry (its CC and SM count may equal another GPU's).
* No name, CC + SM count that exactly one entry has: that entry, stated as assumed (``how="cc+sms"``).
* Several entries fit (CC alone, or CC + SMs shared): only the ceilings every candidate agrees on
  (same value, same boost clock) are used, as a synthetic entry ``"one of A | B | C"``
  (``how="common"``); the rest stay unknown and the lint says ``pass --device NAME``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.ceilings.devices import DeviceSpec, builtin, normalize_name

_MEMORY_TOKEN = re.compile(r"^\d+gb$")


@dataclass(frozen=True)
class DeviceMatch:
    """The device behind a kernel's built-in ceilings and what decided it."""

    spec: DeviceSpec | None
    how: str  # "name" | "nearest-name" | "cc+sms" | "common" | "none"
    basis: str  # what in the export decided it, in words
    candidates: tuple[str, ...] = ()


def is_exact(spec: DeviceSpec, norm: str) -> bool:
    """``norm`` names exactly ``spec``: its words are the entry's, plus at most memory sizes ("16gb")."""
    if norm in spec.aliases or norm == normalize_name(spec.name):
        return True
    have, want = set(norm.split()), set(normalize_name(spec.name).split())
    return want <= have and all(_MEMORY_TOKEN.match(t) for t in have - want)


def match_name(name: str) -> tuple[DeviceSpec | None, bool]:
    """The table entry for an exported device name and whether the match is exact."""
    norm = normalize_name(name)
    if not norm:
        return None, False
    devices = builtin()
    for spec in devices:
        if is_exact(spec, norm):
            return spec, True
    for spec in devices:
        if spec.matches(norm):
            return spec, False
    return None, False


def candidates(cc: str | None, sms: int | None) -> list[DeviceSpec]:
    """Table entries with this CC (and SM count when known)."""
    if not cc:
        return []
    return [s for s in builtin() if s.cc == str(cc) and (sms is None or s.sm_count == int(sms))]


def common_spec(specs: list[DeviceSpec], basis: str) -> DeviceSpec | None:
    """The ceilings every candidate shares (equal value and equal boost clock); ``None`` if none."""
    if not specs:
        return None
    clocks = {tuple(sorted(s.clock_mhz.items())) for s in specs}
    same_clock = len(clocks) == 1

    def shared(get: str) -> dict[str, float]:
        out: dict[str, float] = {}
        first = getattr(specs[0], get)
        for k, v in first.items():
            vals = [getattr(s, get).get(k) for s in specs]
            scaled = get == "peaks" or k == "l1"  # rescaled by the measured SM clock / boost clock
            if all(x is not None and abs(x - v) <= 1e-9 * v for x in vals) and (same_clock or not scaled):
                out[k] = v
        return out

    peaks, bandwidth = shared("peaks"), shared("bandwidth")
    if not peaks and not bandwidth:
        return None
    names = " | ".join(s.name for s in specs)
    sources = {k: f"same on every candidate ({names}): {specs[0].sources.get(k, 'builtin')}"
               for k in (*peaks, *bandwidth)}
    sms = {s.sm_count for s in specs}
    return DeviceSpec(name=f"one of {names}", source="builtin", sm_count=sms.pop() if len(sms) == 1 else None,
                      cc=specs[0].cc if len({s.cc for s in specs}) == 1 else None, peaks=peaks,
                      bandwidth=bandwidth, sources=sources,
                      clock_mhz=dict(specs[0].clock_mhz) if same_clock else {})


def match_device(name: str | None, name_basis: str, cc: str | None, sms: int | None) -> DeviceMatch:
    """The built-in device for one (name, CC, SM count) combination (see the module docstring)."""
    if name:
        spec, exact = match_name(name)
        if spec is not None:
            return DeviceMatch(spec, "name" if exact else "nearest-name", name_basis, (spec.name,))
        # a named GPU the table lacks is none of its entries, whatever its CC and SM count
        # (an RTX 3080 Ti has the A10G's CC 8.6 and 80 SMs, not its memory)
        return DeviceMatch(None, "none", name_basis, ())
    where = f"CC {cc}" + (f" and {sms} SMs" if sms else "")
    cands = candidates(cc, sms)
    if len(cands) == 1 and sms:
        return DeviceMatch(cands[0], "cc+sms", f"{where} (the only device in rooftop's table with both)",
                           (cands[0].name,))
    if cands:
        common = common_spec(cands, where)
        return DeviceMatch(common, "common" if common else "none", where, tuple(s.name for s in cands))
    return DeviceMatch(None, "none", where if cc else "", ())


def contradiction(option: DeviceSpec, cc: str | None, sms: int | None) -> str | None:
    """Why ``--device`` cannot be the GPU the export was taken on, or ``None``."""
    why = []
    if cc and option.cc and str(cc) != str(option.cc):
        why.append(f"CC {cc} in the export, {option.cc} for {option.name}")
    if sms and option.sm_count and int(sms) != int(option.sm_count):
        why.append(f"{int(sms)} SMs in the export, {option.sm_count} for {option.name}")
    return "; ".join(why) or None


def _plural(n: int) -> str:
    return f"{n} kernel{'s' if n != 1 else ''}"


def assumption(m: DeviceMatch, name: str | None) -> str | None:
    """The evidence sentence saying which device was assumed and why (``None``: the export named it)."""
    if m.how == "name" and m.basis.startswith("device name"):
        return None
    if m.how == "name":
        return f"Device {m.spec.name if m.spec else '?'} taken from {m.basis} (the export itself names no device)"
    if m.how == "nearest-name":
        return (f"Device \"{name}\" is not in rooftop's table by its exact name: ceilings of the nearest name "
                f"{m.spec.name if m.spec else '?'} (pass --device NAME if they differ)")
    if m.how == "cc+sms":
        return f"Device assumed to be {m.spec.name if m.spec else '?'} from {m.basis} (pass --device NAME if wrong)"
    if m.candidates:
        shared = ", ".join([*m.spec.peaks, *m.spec.bandwidth]) if m.spec else "none"
        return (f"Device not identified: {m.basis} fits {', '.join(m.candidates)}; ceilings they share: {shared}; "
                "pass --device NAME")
    return None


def lint_items(matches: list[tuple[DeviceMatch, str | None, list[int]]]) -> list[dict[str, object]]:
    """Lint for assumed, nearest-name and ambiguous devices (docs/formulas.md#ceilings)."""
    out: list[dict[str, object]] = []
    for m, name, rows in matches:
        if not rows or (m.how == "name" and m.basis.startswith("device name")):
            continue  # the export names a device in the table: nothing assumed
        n = _plural(len(rows))
        if m.how in ("nearest-name", "cc+sms") or (m.how == "name" and not m.basis.startswith("device name")):
            text = assumption(m, name)
            out.append({"code": "device-assumed", "kernels": rows, "message": f"{n}: {text}."})
        elif m.how == "common" and m.spec is not None:
            shared = ", ".join([*m.spec.peaks, *m.spec.bandwidth])
            out.append({"code": "device-ambiguous", "kernels": rows, "message":
                        f"{n}: {m.basis} fits {len(m.candidates)} devices in rooftop's table "
                        f"({', '.join(m.candidates)}); only the ceilings they share are used ({shared}). "
                        "Pass `--device NAME` for the others."})
        elif m.candidates:
            out.append({"code": "device-ambiguous", "kernels": rows, "message":
                        f"{n}: {m.basis} fits {len(m.candidates)} devices in rooftop's table "
                        f"({', '.join(m.candidates)}) with no ceiling in common: points are placed by intensity "
                        "and achieved FLOP/s, ceilings come only from the export. Pass `--device NAME`."})
        else:
            what = f"device \"{name}\" is not in rooftop's table" if name else "the export names no device"
            extra = f" ({m.basis} matches no entry)" if m.basis and not name else ""
            out.append({"code": "device-unknown", "kernels": rows, "message":
                        f"{n}: {what}{extra}: points are placed by intensity and achieved FLOP/s, ceilings come "
                        "only from the export. Pass `--device NAME` or a ceilings file."})
    return out


def device_lint(keys: pd.DataFrame, matches: list[tuple[DeviceMatch, str | None, list[int]]],
                 option: DeviceSpec | None) -> tuple[list[dict[str, Any]], pd.Series]:
    """Lint items and the per-kernel evidence sentence for the device assumed (docs/formulas.md#ceilings)."""
    assumed = pd.Series(None, index=keys.index, dtype="object")
    if option is None:
        for m, name, rows in matches:
            text = assumption(m, name)
            if text and rows:
                assumed.iloc[rows] = text
        return list(lint_items(matches)), assumed
    # --device decides: the export's hints only check it (no ambiguity or assumption to report)
    lint: list[dict[str, Any]] = []
    k = keys.astype("object").where(keys.notna(), None)
    combos = k[["cc", "sms"]].drop_duplicates()
    for cc, sms in combos.itertuples(index=False):
        rows = ((k["cc"] == cc) if cc is not None else k["cc"].isna()) & \
            ((k["sms"] == sms) if sms is not None else k["sms"].isna())
        pos = [int(i) for i in np.flatnonzero(rows.to_numpy(dtype=bool))]
        why = contradiction(option, None if cc is None else str(cc), None if sms is None else int(sms))
        if not why:
            seen = " and ".join(x for x in (f"CC {cc}" if cc is not None else "",
                                           f"{int(sms)} SMs" if sms is not None else "") if x)
            assumed.iloc[pos] = f"Device {option.name} from --device" + (
                f", which agrees with the export's {seen}" if seen else " (the export has no CC or SM count to check)")
            continue
        lint.append({"code": "device-contradiction", "kernels": pos, "message":
                     f"{len(pos)} kernel(s): --device {option.name} contradicts the export ({why}): "
                     "its ceilings are used as asked, but they are probably not this GPU's."})
        assumed.iloc[pos] = f"--device {option.name} contradicts the export ({why})"
    return lint, assumed
