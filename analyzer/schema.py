"""The analysis document as a type: its TypedDicts, its vocabularies, and :func:`validate_document`.

Every key the analyzer hands the reports is declared here once (docs/contract.md lists them for
users; docs/architecture.md#the-document says how to add one). A key that is not declared is an
error, so a helper adding a key registers its type here (loose first, tightened later).

:func:`validate_document` is called where documents are checked (tests, and the reports boundary
``rooftop.reports.outputs.write_outputs``). It has two implementations derived from the same type
hints: a fast column-wise check (a list of 100k kernels is checked one key at a time over all
kernels, with set and ``map`` operations) and a plain recursive reference that walks value by
value and names the first bad key (``$.kernels[3].label: expected one of ...``). The fast check
runs first; the reference runs only to explain a failure (and in tests, to check both agree).

This module imports only the standard library: the command line imports it cheaply.
"""

from __future__ import annotations

import math
import sys
import types
from collections import Counter
from collections.abc import Iterable
from functools import cache, partial
from itertools import chain, filterfalse
from operator import is_, itemgetter
from typing import Any, Literal, TypedDict, Union, get_args, get_origin, get_type_hints

if sys.version_info >= (3, 11):  # pragma: no cover - depends on the interpreter
    from typing import is_typeddict
else:  # pragma: no cover
    from typing_extensions import is_typeddict

# ---------------------------------------------------------------------------------------------
# Vocabularies: each defined once, as a Literal type; the tuple of its words is derived from it.
# ---------------------------------------------------------------------------------------------

Kind = Literal["analyze", "fleet", "diff"]
KINDS: tuple[str, ...] = get_args(Kind)

# docs/formulas.md#kernel-labels (analyzer/classify.py)
KernelLabel = Literal["compute-bound", "memory-bound", "overhead-bound", "unknown"]
KERNEL_LABELS: tuple[str, ...] = get_args(KernelLabel)
KernelLimiter = Literal["tensor", "fp64", "fp32", "fp16", "dram", "l2", "l1",
                        "launch", "small-grid", "tail", "latency", "unknown"]
KERNEL_LIMITERS: tuple[str, ...] = get_args(KernelLimiter)

# docs/formulas.md#windows (analyzer/windows): ``unknown`` = no activity field in the window.
WindowLabel = Literal["idle", "compute-bound", "memory-bound", "overhead-bound", "mixed", "unknown"]
WINDOW_LABELS: tuple[str, ...] = get_args(WindowLabel)
WindowLimiter = Literal["tensor", "fp64", "fp32", "fp16", "dram", "launch", "host", "latency",
                        "none", "unknown"]
WINDOW_LIMITERS: tuple[str, ...] = get_args(WindowLimiter)

# docs/formulas.md#timelines (analyzer/timeline): where a step's wall time goes.
TimelineLabel = Literal["overhead-bound", "transfer-bound", "kernel-bound", "idle", "unknown"]
TIMELINE_LABELS: tuple[str, ...] = get_args(TimelineLabel)
TimelineLimiter = Literal["launch", "sync", "host", "transfer", "kernel", "none", "unknown"]
TIMELINE_LIMITERS: tuple[str, ...] = get_args(TimelineLimiter)

# docs/formulas.md#findings (high/medium/low; the others are NCU rule severities)
Severity = Literal["high", "medium", "low", "critical", "warning", "info"]
SEVERITIES: tuple[str, ...] = get_args(Severity)

DeviceSource = Literal["export", "builtin", "user"]
DEVICE_SOURCES: tuple[str, ...] = get_args(DeviceSource)

Side = Literal["baseline", "candidate"]
SIDES: tuple[str, ...] = get_args(Side)
LintSide = Literal["baseline", "candidate", "both"]

# ---------------------------------------------------------------------------------------------
# The document (docs/contract.md). ``_XBase`` holds the required keys, ``X`` adds the optional.
# ---------------------------------------------------------------------------------------------

Num = float | None  # a finite number (an int is a number) or null
Json = Any  # any JSON value (loose: tighten where a key settles)


