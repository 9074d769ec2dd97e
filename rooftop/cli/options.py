"""The options every ``rooftop`` command shares: option types that validate at the command line
(a bad value is a click usage error naming the option, exit 2), the output options
(``--html/--no-html/--md/--json/--csv/--open/-q``) declared once, and the Prometheus range options.

Imports only click and the standard library: ``rooftop --help`` must stay fast (bench/cli_startup.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

import click

from rooftop.reports.terminal import escape_terminal

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:  # click >= 8.2 types ParamType by its value and input types; older click is not generic
    _ParamType = click.ParamType[Any, Any]
else:
    _ParamType = click.ParamType

STDOUT = "-"


# ----------------------------------------------------------------------------- option types

class Number(_ParamType):
    """A finite number in ``(low, high]`` (``low`` exclusive when ``open_low``): NaN, inf and
    out-of-range values are usage errors that name the option."""

    name = "number"

    def __init__(self, low: float, high: float, *, open_low: bool = True, unit: str = "",
                 integer: bool = False) -> None:
        self.low, self.high, self.open_low, self.unit, self.integer = low, high, open_low, unit, integer
        self.name = "integer" if integer else "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            x = value
        else:
            text = str(value).strip()
            try:
                x = int(text) if self.integer else float(text)
            except ValueError:
                self.fail(f"{escape_terminal(str(value))!r} is not {'an integer' if self.integer else 'a number'}",
                          param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        unit = f" {self.unit}" if self.unit else ""
        if (x <= self.low) if self.open_low else (x < self.low):
            self.fail(f"{value!r} must be {'>' if self.open_low else '≥'} {self.low:g}{unit}", param, ctx)
        if x > self.high:
            self.fail(f"{value!r} must be at most {self.high:g}{unit}", param, ctx)
        return x

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "N" if self.integer else "NUMBER"


DAY = 86_400.0
SECONDS_WINDOW = Number(0, 31 * DAY, unit="seconds")  # a window longer than a month says nothing
SECONDS_INTERVAL = Number(0, DAY, unit="seconds")
PERCENT = Number(0, 1e6, open_low=False, unit="%")
COUNT = Number(0, 1_000_000, open_low=False, integer=True)
WORKERS = Number(1, 4096, open_low=False, integer=True)


class IsoTime(_ParamType):
    """An ISO 8601 time; without a zone it is UTC."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, datetime):
            return value
        try:
            t = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            self.fail(f"{escape_terminal(str(value))!r} is not an ISO 8601 time "
                      "(e.g. 2026-11-21T00:00:00Z)", param, ctx)
        return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


class SchedulerAddress(_ParamType):
    """A Dask scheduler address with its port: ``tcp://HOST:PORT`` (or ``HOST:PORT``, ``tls://``,
    ``ucx://``, ``ws(s)://``); ``inproc://`` names need none."""

    name = "address"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value).strip()
        if text.startswith("inproc://"):
            return text
        url = text if "://" in text else f"tcp://{text}"
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            port, parts = None, None
        if parts is None or not parts.hostname or port is None or port == 0:
            self.fail(f"{escape_terminal(text)!r} needs a host and a port, e.g. tcp://10.0.0.5:8786", param, ctx)
        return url


# ----------------------------------------------------------------------------- output options

@dataclass(frozen=True)
class Outputs:
    """Where a command writes: report files, and ``-`` for stdout (``--json -``, ``--md -``);
    ``csv`` is the ``--csv`` path (two files, :attr:`csv_files`); ``open`` opens the HTML after."""

    html: str | None
    md: str | None
    json: str | None
    quiet: bool
    csv: str | None = None
    open: bool = False

    @property
    def csv_files(self) -> dict[str, str]:
        """``--csv run.csv``: ``run.kernels.csv`` and ``run.findings.csv`` (one table per file)."""
        if not self.csv:
            return {}
        stem = self.csv[:-4] if self.csv.lower().endswith(".csv") else self.csv
        return {name: f"{stem}.{name}.csv" for name in ("kernels", "findings")}

    @property
    def files(self) -> list[str]:
        return [p for p in (self.html, self.md, self.json) if p and p != STDOUT] + list(self.csv_files.values())

    @property
    def to_stdout(self) -> bool:
        return STDOUT in (self.md, self.json)


