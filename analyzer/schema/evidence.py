"""Evidence as facts, and the one registry that turns a fact into its sentence
(docs/contract.md#evidence, docs/architecture.md#evidence).

A kernel's evidence is a list of **facts**: a rule id (a key of :data:`RULES`) and the values its
sentence needs (numbers in SI units, texts, true/false), in the order the sentences are read. The
analyzer decides the facts (``analyzer/kernels/evidence.py``); a sentence is drawn from a fact by its
rule's template, here, by whoever shows it (the analyzer for the kernels whose ``evidence`` it writes
out, a report, a tool reading the JSON: the document carries the templates as ``evidence_rules``).

To add a fact: add its rule here (id, template, units and where each value comes from), and emit it
in the analyzer with ``Facts.add(rule_id, mask, **columns)``; the sentence follows.

Template language (one line; the values are looked up by name):

``{name}``
    the value as text (null: nothing).
``{name:%.1f}``
    a number, printf style (null: ``?``).
``{name:si:B/s}``
    a number with an SI prefix and unit, ``1.23 TB/s`` (null: ``n/a``).
``{name?}``
    a condition only: draws nothing.
``{[A|B]}``
    ``A`` when its condition holds, else ``B`` (``|B`` may be left out: nothing). The condition: every
    ``?`` field written directly in ``A`` is present (not null, not false); where ``A`` has none,
    every value and list written directly in it is present (not null, not empty).
``{,[P][Q]...}``
    the pieces whose condition holds (as for ``A``), joined with ``", "``; nothing when none does.
``\\x``
    the character ``x`` itself (a bracket, brace or bar that is text).

This module imports only the standard library: reports and tools draw sentences without pandas.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypedDict

from rooftop.analyzer.schema.parts import Json

# The launches whose evidence the document writes out as sentences (kernels[].evidence): the longest,
# as many as the report's kernel table shows (reports/kernel_table.py); every launch keeps its facts.
SENTENCE_KERNELS = 500


class EvidenceRule(TypedDict):
    """One rule of the registry: its sentence template, each value's unit and where it comes from."""

    template: str
    units: dict[str, str]
    sources: dict[str, str]


class EvidenceFacts(TypedDict):
    """One rule's facts over the kernels it holds for, column-wise: ``kernels`` are positions in the
    document's ``kernels`` (ascending), ``values[name][j]`` is the value for ``kernels[j]``, and
    ``params`` the values every one of them shares."""

    rule: str
    params: dict[str, Json]
    kernels: list[int]
    values: dict[str, list[Json]]


# ----------------------------------------------------------------------------- formatting

