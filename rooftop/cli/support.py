"""What every ``rooftop`` command shares: option types that validate at the command line, the
output options (``--html/--md/--json/-q``) declared once, progress bars, and the one place that
turns errors into exit 2 (docs/contract.md#exit-codes, docs/architecture.md#the-command-line).

Imports only click and the standard library: ``rooftop --help`` must stay fast (bench/cli_startup.py).
"""

from __future__ import annotations

import errno
import gc
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

import click

from rooftop.errors import InputError, OutputError
from rooftop.reports.terminal import escape_terminal

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

if TYPE_CHECKING:  # click >= 8.2 types ParamType by its value and input types; older click is not generic
    _ParamType = click.ParamType[Any, Any]
else:
    _ParamType = click.ParamType

EXIT_OK, EXIT_REGRESSION, EXIT_UNUSABLE = 0, 1, 2
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
    """Where a command writes: report files, and ``-`` for stdout (``--json -``, ``--md -``)."""

    html: str | None
    md: str | None
    json: str | None
    quiet: bool

    @property
    def files(self) -> list[str]:
        return [p for p in (self.html, self.md, self.json) if p and p != STDOUT]

    @property
    def to_stdout(self) -> bool:
        return STDOUT in (self.md, self.json)


def output_options(default_html: str) -> Callable[[F], F]:
    """``--html/--md/--json/-q``, declared once for every command that writes a report; the
    command receives them as one ``outputs: Outputs``."""

    def decorate(func: F) -> F:
        @wraps(func)
        def wrapper(*args: Any, html_path: str | None, md_path: str | None, json_path: str | None,
                    quiet: bool, **kwargs: Any) -> Any:
            if html_path == STDOUT:
                raise click.BadParameter("the HTML report goes to a file (`-` is for --json or --md)",
                                         param_hint="'--html'")
            if md_path == STDOUT and json_path == STDOUT:
                raise click.BadParameter("only one of --json and --md can be `-` (stdout)",
                                         param_hint="'--md'")
            outputs = Outputs(html_path, md_path, json_path, quiet)
            click.get_current_context().meta["rooftop.writes"] = outputs.files
            return func(*args, outputs=outputs, **kwargs)

        options = [
            click.option("--html", "html_path", type=click.Path(dir_okay=False), default=default_html,
                         show_default=True, help="HTML report (self-contained, opens offline)."),
            click.option("--md", "md_path", type=click.Path(dir_okay=False, allow_dash=True),
                         help="Markdown summary for a ticket (`-`: stdout)."),
            click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True),
                         help="JSON for tools and CI (`-`: stdout; the summary then goes to stderr)."),
            click.option("-q", "--quiet", is_flag=True, help="No summary, no progress bar."),
        ]
        out: Any = wrapper
        for option in reversed(options):
            out = option(out)
        return cast(F, out)

    return decorate


def emit(doc: dict[str, Any], outputs: Outputs, top: int) -> None:
    """Write the report files, the stdout document if asked, then the terminal summary (to stderr
    when stdout carries a document)."""
    from rooftop.reports.outputs import write_outputs
    from rooftop.reports.terminal import summary_text

    write_outputs(doc, html=outputs.html, md=None if outputs.md == STDOUT else outputs.md,
                  json_path=None if outputs.json == STDOUT else outputs.json)
    if outputs.json == STDOUT:
        from rooftop.reports.json_report import render_json_bytes

        _to_stdout(render_json_bytes(doc))
    elif outputs.md == STDOUT:
        from rooftop.reports.markdown import render_markdown

        _to_stdout(render_markdown(doc).encode("utf-8"))
    if not outputs.quiet:
        echo(summary_text(doc, top=top, outputs=outputs.files), err=outputs.to_stdout)


def _to_stdout(data: bytes) -> None:
    stream = sys.stdout.buffer
    stream.write(data if data.endswith(b"\n") else data + b"\n")
    stream.flush()


def echo(text: str | list[str], err: bool = False) -> None:
    """Print lines rooftop composed: each line's control and bidi characters escaped. A list is
    printed one entry per line, so a newline inside an entry (a file name) is escaped too."""
    lines = text if isinstance(text, list) else text.split("\n")
    click.echo("\n".join(escape_terminal(line) for line in lines), err=err)


# ----------------------------------------------------------------------------- progress

def show_progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def progress_bar(items: Sequence[T], label: str) -> AbstractContextManager[Iterable[T]]:
    """The progress callback the library takes (rooftop.progress): a bar on stderr."""
    return click.progressbar(items, label=label, file=sys.stderr)


# ----------------------------------------------------------------------------- start-up