def choose_html(html: str | None, no_html: bool, others: bool, open_html: bool, default: str) -> str | None:
    """The HTML report's path: the one asked for; else the default when nothing else was asked for
    (or ``--open`` was), so ``--json - | jq`` writes no HTML behind the user's back; None with
    ``--no-html``."""
    if html is not None and no_html:
        raise click.BadParameter("--html and --no-html contradict each other", param_hint="'--no-html'")
    if no_html:
        if open_html:
            raise click.BadParameter("--open opens the HTML report; drop --no-html", param_hint="'--open'")
        return None
    if html is not None:
        return html
    return default if open_html or not others else None


def output_options(default_html: str) -> Callable[[F], F]:
    """``--html/--no-html/--md/--json/--csv/--open/-q``, declared once for every command that writes
    a report; the command receives them as one ``outputs: Outputs``. The HTML report is written when
    asked, or when no other output was asked for (:func:`choose_html`)."""

    def decorate(func: F) -> F:
        @wraps(func)
        def wrapper(*args: Any, html_path: str | None, no_html: bool, md_path: str | None,
                    json_path: str | None, csv_path: str | None, open_html: bool, quiet: bool,
                    **kwargs: Any) -> Any:
            if html_path == STDOUT:
                raise click.BadParameter("the HTML report goes to a file (`-` is for --json or --md)",
                                         param_hint="'--html'")
            if md_path == STDOUT and json_path == STDOUT:
                raise click.BadParameter("only one of --json and --md can be `-` (stdout)",
                                         param_hint="'--md'")
            html = choose_html(html_path, no_html, any((md_path, json_path, csv_path)), open_html, default_html)
            outputs = Outputs(html, md_path, json_path, quiet, csv=csv_path, open=open_html)
            click.get_current_context().meta["rooftop.writes"] = outputs.files
            return func(*args, outputs=outputs, **kwargs)

        options = [
            click.option("--html", "html_path", type=click.Path(dir_okay=False),
                         help=f"HTML report (self-contained, opens offline) [default: {default_html} when no "
                              "other output is asked for]."),
            click.option("--no-html", "no_html", is_flag=True, help="Write no HTML report."),
            click.option("--md", "md_path", type=click.Path(dir_okay=False, allow_dash=True),
                         help="Markdown summary for a ticket (`-`: stdout)."),
            click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True),
                         help="JSON for tools and CI (`-`: stdout; the summary then goes to stderr)."),
            click.option("--csv", "csv_path", type=click.Path(dir_okay=False),
                         help="Kernels and findings for a spreadsheet: PATH.csv -> PATH.kernels.csv, "
                              "PATH.findings.csv."),
            click.option("--open", "open_html", is_flag=True, help="Open the HTML report when written."),
            click.option("-q", "--quiet", is_flag=True, help="No summary, no progress bar."),
        ]
        out: Any = wrapper
        for option in reversed(options):
            out = option(out)
        return cast(F, out)

    return decorate


# ----------------------------------------------------------------------------- Prometheus inputs

def prometheus_options(func: F) -> F:
    """Options for http(s):// inputs: a Prometheus server (parsers.prometheus.http)."""
    for decorator in reversed([
        click.option("--since", "prom_since", type=IsoTime(),
                     help="Prometheus input: range start (ISO 8601, inclusive)."),
        click.option("--until", "prom_until", type=IsoTime(),
                     help="Prometheus input: range end (ISO 8601, exclusive)."),
        click.option("--match", "prom_match", multiple=True,
                     help="Prometheus input: PromQL selector (repeatable; default: the DCGM fields rooftop uses)."),
        click.option("--step", "prom_step", type=SECONDS_INTERVAL,
                     help="Prometheus input: seconds between points (default: the scrape interval in the data)."),
        click.option("--token-file", "prom_token_file", type=click.Path(dir_okay=False),
                     help="Prometheus input: bearer token file (default: $ROOFTOP_PROMETHEUS_TOKEN)."),
    ]):
        func = decorator(func)
    return func


def kernel_regex(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``-k REGEX``: checked to compile (docs/formulas.md#kernel-filter), as a usage error if not."""
    if value is None:
        return None
    import re

    try:
        re.compile(value.removeprefix("regex:"))
    except re.error as exc:
        raise click.BadParameter(f"{value!r} is not a regular expression ({exc}); escape ( ) [ ] * + ? with \\",
                                 ctx=ctx, param=param) from exc
    return value
