"""``rooftop analyze``: parse every input, analyse kernels and GPU windows, build the document."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

if TYPE_CHECKING:
    from rooftop.analyzer.kernels.evidence import Facts

from rooftop.analyzer.assumed_times import times_assumed
from rooftop.analyzer.document import build_document
from rooftop.analyzer.schema import Document
from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.folders import scan_inputs
from rooftop.parsers.model import (
    SAMPLE_SCHEMA,
    ParseResult,
    empty_rules,
    normalize_kernels,
    validate_kernels,
    validate_samples,
)
from rooftop.parsers.source import ParseOptions
from rooftop.progress import ProgressArg, bar_bytes, reading, stages, track


@dataclass
class ParsedInputs:
    """Everything read from the inputs, concatenated, with per-input accounting."""

    results: list[ParseResult] = field(default_factory=list)
    unusable: list[InputError] = field(default_factory=list)

    @property
    def kernels(self) -> pd.DataFrame:
        frames = [normalize_kernels(r.kernels) for r in self.results if len(r.kernels)]
        if not frames:
            return normalize_kernels(pd.DataFrame())
        return validate_kernels(normalize_kernels(pd.concat(frames, ignore_index=True)))

    @property
    def rules(self) -> pd.DataFrame:
        frames = [r.rules for r in self.results if len(r.rules)]
        return pd.concat(frames, ignore_index=True) if frames else empty_rules()

    @property
    def samples(self) -> pa.Table:
        tables = [r.samples for r in self.results if r.samples.num_rows]
        if not tables:
            return SAMPLE_SCHEMA.empty_table()
        return validate_samples(pa.concat_tables(tables))

    def stream_lint(self) -> list[dict[str, Any]]:
        """DCGM blank sentinels the parsers counted as missing: DCGM said 'no value' there."""
        out = []
        for r in self.results:
            n = int(r.meta.get("sentinels", 0) or 0)
            if n:
                out.append({"code": "dcgm-sentinel-values", "kernels": [],
                            "message": f"{r.accounting.path}: {n} DCGM blank/not-supported sentinel "
                                       "value(s) counted as missing (field not supported or not "
                                       "watched on this GPU)"})
            order = r.meta.get("time_order") or {}
            if order:
                kinds = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k, n in order.items())
                out.append({"code": "samples-out-of-time-order", "kernels": [],
                            "message": f"{r.accounting.path}: {sum(order.values()):,} sample(s) at or before an "
                                       f"earlier sample of their GPU and field ({kinds}): rejected, the earlier "
                                       "kept (a clock stepped back, a DST hour repeated in local times, or two "
                                       "sources for one GPU; docs/formulas.md#inputs, time order)"})
            assumed = times_assumed(r.accounting.format, r.meta)
            said = r.accounting.format == "dcgm-dmon" and r.meta.get("start_from") == "file mtime"  # dmon-time-assumed
            if assumed and not said and r.accounting.records:
                out.append({"code": "times-assumed", "kernels": [], "message": f"{r.accounting.path}: {assumed}"})
            if r.accounting.format == "dcgm-dmon" and r.meta.get("start_from") == "file mtime" and r.accounting.records:
                source = str(r.meta.get("interval_from", "--interval"))
                fix = ("--start T" if source.startswith("the file's") else
                       "--start T and --interval S (dmon's -d)")
                out.append({"code": "dmon-time-assumed", "kernels": [],
                            "message": f"{r.accounting.path}: dcgmi dmon prints no timestamps; the "
                                       f"window times assume samples {r.meta.get('interval_s')} s "
                                       f"apart ({source}) ending at the file's modification time. "
                                       f"Pass {fix} for real times."})
        return out

    def inputs(self) -> list[dict[str, Any]]:
        out = [r.accounting.as_dict() for r in self.results]
        out += [{"path": e.path, "format": "unusable", "records": 0, "missing": 0, "rejected": 0}
                for e in self.unusable]
        return out

    def rejected(self) -> list[dict[str, Any]]:
        out = [rej.as_dict() for r in self.results for rej in r.rejected]
        out += [{"path": e.path, "line": e.line, "reason": str(e).split(": ", 1)[-1]} for e in self.unusable]
        return out


def _not_assumed_as_fact(lint: list[dict[str, Any]], parsed: ParsedInputs) -> list[dict[str, Any]]:
    """The window lint without "samples are 30 s apart" when the only 30 s is rooftop's own
    assumption for Prometheus text without timestamps (lint ``times-assumed`` says that instead)."""
    timed = [r for r in parsed.results if r.accounting.records and not r.meta.get("interval_assumed")]
    if timed:
        return lint
    return [x for x in lint if x.get("code") != "dcgm-exporter-30s-interval"]


def with_host(result: ParseResult, host: str | None) -> ParseResult:
    """``--host H`` names the host of samples that name none, in every format (dcgm-exporter text
    without ``Hostname``, query answers, as dmon and nvidia-smi files); samples that name one keep it
    (docs/formulas.md#windows, "GPU identity")."""
    col = result.samples.column("host")
    if host is None or not col.null_count:
        return result
    import pyarrow.compute as pc

    filled = pc.fill_null(col, pa.scalar(host, col.type))
    return replace(result, samples=result.samples.set_column(result.samples.schema.get_field_index("host"),
                                                            "host", filled))


def read_inputs(inputs: list[str], options: ParseOptions, progress: ProgressArg = None) -> ParsedInputs:
    """Parse each file. An unusable file is listed; if every file is unusable, the first error is raised."""
    from rooftop.parsers.prometheus.http import is_url, read_server

    servers = [i for i in dict.fromkeys(inputs) if is_url(i)]  # http(s)://: a Prometheus server
    scanned = scan_inputs([i for i in inputs if not is_url(i)], skip_unreadable=options.skip_unreadable)
    paths = list(dict.fromkeys(scanned.files))  # a file given twice is read once
    if not paths and not servers:
        if scanned.skipped:
            raise scanned.skipped[0]
        raise InputError(", ".join(inputs), "holds no files", "pass export files or a folder of them")
    parsed = ParsedInputs()
    parsed.unusable.extend(scanned.skipped)  # folder entries not read: named with the unusable inputs
    for server in servers:
        try:
            parsed.results.extend(with_host(r, options.host) for r in read_server(server, options))
        except InputError as exc:
            parsed.unusable.append(exc)
    one = progress if len(paths) == 1 and not servers else None  # several: the bar counts files
    for path in _progress(paths, progress, "parsing"):
        try:
            with reading(one, f"reading {Path(path).name}", bar_bytes(path)):
                parsed.results.append(with_host(parse_path(path, options), options.host))
        except InputError as exc:
            parsed.unusable.append(exc)
    if not parsed.results:
        raise parsed.unusable[0]
    return parsed


@dataclass
class AnalyzedInputs:
    """Inputs read and their kernels analysed: the flat results frame (``KERNEL_FIELDS`` columns
    + ``family``) with the parse accounting, devices and lint that produced it."""

    parsed: ParsedInputs
    kernels: pd.DataFrame
    results: pd.DataFrame
    devices: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)
    ceilings: pd.DataFrame | None = None  # every kernel's full ceilings (analyzer.kernels.analyze.KernelAnalysis)
    evidence: Facts | None = None  # every kernel's evidence facts (analyzer.kernels.evidence)


