"""A verdict per op signature (``docs/formulas.md#op-verdicts``): achieved FLOP/s and bytes/s, the roof
it runs against, % of that roof, label and limiter. A label is given only when the whole bytes interval
puts the op on one side of the ridge; an op whose working set fits in the last-level cache is placed
against the L2, never called HBM-bound."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooftop.analyzer.ceilings.devices import DeviceSpec
from rooftop.analyzer.ops.signatures import LinkCopies, Signature
from rooftop.analyzer.timeline.copies import SMALL_COPY_BYTES

TIMELINE_COPIES = "docs/formulas.md#timeline-copies"
LAUNCH_S = 5e-6  # docs/formulas.md#kernel-labels: kernels shorter than this sit at the launch cost
SIDE = 0.60  # NVIDIA's SOL threshold for naming a side (docs/formulas.md#kernel-labels)
TENSOR_KEYS = ("tensor", "bf16", "fp8", "tf32", "int8", "fp64_tensor")
_FALLBACK = {"bf16": "tensor", "fp64_tensor": "fp64"}
ROOF_NAMES = {"tensor": "FP16 tensor", "bf16": "BF16 tensor", "fp8": "FP8 tensor", "tf32": "TF32 tensor",
              "int8": "INT8 tensor", "fp64_tensor": "FP64 tensor", "fp32": "FP32", "fp64": "FP64", "fp16": "FP16",
              "dram": "DRAM", "l2": "L2"}


@dataclass(frozen=True)
class Verdict:
    label: str
    limiter: str
    roof: dict[str, Any]
    pct_of_roof: float | None
    min_time_s: float | None  # the roofline's lower bound on the op's time (compulsory bytes)
    evidence: list[str]
    max_saving_s: float | None = None  # small-grid: what filling the idle SMs can recover at most


def _peak(spec: DeviceSpec, key: str) -> tuple[str, float | None]:
    if key in spec.peaks:
        return key, spec.peaks[key]
    alt = _FALLBACK.get(key)
    return (alt, spec.peaks[alt]) if alt and alt in spec.peaks else (key, None)


def compute_key(sig: Signature) -> str:
    """The roof class: the formula's, with FP32 GEMMs that ran TF32 kernels moved to the TF32 roof."""
    key = sig.modelled.work.compute if sig.modelled.work else "none"
    if key == "fp32" and any("tf32" in k.lower() for k in sig.kernel_names):
        return "tf32"
    return key


def _unknown(why: str, roof: dict[str, Any] | None = None, evidence: list[str] | None = None) -> Verdict:
    return Verdict("unknown", "unknown", roof or {}, None, None, [why, *(evidence or [])])


def verdict(sig: Signature, spec: DeviceSpec | None) -> Verdict:
    """The label and limiter of one op signature on its device."""
    m = sig.modelled
    t = sig.time_ns / 1e9
    if t > 0 and sig.link_only and sig.link is not None:
        return transfer_verdict(sig.link)
    if m.work is None:
        return _unknown(f"unmodelled: {m.reason}")
    w = m.work
    lo, hi = w.bytes_min * sig.calls, w.bytes_max * sig.calls
    if t <= 0:
        return _unknown("no GPU time recorded for its kernels")
    if spec is None:
        return _unknown("the trace's GPU is not in the device table: no roof (pass --device NAME)")
    if sig.host_copy:
        return _unknown("its GPU work mixes copies between host and device (whose roof is the host link, PCIe / "
                        "NVLink-C2C, not in the device table) with other work, so no one roof bounds it",
                        evidence=link_lines(sig.link) if sig.link else [])
    if m.category == "communication":
        return _unknown("a collective: its roof is the interconnect (NVLink / network), not in the device table",
                        evidence=[f"bus bandwidth {lo / t / 1e9:.1f}–{hi / t / 1e9:.1f} GB/s (nccl-tests busbw)"
                                  if hi > lo else f"bus bandwidth {lo / t / 1e9:.1f} GB/s (nccl-tests busbw)"])
    llc = spec.llc_bytes
    ws_lo, ws_hi = w.bytes_min, (w.ws_max if w.ws_max is not None else w.bytes_min)
    if llc is None or ws_hi <= llc or ws_lo > llc:
        return _judge(sig, spec, "l2" if llc is not None and ws_hi <= llc else "dram", _ws_note(ws_lo, ws_hi, llc))
    # the element size is not recorded and the working set may or may not fit in the L2: a label only where
    # both placements give the same one (docs/formulas.md#op-verdicts)
    note = (f"working set {ws_lo / 2**20:.3g}–{ws_hi / 2**20:.3g} MiB per call (element size not recorded: "
            f"1–8 B): it may or may not fit the {llc / 2**20:.0f} MiB L2, not decided")
    v_l2, v_dram = _judge(sig, spec, "l2", note), _judge(sig, spec, "dram", note)
    if (v_l2.label, v_l2.limiter) == (v_dram.label, v_dram.limiter):
        return v_dram
    return Verdict("unknown", "unknown", v_dram.roof, None, min(v_l2.min_time_s or 0.0, v_dram.min_time_s or 0.0),
                   [f"against the L2: {v_l2.label} ({v_l2.limiter}); against DRAM: {v_dram.label} "
                    f"({v_dram.limiter}): the placements disagree, so the label is not decided; the tensors' dtypes "
                    "(a trace that records them, or an ncu profile: rooftop analyze TRACE PROFILE) would decide",
                    *[e for e in v_dram.evidence if "rooftop analyze TRACE PROFILE" not in e]])


