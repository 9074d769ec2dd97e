"""What parsing an Nsight Compute console log carries from line to line (docs/formulas.md#inputs)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rooftop.parsers.model import Rejected

DURATION = "gpu__time_duration.sum"
MIN_SUFFIX = ".min_over_invocations"
MAX_SUFFIX = ".max_over_invocations"

SECTION = re.compile(r"^\s+Section: (.+?)\s*$")
DASHES = re.compile(r"^(\s*)-{3,}( -{3,})*\s*$")
RULE_START = re.compile(r"^(\s+)(WRN|INF|OPT|ERR)(\s+)(\S.*?)\s*$")


@dataclass
class Launch:
    """One kernel launch (or one ``--print-summary`` row) and what its sections gave."""

    line: int
    name: str
    ident: dict[str, Any]
    metrics: dict[str, float] = field(default_factory=dict)
    mins: dict[str, float] = field(default_factory=dict)
    maxs: dict[str, float] = field(default_factory=dict)
    values_seen: int = 0  # numeric value cells, missing ones included
    values_present: int = 0  # numeric value cells that held a number
    sections: int = 0
    nvtx: list[str] = field(default_factory=list)  # NVTX ranges, outermost first


@dataclass
class Table:
    """A section table in progress: the column spans of its ``----`` rule."""

    spans: list[tuple[int, int]]
    columns: list[str] | None = None  # from the "Metric Name ..." header row
    header_pending: bool = True  # the next dash line may close the header


@dataclass
class Rule:
    """A rule paragraph in progress (``WRN``/``INF``/``OPT``/``ERR`` and its continuation lines)."""

    line: int
    section: str | None
    type: str
    indent: int
    parts: list[str]


@dataclass
class State:
    """Everything carried from line to line."""

    path: str
    launches: list[Launch] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    process: dict[str, Any] = field(default_factory=dict)
    section: str | None = None
    table: Table | None = None
    rule: Rule | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)  # "==PROF== Report: <path>": ncu -o wrote the results there
    nvtx_indent: int | None = None  # inside an "NVTX ..." block of the last launch
    nvtx_domain: str | None = None
    unparsed: list[tuple[int, str]] = field(default_factory=list)
    unknown_units: set[str] = field(default_factory=set)
    conflicts: set[str] = field(default_factory=set)
    bad_cells: list[Rejected] = field(default_factory=list)  # listed, not counted: the launch is kept
    summary: bool = False