def analyze_inputs(inputs: list[str], device: str | None = None, *, options: ParseOptions | None = None,
                   progress: ProgressArg = None, kernel: str | None = None) -> AnalyzedInputs:
    """Read ``inputs`` (files or folders, any format rooftop reads) and analyse their kernels;
    ``kernel``: only those whose name matches that regular expression (``-k``,
    docs/formulas.md#kernel-filter)."""
    return analyze_parsed(read_inputs(inputs, options or ParseOptions(), progress), inputs, device, kernel)


def analyze_parsed(parsed: ParsedInputs, inputs: list[str], device: str | None = None,
                   kernel: str | None = None) -> AnalyzedInputs:
    """:func:`analyze_inputs` of inputs already read."""
    from rooftop.analyzer.kernels.analyze import analyze_kernels
    from rooftop.analyzer.kernels.families import assign_families

    kernels = parsed.kernels
    lint: list[dict[str, Any]] = []
    if kernel is not None:
        from rooftop.analyzer.kernels.select import select_kernels

        kernels, note = select_kernels(kernels, kernel, ", ".join(inputs))
        lint.append(note)
    ka = analyze_kernels(kernels, parsed.rules, device=device,
                         meta={r.accounting.path: r.meta for r in parsed.results})
    results = ka.results
    if len(results):
        results = results.assign(family=assign_families(results))
    return AnalyzedInputs(parsed=parsed, kernels=kernels, results=results, devices=list(ka.devices),
                          lint=lint + list(ka.lint), ceilings=ka.ceilings, evidence=ka.evidence)


def run_analysis(inputs: list[str], *, options: ParseOptions | None = None, device: str | None = None,
                 top: int = 10, window_s: float | None = None, progress: ProgressArg = None,
                 command: str = "", kernel: str | None = None) -> Document:
    """The whole ``analyze`` job; returns the contract document.

    With both kernels and DCGM windows, ``kernel_join`` compares the DCGM signature the kernel mix
    implies with the one DCGM saw (``analyzer.fleet.join``). ``progress``: a bar over the files
    read (or the bytes of one large file), then, for a large input, one over the analysis stages
    (:func:`rooftop.progress.bar_bytes`)."""
    parsed = read_inputs(inputs, options or ParseOptions(), progress)
    large = sum(bar_bytes(r.accounting.path) for r in parsed.results) > 0
    with stages(progress if large else None, STAGES, "analysing") as step:
        return _analysis(parsed, inputs, device=device, top=top, window_s=window_s, command=command,
                         kernel=kernel, step=step)


STAGES = ("kernels", "windows", "timelines", "findings", "ops", "document")