def _size(n: float) -> str:
    return (f"{n / 1e9:.3g} GB" if n >= 1e9 else f"{n / 1e6:.3g} MB" if n >= 1e6 else f"{n / 1e3:.3g} kB"
            if n >= 1e3 else f"{n:.3g} B")


def _dur(ns: float) -> str:
    return f"{ns / 1e6:.4g} ms" if ns >= 1e6 else f"{ns / 1e3:.3g} µs"


def _rate(n: int, nbytes: int | None, ns: int) -> str:
    """``n x`` copies, their bytes and time, the achieved rate and the average copy (a small copy's time is
    the link's fixed cost per copy, not its bandwidth: the average says which)."""
    avg = f" (on average {_size(nbytes / n) + ' in ' if nbytes is not None else ''}{_dur(ns / n)} per copy)" if n else ""
    if nbytes is None:
        return f"{n} x in {_dur(ns)}, bytes not recorded{avg}"
    rate = f" = {nbytes / ns:.3g} GB/s" if ns > 0 else ""
    return f"{n} x, {_size(nbytes)} in {_dur(ns)}{rate}{avg}"


def link_lines(link: LinkCopies) -> list[str]:
    """The achieved bandwidth of an op's host<->device copies, in all and per copy kind: the copy's bytes
    counted once (docs/formulas.md#op-memory)."""
    n = sum(v[0] for v in link.by_name.values())
    out = [f"host link: {_rate(n, link.bytes, link.ns)}; each copied byte counted once (read on one side of the "
           "link, written on the other)"]
    if len(link.by_name) > 1:
        out += [f"{name}: {_rate(k, b, ns)}" for name, (k, b, ns) in sorted(link.by_name.items())]
    return out


def transfer_verdict(link: LinkCopies) -> Verdict:
    """An op whose GPU work is only copies between host and device: bound by the host link (PCIe /
    NVLink-C2C), whose peak rooftop does not know; what pinning or moving fewer bytes recovers is the
    timeline's copy finding, not an op finding. Copies of <= :data:`SMALL_COPY_BYTES` on average
    (``.item()``, a scalar to the host) are latency, not bandwidth (docs/formulas.md#op-verdicts)."""
    n = sum(v[0] for v in link.by_name.values())
    if link.bytes is not None and n and link.bytes / n <= SMALL_COPY_BYTES:
        return Verdict("overhead-bound", "latency", {}, None, None, [
            f"its GPU work is only copies between host and device of {link.bytes / n:.3g} B on average (<= 64 KB): "
            "each takes the link's fixed cost per copy (about 1.4 µs for a 4-byte copy on our H100 capture, whose "
            "pinned copies run at 55 GB/s: the two are equal near 80 KB), not its bandwidth", *link_lines(link),
            "fewer copies, not faster ones, save time: keep the value on the GPU, or batch what goes to the host "
            "into one copy (docs/formulas.md#op-verdicts)"])
    return Verdict("transfer-bound", "host-link", {}, None, None, [
        "its GPU work is only copies between host and device (no kernels): the host link (PCIe / NVLink-C2C) "
        "bounds it, not a roof of the device table; ncu profiles kernels, not copies", *link_lines(link),
        f"what pinning or moving fewer bytes recovers is the trace's copy finding (timeline-pageable-copies, "
        f"timeline-transfer: {TIMELINE_COPIES}), so no op finding repeats it"])


