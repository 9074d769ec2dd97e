"""The ``rooftop`` command line: the composition root that wires parsers, analyzer and reports.

Thin by design (docs/architecture.md#the-command-line): each command parses its options (click
types of :mod:`rooftop.cli.options` validate them), calls one library function with plain values
and a progress callback, and hands the result to :mod:`rooftop.cli.output`; errors become exit
codes in :mod:`rooftop.cli.boundary`. Heavy modules (pandas, pyarrow) are imported inside the
commands (:func:`rooftop.cli.lazy.frozen_imports`), so ``rooftop --help`` stays fast
(bench/cli_startup.py).
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from rooftop._version import __version__
from rooftop.cli.boundary import EXIT_REGRESSION, RooftopGroup
from rooftop.cli.lazy import frozen_imports
from rooftop.cli.options import (
    COUNT,
    PERCENT,
    SECONDS_INTERVAL,
    SECONDS_WINDOW,
    WORKERS,
    IsoTime,
    Outputs,
    SchedulerAddress,
    kernel_regex,
    output_options,
    prometheus_options,
)
from rooftop.cli.output import (
    echo,
    emit,
    emit_ci,
    fit_lines,
    guard_outputs,
    progress_bar,
    show_progress,
)

__all__ = ["main"]



def _command_line() -> str:
    return " ".join(["rooftop", *sys.argv[1:]])


@click.group(cls=RooftopGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rooftop")
def main() -> None:
    """rooftop: where every kernel and every GPU-minute sits on the L1/L2/HBM roofline, and why."""


@main.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@output_options("rooftop-report.html")
@click.option("--device", help="Device name from `rooftop devices`, or a JSON/YAML ceilings file.")
@click.option("--top", type=COUNT, default=10, show_default=True, help="Findings to show.")
@click.option("--window", "window_s", type=SECONDS_WINDOW, default=None,
              help="DCGM window, seconds [default: from the capture's span and sampling interval].")
@click.option("--interval", "interval_s", type=SECONDS_INTERVAL, default=None,
              help="dcgmi/nvidia-smi dmon sampling interval (-d), seconds [default: the file's own "
                   "`dcgmi dmon -d`, else 1 s; Prometheus text: 30 s].")
@click.option("--start", type=IsoTime(),
              help="Wall-clock time of the first dmon sample (ISO 8601; default: file time).")
@click.option("--host", help="Host name for streams that do not carry one (dmon).")
@click.option("--skip-unreadable", is_flag=True,
              help="Go on past a subfolder that cannot be listed (it is listed as unusable).")
@click.option("-k", "--kernel", "kernel", metavar="REGEX", callback=kernel_regex,
              help="Analyse only the ncu kernels whose name matches REGEX (searched; ncu's 'regex:' prefix "
                   "accepted).")
@prometheus_options
def analyze(inputs: tuple[str, ...], outputs: Outputs, device: str | None, top: int, window_s: float | None,
            interval_s: float | None, start: Any, host: str | None, skip_unreadable: bool = False,
            kernel: str | None = None,
            prom_since: datetime | None = None,
            prom_until: datetime | None = None, prom_match: tuple[str, ...] = (),
            prom_step: float | None = None, prom_token_file: str | None = None) -> None:
    """Analyze ncu exports and DCGM streams (format detected from content), or a Prometheus server
    (http://HOST:9090 with --since and --until)."""
    with frozen_imports():
        from rooftop.analyzer.pipeline import run_analysis
        from rooftop.parsers.prometheus.http import range_query
        from rooftop.parsers.source import ParseOptions

    guard_outputs(list(inputs), outputs.files)
    options = ParseOptions(interval_s=interval_s, start=start, host=host, skip_unreadable=skip_unreadable,
                           prometheus=range_query(inputs, prom_since, prom_until, prom_match, prom_step,
                                                  prom_token_file))
    doc = run_analysis(list(inputs), options=options, device=device, top=top, window_s=window_s,
                       progress=progress_bar if show_progress(outputs.quiet) else None,
                       command=_command_line(), kernel=kernel)
    emit(doc, outputs, top)


@main.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option("-k", "--kernel", "kernel", metavar="REGEX", required=True, callback=kernel_regex,
              help="The kernels to show: those whose name matches REGEX (searched; ncu's 'regex:' prefix accepted).")
@click.option("--limit", type=COUNT, default=3, show_default=True, help="Matching launches shown, the longest first.")
@click.option("--device", help="Device name from `rooftop devices`, or a JSON/YAML ceilings file.")
def show(inputs: tuple[str, ...], kernel: str, limit: int, device: str | None) -> None:
    """Everything behind a kernel's verdict: identity, label and finding, ceilings, every evidence
    fact with its sentence, NVIDIA's rules (docs/formulas.md#kernel-filter). INPUT: profiles to
    analyse now, or one analysis saved with `analyze --json` (shown as it was analysed)."""
    with frozen_imports():
        from rooftop.analyzer.diff.saved import read_document
        from rooftop.analyzer.kernels.select import matching_positions
        from rooftop.analyzer.pipeline import run_analysis
        from rooftop.reports.kernel_detail import chosen, detail_text

    saved = read_document(Path(inputs[0])) if len(inputs) == 1 and Path(inputs[0]).is_file() else None
    if saved is not None:
        import rooftop

        doc = rooftop.load(inputs[0])
        among = matching_positions([k["name"] for k in doc["kernels"]], kernel, inputs[0])
        echo(detail_text(doc, chosen(doc, limit, among), matching=len(among)))
        return
    doc = run_analysis(list(inputs), device=device, kernel=kernel, command=_command_line(),
                       progress=progress_bar if show_progress(False) else None)
    echo(detail_text(doc, chosen(doc, limit)))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
def devices(as_json: bool) -> None:
    """The built-in device ceilings table and where each number comes from."""
    from rooftop.analyzer.ceilings.devices import builtin
    from rooftop.reports.devices_table import render_table

    echo(render_table([spec.as_contract() for spec in builtin()], as_json=as_json))


@main.command()
@click.argument("citation")
def explain(citation: str) -> None:
    """The rule a citation names, from the docs installed with rooftop: every label, number and
    sentence cites one, e.g. `rooftop explain docs/formulas.md#diff` (or just `diff`)."""
    from rooftop.explain import rule_text

    echo(rule_text(citation))


@main.command()
@click.argument("inputs", nargs=-1, type=click.Path())
@click.option("--to", "dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder.")
@click.option("--interval", "interval_s", type=SECONDS_INTERVAL, default=None,
              help="dmon interval, seconds [default: the file's own `dcgmi dmon -d`, else 1 s; "
                   "Prometheus text: 30 s].")
@click.option("--start", type=IsoTime(), help="Wall-clock time of the first dmon sample (ISO 8601).")
@click.option("--host", help="Host name for streams that do not carry one.")
@click.option("--finished", is_flag=True,
              help="The inputs are complete: also ingest an unterminated last line (held back by default).")
@click.option("--repair", is_flag=True,
              help="Drop entries whose partition files are missing or unreadable and ingest their inputs again.")
@click.option("-q", "--quiet", is_flag=True, help="No summary, no progress bar.")
@click.option("-v", "--verbose", is_flag=True, help="List every input that was not ingested (default: the first 5).")
@click.option("--skip-unreadable", is_flag=True,
              help="Go on past a subfolder that cannot be listed (it is listed as unusable).")
@prometheus_options
def ingest(inputs: tuple[str, ...], dataset: str, interval_s: float | None, start: Any,
           host: str | None, finished: bool, repair: bool, quiet: bool, verbose: bool = False,
           skip_unreadable: bool = False,
           prom_since: datetime | None = None, prom_until: datetime | None = None,
           prom_match: tuple[str, ...] = (), prom_step: float | None = None,
           prom_token_file: str | None = None) -> None:
    """DCGM inputs into a partitioned Parquet dataset (idempotent, incremental, atomic).

    Files still being written may be ingested again later: only their new samples are added. An
    unterminated last line (a line still being written) is held back until its newline arrives;
    pass --finished when the files are complete."""
    with frozen_imports():
        from rooftop.analyzer.store.ingest import ingest_sources
        from rooftop.parsers.prometheus.http import range_query
        from rooftop.parsers.source import ParseOptions

    click.get_current_context().meta["rooftop.writes"] = [dataset]
    if not inputs and not repair:
        raise click.UsageError("give INPUT files or folders (or --repair)")
    query = range_query(inputs, prom_since, prom_until, prom_match, prom_step, prom_token_file)
    summary = ingest_sources(inputs, Path(dataset), ParseOptions(interval_s=interval_s, start=start, host=host,
                                                                 skip_unreadable=skip_unreadable),
                             query, progress=progress_bar if show_progress(quiet) else None,
                             finished=finished, repair=repair)
    if not quiet:
        echo(fit_lines(summary.lines(verbose)))
    elif summary.unusable:  # -q: the inputs that were not ingested are still said (on stderr)
        echo(fit_lines(summary.unusable_lines(verbose), err=True), err=True)


@main.command()
@click.argument("dataset", type=click.Path(file_okay=False))
@click.option("--since", type=IsoTime(), help="ISO 8601 start (inclusive).")
@click.option("--until", type=IsoTime(), help="ISO 8601 end (exclusive).")
@click.option("--by", default="host", show_default=True,
              help="Comma-separated groups: host, model, gpu, namespace, pod, container, job.")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--scheduler", type=SchedulerAddress(),
              help="Dask scheduler address (tcp://host:8786); default: a local cluster.")