class Tool(TypedDict):
    name: str
    version: str


class Run(TypedDict):
    command: str
    created: str
    input_sha256: dict[str, str | None]


class _InputBase(TypedDict):
    path: str
    format: str
    records: int
    missing: int
    rejected: int


class Input(_InputBase, total=False):
    side: Side  # diff
    sha256: str  # fleet: from the dataset manifest
    ingested_at: str


class _RejectedBase(TypedDict):
    path: str
    line: int | None
    reason: str


class Rejected(_RejectedBase, total=False):
    side: Side


class _DeviceBase(TypedDict):
    name: str
    source: DeviceSource
    ceilings: dict[str, Num]


class Device(_DeviceBase, total=False):
    sources: dict[str, str]
    sm_count: int | None
    cc: str | None
    clock_mhz: Num


class Sol(TypedDict):
    compute_pct: Num
    memory_pct: Num


class FlopsByClass(TypedDict):
    fp64: Num
    fp32: Num
    fp16: Num
    tensor: Num


class Levels(TypedDict):
    l1: Num
    l2: Num
    dram: Num


class NcuRule(TypedDict, total=False):
    rule: str
    title: str
    speedup_pct: Num
    speedup_type: str | None  # "global" | "local" (ncu_report speedup_type); docs/formulas.md#findings
    message: str  # NVIDIA's rule text where the export has it (quoted by findings)


class _KernelBase(TypedDict):
    index: int
    input: str
    id: str | None
    name: str
    family: str
    device: str | None
    duration_s: Num
    grid: int | None
    block: int | None
    sol: Sol
    flops: Num
    flops_by_class: FlopsByClass
    bytes: Levels
    intensity: Levels
    attainable_flops_s: Num
    achieved_flops_s: Num
    label: KernelLabel
    limiter: KernelLimiter
    evidence: list[str]
    ncu_rules: list[NcuRule]


class Kernel(_KernelBase, total=False):
    nvtx: str | None  # NVTX ranges "outer > inner" (default domain bare, others "domain:range"); older documents lack it
    extra: dict[str, Json]  # README "extensions": binding level, ridge, waves, SOL verdict, ...


class _FindingBase(TypedDict):
    rank: int
    rule: str
    severity: Severity
    title: str
    kernels: list[int]
    time_share: Num
    est_saving_s: Num
    recommendation: str


class Finding(_FindingBase, total=False):
    family: str
    label: str  # a kernel or a window label, by the finding's source
    limiter: str
    evidence: list[str]
    source: str
    group: str | dict[str, str | None]  # analyze: "host/gpu"; fleet: the --by key
    gpu_hours: Num
    windows: int
    metrics: dict[str, Num]
    side: Side


class _WindowBase(TypedDict):
    gpu: str
    start: str
    end: str
    label: WindowLabel
    limiter: WindowLimiter
    metrics: dict[str, Num]


class Window(_WindowBase, total=False):
    host: str | None
    model: str | None
    namespace: str | None
    pod: str | None
    container: str | None
    job: str | None
    device: str | None
    uuid: str | None
    mig: str | None
    mig_profile: str | None
    n_samples: int
    est_flops_s: Num
    est_dram_bytes_s: Num
    est_intensity: Num
    evidence: list[str]
    # docs/formulas.md#windows: the one GPU key, the window length, the time its samples span
    gpu_key: str
    window_s: Num
    covered_s: Num
    interval_s: Num


class _LintBase(TypedDict):
    code: str
    message: str
    kernels: list[int]


class Lint(_LintBase, total=False):
    side: LintSide


class _VerdictBase(TypedDict):
    fail: bool
    threshold_pct: Num
    regressions: list[dict[str, Json]]
    improvements: list[dict[str, Json]]
    reason: str


class Verdict(_VerdictBase, total=False):
    alpha: Num
    classify_pct: Num
    summary: str
    test: str
    gate: str  # docs/formulas.md#diff: "total" or "matched"


