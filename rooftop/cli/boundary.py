"""The one place errors become exit codes (docs/contract.md#exit-codes,
docs/architecture.md#the-command-line): the errors a user can act on (:mod:`rooftop.errors`,
OSErrors, MemoryError) exit 2 with one line; anything else is an internal error."""

from __future__ import annotations

import errno
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click

from rooftop.errors import InputError, OutputError
from rooftop.reports.terminal import escape_terminal

EXIT_OK, EXIT_REGRESSION, EXIT_UNUSABLE = 0, 1, 2


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
