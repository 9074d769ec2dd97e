"""Per-GPU health from the reduced observations (:mod:`.partials`): events with their time span and
evidence, and for every aspect whether it was checked, had no threshold, or was not collected
(docs/formulas.md#health). Health is never "healthy" where a field is absent: ``not collected``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rooftop.analyzer.health import rules as R
from rooftop.analyzer.health.partials import GPU_COLUMNS, empty_health
from rooftop.parsers.dcgm.fields import field_name

RECOMMENDATION = {
    "xid": "Look the XID up in NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors) and in the host's "
           "kernel log (dmesg: NVRM: Xid); drain the GPU if the catalog names a hardware or driver cause.",
    "ecc": "Uncorrectable memory errors: drain the GPU, reset it (nvidia-smi -r) and check the row-remap / "
           "page-retirement state; service it if they recur.",
    "remap": "Row remapping: a pending remap is applied by a GPU reset; a remap failure means the GPU should be "
             "serviced (NVIDIA's GPU memory error management docs).",
    "clocks": "Clocks were lowered for the reason named: check cooling, power delivery and power limits "
              "(nvidia-smi -q -d PERFORMANCE shows the active reasons).",
    "temp": "The GPU reached its slowdown temperature: check cooling and airflow.",
    "power": "The GPU drew power at its limit, where NVIDIA's power management lowers its clocks to stay under "
             "it (the 'SW power cap' clock-event reason says whether it did). If it recurs under load, a higher "
             "power limit (nvidia-smi -pl, up to the board's maximum) or better cooling lets it keep its clocks.",
}


def iso_ms(ms: int) -> str:
    """ISO 8601 UTC, milliseconds only where the time has them."""
    t = pd.Timestamp(int(ms), unit="ms", tz="UTC")
    return str(t.isoformat(timespec="milliseconds" if ms % 1000 else "seconds")).replace("+00:00", "Z")


def _event(kind: str, code: int | None, title: str, severity: str, row: Any, evidence: str,
           first: int | None = None, last: int | None = None, short: str = "") -> dict[str, Any]:
    f = int(row["first_ms"]) if first is None else first
    t = int(row["last_ms"]) if last is None else last
    return {"kind": kind, "code": code, "title": title, "short": short or title, "severity": severity,
            "first": iso_ms(f), "last": iso_ms(t), "samples": int(row["n"]), "evidence": evidence}


def gpu_health(reduced: pd.DataFrame, gpus: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """One record per GPU that has any health field, and per GPU of ``gpus`` (host, gpu, uuid, mig,
    model) without one (every aspect not collected); ordered: GPUs with events first (worst
    severity, then most events), then by GPU key. A sample naming no GPU is none of them."""
    from rooftop.analyzer.windows.fields import gpu_key

    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    if reduced is not None and len(reduced):
        keyed = reduced.assign(**{c: reduced[c].where(reduced[c].notna(), "") for c in GPU_COLUMNS})
        for key, g in keyed.groupby(list(GPU_COLUMNS), sort=True):
            ident = {c: (v or None) for c, v in zip(GPU_COLUMNS, key, strict=True)}
            seen.add(tuple(ident.values()))
            out.append({"gpu_key": gpu_key(ident["host"], ident["gpu"], ident["mig"]), **ident, **_one(g)})
    for gpu in gpus:
        ident = {c: (v if isinstance(v := gpu.get(c), str) and v else None) for c in GPU_COLUMNS}
        if tuple(ident.values()) in seen or (ident["gpu"] is None and ident["uuid"] is None):
            continue
        seen.add(tuple(ident.values()))
        out.append({"gpu_key": gpu_key(ident["host"], ident["gpu"], ident["mig"]), **ident,
                    **_one(empty_health())})
    out.sort(key=lambda r: (R.SEVERITY_RANK.get(r["severity"] or "", 3), -len(r["events"]), r["gpu_key"],
                            r["uuid"] or ""))
    return out


def _one(g: pd.DataFrame) -> dict[str, Any]:
    fields = {int(r["code"]): r for _, r in g[g["obs"] == "field"].iterrows()}
    events: list[dict[str, Any]] = []
    for _, r in g[g["obs"] == "xid"].iterrows():
        code = int(r["code"])
        events.append(_event("xid", code, R.xid_title(code), "high", r,
                             f"{field_name(R.XID)} = {code} in {int(r['n'])} sample(s) ({R.XID_DOC})",
                             short=f"XID {code}"))
    nz = {int(r["code"]): r for _, r in g[g["obs"] == "nonzero"].iterrows()}
    if R.ECC_DBE_VOL in nz:
        r = nz[R.ECC_DBE_VOL]
        events.append(_event("ecc-dbe", None, f"{r['vmax']:.0f} uncorrectable (double-bit) ECC error(s) since "
                             "the driver loaded", "high", r, f"{field_name(R.ECC_DBE_VOL)} up to {r['vmax']:.0f}",
                             short=f"ECC DBE {r['vmax']:.0f}"))
    agg = fields.get(R.ECC_DBE_AGG)
    if agg is not None and agg["vmax"] > agg["vmin"]:
        events.append(_event("ecc-dbe-new", None, f"{agg['vmax'] - agg['vmin']:.0f} new uncorrectable ECC "
                             "error(s) in the lifetime count", "high", agg,
                             f"{field_name(R.ECC_DBE_AGG)} rose from {agg['vmin']:.0f} to {agg['vmax']:.0f}",
                             int(agg["min_last_ms"]), int(agg["max_first_ms"]),
                             short=f"ECC DBE +{agg['vmax'] - agg['vmin']:.0f} (lifetime)"))
    for fid, kind, title, sev in ((R.REMAP_FAILURE, "remap-failure", "row remapping failed", "high"),
                                  (R.REMAP_PENDING, "remap-pending", "row remap pending (a GPU reset applies it)",
                                   "medium"),
                                  (R.ROWS_UNCORRECTABLE, "remap-uncorrectable",
                                   "rows remapped for uncorrectable errors", "medium")):
        if fid in nz:
            r = nz[fid]
            events.append(_event(kind, None, f"{title}" + (f": {r['vmax']:.0f}" if fid == R.ROWS_UNCORRECTABLE
                                                           else ""), sev, r, f"{field_name(fid)} up to {r['vmax']:.0f}",
                                 short=kind.replace("-", " ")))
    for _, r in g[g["obs"] == "bit"].sort_values("code").iterrows():
        bit = int(r["code"])
        name, sev = R.EVENT_BITS[bit]
        events.append(_event("clocks", bit, f"clocks lowered: {name} (0x{bit:x})", sev, r,
                             f"{field_name(R.CLOCKS_EVENT_REASONS)} had bit 0x{bit:x} set in {int(r['n'])} sample(s)",
                             short=name))
    hot = g[g["obs"] == "hot"]
    slow = fields.get(R.SLOWDOWN_TEMP)
    if len(hot) and slow is not None:
        r = hot.iloc[0]
        events.append(_event("temperature", None, f"GPU at its slowdown temperature ({r['vmax']:.0f} °C, "
                             f"slowdown {slow['vmin']:.0f} °C)", "medium", r,
                             f"{field_name(R.GPU_TEMP)} >= {field_name(R.SLOWDOWN_TEMP)} in {int(r['n'])} sample(s)",
                             short=f"slowdown temp ({r['vmax']:.0f} °C)"))
    lim = g[g["obs"] == "at_limit"]
    if len(lim):
        r = lim.iloc[0]
        events.append(_event("power", None, f"power at the limit (up to {100 * r['vmax']:.0f} % of it)", "low", r,
                             f"power draw >= {100 * R.POWER_AT_LIMIT:.0f} % of the "
                             f"{'enforced' if R.POWER_ENFORCED in fields else 'management'} power limit in "
                             f"{int(r['n'])} sample(s)", short=f"power at limit ({100 * r['vmax']:.0f} %)"))
    checked, no_threshold, not_collected = _aspects(fields, events)
    worst = min((e["severity"] for e in events), key=lambda s: R.SEVERITY_RANK[s], default=None)
    return {"severity": worst, "events": events, "checked": checked, "no_threshold": no_threshold,
            "not_collected": not_collected, **_maxima(fields)}


_ASPECT_OF = {"xid": "XID errors", "ecc-dbe": "ECC", "ecc-dbe-new": "ECC", "remap-failure": "row remapping",
              "remap-pending": "row remapping", "remap-uncorrectable": "row remapping",
              "clocks": "clock-event reasons", "temperature": "temperature", "power": "power"}


def _aspects(fields: dict[int, Any], events: list[dict[str, Any]]) -> tuple[list[str], list[str], list[str]]:
    """Aspects collected without an event (``checked``), collected but without the limit the rule
    needs (``no_threshold``: temperature without the slowdown temperature, power without a limit),
    and not collected."""
    with_events = {_ASPECT_OF[e["kind"]] for e in events}
    checked: list[str] = []
    no_threshold: list[str] = []
    missing: list[str] = []
    for aspect, fids in R.ASPECTS.items():
        if not any(f in fields for f in fids):
            missing.append(aspect)
        elif aspect in with_events:
            continue
        elif (aspect == "temperature" and R.SLOWDOWN_TEMP not in fields) or (aspect == "power" and not (R.POWER_ENFORCED in fields or R.POWER_MGMT in fields)):
            no_threshold.append(aspect)
        else:
            checked.append(aspect)
    return checked, no_threshold, missing


def _maxima(fields: dict[int, Any]) -> dict[str, float | None]:
    def mx(fid: int) -> float | None:
        r = fields.get(fid)
        return None if r is None else float(r["vmax"])

    def mn(fid: int) -> float | None:
        r = fields.get(fid)
        return None if r is None else float(r["vmin"])

    power = mx(R.POWER) if R.POWER in fields else mx(R.POWER_INSTANT)
    limit = mn(R.POWER_ENFORCED) if R.POWER_ENFORCED in fields else mn(R.POWER_MGMT)
    return {"max_temp_c": mx(R.GPU_TEMP), "slowdown_temp_c": mn(R.SLOWDOWN_TEMP),
            "max_power_w": power, "power_limit_w": limit}


def health_findings(records: list[dict[str, Any]], top: int) -> list[dict[str, Any]]:
    """One finding per GPU with health events (at most ``top``, worst first): ranked before the
    efficiency findings by the caller (docs/formulas.md#health)."""
    out: list[dict[str, Any]] = []
    for rec in [r for r in records if r["events"]][:max(int(top), 0)]:
        ev = rec["events"]
        kinds = list(dict.fromkeys(e["kind"].split("-")[0] for e in ev))
        reco = " ".join(dict.fromkeys(RECOMMENDATION[_RECO_KEY.get(k, k)] for k in kinds))
        names = ", ".join(dict.fromkeys(e["title"] for e in ev))
        who = rec["gpu_key"] + (f" ({rec['uuid']})" if rec.get("uuid") else "")
        out.append({
            "rank": 0, "rule": f"health-{ev[0]['kind']}", "severity": rec["severity"],
            "title": f"GPU {who}: health events: {names}",
            "kernels": [], "time_share": None, "est_saving_s": None, "recommendation": reco,
            "evidence": [f"{e['title']}: {e['evidence']}, {e['first']} .. {e['last']}" for e in ev],
            "source": "dcgm", "group": rec["gpu_key"], "label": "health",
        })
    return out


_RECO_KEY = {"remap": "remap", "ecc": "ecc", "xid": "xid", "clocks": "clocks", "temperature": "temp",
             "power": "power"}


def health_first(health: list[dict[str, Any]], findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``health`` findings, then the others, ranked 1.. in that order."""
    out = [dict(f) for f in [*health, *findings]]
    for i, f in enumerate(out, start=1):
        f["rank"] = i
    return out


def health_summary(records: list[dict[str, Any]], every_gpu: bool = True) -> dict[str, Any]:
    """The document's ``health``: the GPU records (all of them, or with ``every_gpu`` False only those
    with events: a fleet's), how many GPUs had any health field, the aspects collected on any GPU,
    those collected only without the limit their rule needs, and those collected on none (docs/contract.md)."""
    collected = [a for a in R.ASPECTS if any(a not in r["not_collected"] for r in records)]
    judged = {_ASPECT_OF[e["kind"]] for r in records for e in r["events"]} | {a for r in records for a in r["checked"]}
    return {
        "gpus": records if every_gpu else [r for r in records if r["events"]],
        "gpus_total": len(records),
        "gpus_with_fields": sum(1 for r in records if len(r["not_collected"]) < len(R.ASPECTS)),
        "gpus_with_events": sum(1 for r in records if r["events"]),
        "collected": collected,
        "no_threshold": [a for a in collected if a not in judged],  # on every GPU that has it
        "not_collected": [a for a in R.ASPECTS if a not in collected],
    }