_PREFIX = {-5: "f", -4: "p", -3: "n", -2: "µ", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def si(value: float | None, unit: str) -> str:
    """``1.23e12, "FLOP/s"`` -> ``"1.23 TFLOP/s"`` (``n/a`` for null or not finite)."""
    if value is None or not _finite(value):
        return "n/a"
    if value == 0:
        return f"0 {unit}"
    k = int(max(-5, min(6, math.floor(math.log10(abs(value)) / 3))))
    if abs(round(value / 1000.0**k, 1)) >= 999.5 and k < 6:
        k += 1
    return f"{value / 1000.0 ** k:.3g} {_PREFIX[k]}{unit}"


def _draw(value: Any, fmt: str) -> str:
    if fmt == "":
        return "" if value is None else str(value)
    if fmt.startswith("si:"):
        return si(value, fmt[3:])
    return fmt % value if _finite(value) else "?"


# ----------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class _Field:
    name: str
    fmt: str  # "" text, "%..." printf, "si:UNIT", "?" condition only


@dataclass(frozen=True)
class _Choice:
    yes: tuple[Any, ...]
    no: tuple[Any, ...]


@dataclass(frozen=True)
class _Join:
    pieces: tuple[tuple[Any, ...], ...]


def _parse(text: str, i: int, stop: str) -> tuple[tuple[Any, ...], int]:
    """Parts of ``text`` from ``i`` up to the first ``stop`` character at this level."""
    parts: list[Any] = []
    lit: list[str] = []
    while i < len(text) and text[i] not in stop:
        if text.startswith("{[", i):
            yes, i = _parse(text, i + 2, "|]")
            no: tuple[Any, ...] = ()
            if text.startswith("|", i):
                no, i = _parse(text, i + 1, "]")
            if not text.startswith("]}", i):
                raise ValueError(f"template: '{{[' at {i} not closed by ']}}': {text!r}")
            parts += ["".join(lit), _Choice(yes, no)]
            lit, i = [], i + 2
        elif text.startswith("{,", i):
            i += 2
            pieces = []
            while text.startswith("[", i):
                piece, i = _parse(text, i + 1, "]")
                pieces.append(piece)
                i += 1
            if not text.startswith("}", i):
                raise ValueError(f"template: '{{,' at {i} not closed by '}}': {text!r}")
            parts += ["".join(lit), _Join(tuple(pieces))]
            lit, i = [], i + 1
        elif text[i] == "{":
            end = text.index("}", i)
            spec = text[i + 1:end]
            name, _, fmt = spec.partition(":")
            if name.endswith("?"):
                name, fmt = name[:-1], "?"
            parts += ["".join(lit), _Field(name, fmt)]
            lit, i = [], end + 1
        elif text[i] == "\\" and i + 1 < len(text):  # \x: x itself (a literal bracket, brace or bar)
            lit.append(text[i + 1])
            i += 2
        else:
            lit.append(text[i])
            i += 1
    parts.append("".join(lit))
    return tuple(p for p in parts if p != ""), i


@cache
def compile_template(template: str) -> tuple[Any, ...]:
    """The parsed template (cached); raises ``ValueError`` on an unbalanced one."""
    parts, i = _parse(template, 0, "")
    if i != len(template):
        raise ValueError(f"template: stray character at {i}: {template!r}")
    return parts


def _present(value: Any) -> bool:
    return value is not None and value is not False


def _holds(parts: tuple[Any, ...], values: Mapping[str, Any]) -> bool:
    conds = [p.name for p in parts if isinstance(p, _Field) and p.fmt == "?"]
    if conds:
        return all(_present(values.get(n)) for n in conds)
    return all(_present(values.get(p.name)) for p in parts if isinstance(p, _Field)) and \
        all(_draw_parts(p.pieces, values, joined=True) for p in parts if isinstance(p, _Join))


def _draw_parts(parts: Any, values: Mapping[str, Any], joined: bool = False) -> str:
    if joined:  # a _Join's pieces
        return ", ".join(_draw_parts(piece, values) for piece in parts if _holds(piece, values))
    out: list[str] = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, _Field):
            if p.fmt != "?":
                out.append(_draw(values.get(p.name), p.fmt))
        elif isinstance(p, _Choice):
            out.append(_draw_parts(p.yes if _holds(p.yes, values) else p.no, values))
        else:
            out.append(_draw_parts(p.pieces, values, joined=True))
    return "".join(out)


def render(template: str, values: Mapping[str, Any]) -> str:
    """The sentence ``template`` draws from ``values`` (the template language above)."""
    return _draw_parts(compile_template(template), values)


def fields(template: str) -> set[str]:
    """Every value name ``template`` reads."""
    found: set[str] = set()

    def walk(parts: Iterable[Any]) -> None:
        for p in parts:
            if isinstance(p, _Field):
                found.add(p.name)
            elif isinstance(p, _Choice):
                walk(p.yes)
                walk(p.no)
            elif isinstance(p, _Join):
                for piece in p.pieces:
                    walk(piece)

    walk(compile_template(template))
    return found


# ----------------------------------------------------------------------------- the registry

_KL = "docs/formulas.md#kernel-labels"
_WB = "docs/formulas.md#work-bytes"
_LEVEL_NAMES = {"l1": "L1", "l2": "L2", "dram": "DRAM"}
_MEMORY_SIDE = "{[memory side {memory_side_pct:%.1f}% of peak|memory side not measured]}"
_COMPUTE_SIDE = "{[compute side {compute_side_pct:%.1f}% of peak|compute side not measured]}"
_ROOF = ("{[{compute_util_pct?} = {compute_util_pct:%.1f}% of the compute roof {compute_peak:si:FLOP/s} "
         "({peak_source})|; compute roof unknown]}")
