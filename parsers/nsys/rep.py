"""Binary Nsight Systems report (``.nsys-rep``, older ``.qdrep``): exported to SQLite with the
user's own ``nsys`` into a temporary folder, then read by :mod:`rooftop.parsers.nsys.columns`.
The container has no public layout, so without ``nsys`` on PATH this is an input error naming the
command to run (``docs/formulas.md#timelines``)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from rooftop.errors import InputError
from rooftop.parsers.model import ParseResult
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.trace_io import NSYS_REP

EXPORT_TIMEOUT_S = 3600


def export_command(nsys: str, report: str, out: str) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", out, report]


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    from rooftop.parsers.nsys import columns

    nsys = shutil.which("nsys")
    hint = f"run `nsys export --type sqlite --output report.sqlite {src.path}` and pass the .sqlite file"
    if nsys is None:
        raise InputError(src.path, "is a binary Nsight Systems report and `nsys` is not on PATH", hint)
    with tempfile.TemporaryDirectory(prefix="rooftop-nsys-") as tmp:
        out = str(Path(tmp) / "report.sqlite")
        report = Path(tmp) / "report.nsys-rep"  # nsys goes by the suffix; the input may have none
        report.symlink_to(Path(src.file).resolve())
        try:
            proc = subprocess.run(export_command(nsys, str(report), out), capture_output=True, text=True,
                                  timeout=EXPORT_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(src.path, f"`nsys export` failed: {exc}", hint) from exc
        if proc.returncode != 0 or not Path(out).is_file():
            last = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no output"]
            raise InputError(src.path, f"`nsys export` exited {proc.returncode}: {last[0]}",
                             "a report from a newer nsys needs an nsys at least that new; " + hint)
        result = columns.parse(Source(out), opts)
    events = result.events.assign(input=src.path)
    acc = replace(result.accounting, path=src.path, format=NSYS_REP)
    result.meta["exported_with"] = nsys
    rejected = [replace(r, path=src.path) for r in result.rejected]
    return replace(result, accounting=acc, events=events, rejected=rejected)
