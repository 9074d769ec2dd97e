"""The analysis document as a type: its TypedDicts, its vocabularies, and :func:`validate_document`.

Every key the analyzer hands the reports is declared here once (docs/contract.md lists them for
users; docs/architecture.md#the-document says how to add one). A key that is not declared is an
error, so a helper adding a key registers its type here (loose first, tightened later).

Modules: :mod:`.vocab` (labels, limiters, severities as ``Literal`` types and their tuples),
:mod:`.parts` (inputs, devices, kernels, findings, windows, lint, verdict), :mod:`.views`
(timelines, roofline panels, the family table), :mod:`.document` (``Document``), :mod:`.check`
(the reference walk, raising :class:`rooftop.errors.SchemaError`) and :mod:`.fast` (the column-wise check).

:func:`validate_document` is called where documents are checked (tests, and the reports boundary
``rooftop.reports.outputs.write_outputs``). It has two implementations derived from the same type
hints: a fast column-wise check (a list of 100k kernels is checked one key at a time over all
kernels, with set and ``map`` operations) and a plain recursive reference that walks value by
value and names the first bad key (``$.kernels[3].label: expected one of ...``). The fast check
runs first; the reference runs only to explain a failure (and in tests, to check both agree).

This package imports only the standard library: the command line imports it cheaply.
"""

from __future__ import annotations

from typing import Any, cast

from rooftop.analyzer.schema.check import check_value, describe
from rooftop.analyzer.schema.document import Document
from rooftop.analyzer.schema.evidence import EvidenceFacts, EvidenceRule
from rooftop.analyzer.schema.fast import _ok
from rooftop.analyzer.schema.parts import (
    Device,
    Finding,
    FlopsByClass,
    Input,
    Json,
    Kernel,
    Levels,
    Lint,
    NcuRule,
    Num,
    Rejected,
    Run,
    Sol,
    Tool,
    Verdict,
    Window,
)
from rooftop.analyzer.schema.views import (
    BusyStrip,
    FamilyRow,
    GapHistogram,
    Gaps,
    RooflineCeiling,
    RooflinePanel,
    RooflineView,
    ShortKernels,
    Step,
    TimelineEntry,
    TopKernel,
    WindowPanel,
    WindowPoint,
)
from rooftop.analyzer.schema.vocab import (
    BANDWIDTH_CEILINGS,
    BOUND_LABELS,
    CEILING_KEYS,
    CEILING_UNITS,
    COMPUTE_CEILINGS,
    DEVICE_SOURCES,
    FLOP_CLASSES,
    KERNEL_LABELS,
    KERNEL_LIMITERS,
    KINDS,
    MEMORY_LEVELS,
    OP_LABELS,
    OP_LIMITERS,
    SEVERITIES,
    SIDES,
    TIMELINE_LABELS,
    TIMELINE_LIMITERS,
    WINDOW_LABELS,
    WINDOW_LABELS_SHOWN,
    WINDOW_LIMITERS,
    BandwidthCeiling,
    BoundLabel,
    CeilingKey,
    CeilingKind,
    CeilingUnit,
    ComputeCeiling,
    DeviceSource,
    FlopClass,
    KernelLabel,
    KernelLimiter,
    Kind,
    LintSide,
    MemoryLevel,
    OpLabel,
    OpLimiter,
    Severity,
    Side,
    TimelineLabel,
    TimelineLimiter,
    WindowLabel,
    WindowLimiter,
    ceiling_kind,
)
from rooftop.errors import SchemaError

__all__ = [
    "BANDWIDTH_CEILINGS",
    "BOUND_LABELS",
    "CEILING_KEYS",
    "CEILING_UNITS",
    "COMPUTE_CEILINGS",
    "DEVICE_SOURCES",
    "FLOP_CLASSES",
    "KERNEL_LABELS",
    "KERNEL_LIMITERS",
    "KINDS",
    "MEMORY_LEVELS",
    "OP_LABELS",
    "OP_LIMITERS",
    "SEVERITIES",
    "SIDES",
    "TIMELINE_LABELS",
    "TIMELINE_LIMITERS",
    "WINDOW_LABELS",
    "WINDOW_LABELS_SHOWN",
    "WINDOW_LIMITERS",
    "BandwidthCeiling",
    "BoundLabel",
    "BusyStrip",
    "CeilingKey",
    "CeilingKind",
    "CeilingUnit",
    "ComputeCeiling",
    "Device",
    "DeviceSource",
    "Document",
    "EvidenceFacts",
    "EvidenceRule",
    "FamilyRow",
    "Finding",
    "FlopClass",
    "FlopsByClass",
    "GapHistogram",
    "Gaps",
    "Input",
    "Json",
    "Kernel",
    "KernelLabel",
    "KernelLimiter",
    "Kind",
    "Levels",
    "Lint",
    "LintSide",
    "MemoryLevel",
    "NcuRule",
    "Num",
    "OpLabel",
    "OpLimiter",
    "Rejected",
    "RooflineCeiling",
    "RooflinePanel",
    "RooflineView",
    "Run",
    "SchemaError",
    "Severity",
    "ShortKernels",
    "Side",
    "Sol",
    "Step",
    "TimelineEntry",
    "TimelineLabel",
    "TimelineLimiter",
    "Tool",
    "TopKernel",
    "Verdict",
    "Window",
    "WindowLabel",
    "WindowLimiter",
    "WindowPanel",
    "WindowPoint",
    "_ok",
    "ceiling_kind",
    "check_value",
    "checked_document",
    "describe",
    "validate_document",
]


def validate_document(doc: Any) -> None:
    """Raise :class:`SchemaError` naming the first bad key (``$.kernels[3].label``) and what was
    expected, unless ``doc`` is a :class:`Document`. Fast column-wise check first, the reference
    walk only to explain a failure. The root may be a ``dict`` subclass (``rooftop.analyze`` returns
    one that a notebook shows as its summary, rooftop.notebook); every value inside is plain JSON."""
    if isinstance(doc, dict) and type(doc) is not dict:
        doc = dict(doc)
    if _ok(Document, [doc]):
        return
    check_value(Document, doc, "$")
    raise SchemaError("failed the column-wise check but not the reference walk (a bug in the schema check)", path="$")


def checked_document(value: Any) -> Document:
    """``value`` (e.g. parsed JSON) as a :class:`Document`, after :func:`validate_document` checked it."""
    validate_document(value)
    return cast(Document, value)