def _ws_note(ws_lo: float, ws_hi: float, llc: float | None) -> str:
    size = f"{ws_lo / 2**20:.3g} MiB" if ws_hi == ws_lo else f"{ws_lo / 2**20:.3g}–{ws_hi / 2**20:.3g} MiB"
    if llc is None:
        return f"working set {size} per call (L2 capacity not in the device table)"
    if ws_hi <= llc:
        return f"working set {size} per call fits in the {llc / 2**20:.0f} MiB L2: placed against the L2, not HBM"
    return f"working set {size} per call exceeds the {llc / 2**20:.0f} MiB L2"


def small_grid(blocks: int | None, sms: int | None, t: float, t_min: float) -> tuple[float, float] | None:
    """``(fill, recoverable_s)`` when a grid of fewer blocks than SMs is the main part of the op's time above
    its roofline bound, else ``None`` (docs/formulas.md#op-verdicts). Filling the idle SMs recovers at most
    ``1 - blocks/SMs`` of the time (NCU LaunchStatistics' Small Grid estimated speedup); the rest of the gap,
    ``blocks/SMs - t_min/t``, is spent on the SMs that have work, which more blocks do not shorten."""
    if blocks is None or not sms or blocks >= sms or t <= 0:
        return None
    fill = blocks / sms
    idle, rest = 1.0 - fill, fill - min(t_min / t, fill)
    return (fill, idle * t) if idle >= rest else None


def _judge(sig: Signature, spec: DeviceSpec, level: str, ws_note: str) -> Verdict:
    """The verdict against one memory level's roof (``l2`` when the working set fits, else ``dram``)."""
    w = sig.modelled.work
    assert w is not None
    t = sig.time_ns / 1e9
    flops, lo, hi = w.flops * sig.calls, w.bytes_min * sig.calls, w.bytes_max * sig.calls
    bw = spec.bandwidth.get(level)
    key = compute_key(sig)
    ckey, peak = _peak(spec, key) if key != "none" else ("none", None)
    roof: dict[str, Any] = {"compute": ckey if key != "none" else None, "peak_flops": peak, "level": level,
                            "bandwidth": bw, "llc_bytes": spec.llc_bytes, "device": spec.name}
    if bw is None:
        return _unknown(f"no {ROOF_NAMES[level]} bandwidth for {spec.name} in the device table", roof)
    if flops > 0 and peak is None:
        return _unknown(f"no {key} peak for {spec.name} in the device table", roof)
    achieved = flops / t
    bps_lo, bps_hi = lo / t, hi / t
    c_pct = achieved / peak if peak else 0.0
    m_lo, m_hi = bps_lo / bw, bps_hi / bw
    t_min = max(flops / peak if peak else 0.0, lo / bw)
    ev = [f"{achieved / 1e12:.3g} TFLOP/s ({100 * c_pct:.1f} % of the {ROOF_NAMES.get(ckey, ckey)} roof)"
          if flops else "no floating-point work (bytes only)",
          f"{bps_lo / 1e9:.4g}–{bps_hi / 1e9:.4g} GB/s from the bytes interval "
          f"({100 * m_lo:.1f}–{100 * m_hi:.1f} % of {ROOF_NAMES[level]} {bw / 1e12:.3g} TB/s)", ws_note]
    # overhead: the compute side is exact; the memory side is known from below (compulsory bytes)
    if sig.activities and t / sig.activities < LAUNCH_S and c_pct < SIDE and m_lo < SIDE:
        ev.insert(0, f"its GPU activities average {1e6 * t / sig.activities:.2g} µs (< 5 µs) with neither side "
                     f"at 60 % of its roof (memory by its compulsory bytes): launch overhead dominates")
        return Verdict("overhead-bound", "launch", roof, None, t_min, ev)
    if flops == 0:
        i_lo = i_hi = 0.0
    else:
        i_lo, i_hi = flops / hi, flops / lo
    ridge = peak / bw if peak else 0.0
    ev.insert(0, f"intensity {i_lo:.3g}–{i_hi:.3g} FLOP/B against the ridge {ridge:.3g} FLOP/B "
                 f"({ROOF_NAMES.get(ckey, ckey)} / {ROOF_NAMES[level]})" if flops else
                 "bytes only: memory side of every ridge")
    neither = c_pct < SIDE and m_lo < SIDE
    grid = small_grid(sig.max_blocks, spec.sm_count, t, t_min) if neither else None
    if (neither and sig.max_blocks is not None and spec.sm_count and sig.max_blocks < spec.sm_count
            and grid is None and not (flops and i_lo >= ridge)):
        fill = sig.max_blocks / spec.sm_count
        ev.append(f"its largest kernel grid has {sig.max_blocks} blocks for {spec.sm_count} SMs: filling them would "
                  f"recover at most {100 * (1 - fill):.1f} % of its time (NCU's Small Grid estimate), less than the "
                  f"{100 * max(0.0, fill - t_min / t):.1f} % spent below its roof on the SMs that have work: "
                  "not a small-grid verdict")
    if grid is not None and (i_hi < ridge or flops == 0 or i_lo < ridge):
        fill, cap = grid
        ev.insert(0, f"its largest kernel grid has {sig.max_blocks} blocks for {spec.sm_count} SMs, with neither "
                     f"side at 60 % of its roof (memory by its compulsory bytes): SMs sit idle (NCU's Small Grid); "
                     f"filling them recovers at most {100 * (1 - fill):.1f} % of its time")
        return Verdict("overhead-bound", "small-grid", roof, None, t_min, ev, max_saving_s=round(cap, 9))
    if (i_hi < ridge or flops == 0) and m_lo < SIDE:
        ev.append(f"in the memory regime (intensity below the ridge) but at {100 * m_lo:.1f} % of "
                  f"{ROOF_NAMES[level]} bandwidth by its compulsory bytes: below 60 % (NCU's threshold for naming a "
                  "side) it is near neither roof, so what holds it is not decided: latency (short or "
                  "low-occupancy kernels), more bytes than compulsory, or work the FLOP model does not count "
                  "(integer and transcendental: RNG, exp); an ncu profile of its kernels decides "
                  "(rooftop analyze TRACE PROFILE)")
        return Verdict("unknown", "unknown", roof, None, t_min, ev)
    if i_hi < ridge or flops == 0:
        if spec.llc_bytes is None:
            return Verdict("memory-bound", "unknown", roof, m_lo, t_min,
                           [*ev, "whether it is HBM- or L2-bound needs the L2 capacity (not in the device table)"])
        return Verdict("memory-bound", level, roof, m_lo, t_min, ev)
    if i_lo >= ridge:
        limiter = "tensor" if ckey in TENSOR_KEYS else ckey if ckey in ("fp32", "fp64", "fp16") else "unknown"
        return Verdict("compute-bound", limiter, roof, c_pct, t_min, ev)
    ev.append("the bytes interval straddles the ridge: the trace cannot tell compute- from memory-bound; "
              "an ncu profile's dram__bytes would (rooftop analyze TRACE PROFILE)")
    return Verdict("unknown", "unknown", roof, None, t_min, ev)


