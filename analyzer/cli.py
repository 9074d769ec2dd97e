"""The ``rooftop`` command line: the composition root that wires parsers, analyzer and reports."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from rooftop.analyzer import __version__
from rooftop.parsers import InputError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_REGRESSION, EXIT_UNUSABLE = 0, 1, 2


def _fail(message: str) -> None:
    click.echo(f"rooftop: {message}", err=True)
    sys.exit(EXIT_UNUSABLE)


def friendly_errors(func: F) -> F:
    """Unusable input or output ends with exit 2 and one line; never a traceback (unless debugging)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from rooftop.reports.atomic import OutputError

        try:
            return func(*args, **kwargs)
        except (InputError, OutputError) as exc:
            _fail(str(exc))
        except KeyboardInterrupt:
            _fail("interrupted")
        except MemoryError:
            _fail("out of memory (split the input or use `rooftop ingest` + `rooftop fleet`)")
        except Exception as exc:
            if os.environ.get("ROOFTOP_DEBUG"):
                raise
            _fail(f"internal error: {type(exc).__name__}: {exc} (set ROOFTOP_DEBUG=1 for a traceback; please report it)")

    return wrapper  # type: ignore[return-value]


def _parse_time(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 time (e.g. 2026-11-21T00:00:00Z)") from exc
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _guard_outputs(inputs: list[str], outputs: list[str | None]) -> None:
    """Refuse an output path that is one of the inputs (``analyze run.csv --html run.csv``)."""
    from rooftop.parsers import expand_inputs

    given = {Path(p).resolve() for p in expand_inputs(inputs)}
    for out in outputs:
        if out and Path(out).resolve() in given:
            raise InputError(out, "is also an input; refusing to overwrite it", "choose another output path")


def _show_progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


def _prometheus_options(func: F) -> F:
    """Options for http(s):// inputs: a Prometheus server (parsers.prom_http)."""
    for decorator in reversed([
        click.option("--since", "prom_since", help="Prometheus input: range start (ISO 8601, inclusive)."),
        click.option("--until", "prom_until", help="Prometheus input: range end (ISO 8601, exclusive)."),
        click.option("--match", "prom_match", multiple=True,
                     help="Prometheus input: PromQL selector (repeatable; default: the DCGM fields rooftop uses)."),
        click.option("--step", "prom_step", type=float,
                     help="Prometheus input: seconds between points (default: the scrape interval in the data)."),
        click.option("--token-file", "prom_token_file", type=click.Path(dir_okay=False),
                     help="Prometheus input: bearer token file (default: $ROOFTOP_PROMETHEUS_TOKEN)."),
    ]):
        func = decorator(func)
    return func


def _prom_query(inputs: tuple[str, ...], since: str | None, until: str | None, match: tuple[str, ...],
                step: float | None, token_file: str | None) -> Any:
    """The range to read from the http(s):// inputs, or None without any."""
    from rooftop.parsers.prom_http import PromQuery, is_url

    servers = [i for i in inputs if is_url(i)]
    if not servers:
        return None
    t0, t1 = _parse_time(since), _parse_time(until)
    if t0 is None or t1 is None:
        raise InputError(servers[0], "is a Prometheus server address, and reading it needs a range",
                         "give --since and --until (ISO 8601)")
    return PromQuery(since=t0, until=t1, match=match, step_s=step, token_file=token_file)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rooftop")
def main() -> None:
    """rooftop: where every kernel and every GPU-minute sits on the L1/L2/HBM roofline, and why."""


@main.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default="rooftop-report.html",
              show_default=True, help="HTML report (self-contained, opens offline).")