_SOL = "SpeedOfLight % exported by NCU (sm__throughput / gpu__compute_memory_throughput .pct_of_peak_sustained_elapsed)"
_SIDES = "rooftop's per-side utilisation: the busiest memory level / compute pipe, % of its ceiling"


def _rule(template: str, units: Mapping[str, str] | None = None,
          sources: Mapping[str, str] | None = None) -> EvidenceRule:
    return {"template": template, "units": dict(units or {}), "sources": dict(sources or {})}


def _rate_piece(lvl: str) -> str:
    return (f"[{{rate_{lvl}?}}{_LEVEL_NAMES[lvl]} {{rate_{lvl}:si:B/s}} = {{util_pct_{lvl}:%.1f}}% of "
            f"{{bw_{lvl}:si:B/s}} ({{bw_source_{lvl}}}), AI {{ai_{lvl}:%.3g}} FLOP/B]")


def _level_rule(lvl: str) -> EvidenceRule:
    name = _LEVEL_NAMES[lvl]
    return _rule(
        f"{name}: {{bytes:si:B}} ({{bytes_source}})"
        "{[{util_pct?}, {rate:si:B/s} = {util_pct:%.1f}% of {bw:si:B/s} ({bw_source})"
        f"|{{[{{rate_known?}}, {{rate:si:B/s}} (no {name} ceiling)]}}]}}"
        "{[{ai?}; AI {ai:%.3g} FLOP/B{[{ridge?}{[{below_ridge?} < ridge | >= ridge ]}{ridge:%.3g}]}]}",
        {"bytes": "B", "rate": "B/s", "util_pct": "%", "bw": "B/s", "ai": "FLOP/B", "ridge": "FLOP/B"},
        {"bytes": f"kernels[].bytes.{lvl}", "bytes_source": "the counter the bytes were read from",
         "rate": "bytes / duration_s", "util_pct": f"100 x rate / bw (extra.bw_util_{lvl})",
         "bw": f"the {name} ceiling (devices[], per kernel)", "bw_source": "the devices[] entry it came from",
         "ai": f"kernels[].intensity.{lvl}", "ridge": f"compute roof / bw (extra.ridge_{lvl})",
         "below_ridge": "ai < ridge", "rate_known": "duration_s is known"})