@click.option("--workers", type=WORKERS, default=2, show_default=True,
              help="Workers for a local Dask cluster; threads for the local engine.")
@click.option("--window", "window_s", type=SECONDS_WINDOW, default=60.0, show_default=True,
              help="Window, seconds.")
@click.option("--device", help="Device name or ceilings file for GPUs the dataset does not name.")
@output_options("rooftop-fleet.html")
@click.option("--top", type=COUNT, default=10, show_default=True)
@click.option("--kernels", "profiles", multiple=True, type=click.Path(),
              help="ncu profile(s) of a job (repeatable): compare the DCGM signature its kernels imply "
                   "with the job's windows.")
@click.option("--job", help="With --kernels: the job's windows (DCGM job label).")
@click.option("--pod", help="With --kernels: the pod's windows.")
@click.option("--namespace", help="With --kernels: the namespace's windows.")
@click.option("--host", help="With --kernels: the host's windows.")
def fleet(dataset: str, since: Any, until: Any, by: str, engine: str, scheduler: str | None,
          workers: int, window_s: float, device: str | None, outputs: Outputs, top: int,
          profiles: tuple[str, ...], job: str | None, pod: str | None, namespace: str | None,
          host: str | None) -> None:
    """Nightly analysis over a dataset: window labels, roll-ups per group, ranked fleet findings."""
    with frozen_imports():
        from rooftop.analyzer.fleet.pipeline import run_fleet
        from rooftop.analyzer.fleet.request import join_request

    groups = [g.strip() for g in by.split(",") if g.strip()]
    guard_outputs(list(profiles), outputs.files)
    join = join_request(profiles, {"job": job, "pod": pod, "namespace": namespace, "host": host}, device)
    doc = run_fleet(Path(dataset), since=since, until=until, by=groups, engine=engine,
                    scheduler=scheduler, workers=workers, window_s=window_s, device=device, top=top,
                    command=_command_line(), join=join)
    emit(doc, outputs, top)