def ncu_verdict(trace: Verdict, launches: list[tuple[str, str, float, str]]) -> Verdict:
    """The op's verdict when ncu profiled its kernels (``docs/formulas.md#op-ncu-verdicts``): the label and
    limiter of the matched launches holding most of their ncu time (NCU's SOL verdicts, as for kernels), not
    the trace's bound. The roof and ``min_time_s`` stay the model's; ``pct_of_roof`` only where the trace agrees."""
    by: dict[tuple[str, str], float] = {}
    for label, limiter, dur, _ in launches:
        by[(label, limiter)] = by.get((label, limiter), 0.0) + (dur if dur > 0 else 0.0)
    total = sum(by.values())
    ranked = sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))
    (label, limiter), t = ranked[0]
    share = t / total if total > 0 else None
    names = sorted({n for lb, lm, _, n in launches if (lb, lm) == (label, limiter)})
    words = "; ".join(f"{lb} ({lm}) {100 * d / total:.0f} %" for (lb, lm), d in ranked) if total > 0 else ""
    ev = [f"ncu profiled its kernels ({len(launches)} launch(es) matched): {label} ({limiter})"
          + (f" for {100 * share:.0f} % of their ncu time" if share is not None else "")
          + f", NCU's verdict for {names[0][:80]}" + (f" and {len(names) - 1} more" if len(names) > 1 else ""),
          *([f"ncu time by verdict: {words}"] if len(ranked) > 1 else []),
          f"the trace alone: {trace.label}" + (f" ({trace.limiter})" if trace.limiter != "unknown" else "")]
    ev += [e for e in trace.evidence if "rooftop analyze TRACE PROFILE" not in e]
    same = (label, limiter) == (trace.label, trace.limiter)
    return Verdict(label, limiter, trace.roof, trace.pct_of_roof if same else None, trace.min_time_s, ev,
                   trace.max_saving_s if same else None)