@contextmanager
def frozen_imports() -> Iterator[None]:
    """Import a command's library (pandas, NumPy, pyarrow: some 100,000 objects) with the cyclic
    garbage collector paused, then ``gc.freeze()`` them: later collections no longer walk the
    imported modules. Cuts a one-kernel ``analyze`` by ~0.15 s CPU (bench/NOTES.md, command-line
    start-up); collection of what the command itself allocates is unchanged. Freezes only in the
    call that first imports pandas (a process running several commands, as the tests do, freezes
    once)."""
    fresh = "pandas" not in sys.modules
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if fresh and "pandas" in sys.modules:
            gc.freeze()
        if was:
            gc.enable()


# ----------------------------------------------------------------------------- the error boundary

_OS_ERRORS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space left on the device", "free space there or write to another disk"),
    errno.EDQUOT: ("disk quota exceeded", "free space in your quota or write elsewhere"),
    errno.EFBIG: ("file too large for the file-size limit",
                  "raise the limit (ulimit -f unlimited) or write to another file system"),
    errno.EROFS: ("read-only file system", "write to a writable folder (another --to, --html, --json path)"),
    errno.EACCES: ("permission denied", "check the permissions or choose another path"),
    errno.EPERM: ("operation not permitted", "check the permissions or choose another path"),
    errno.ENOENT: ("no such file or folder", "check the path"),
    errno.EISDIR: ("is a folder", "give a file path"),
    errno.EPIPE: ("the output pipe closed early", "read all of rooftop's output"),
    errno.EIO: ("input/output error", "check the disk or the network file system"),
}
_OS_MESSAGES = {"No space left": errno.ENOSPC, "File too large": errno.EFBIG, "Read-only file system": errno.EROFS,
                "Disk quota exceeded": errno.EDQUOT, "Permission denied": errno.EACCES}


def describe_os_error(exc: OSError, writes: Sequence[str] = ()) -> str:
    """One line for an OSError: which file, what happened, what to do."""
    code = exc.errno
    text = str(exc)
    if code not in _OS_ERRORS:
        code = next((c for m, c in _OS_MESSAGES.items() if m in text), code)
    what, fix = _OS_ERRORS.get(code or -1, (exc.strerror or text or type(exc).__name__, "check the path and retry"))
    where = exc.filename if exc.filename is not None else exc.filename2
    if where is not None:
        return f"{os.fsdecode(where)}: {what} ({fix})"
    if writes:
        return f"{what} while writing {', '.join(writes)} ({fix})"
    return f"{what} ({fix})"


def error_line(exc: BaseException, writes: Sequence[str] = ()) -> str | None:
    """The one line for an error the user can act on, or None for a bug (shown as internal error)."""
    if isinstance(exc, (InputError, OutputError)):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory (split the input or use `rooftop ingest` + `rooftop fleet`)"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, OSError):
        return describe_os_error(exc, writes)
    return None


def fail(message: str) -> None:
    """``rooftop: <message>`` on stderr as one escaped line, exit 2."""
    click.echo(f"rooftop: {escape_terminal(message)}", err=True)
    sys.exit(EXIT_UNUSABLE)


@contextmanager
def error_boundary(ctx: click.Context) -> Iterator[None]:
    """The one place errors become exit codes: typed errors and OSErrors exit 2 with one line,
    anything else is an internal error (a traceback with ROOFTOP_DEBUG=1). numpy/pandas
    RuntimeWarnings (NaN/Inf arithmetic the rules already handle) stay off the terminal."""
    debug = bool(os.environ.get("ROOFTOP_DEBUG"))
    with warnings.catch_warnings():
        if not debug:
            warnings.simplefilter("ignore", RuntimeWarning)
        try:
            yield
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except (Exception, KeyboardInterrupt) as exc:
            line = error_line(exc, ctx.meta.get("rooftop.writes", ()))
            if line is not None:
                fail(line)
            if debug:
                raise
            fail(f"internal error: {type(exc).__name__}: {exc} "
                 "(set ROOFTOP_DEBUG=1 for a traceback; please report it)")


class RooftopGroup(click.Group):
    """The command group: every command runs inside :func:`error_boundary`, and a usage error
    (a bad option value, a missing argument) is one line too, naming the option and the help."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("standalone_mode", True) is False:
            return super().main(*args, **kwargs)
        try:
            return super().main(*args, **{**kwargs, "standalone_mode": False})
        except click.UsageError as exc:
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            fail(f"{exc.format_message()}{where}")
        except click.ClickException as exc:
            fail(exc.format_message())
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)

    def invoke(self, ctx: click.Context) -> Any:
        with error_boundary(ctx):
            return super().invoke(ctx)