@main.command()
@click.argument("baseline", type=click.Path())
@click.argument("candidate", type=click.Path())
@click.option("--fail-on", "fail_on", type=PERCENT, help="Exit 1 on a significant regression beyond PCT %.")
@click.option("--min-effect", "min_effect", type=PERCENT, default=5.0, show_default=True,
              help="Smallest change (%) that counts, whatever --fail-on says: run-to-run noise the "
                   "per-launch test cannot see (docs/formulas.md#diff).")
@click.option("--gate", type=click.Choice(["total", "matched"]), default="total", show_default=True,
              help="What --fail-on judges: matched kernels and total kernel time (new and vanished kernels "
                   "included), or matched kernels only.")
@click.option("--device", help="Device name or ceilings file.")
@click.option("--junit", "junit", type=click.Path(dir_okay=False),
              help="Also write a JUnit XML report (one test case per compared series).")
@output_options("rooftop-diff.html")
def diff(baseline: str, candidate: str, fail_on: float | None, min_effect: float, gate: str,
         device: str | None, junit: str | None, outputs: Outputs) -> None:
    """Compare two runs: kernels matched, per-kernel deltas, noise-aware verdicts. On GitHub Actions
    (GITHUB_STEP_SUMMARY, GITHUB_ACTIONS) it adds a job summary and annotations."""
    with frozen_imports():
        from rooftop.analyzer.diff.sides import run_diff

    guard_outputs([baseline, candidate], [*outputs.files, *([junit] if junit else [])])
    doc = run_diff(baseline, candidate, fail_on=fail_on, device=device, command=_command_line(), gate=gate,
                   min_effect=min_effect)
    emit(doc, outputs, 10)
    emit_ci(doc, junit, outputs)
    if doc.get("verdict", {}).get("fail"):
        sys.exit(EXIT_REGRESSION)


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("--min-effect", "min_effect", type=PERCENT, default=5.0, show_default=True,
              help="Smallest change (%) that leaves a family's noise band (docs/formulas.md#trend).")
@click.option("--device", help="Device name or ceilings file for ncu exports.")
@output_options("rooftop-trend.html")
def trend(runs: tuple[str, ...], min_effect: float, device: str | None, outputs: Outputs) -> None:
    """Each kernel family's time across N runs (oldest first: saved analyses, ncu exports or traces),
    its between-run noise band, and the run where a change started."""
    with frozen_imports():
        from rooftop.analyzer.diff.trend import run_trend

    guard_outputs(list(runs), outputs.files)
    emit(run_trend(list(runs), device=device, min_effect=min_effect, command=_command_line()), outputs, 10)


if __name__ == "__main__":  # pragma: no cover
    main()
