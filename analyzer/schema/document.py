"""The whole analysis document (docs/contract.md): the keys every document has, and the optional
keys by the command that writes them."""

from __future__ import annotations

from typing import Literal, TypedDict

from rooftop.analyzer.schema.evidence import EvidenceFacts, EvidenceRule
from rooftop.analyzer.schema.ops import OpEntry, OpsCoverage, OpsNcu
from rooftop.analyzer.schema.parts import (
    Device,
    Finding,
    Input,
    Json,
    Kernel,
    Lint,
    Rejected,
    Run,
    Tool,
    Verdict,
    Window,
)
from rooftop.analyzer.schema.views import FamilyRow, RooflineView, Step, TimelineEntry
from rooftop.analyzer.schema.vocab import Kind


class _DocumentBase(TypedDict):
    schema_version: Literal[1]
    tool: Tool
    kind: Kind
    run: Run
    inputs: list[Input]
    rejected: list[Rejected]
    devices: list[Device]
    kernels: list[Kernel]
    findings: list[Finding]
    windows: list[Window]
    lint: list[Lint]


class Document(_DocumentBase, total=False):
    """The whole document. Optional keys by who writes them (loose types are theirs to tighten)."""

    timelines: dict[str, dict[str, list[Json]]]  # per-GPU DCGM series for the report
    links: list[dict[str, Json]]  # analyze: NVLink / PCIe bytes/s per GPU (docs/formulas.md#links)
    window: dict[str, Json]  # analyze: the window used (seconds, source default/option, reason)
    kernel_join: dict[str, Json]  # predicted vs observed DCGM signature (fleet --kernels)
    health: dict[str, Json]  # analyze: per-GPU health (docs/formulas.md#health); fleet: under fleet.health
    groups: list[dict[str, Json]]  # fleet roll-ups
    fleet: dict[str, Json]  # fleet: dataset, period, engine, totals
    # diff
    sides: dict[str, dict[str, Json]]
    pairs: list[dict[str, Json]]
    unmatched: dict[str, list[Json]]
    listed: dict[str, list[Json]]
    series: list[dict[str, Json]]
    totals: dict[str, Json]
    verdict: Verdict
    # report / verdict helpers
    families: list[FamilyRow] | list[dict[str, Json]]  # analyze: FamilyRow; diff: its own rows
    roofline: RooflineView
    # timeline helper
    timeline: list[TimelineEntry]
    collectives: list[dict[str, Json]]  # NCCL collectives across ranks (docs/formulas.md#timeline-communication)
    steps: list[Step]
    waterfall: list[dict[str, Json]]
    timeline_diff: list[dict[str, Json]]  # diff of two timelines: per device, both sides
    timeline_series: list[dict[str, Json]]  # ... the gated series (kernel families, steps)
    timeline_changes: list[dict[str, Json]]  # ... and every compared quantity, largest change first
    windows_diff: dict[str, Json]  # diff of two DCGM captures / fleet periods: GPU-hours, label shares
    window_series: list[dict[str, Json]]  # ... and per owner the efficiency, gated
    # ops helper: every PyTorch op signature on the roofline from a trace (docs/formulas.md#ops)
    ops: list[OpEntry]
    ops_coverage: list[OpsCoverage]
    ops_ncu: list[OpsNcu]  # a trace and an ncu profile: the op model against the counters
    trend: dict[str, Json]  # trend: runs, per family run values, noise bands, changes (docs/formulas.md#trend)
    # analyze: every kernel's evidence as facts, column-wise, and the rules that draw their sentences
    evidence_facts: list[EvidenceFacts]
    evidence_rules: dict[str, EvidenceRule]