def _analysis(parsed: ParsedInputs, inputs: list[str], *, device: str | None, top: int, window_s: float | None,
              command: str, kernel: str | None, step: Callable[[], None]) -> Document:
    """:func:`run_analysis` after the reading; ``step()`` as each of :data:`STAGES` after the first starts."""
    from rooftop.analyzer.findings import rank_findings
    from rooftop.analyzer.timeline import analyze_timelines
    from rooftop.analyzer.windows.analysis import analyze_windows

    ai = analyze_parsed(parsed, inputs, device, kernel)
    results = ai.results
    step()
    wa = analyze_windows(parsed.samples, window_s=window_s, device=device)
    step()
    ta = analyze_timelines(parsed.results)  # nsys / Kineto inputs (docs/formulas.md#timelines)
    step()
    from rooftop.analyzer.timeline.findings import straggler_findings
    from rooftop.analyzer.timeline.findings import timeline_findings as trace_findings

    own = trace_findings(ta.timeline, ta.steps) + straggler_findings(ta.collectives, ta.timeline)
    joined = bool(ta.devices and len(results))
    from rooftop.analyzer.kernels.families import family_table

    fams = family_table(results) if len(results) else None  # once, for the findings and the roofline view
    findings = rank_findings(results, wa, top=top, others=() if joined else own,
                             evidence=ai.evidence, families=fams)
    devices = ai.devices + [d for d in wa.devices if d not in ai.devices]
    has_windows = wa.windows is not None and len(wa.windows) > 0
    from rooftop.analyzer.view import kernel_view

    records = wa.records()
    extra: dict[str, Any] = dict(kernel_view(results, ai.ceilings, records, device, families=fams))
    plain: dict[str, Any] = {}
    if ai.evidence is not None and ai.evidence.groups:  # docs/contract.md#evidence
        from rooftop.analyzer.schema.evidence import rules_used

        plain["evidence_facts"] = ai.evidence.document()
        plain["evidence_rules"] = rules_used(plain["evidence_facts"])
    if ta.timeline:
        extra.update(timeline=ta.timeline, steps=ta.steps)
    if ta.collectives:  # docs/formulas.md#timeline-communication
        extra["collectives"] = ta.collectives
    if joined:  # a trace and an ncu profile: docs/formulas.md#timeline-join
        from rooftop.analyzer.timeline.join import findings as timeline_findings
        from rooftop.analyzer.timeline.join import join, rank_together

        extra["waterfall"] = join(parsed.results, ta, ai.kernels, results)
        findings = rank_together(findings, timeline_findings(extra["waterfall"]) + own, top)
    step()
    if ta.timeline:  # every PyTorch op on the roofline from the trace (docs/formulas.md#ops)
        from rooftop.analyzer.ops.analysis import analyze_ops
        from rooftop.analyzer.ops.ncu_join import cross_validate, ncu_kernels_per_signature
        from rooftop.analyzer.timeline.join import rank_together

        measured = ncu_kernels_per_signature(parsed.results, ai.kernels, results) if len(results) else None
        oa = analyze_ops(parsed.results, device, top, measured)  # ncu's verdict per op: docs/formulas.md#op-ncu-verdicts
        if oa.coverage:
            extra.update(ops=oa.ops, ops_coverage=oa.coverage)
            for st in extra.get("steps") or []:  # each ProfilerStep's largest ops (docs/formulas.md#op-categories)
                got = oa.steps.get((st["input"], st["name"], st["device"])) if st["kind"] == "profiler-step" else None
                if got is not None:
                    st.update(ops_attributed_s=got["attributed_s"], top_ops=got["top_ops"])
            findings = rank_together(findings, oa.findings, top)
        if oa.coverage and len(results):  # and an ncu profile: the op model against its counters
            extra["ops_ncu"] = cross_validate(parsed.results, ai.kernels, results)
    if has_windows:
        extra["timelines"] = wa.timelines()
        links = wa.links()
        if links:
            extra["links"] = links
        extra["window"] = wa.window
    if has_windows and len(results):
        from rooftop.analyzer.ceilings.devices import load_device_option
        from rooftop.analyzer.document import jsonable
        from rooftop.analyzer.fleet.join import kernel_join

        extra["kernel_join"] = jsonable(kernel_join(results, wa.windows, load_device_option(device)))
    from rooftop.analyzer.health import analyze_health
    from rooftop.analyzer.health.gpus import health_findings, health_first, health_summary

    health = analyze_health(parsed.samples)  # docs/formulas.md#health: named before the efficiency findings
    if health:
        from rooftop.analyzer.document import jsonable as _jsonable

        extra["health"] = _jsonable(health_summary(health))
        findings = health_first(health_findings(health, top), findings)
    step()
    return build_document(
        kind="analyze",
        inputs=parsed.inputs(),
        rejected=parsed.rejected(),
        devices=devices,
        kernels=results,
        findings=findings,
        windows=records,
        lint=ai.lint + _not_assumed_as_fact(wa.lint, parsed) + parsed.stream_lint() + ta.lint,
        command=command,
        extra=extra or None,
        plain=plain,
    )


def _progress(items: list[Any], progress: ProgressArg, label: str) -> Iterator[Any]:
    """The items, reported to the caller's progress callback (rooftop/progress.py)."""
    with track(items, progress, label) as tracked:
        yield from tracked