@click.option("--md", "md_path", type=click.Path(dir_okay=False), help="Markdown summary for a ticket.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="JSON for tools and CI.")
@click.option("--device", help="Device name from `rooftop devices`, or a JSON/YAML ceilings file.")
@click.option("--top", default=10, show_default=True, help="Findings to show.")
@click.option("--window", "window_s", type=float, default=None,
              help="DCGM window, seconds [default: from the capture's span and sampling interval].")
@click.option("--interval", "interval_s", default=1.0, show_default=True,
              help="dcgmi/nvidia-smi dmon sampling interval (-d), seconds.")
@click.option("--start", help="Wall-clock time of the first dmon sample (ISO 8601; default: file time).")
@click.option("--host", help="Host name for streams that do not carry one (dmon).")
@click.option("-q", "--quiet", is_flag=True, help="No summary, no progress bar.")
@_prometheus_options
@friendly_errors
def analyze(inputs: tuple[str, ...], html_path: str, md_path: str | None, json_path: str | None,
            device: str | None, top: int, window_s: float | None, interval_s: float, start: str | None,
            host: str | None, quiet: bool, prom_since: str | None = None, prom_until: str | None = None,
            prom_match: tuple[str, ...] = (), prom_step: float | None = None,
            prom_token_file: str | None = None) -> None:
    """Analyze ncu exports and DCGM streams (format detected from content), or a Prometheus server
    (http://HOST:9090 with --since and --until)."""
    from rooftop.analyzer.pipeline import run_analysis
    from rooftop.parsers import ParseOptions
    from rooftop.reports.outputs import print_summary, write_outputs

    _guard_outputs(list(inputs), [html_path, md_path, json_path])
    options = ParseOptions(interval_s=interval_s, start=_parse_time(start), host=host,
                           prometheus=_prom_query(inputs, prom_since, prom_until, prom_match, prom_step,
                                                  prom_token_file))
    doc = run_analysis(list(inputs), options=options, device=device, top=top, window_s=window_s,
                       progress=_show_progress(quiet), command=_command_line())
    write_outputs(doc, html=html_path, md=md_path, json_path=json_path)
    if not quiet:
        print_summary(doc, top=top, outputs=[p for p in (html_path, md_path, json_path) if p])


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
@friendly_errors
def devices(as_json: bool) -> None:
    """The built-in device ceilings table and where each number comes from."""
    from rooftop.analyzer.devices import render_table

    click.echo(render_table(as_json=as_json))


@main.command()
@click.argument("inputs", nargs=-1, type=click.Path())
@click.option("--to", "dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder.")
@click.option("--interval", "interval_s", default=1.0, show_default=True, help="dmon interval, seconds.")
@click.option("--start", help="Wall-clock time of the first dmon sample (ISO 8601).")
@click.option("--host", help="Host name for streams that do not carry one.")
@click.option("--finished", is_flag=True,
              help="The inputs are complete: also ingest an unterminated last line (held back by default).")
@click.option("--repair", is_flag=True,
              help="Drop entries whose partition files are missing or unreadable and ingest their inputs again.")
@click.option("-q", "--quiet", is_flag=True)
@_prometheus_options
@friendly_errors
def ingest(inputs: tuple[str, ...], dataset: str, interval_s: float, start: str | None,
           host: str | None, finished: bool, repair: bool, quiet: bool, prom_since: str | None = None,
           prom_until: str | None = None, prom_match: tuple[str, ...] = (), prom_step: float | None = None,
           prom_token_file: str | None = None) -> None:
    """DCGM inputs into a partitioned Parquet dataset (idempotent, incremental, atomic).

    Files still being written may be ingested again later: only their new samples are added. An
    unterminated last line (a line still being written) is held back until its newline arrives;
    pass --finished when the files are complete."""
    from rooftop.analyzer.fleet.ingest import ingest_files
    from rooftop.parsers import ParseOptions, expand_inputs
    from rooftop.parsers.prom_http import is_url, pull, source_dir

    options = ParseOptions(interval_s=interval_s, start=_parse_time(start), host=host)
    if not inputs and not repair:
        raise click.UsageError("give INPUT files or folders (or --repair)")
    query = _prom_query(inputs, prom_since, prom_until, prom_match, prom_step, prom_token_file)
    files, pulled = expand_inputs([i for i in inputs if not is_url(i)]), []
    for server in dict.fromkeys(i for i in inputs if is_url(i)):  # every range read before anything is stored
        got = pull(server, query, source_dir(Path(dataset), server, query, query.step_s))
        files += got.files
        pulled.append(f"read {got.points:,} samples ({got.series or 'the'} series, every {got.step_s:g} s) from "
                      f"{server} in {got.requests} request(s): {len(got.files)} hour file(s)")
    summary = ingest_files(files, Path(dataset), options=options,
                           progress=_show_progress(quiet), finished=finished, repair=repair)
    if not quiet:
        click.echo("\n".join([*pulled, summary.describe()]))
    elif summary.unusable:  # -q: the inputs that were not ingested are still said (on stderr)
        click.echo("\n".join(f"unusable: {exc}" for exc in summary.unusable), err=True)


@main.command()
@click.argument("dataset", type=click.Path(file_okay=False))
@click.option("--since", help="ISO 8601 start (inclusive).")
@click.option("--until", help="ISO 8601 end (exclusive).")
@click.option("--by", default="host", show_default=True,
              help="Comma-separated groups: host, model, gpu, namespace, pod, container, job.")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--scheduler", help="Dask scheduler address (tcp://host:8786); default: a local cluster.")
@click.option("--workers", default=2, show_default=True, help="Workers for a local Dask cluster; threads for the local engine.")
@click.option("--window", "window_s", default=60.0, show_default=True, help="Window, seconds.")
@click.option("--device", help="Device name or ceilings file for GPUs the dataset does not name.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default="rooftop-fleet.html",
              show_default=True)
@click.option("--md", "md_path", type=click.Path(dir_okay=False))
@click.option("--json", "json_path", type=click.Path(dir_okay=False))
@click.option("--top", default=10, show_default=True)
@click.option("--kernels", "profiles", multiple=True, type=click.Path(),
              help="ncu profile(s) of a job (repeatable): compare the DCGM signature its kernels imply "
                   "with the job's windows.")
@click.option("--job", help="With --kernels: the job's windows (DCGM job label).")
@click.option("--pod", help="With --kernels: the pod's windows.")
@click.option("--namespace", help="With --kernels: the namespace's windows.")
@click.option("--host", help="With --kernels: the host's windows.")
@click.option("-q", "--quiet", is_flag=True)
@friendly_errors
def fleet(dataset: str, since: str | None, until: str | None, by: str, engine: str,
          scheduler: str | None, workers: int, window_s: float, device: str | None,
          html_path: str, md_path: str | None, json_path: str | None, top: int,
          profiles: tuple[str, ...], job: str | None, pod: str | None, namespace: str | None,
          host: str | None, quiet: bool) -> None:
    """Nightly analysis over a dataset: window labels, roll-ups per group, ranked fleet findings."""
    from rooftop.analyzer.fleet.pipeline import run_fleet
    from rooftop.reports.outputs import print_summary, write_outputs

    groups = [g.strip() for g in by.split(",") if g.strip()]
    _guard_outputs(list(profiles), [html_path, md_path, json_path])
    join = _join_request(profiles, {"job": job, "pod": pod, "namespace": namespace, "host": host},
                         device)
    doc = run_fleet(Path(dataset), since=_parse_time(since), until=_parse_time(until), by=groups,
                    engine=engine, scheduler=scheduler, workers=workers, window_s=window_s,
                    device=device, top=top, command=_command_line(), join=join)
    write_outputs(doc, html=html_path, md=md_path, json_path=json_path)
    if not quiet:
        print_summary(doc, top=top, outputs=[p for p in (html_path, md_path, json_path) if p])


def _join_request(profiles: tuple[str, ...], filters: dict[str, str | None],
                  device: str | None) -> Any:
    """``fleet --kernels``: the profiles analysed now, and at most one window filter."""
    given = {k: v for k, v in filters.items() if v is not None}
    if len(given) > 1:
        raise InputError("--" + "/--".join(given), "select the job's windows with one filter",
                         "give one of --job, --pod, --namespace, --host")
    if not profiles:
        if given:
            raise InputError(f"--{next(iter(given))}", "selects windows for --kernels, which is missing",
                             "add --kernels PROFILE (an ncu export of the job)")
        return None
    from rooftop.analyzer.devices import load_device_option
    from rooftop.analyzer.fleet.join import JoinRequest
    from rooftop.analyzer.pipeline import analyze_inputs

    ai = analyze_inputs(list(profiles), device)
    if not len(ai.results):
        raise InputError(", ".join(profiles), "holds no kernel launches",
                         "--kernels takes ncu exports (or folders of them) of the job")
    column, value = next(iter(given.items())) if given else (None, None)
    return JoinRequest(results=ai.results, column=column, value=value,
                       ceilings=load_device_option(device), profiles=tuple(profiles))


@main.command()
@click.argument("baseline", type=click.Path())
@click.argument("candidate", type=click.Path())
@click.option("--fail-on", "fail_on", type=float, help="Exit 1 on a significant regression beyond PCT %.")
@click.option("--gate", type=click.Choice(["total", "matched"]), default="total", show_default=True,
              help="What --fail-on judges: matched kernels and total kernel time (new and vanished kernels "
                   "included), or matched kernels only.")
@click.option("--device", help="Device name or ceilings file.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default="rooftop-diff.html",
              show_default=True)
@click.option("--md", "md_path", type=click.Path(dir_okay=False))
@click.option("--json", "json_path", type=click.Path(dir_okay=False))
@click.option("-q", "--quiet", is_flag=True)
@friendly_errors
def diff(baseline: str, candidate: str, fail_on: float | None, gate: str, device: str | None, html_path: str,
         md_path: str | None, json_path: str | None, quiet: bool) -> None:
    """Compare two runs: kernels matched, per-kernel deltas, noise-aware verdicts."""
    from rooftop.analyzer.diff import run_diff
    from rooftop.reports.outputs import print_summary, write_outputs

    _guard_outputs([baseline, candidate], [html_path, md_path, json_path])
    doc = run_diff(baseline, candidate, fail_on=fail_on, device=device, command=_command_line(), gate=gate)
    write_outputs(doc, html=html_path, md=md_path, json_path=json_path)
    if not quiet:
        print_summary(doc, top=10, outputs=[p for p in (html_path, md_path, json_path) if p])
    if doc.get("verdict", {}).get("fail"):
        sys.exit(EXIT_REGRESSION)


def _command_line() -> str:
    return " ".join(["rooftop", *sys.argv[1:]])


if __name__ == "__main__":  # pragma: no cover
    main()