# docs/formulas.md#timelines: one entry per input and device (nsys stats: the timeline fields null)
Gaps = TypedDict("Gaps", {"count": int, "lt_10us": int, "10_to_100us": int, "gt_100us": int,
                          "le_5ns": int, "max_s": "float | None"})


class TopKernel(TypedDict):
    name: str
    count: int
    total_s: Num


class ShortKernels(TypedDict):
    count: int
    sum_s: Num
    busy_s: Num
    share_of_kernel_busy: float | None
    share_of_kernel_sum: float | None


class _TimelineBase(TypedDict):
    input: str
    device: str | None
    gpu_name: str | None
    kernels: int | None
    memcpy: int | None
    memset: int | None
    span_s: float | None
    kernel_sum_s: float | None
    kernel_busy_s: float | None
    gpu_busy_s: float | None
    idle_s: float | None
    idle_fraction: float | None
    gaps: Gaps | None
    short_kernels: ShortKernels | None
    top_kernels: list[TopKernel]
    label: TimelineLabel
    limiter: TimelineLimiter
    evidence: list[str]


class TimelineEntry(_TimelineBase, total=False):
    zero_or_negative_duration: int
    streams: list[str]
    nccl_kernels: int
    first_start_ns: int | None
    last_end_ns: int | None
    memcpy_sum_s: float | None
    memset_sum_s: float | None
    idle_by_cause_s: dict[str, float]
    section: int | None  # nsys stats console: the run within the file
    gap_histogram: GapHistogram
    busy_strip: BusyStrip | None


class GapHistogram(TypedDict):
    edges_s: list[float]  # lower edges: 0, 1 µs, 10 µs, ... 1 s (the last bin is open)
    count: list[int]
    idle_s: list[float]


class BusyStrip(TypedDict):
    start_ns: int
    bin_s: float
    busy_fraction: list[float]


class Step(TimelineEntry):
    """A ProfilerStep#N or top-level NVTX/record_function range on one device."""

    name: str
    kind: Literal["profiler-step", "range"]
    wall_s: Num


# docs/formulas.md#report-view (analyzer/view.py): what the reports draw for kernels.
CeilingKind = Literal["compute", "bandwidth"]


class RooflineCeiling(TypedDict):
    key: str  # fp64 fp32 fp16 tensor dram l2 l1
    name: str
    kind: CeilingKind
    precision: str | None
    level: str | None
    value: float
    min: float
    max: float
    unit: Literal["FLOP/s", "B/s"]
    source: DeviceSource | None
    entry: str  # "<device name>|<source>" of the devices[] entry it came from
    provenance: str | None
    kernels: int
    binding_kernels: int | None


class RooflinePanel(TypedDict):
    id: str
    device: str
    kernels: int
    time_s: Num
    ceilings: list[RooflineCeiling]
    families: list[int]  # positions in the document's families
    placed: list[int]
    labelled: list[int]


class WindowPoint(TypedDict):
    gpu: str
    label: WindowLabel | None
    start: str | None
    intensity: float
    flops_s: float
    dram_bytes_s: float
    seconds: Num
    windows: int


class WindowPanel(TypedDict):
    id: str
    device: str
    model: str
    ceilings: list[RooflineCeiling]
    windows: list[WindowPoint]
    note: str


class RooflineView(TypedDict):
    panels: list[RooflinePanel]
    windows: list[WindowPanel]
    why_empty: str | None


class _FamilyRowBase(TypedDict):
    family: str
    label: KernelLabel
    limiter: KernelLimiter
    kernels: list[int]  # positions in the document's kernels
    launches: Num
    time_s: Num
    time_share: Num
    flops: Num
    bytes_l1: Num
    bytes_l2: Num
    bytes_dram: Num
    intensity_l1: Num
    intensity_l2: Num
    intensity_dram: Num
    achieved_flops_s: Num
    nvtx: list[str]
    panel: str
    placed: bool