RULES: dict[str, EvidenceRule] = {
    "profile-failed": _rule(
        "Profile failed: NCU collected no metrics for this launch (no duration; its rule results are errors), "
        f"so no label, saving or advice is given (lint failed-profile; {_KL})"),
    "sol-verdict": _rule(
        "NCU Speed Of Light: compute (SM) {compute_pct:%.1f}%, memory {memory_pct:%.1f}% -> SOLBottleneck "
        '"{verdict}" (>= 80 % high throughput, both < 60 % latency or small grid, 60-80 % the side ahead by >= 10 '
        f"points; {_KL})"
        "{[{legacy?} [legacy sm__sol_pct / gpu__compute_memory_sol_pct\\]]}",
        {"compute_pct": "%", "memory_pct": "%"},
        {"compute_pct": _SOL, "memory_pct": _SOL, "verdict": "NCU's SOLBottleneck rule applied to them (extra.sol_verdict)",
         "legacy": "read from the legacy sm__sol_pct / gpu__compute_memory_sol_pct"}),
    "sol-one-side-compute": _rule(
        "NCU Speed Of Light: compute (SM) {compute_pct:%.1f}% (the memory % is not in the export) -> \"High "
        f"Throughput\": one side >= 80 % decides on its own (SOLBottleneck; {_KL})",
        {"compute_pct": "%"}, {"compute_pct": _SOL}),
    "sol-one-side-memory": _rule(
        "NCU Speed Of Light: memory {memory_pct:%.1f}% (the compute (SM) % is not in the export) -> \"High "
        f"Throughput\": one side >= 80 % decides on its own (SOLBottleneck; {_KL})",
        {"memory_pct": "%"}, {"memory_pct": _SOL}),
    "ncu-stored-verdict": _rule(
        f"NCU's own stored verdict: \"{{verdict}}\" (NCU decides; {_KL})",
        sources={"verdict": "the SOLBottleneck rule result stored in the export"}),
    "roofline-sol": _rule(
        "No SpeedOfLight % in the export: NCU's SOLBottleneck thresholds applied to rooftop's roofline "
        f"utilisations: {_MEMORY_SIDE}, {_COMPUTE_SIDE} -> {{label}} ({{limiter}}); a side is named only at "
        f">= 60 %, both below 60 % with L1, L2 and DRAM measured is latency ({_KL})",
        {"memory_side_pct": "%", "compute_side_pct": "%"},
        {"memory_side_pct": _SIDES, "compute_side_pct": _SIDES, "label": "kernels[].label",
         "limiter": "kernels[].limiter"}),
    "sol-one-side-thin": _rule(
        f"No SpeedOfLight % in the export; {_MEMORY_SIDE}, {_COMPUTE_SIDE}: a side below 80 % is named only against "
        f"the other side, which is not measured, so the bound is unknown ({_KL})",
        {"memory_side_pct": "%", "compute_side_pct": "%"},
        {"memory_side_pct": _SIDES, "compute_side_pct": _SIDES}),
    "thin": _rule(
        f"No SpeedOfLight % in the export and no side reaches 60 % ({_MEMORY_SIDE}, {_COMPUTE_SIDE}), but the "
        "utilisation of {unknown} is unknown and could bind: bound unknown; collect --section SpeedOfLight, or "
        f"the missing bytes (l1tex__t_bytes, lts__t_bytes) or ceilings (--device) ({_KL})",
        {"memory_side_pct": "%", "compute_side_pct": "%"},
        {"memory_side_pct": _SIDES, "compute_side_pct": _SIDES,
         "unknown": "the levels with no ceiling or no bytes, else the compute side"}),
    "launch": _rule(
        "Duration {duration_s:si:s}{[{median?} (median of this kernel's launches in this launch configuration)]} < "
        "{launch_us:%.0f} µs: comparable to the 1.2-2.4 µs kernel launch cost; batch, "
        f"fuse or graph-capture such launches ({_KL})",
        {"duration_s": "s", "launch_us": "µs"},
        {"duration_s": "the median of kernels[].duration_s over the kernel's launches in one launch configuration "
                       "(name, grid, block)", "median": "that median differs from this launch's own duration",
         "launch_us": "rooftop's launch-cost threshold"}),
    "small-grid": _rule(
        "Grid of {grid:%.0f} block(s) < {sm_count:%.0f} SMs: {idle_sms:%.0f} SMs get no block (NCU "
        f"LaunchConfiguration Small Grid; {_KL})",
        sources={"grid": "kernels[].grid", "sm_count": "the device's SM count", "idle_sms": "sm_count - grid"}),
    "ncu-small-grid": _rule(
        "NCU says Small Grid (grid {grid:%.0f} blocks{[{waves?}, {waves:%.2f} waves]}): the grid cannot fill the "
        f"device ({_KL})",
        sources={"grid": "kernels[].grid", "waves": "launch__waves_per_multiprocessor (extra.waves)"}),
    "tail": _rule(
        "{waves:%.2f} waves: the last wave is {last_wave_pct:%.0f}% full, its idle SMs cost up to "
        "{tail_pct:%.1f}% of the runtime (est. 100·(1 − partial)/(1 + whole))"
        "{[{ncu_tail?}; NCU raised Tail Effect|; NCU's Tail Effect condition 1/(1 + whole) >= 20 % holds]}"
        f" ({_KL})",
        {"last_wave_pct": "%", "tail_pct": "%"},
        {"waves": "launch__waves_per_multiprocessor (extra.waves)", "last_wave_pct": "100 x (waves - floor(waves))",
         "tail_pct": "100 x (1 - partial) / (1 + whole)", "ncu_tail": "NCU's Tail Effect rule raised"}),
    "latency": _rule(
        "Compute and memory both below 60 % of peak"
        "{[{fills?} and the grid gives every SM work|{[{ncu_sol?} (grid or SM count not in the export: NCU's "
        "verdict rules out a small grid)| (grid or SM count not in the export: a small grid is not ruled out)]}]}"
        ": latency-bound (stalls, occupancy, dependencies), not throughput-bound"
        "{[{ncu_no_tail?}; {waves:%.2f} waves and NCU raised no Tail Effect|{[{waves?}; {waves:%.2f} waves: no tail "
        "effect (NCU's condition needs 1 <= waves < 5 with a partial wave, rooftop's an idle last-wave share >= 10 %, "
        f"here {{tail_pct:%.1f}} %)]}}]}} ({_KL})",
        {"tail_pct": "%"},
        {"fills": "grid >= SM count", "ncu_sol": "the label came from NCU's SpeedOfLight verdict",
         "ncu_no_tail": "NCU's Tail Effect rule ran and did not raise",
         "waves": "launch__waves_per_multiprocessor (extra.waves)", "tail_pct": "100 x (1 - partial) / (1 + whole)"}),
    "work": _rule(
        "Work {flops:si:FLOP} ({[{,[fp64 {fp64_pct:%.0f}%][fp32 {fp32_pct:%.0f}%][fp16 {fp16_pct:%.0f}%]"
        "[tensor {tensor_pct:%.0f}%]}|no FLOPs]}); achieved {achieved_flops_s:si:FLOP/s}" + _ROOF,
        {"flops": "FLOP", "fp64_pct": "%", "fp32_pct": "%", "fp16_pct": "%", "tensor_pct": "%",
         "achieved_flops_s": "FLOP/s", "compute_util_pct": "%", "compute_peak": "FLOP/s"},
        {"flops": "kernels[].flops", "fp64_pct": "100 x flops_by_class / flops (classes with FLOPs)",
         "achieved_flops_s": "kernels[].achieved_flops_s", "compute_util_pct": "100 x extra.compute_util",
         "compute_peak": "the peak of the dominant FLOP class (extra.compute_peak)",
         "peak_source": "the devices[] entry the peak came from"}),
    "zero-flops": _rule(
        "0 FLOPs measured (the FP64 and FP32 instruction counters are present and zero"
        "{[{fp16_uncollected?}; FP16 not collected]}): an integer or data-movement kernel, so the FLOP roofline "
        f"does not apply; its bytes bound it ({_WB})",
        sources={"fp16_uncollected": "the FP16 instruction counters are not in the export"}),
    "tensor-from-name": _rule(
        "Tensor FLOPs = {source}: no sm__ops_path_tensor_* in the export",
        sources={"source": "how the tensor FLOPs were counted (the instruction shape in the kernel name)"}),
    "tensor-uncounted": _rule(
        "Tensor pipe at work but its FLOPs are not counted (no sm__ops_path_tensor_* in the export, and no "
        "instruction shape in the kernel name to scale sm__inst_executed_pipe_tensor by)"
        "{[; the {counted:si:FLOP} of FP32/FP16 instructions counted are not its work]}: compute side unknown, so "
        "the kernel is not placed on the roofline and gets no roofline saving or intensity advice "
        f"({_WB})",
        {"counted": "FLOP"}, {"counted": "the FP32/FP16 FLOPs the instruction counters give"}),
    "rate-only": _rule(
        "No duration in the export: rates from ncu's per-cycle and per-second metrics (achieved work = "
        f"per-cycle-elapsed FLOP terms x SM frequency, {_WB}): achieved {{achieved_flops_s:si:FLOP/s}}" + _ROOF
        + "{[; {," + "".join(_rate_piece(lvl) for lvl in ("l1", "l2", "dram")) + "}]}",
        {"achieved_flops_s": "FLOP/s", "compute_util_pct": "%", "compute_peak": "FLOP/s",
         **{f"{k}_{lvl}": u for lvl in ("l1", "l2", "dram")
            for k, u in (("rate", "B/s"), ("util_pct", "%"), ("bw", "B/s"), ("ai", "FLOP/B"))}},
        {"achieved_flops_s": "per-cycle-elapsed FLOP terms x SM frequency", "rate_dram": "ncu's per-second byte rate"}),
    **{f"level-{lvl}": _level_rule(lvl) for lvl in ("l1", "l2", "dram")},
    "binding": _rule(
        "Binding level {level}: attainable {attainable_flops_s:si:FLOP/s}{[; achieved {pct_of_roof:%.0f}% of it]}",
        {"attainable_flops_s": "FLOP/s", "pct_of_roof": "%"},
        {"level": "extra.binding_level", "attainable_flops_s": "kernels[].attainable_flops_s",
         "pct_of_roof": "extra.pct_of_roof"}),
    "bw-time": _rule(
        "Bytes at the bandwidth ceilings need at least {bw_time_s:si:s} (max over levels of bytes / bandwidth) = "
        "{pct:%.1f}% of the {duration_s:si:s} run{[{incomplete?}; a level whose bytes or ceiling are unknown could "
        f"need more]}} ({_WB})",
        {"bw_time_s": "s", "pct": "%", "duration_s": "s"},
        {"bw_time_s": "max over levels of bytes / bandwidth", "pct": "100 x bw_time_s / duration_s",
         "duration_s": "kernels[].duration_s", "incomplete": "a level's bytes or ceiling is unknown"}),
    "roof-unknown-level": _rule(
        "Binding level {level}: it has no bandwidth ceiling (neither the export nor the device table gives one), so "
        "the attainable FLOP/s and the roofline gap are unknown; another level's roof would overstate them "
        f"({_KL})",
        sources={"level": "extra.binding_level"}),
    "memory-units": _rule(
        "Memory units (SOL breakdown): {,[L1 {unit_l1:%.1f}%][L2 {unit_l2:%.1f}%][DRAM {unit_dram:%.1f}%]}",
        {"unit_l1": "%", "unit_l2": "%", "unit_dram": "%"},
        {"unit_dram": "NCU's memory-unit throughput % (SOL breakdown)"}),
    "sides": _rule(
        "Memory side {memory_side_pct:%.1f}% vs compute side {compute_side_pct:%.1f}% of peak -> {label} "
        f"({{limiter}}; the busiest level or pipe names the limiter, {_KL})",
        {"memory_side_pct": "%", "compute_side_pct": "%"},
        {"memory_side_pct": _SIDES, "compute_side_pct": _SIDES, "label": "kernels[].label",
         "limiter": "kernels[].limiter"}),
    "launch-facts": _rule(
        "NCU launch facts: {,[{occupancy?}{[{achieved_pct?}occupancy {achieved_pct:%.1f} % achieved"
        "{[ of {theoretical_pct:%.1f} % theoretical]}|theoretical occupancy {theoretical_pct:%.1f} %]}"
        "{[ (limited by {limiter})]}][{registers_per_thread:%.0f} registers/thread]"
        "[{shared_mem_per_block:si:B} shared memory/block][{waves:%.2f} waves]"
        "[{local_known?}{[{local_memory_ops:%.0f} local-memory loads/stores (register spills or local arrays)"
        "|no local-memory traffic]}]}",
        {"achieved_pct": "%", "theoretical_pct": "%", "registers_per_thread": "registers",
         "shared_mem_per_block": "B", "waves": "waves", "local_memory_ops": "instructions"},
        {"occupancy": "achieved or theoretical occupancy is in the export",
         "achieved_pct": "sm__warps_active.avg.pct_of_peak_sustained_active (extra.occupancy_achieved_pct)",
         "theoretical_pct": "sm__maximum_warps_per_active_cycle_pct (extra.occupancy_theoretical_pct)",
         "limiter": "the resource with the smallest launch__occupancy_limit_* (ties named together; none at 100 % "
                    "theoretical; extra.occupancy_limiter)",
         "registers_per_thread": "launch__registers_per_thread (extra.registers_per_thread)",
         "shared_mem_per_block": "launch__shared_mem_per_block_static + _dynamic (extra.shared_mem_per_block)",
         "waves": "launch__waves_per_multiprocessor (extra.waves)",
         "local_known": "local loads/stores are in the export",
         "local_memory_ops": "local loads + stores where > 0: l1tex__t_requests_pipe_lsu_mem_local_op_ld/st.sum, else "
                             "smsp__sass_inst_executed_op_local_ld/st.sum, else sass__inst_executed_local_loads/stores "
                             "(extra.local_memory_ops)"}),
    "device-assumed": _rule("{text} (docs/formulas.md#ceilings)",
                            sources={"text": "how the device (and its ceilings) was chosen"}),
    "bytes-nersc": _rule(
        "L1/L2 bytes in NERSC's l1tex__t_bytes / lts__t_bytes convention with the device table's L1/L2 ceilings "
        f"({_WB})"),
    "bytes-nersc-no-ceiling": _rule(
        "L1/L2 bytes in NERSC's l1tex__t_bytes / lts__t_bytes convention; no L1/L2 ceiling (no device table entry "
        f"or .peak_sustained), so those levels are shown but not evaluated ({_WB})"),
    "bytes-t-bytes": _rule(
        "L1/L2 bytes and ceilings both from l1tex__t_bytes / lts__t_bytes and their .peak_sustained "
        f"(one convention per kernel, {_WB})"),
    "duration-source": _rule("Duration from {source}", sources={"source": "the duration counter read"}),
    "not-in-export": _rule(
        "Not in the export, so not evaluated: {,[{l1_bytes?}L1 bytes][{l2_bytes?}L2 bytes][{dram_bytes?}DRAM bytes]"
        "[{flops?}FLOP counters][{tensor_flops?}tensor FLOPs][{sol?}SpeedOfLight %][{duration?}duration]}",
        sources={"l1_bytes": "kernels[].bytes.l1 is null", "flops": "kernels[].flops is null",
                 "sol": "kernels[].sol has a null", "duration": "kernels[].duration_s is null"}),
    "metrics-na": _rule(
        "ncu printed n/a on every launch for {metrics}: names ncu did not recognise or could not collect on this "
        "GPU; check the spelling in --metrics against `ncu --query-metrics` (docs/formulas.md#profiling-conditions)",
        sources={"metrics": "the export's metric columns whose every value is n/a (parser meta.metrics_na)"}),
    "nothing-decides": _rule(
        "Nothing decides the bound: no SpeedOfLight %, no NCU verdict, and the roofline lacks the FLOPs, bytes, "
        f"time or ceilings to measure either side ({_KL})"),
}


