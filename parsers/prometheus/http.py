"""A Prometheus server (or Thanos / Mimir: the same HTTP API) as a source of DCGM samples.

``pull(server, query, out_dir)`` reads ``/api/v1/query_range`` at the scrape interval and writes
what it read as Prometheus text files with millisecond timestamps (format ``prometheus-text``), one
per hour of the range, in time order; ``rooftop analyze`` and ``rooftop ingest`` then read those
files like any other input (docs/formulas.md#inputs):

- **Points**: every ``step`` seconds on the epoch grid (``t = k * step``), ``since <= t < until``, so
  the same range gives the same points (and the same bytes) every time: re-ingesting it adds nothing,
  and an hour still being filled grows by appended lines.
- **Step**: ``--step``, else the scrape interval seen in the data: for up to three metric names,
  the smallest ``(window/2) / (count_over_time(N[window]) - count_over_time(N[window/2]))`` over
  their series at both ends of the range (window: 10 min or the range; the difference holds no
  boundary sample, whether the server's ranges are closed or left-open), snapped to whole seconds
  within 3 %.
- **Chunks**: at most 10,000 points per series per request (Prometheus answers at most 11,000) and
  about :data:`POINT_BUDGET` points per request over all series, so memory stays bounded.
- **Selector**: ``--match`` (several: joined with ``or``), else every name of the DCGM fields the
  window analysis uses (:data:`ANALYZED_FIELDS`, all eras' names).
- **Auth**: ``Authorization: Bearer`` from ``--token-file`` or the ``ROOFTOP_PROMETHEUS_TOKEN``
  environment variable.
- **Errors** (unreachable, 4xx/5xx, timeout, an oversized, odd, cut-short or partial answer:
  Thanos/Mimir ``warnings``) raise :class:`InputError` naming the server; files are written to
  ``out_dir`` only after every request succeeded (a temporary folder first), so nothing is
  half-written. Deadline, size cap, redirects and the token: :mod:`parsers.prometheus.transport`.

HTTP via the standard library (``urllib``): two endpoints and a bearer header need no client library.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from rooftop.errors import InputError
from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.model import ParseResult
from rooftop.parsers.prometheus.transport import Transport, read_token, short
from rooftop.parsers.source import ParseOptions

__all__ = [
    "PromQuery", "Pulled", "pull", "pull_to_temp", "range_query", "read_server", "source_dir",
]

MAX_STEPS = 10_000  # points per series per request (Prometheus refuses more than 11,000)
POINT_BUDGET = 200_000  # points per request over all series (~5 MB of JSON, ~0.1 GB parsed)
CELL = timedelta(hours=1)  # one file per hour of the range
STEP_WINDOW_S = 600.0
# The DCGM fields analyzer/windows/fields.py averages (tests check the two lists agree).
ANALYZED_FIELDS = (1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 1015,
                   203, 204, 155, 252)
_URL = re.compile(r"^https?://", re.I)
METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")  # the classic exposition-format names
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z|[-+]?Inf\Z|NaN\Z")


def is_url(text: str) -> bool:
    return bool(_URL.match(text))


@dataclass(frozen=True)
class PromQuery:
    """What to read from a server: the range (``since`` inclusive, ``until`` exclusive), selectors,
    step (``None``: the scrape interval), auth, per-request timeout."""

    since: datetime
    until: datetime
    match: tuple[str, ...] = ()
    step_s: float | None = None
    token_file: str | None = None
    timeout_s: float = 60.0

    def selectors(self) -> list[str]:
        return list(self.match) or ['{__name__=~"' + "|".join(re.escape(n) for n in default_names()) + '"}']

    def selector(self) -> str:
        """The one PromQL expression read (several selectors joined with ``or``)."""
        sel = self.selectors()
        return sel[0] if len(sel) == 1 else " or ".join(f"({m})" for m in sel)


def range_query(inputs: Sequence[str], since: datetime | None, until: datetime | None,
                match: tuple[str, ...] = (), step_s: float | None = None,
                token_file: str | None = None) -> PromQuery | None:
    """The range to read from the http(s):// among ``inputs``, or None without any;
    :class:`InputError` naming the first server when ``since`` or ``until`` is missing."""
    servers = [i for i in inputs if is_url(i)]
    if not servers:
        return None
    if since is None or until is None:
        raise InputError(servers[0], "is a Prometheus server address, and reading it needs a range",
                         "give --since and --until (ISO 8601)")
    return PromQuery(since=since, until=until, match=match, step_s=step_s, token_file=token_file)


def default_names() -> list[str]:
    """Every metric name of the :data:`ANALYZED_FIELDS` (classic, DCGM 4.6, 4.6.1 SI names)."""
    ids = set(ANALYZED_FIELDS)
    return sorted(n for n, fid in F.BY_NAME.items() if fid in ids)


@dataclass
class Pulled:
    """The files one pull wrote (time order) and what it read."""

    files: list[Path] = field(default_factory=list)
    step_s: float = 0.0
    series: int = 0
    points: int = 0
    requests: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # points of series not written, by name

    def describe(self, server: str) -> str:
        """The summary line of the pull."""
        line = (f"read {self.points:,} samples ({self.series or 'the'} series, every {self.step_s:g} s) from "
                f"{server} in {self.requests} request(s): {len(self.files)} hour file(s)")
        if self.skipped:
            names = ", ".join(repr(n) for n in list(self.skipped)[:3])
            line += (f"; {sum(self.skipped.values()):,} point(s) of series whose name is not a classic "
                     f"metric name (never a DCGM field) not read: {names}")
        return line


class _Client:
    def __init__(self, server: str, query: PromQuery) -> None:
        self.server = server.rstrip("/")
        self.query = query
        self.transport = Transport(self.server, query.timeout_s, read_token(query.token_file))
        self.requests = 0

    def get(self, endpoint: str, params: dict[str, str]) -> dict[str, Any]:
        """POST ``params`` to ``/api/v1/<endpoint>`` (form-encoded: long selectors fit); the ``data``."""
        data = self._call(endpoint, list(params.items()))
        if not isinstance(data, dict):
            raise InputError(self.server, f"answered {endpoint} with no result object", "is this a Prometheus API?")
        return data

    def get_list(self, endpoint: str, params: list[tuple[str, str]]) -> list[Any]:
        data = self._call(endpoint, params, post=False)
        if not isinstance(data, list):
            raise InputError(self.server, f"answered {endpoint} with no list", "is this a Prometheus API?")
        return data

    def _call(self, endpoint: str, params: list[tuple[str, str]], post: bool = True) -> Any:
        url = f"{self.server}/api/v1/{endpoint}"
        encoded = urllib.parse.urlencode(params)
        if post:
            req = self.transport.request(url, encoded.encode(), {"Content-Type": "application/x-www-form-urlencoded",
                                                                 "Accept": "application/json"})
        else:  # endpoints that take GET only (label values before Prometheus 2.x-late)
            req = self.transport.request(f"{url}?{encoded}", None, {"Accept": "application/json"})
        self.requests += 1
        raw = self.transport.send(req)
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise InputError(self.server, f"answered {endpoint} with {len(raw):,} bytes that are not complete JSON "
                             "(the answer was cut short)", "retry; check a proxy or size limit in between") from exc
        if not isinstance(doc, dict) or doc.get("status") != "success" or "data" not in doc:
            err = doc.get("error", doc.get("status")) if isinstance(doc, dict) else "not an API answer"
            raise InputError(self.server, f"{endpoint} failed: {_short(str(err))}", "check --match and the range")
        if doc.get("warnings"):  # Thanos/Mimir partial response: some stores did not answer
            warn = doc["warnings"]
            text = "; ".join(map(str, warn)) if isinstance(warn, list) else str(warn)
            raise InputError(self.server, f"gave a partial answer to {endpoint}: {_short(text)}",
                             "retry when every store answers; nothing was written")
        return doc["data"]

    def odd(self, endpoint: str, what: str) -> InputError:
        """The error for an answer of the wrong shape."""
        return InputError(self.server, f"answered {endpoint} with {what}", "is this a Prometheus API?")


_short = short


def _epoch(t: datetime) -> float:
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def scrape_interval(client: _Client) -> tuple[float, int]:
    """The scrape interval seen in the data (seconds, ms-rounded) and the number of series: the names
    the selector holds in the range (``/api/v1/label/__name__/values``), then for the first few
    ``window / count_over_time({__name__="N"}[window])`` at both ends of the range (the smallest),
    and ``count(selector)`` there (the largest) for the request budget."""
    q = client.query
    since, until = _epoch(q.since), _epoch(q.until)
    window = min(STEP_WINDOW_S, until - since)
    params = [("match[]", sel) for sel in q.selectors()] + [("start", f"{since:.3f}"), ("end", f"{until:.3f}")]
    names = [n for n in client.get_list("label/__name__/values", params) if isinstance(n, str)]
    best, series = math.inf, 0
    for at in (until, since + window):
        data = client.get("query", {"query": f"count({q.selector()})", "time": f"{at:.3f}"})
        series = max([series] + [int(min(_instant(client, r), 1e12)) for r in _results(client, "query", data)])
        for name in names[:3]:
            if not METRIC_NAME.match(name):
                continue
            sel = '{__name__="' + name + '"}'
            counts = []
            for w in (window, window / 2):  # the difference holds no boundary sample, open or closed
                data = client.get("query", {"query": f"count_over_time({sel}[{w:g}s])", "time": f"{at:.3f}"})
                counts.append({json.dumps(r.get("metric"), sort_keys=True): _instant(client, r)
                               for r in _results(client, "query", data)})
            for key, c in counts[0].items():
                diff = c - counts[1].get(key, 0.0)
                if diff >= 1:
                    best = min(best, window / 2 / diff)
    if not math.isfinite(best):
        raise InputError(client.server, f"holds no series for {_short(q.selector(), 120)} between "
                         f"{q.since.isoformat()} and {q.until.isoformat()} (or only one sample each)",
                         "check --since/--until and --match, or give --step")
    if abs(best - round(best)) < 0.03 * best:  # scrape intervals are whole seconds: jitter is not a new step
        best = float(round(best))
    return max(0.001, round(best, 3)), series


def _grid(since: float, until: float, step: float) -> Iterator[tuple[float, float, float]]:
    """Hour cells ``(cell_start, first_point, last_point)``: points ``k * step`` in ``[since, until)``."""
    cell = CELL.total_seconds()
    first = math.ceil(round(since / step, 9)) * step
    while first < until:
        cell_start = math.floor(first / cell) * cell
        end = min(until, cell_start + cell)
        last = math.ceil(round(end / step, 9)) * step - step  # last point < end
        if last >= first:
            yield cell_start, first, last
        first = last + step


def _results(client: _Client, endpoint: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    """``data.result`` as a list of objects, or :class:`InputError` (an odd answer)."""
    result = data.get("result") or []
    if not isinstance(result, list) or not all(isinstance(r, dict) for r in result):
        raise client.odd(endpoint, "a result that is not a list of series")
    return result


def _instant(client: _Client, r: dict[str, Any]) -> float:
    """The finite, non-negative number of one instant-vector sample ``{"value": [t, "v"]}``."""
    try:
        v = float(r["value"][1])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise client.odd("query", f"a sample that is not [time, \"number\"] ({_short(str(r), 80)})") from exc
    if not math.isfinite(v) or v < 0:
        raise client.odd("query", f"a count that is not a finite number ({_short(str(v), 40)})")
    return v


def _text_lines(client: _Client, data: dict[str, Any], skipped: dict[str, int]) -> list[tuple[int, str]]:
    """The matrix of one query_range answer as ``(ts_ms, text line)`` pairs. A series whose name is
    not a classic metric name (a Prometheus 3 UTF-8 name: never a DCGM field) is skipped and counted
    in ``skipped``; label names that are not classic are dropped (rooftop reads none); label values
    are escaped; a value that is not a number or a time that is not finite is an odd answer."""
    out = []
    for series in _results(client, "query_range", data):
        metric = series.get("metric") or {}
        values = series.get("values") or []
        if not isinstance(metric, dict) or not isinstance(values, list):
            raise client.odd("query_range", "a series without a metric object and a values list")
        name = metric.get("__name__", "")
        if not isinstance(name, str) or not METRIC_NAME.match(name):
            skipped[str(name)[:80]] = skipped.get(str(name)[:80], 0) + len(values)
            continue
        labels = ",".join(f'{k}="{_escape(str(v))}"' for k, v in sorted(metric.items())
                          if k != "__name__" and isinstance(k, str) and LABEL_NAME.match(k))
        head = f"{name}{{{labels}}}"
        for pair in values:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)
                    and NUMBER.match(pair[1])):
                raise client.odd("query_range", f"a sample that is not [time, \"number\"] ({_short(str(pair), 80)})")
            try:
                ms = round(float(pair[0]) * 1000)
            except (TypeError, ValueError, OverflowError) as exc:
                raise client.odd("query_range", f"a sample time that is not a number ({_short(str(pair), 80)})") from exc
            out.append((ms, f"{head} {pair[1]} {ms}"))
    return out


def _escape(v: str) -> str:
    """A label value in the text exposition format: backslash, quote and line feed escaped; a
    carriage return, which the format cannot escape, dropped."""
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "")


def pull(server: str, query: PromQuery, out_dir: Path) -> Pulled:
    """Read the range into one text file per hour under ``out_dir`` (see the module docstring).
    Files are written only when every request succeeded; existing files of the same hours are
    replaced (atomically, by rename)."""
    if _epoch(query.until) <= _epoch(query.since):
        raise InputError(server, "--until is not after --since", "give a range with --since and --until")
    client = _Client(server, query)
    step, series = (query.step_s, 0) if query.step_s else scrape_interval(client)
    if not step or step <= 0 or not math.isfinite(step):
        raise InputError(server, f"step {step!r} is not a positive number of seconds", "give --step > 0")
    steps = max(1, min(MAX_STEPS, POINT_BUDGET // max(1, series)))
    pulled = Pulled(step_s=step, series=series)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".pull-", dir=out_dir) as tmp:
        staged: list[tuple[Path, Path]] = []
        for cell_start, first, last in _grid(_epoch(query.since), _epoch(query.until), step):
            name = datetime.fromtimestamp(cell_start, timezone.utc).strftime("%Y%m%dT%H%M%SZ") + ".prom"
            part = Path(tmp) / name
            with part.open("w", encoding="utf-8", newline="\n") as fh:
                a = first
                while a <= last:
                    b = min(last, a + (steps - 1) * step)
                    data = client.get("query_range", {"query": query.selector(), "start": f"{a:.3f}",
                                                      "end": f"{b:.3f}", "step": f"{step:g}"})
                    lines = sorted(_text_lines(client, data, pulled.skipped))  # time order, then series: appended hours grow at the end
                    pulled.points += len(lines)
                    fh.writelines(line + "\n" for _, line in lines)
                    a = b + step
            if part.stat().st_size:  # an hour without samples gives no file
                staged.append((part, out_dir / name))
        for part, final in staged:  # every request succeeded: publish
            os.replace(part, final)
            pulled.files.append(final)
    pulled.requests = client.requests
    return pulled


def pull_to_temp(server: str, query: PromQuery) -> tuple[Pulled, Path]:
    """:func:`pull` into a new temporary folder (the caller removes it: :func:`shutil.rmtree`)."""
    tmp = Path(tempfile.mkdtemp(prefix="rooftop-prom-"))
    try:
        return pull(server, query, tmp), tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_server(server: str, options: ParseOptions) -> list[ParseResult]:
    """``rooftop analyze URL``: the server's range (``options.prometheus``) parsed, one result per
    hour, each named ``URL@hour``."""
    from dataclasses import replace

    from rooftop.parsers import parse_path

    query = options.prometheus
    if query is None:
        raise InputError(server, "is a Prometheus server address, and reading it needs a range",
                         "give --since and --until (ISO 8601)")
    pulled, tmp = pull_to_temp(server, query)
    try:
        if not pulled.files:
            raise InputError(server, "holds no samples in the range", "check --since/--until and --match")
        out = []
        for f in pulled.files:
            r = parse_path(f, options)
            name = f"{server.rstrip('/')}@{f.stem}"
            out.append(replace(r, accounting=replace(r.accounting, path=name),
                               rejected=[replace(x, path=name) for x in r.rejected]))
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def source_dir(dataset: Path, server: str, query: PromQuery, step_s: float | None = None) -> Path:
    """Where ``rooftop ingest`` keeps a server's pulled hours inside the dataset (``_prometheus/``,
    ignored by dataset readers): one folder per server and selector, so that re-pulls of a range
    find their earlier files (same path: unchanged, or grown by appended lines)."""
    import hashlib

    host = re.sub(r"[^A-Za-z0-9._-]+", "_", urllib.parse.urlsplit(server).netloc or server)
    key = hashlib.sha256(f"{server.rstrip('/')}\n{query.selector()}\n{step_s}".encode()).hexdigest()[:12]
    return dataset / "_prometheus" / host / key