class FamilyRow(_FamilyRowBase, total=False):
    key: Json
    name: Json
    device: Json
    grid: Json
    block: Json
    representative: int | None
    attainable_flops_s: Num


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
    window: dict[str, Json]  # analyze: the window used (seconds, source default/option, reason)
    kernel_join: dict[str, Json]  # predicted vs observed DCGM signature (fleet --kernels)
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
    steps: list[Step]
    waterfall: list[dict[str, Json]]
    timeline_diff: list[dict[str, Json]]  # diff of two timelines: per device, both sides
    timeline_series: list[dict[str, Json]]  # ... and the gated series (kernels, idle gaps)


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


class SchemaError(ValueError):
    """The document does not match :class:`Document`: ``path`` names the bad key."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"analysis document {path}: {message} (types in rooftop/analyzer/schema.py)")
        self.path = path


def validate_document(doc: Any) -> None:
    """Raise :class:`SchemaError` naming the first bad key (``$.kernels[3].label``) and what was
    expected, unless ``doc`` is a :class:`Document`. Fast column-wise check first, the reference
    walk only to explain a failure."""
    if _ok(Document, [doc]):
        return
    check_value(Document, doc, "$")
    raise SchemaError("$", "failed the column-wise check but not the reference walk (a bug in schema.py)")


def describe(tp: Any) -> str:
    """A type in words, for error messages."""
    origin = get_origin(tp)
    if tp is Any:
        return "any JSON value"
    if tp is type(None):
        return "null"
    if tp is float:
        return "a finite number"
    if tp in (int, str, bool):
        return {int: "an integer", str: "a string", bool: "true/false"}[tp]
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(describe(a) for a in get_args(tp))
    if origin is list:
        return f"a list of ({describe(get_args(tp)[0])})"
    if origin is dict:
        return f"an object of ({describe(get_args(tp)[1])})"
    if is_typeddict(tp):
        return f"an object {tp.__name__}"
    return repr(tp)


def _hints(td: Any) -> dict[str, Any]:
    cached = _HINTS.get(td)
    if cached is None:
        cached = _HINTS[td] = get_type_hints(td)
    return cached


_HINTS: dict[Any, dict[str, Any]] = {}


def _is_float(v: Any) -> bool:
    return (type(v) is float and math.isfinite(v)) or type(v) is int


def check_value(tp: Any, v: Any, path: str) -> None:
    """The reference: walk ``v`` value by value; raise :class:`SchemaError` at the first bad one."""
    origin = get_origin(tp)
    if tp is Any:
        return
    if origin in (Union, types.UnionType):
        errors = []
        for member in get_args(tp):
            try:
                check_value(member, v, path)
                return
            except SchemaError as exc:
                errors.append(exc)
        deepest = max(errors, key=lambda e: len(e.path))
        if deepest.path != path:  # one member matched the shape: its error is the useful one
            raise deepest
        raise SchemaError(path, f"expected {describe(tp)}, got {_show(v)}")
    ok = {type(None): lambda: v is None, float: lambda: _is_float(v), int: lambda: type(v) is int,
          str: lambda: type(v) is str, bool: lambda: type(v) is bool}.get(tp)
    if ok is not None or origin is Literal:
        good = ok() if ok is not None else (type(v) in (str, int) and v in get_args(tp))
        if not good:
            raise SchemaError(path, f"expected {describe(tp)}, got {_show(v)}")
        return
    if origin is list:
        if type(v) is not list:
            raise SchemaError(path, f"expected {describe(tp)}, got {_show(v)}")
        for i, item in enumerate(v):
            check_value(get_args(tp)[0], item, f"{path}[{i}]")
        return
    if origin is dict or is_typeddict(tp):
        _check_object(tp, v, path)
        return
    raise SchemaError(path, f"schema.py cannot check the type {tp!r}")


def _check_object(tp: Any, v: Any, path: str) -> None:
    if type(v) is not dict:
        raise SchemaError(path, f"expected {describe(tp)}, got {_show(v)}")
    if get_origin(tp) is dict:
        for k, item in v.items():
            if type(k) is not str:
                raise SchemaError(path, f"key {_show(k)} is not a string")
            check_value(get_args(tp)[1], item, f"{path}.{k}")
        return
    missing = [k for k in tp.__required_keys__ if k not in v]
    if missing:
        raise SchemaError(path, f"missing key {sorted(missing)[0]!r} ({describe(tp)})")
    hints = _hints(tp)
    for k, item in v.items():
        if k not in hints:
            raise SchemaError(f"{path}.{k}", f"unknown key (declare it in {tp.__name__} in schema.py)")
        check_value(hints[k], item, f"{path}.{k}")


def _show(v: Any) -> str:
    s = repr(v)
    return f"{type(v).__name__} {s if len(s) <= 60 else s[:57] + '...'}"


# The fast check: the same types, over a whole column of values at once.

def _ok(tp: Any, values: list[Any]) -> bool:
    """Whether every value in ``values`` is a ``tp`` (column-wise; no path on failure)."""
    if not values or tp is Any:
        return True
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return _ok_union(get_args(tp), values)
    kinds = set(map(type, values))
    if tp is float:
        return kinds <= {float, int} and all(map(math.isfinite, values))
    if tp in (int, str, bool, type(None)):
        return kinds <= {tp}
    if origin is Literal:
        return kinds <= {str, int} and set(values) <= set(get_args(tp))
    if origin is list:
        return kinds <= {list} and _ok(get_args(tp)[0], list(chain.from_iterable(values)))
    if kinds - {dict}:
        return False
    if origin is dict:
        return (set(map(type, chain.from_iterable(values))) <= {str}
                and _ok(get_args(tp)[1], list(chain.from_iterable(map(dict.values, values)))))
    if is_typeddict(tp):
        return _ok_object(tp, values)
    return False


def _ok_object(tp: Any, values: list[dict[str, Any]]) -> bool:
    required, hints = tp.__required_keys__, _hints(tp)
    allowed = set(hints)
    counts = Counter(chain.from_iterable(values))  # each key: in how many objects
    n = len(values)
    if not counts.keys() <= allowed or any(counts[k] != n for k in required):
        return False
    everywhere = {k for k, c in counts.items() if c == n}
    for k, ktp in hints.items():
        if k in everywhere:
            column = list(map(itemgetter(k), values))
        else:
            column = [d[k] for d in values if k in d]
        if not _ok(ktp, column):
            return False
    return True


def _ok_union(members: Iterable[Any], values: list[Any]) -> bool:
    """Each value goes to the member its Python type can only be (``None`` to null, a dict to the
    one object type, ...); values two members could take are checked one by one."""
    members = tuple(members)
    kinds = set(map(type, values))
    takers = {t: [m for m in members if t in _python_types(m)] for t in kinds}
    if not all(takers.values()):
        return False
    others = {id(m): m for t, ms in takers.items() if t is not type(None) for m in ms}
    if len(others) <= 1 and len(takers.get(type(None), [None])) == 1:  # e.g. float | None
        rest = list(filterfalse(partial(is_, None), values)) if type(None) in kinds else values
        return not others or _ok(next(iter(others.values())), rest)
    by_type: dict[type, list[Any]] = {}
    for v in values:
        by_type.setdefault(type(v), []).append(v)
    for t, vals in by_type.items():
        ms = takers[t]
        if not ms:
            return False
        if len(ms) == 1:
            if not _ok(ms[0], vals):
                return False
        elif not all(any(_ok(m, [v]) for m in ms) for v in vals):
            return False
    return True


@cache
def _python_types(tp: Any) -> frozenset[type]:
    origin = get_origin(tp)
    if tp is Any:
        return frozenset({type(None), bool, int, float, str, list, dict})
    if tp is float:
        return frozenset({float, int})
    if origin is Literal:
        return frozenset(type(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return frozenset().union(*(_python_types(m) for m in get_args(tp)))
    if origin is list:
        return frozenset({list})
    if origin is dict or is_typeddict(tp):
        return frozenset({dict})
    return frozenset({tp})