def sentence(rule: str, values: Mapping[str, Any]) -> str:
    """The sentence of one fact (``KeyError`` for a rule id not in :data:`RULES`)."""
    return render(RULES[rule]["template"], values)


def _fact_values(group: EvidenceFacts, j: int) -> dict[str, Any]:
    return {**group["params"], **{name: col[j] for name, col in group["values"].items()}}


def kernel_sentences(facts: Sequence[EvidenceFacts], pos: int,
                     rules: Mapping[str, EvidenceRule] | None = None) -> list[str]:
    """Kernel ``pos``'s evidence sentences, in order, drawn from the document's ``evidence_facts``
    (with ``rules``: the document's ``evidence_rules``; default this registry)."""
    table = RULES if rules is None else rules
    out = []
    for group in facts:
        ks = group["kernels"]
        j = bisect_left(ks, pos)
        if j < len(ks) and ks[j] == pos:
            out.append(render(table[group["rule"]]["template"], _fact_values(group, j)))
    return out


def rules_used(facts: Iterable[EvidenceFacts]) -> dict[str, EvidenceRule]:
    """The registry's rules ``facts`` use (the document's ``evidence_rules``), in registry order."""
    used = {g["rule"] for g in facts}
    return {rid: rule for rid, rule in RULES.items() if rid in used}
