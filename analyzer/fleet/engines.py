"""One fleet computation, two executors: per-fragment work plus a deterministic tree reduction.

The work is the DCGM window maths of :mod:`analyzer.windows`:

* map, per Parquet fragment (one partition file): read it row group by row group, keep the samples
  inside each requested time slice, and run ``window_partials_arrow`` → one ``WindowPartials`` (arrays) per slice;
* reduce: ``combine_partials`` over fragments, in a fixed tree (:class:`TreeReducer`, fan-in
  :data:`FANIN`, fragments in manifest order).
* with ``ScanSpec.health``, one more element after the slices: the health observations of the last
  slice (the period), reduced per GPU (``analyzer.health.health_partial``; combined by
  ``combine_health``: min, max and integer sums, so any order gives the same table).

``local`` runs both steps in this process, fragment after fragment; memory holds one row group plus
at most ``FANIN × depth`` partial tables. ``dask`` submits the very same functions to a Dask
distributed cluster (``client.submit``) and builds the very same tree of futures, so both engines
do the same floating-point additions in the same order and give bit-identical windows.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rooftop.errors import InputError
from rooftop.parsers.model import SAMPLE_SCHEMA

if TYPE_CHECKING:
    from rooftop.analyzer.windows.partials import WindowPartials

FANIN = 16  # partials combined at once: 2 tree levels for up to 256 fragments
CONNECT_TIMEOUT = "30s"  # waiting for a --scheduler to answer
BATCH_ROWS = 1_000_000

Partials = tuple[Any, ...]  # one WindowPartials (or None) per time slice; then the health table with spec.health


@dataclass(frozen=True)
class Fragment:
    """What the map step gives and the reduce step combines: window partials per time slice and
    the cumulative counters' ledger (docs/formulas.md#counters): intervals read whose end falls in
    each slice, each reset (host, end in epoch ms), gaps, and every read run's first and last
    counter rows per GPU (``edges``, with ``_run``), from which the intervals between runs and files
    are differenced after the reduction (:func:`rooftop.analyzer.windows.counters.across`)."""

    parts: Partials
    intervals: tuple[int, ...] = ()
    resets: tuple[tuple[str | None, int], ...] = ()
    gaps: int = 0
    edges: pd.DataFrame | None = None


@dataclass(frozen=True)
class ScanSpec:
    """What every fragment task needs: columns to read, time slices ``[lo, hi)`` in epoch ms."""

    columns: tuple[str, ...]
    slices: tuple[tuple[int, int], ...]
    window_s: float
    batch_rows: int = BATCH_ROWS
    health: bool = False  # also reduce the period's health observations (docs/formulas.md#health)


def scan_columns(keys: Sequence[str], by: Sequence[str]) -> tuple[str, ...]:
    wanted = ["timestamp", *keys, *by, "field_id", "value"]
    out: list[str] = []
    for c in wanted:
        if c in SAMPLE_SCHEMA.names and c not in out:
            out.append(c)
    return tuple(out)


def fragment_partials(path: str, spec: ScanSpec) -> Fragment:
    """The map step for one Parquet file: window partials per time slice (None where empty) and
    its counters' ledger (:class:`Fragment`).

    Reads only ``spec.columns``, strings as dictionaries (the window maths works on dictionary
    indices, never on per-row strings), skips row groups whose timestamp statistics miss every
    slice, and windows runs of row groups (up to ``spec.batch_rows`` rows) straight from Arrow
    (no pandas frame of samples)."""
    from rooftop.analyzer.health.partials import combine_health, health_partial
    from rooftop.analyzer.windows.scan import window_partials_arrow

    per_slice: list[list[WindowPartials]] = [[] for _ in spec.slices]
    health: list[pd.DataFrame] = []
    ledgers: list[Fragment] = []
    try:
        pf = _open(path, [c for c in spec.columns if c in _STRINGS])
        stored = set(pf.schema_arrow.names)
        for k, run in enumerate(_runs(pf, _row_groups(pf, spec.slices), spec.batch_rows)):
            consts = _constant_columns(pf, run, [c for c in spec.columns if c in _STRINGS])
            # a column the file predates (pci_bus_id before it was stored): null on every row
            consts.update({c: None for c in spec.columns if c in _STRINGS and c not in stored})
            table = pf.read_row_groups(run, columns=[c for c in spec.columns if c not in consts],
                                       use_threads=False)  # one core per fragment (the pool adds more)
            if spec.health:
                health.append(health_partial(table, consts, span=spec.slices[-1]))
            table, ledger = _counter_increases(table, spec, consts, f"{path}#{k}")
            if ledger is not None:
                ledgers.append(ledger)
            for i, part in enumerate(window_partials_arrow(table, spec.window_s, spec.slices, consts)):
                if part is not None:
                    per_slice[i].append(part)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(path, f"is not a readable Parquet partition ({exc})",
                         f"run `rooftop ingest --repair --to {Path(path).parent.parent.parent}` (re-ingests its input)") from exc
    windows = tuple(_combine_list(parts) for parts in per_slice)
    return _merge_ledgers((*windows, combine_health(health)) if spec.health else windows, ledgers)


def _counter_increases(table: pa.Table, spec: ScanSpec, consts: dict[str, str | None],
                       run: str) -> tuple[pa.Table, Fragment | None]:
    """DCGM 4.6 cumulative counters as increases per interval (docs/formulas.md#counters), within
    this read run, and the run's ledger; the table itself and None where it holds none (the usual
    case: no pandas round trip)."""
    from rooftop.analyzer.windows.counters import COUNTER_IDS, difference

    if "field_id" not in table.column_names or not pc.any(pc.is_in(table["field_id"], pa.array(
            COUNTER_IDS, pa.int32()))).as_py():
        return table, None
    d = difference(table.to_pandas(), gap_floor_s=spec.window_s, edges=True)
    edges = d.edges
    if edges is not None:
        edges = edges.assign(**{c: v for c, v in consts.items() if c not in edges.columns}, _run=run)
    ends = d.ends_ms if d.ends_ms is not None else np.zeros(0, dtype="int64")
    per = tuple(int(((ends >= lo) & (ends < hi)).sum()) for lo, hi in spec.slices)
    resets = tuple((h if h is not None else consts.get("host"), t) for h, t in d.reset_hosts)  # host not read: constant
    return pa.Table.from_pandas(d.samples, preserve_index=False), Fragment((), per, resets, d.gaps, edges)


def _merge_ledgers(parts: Partials, ledgers: list[Fragment]) -> Fragment:
    """One :class:`Fragment` of ``parts`` and the ledgers of ``ledgers`` (in order)."""
    ledgers = [x for x in ledgers if x.intervals or x.resets or x.gaps or x.edges is not None]
    if not ledgers:
        return Fragment(parts)
    n = max(len(x.intervals) for x in ledgers)
    intervals = tuple(sum(x.intervals[i] for x in ledgers if i < len(x.intervals)) for i in range(n))
    frames = [x.edges for x in ledgers if x.edges is not None and len(x.edges)]
    return Fragment(parts, intervals, tuple(r for x in ledgers for r in x.resets), sum(x.gaps for x in ledgers),
                    pd.concat(frames, ignore_index=True) if frames else None)


def _open(path: str, strings: list[str]) -> pq.ParquetFile:
    """The file with ``strings`` read as dictionaries; a partition written before a column existed
    (``pci_bus_id``) is opened with the columns it has (the others are null, :func:`fragment_partials`)."""
    try:
        return pq.ParquetFile(path, read_dictionary=strings)
    except KeyError:
        names = set(pq.read_schema(path).names)
        return pq.ParquetFile(path, read_dictionary=[c for c in strings if c in names])


_STRINGS = frozenset(f.name for f in SAMPLE_SCHEMA if pa.types.is_string(f.type))


def _constant_columns(pf: pq.ParquetFile, groups: list[int], names: list[str]) -> dict[str, str | None]:
    """String columns that hold one value (or only nulls) in all ``groups``, by the column chunk
    statistics, so they need not be decoded (a host's partition: host, model, MIG columns).
    Trusted only from Arrow's writer (it drops, never truncates, min/max of long values)."""
    md = pf.metadata
    if not groups or not str(md.created_by or "").startswith("parquet-cpp-arrow"):
        return {}
    idx = {md.schema.column(j).path: j for j in range(md.num_columns)}
    out: dict[str, str | None] = {}
    for name in names:
        vals: set[str | None] = set()
        for g in groups:
            rg = md.row_group(g)
            st = rg.column(idx[name]).statistics if name in idx else None
            if st is None or not st.has_null_count:
                vals = {"", None}
                break
            if st.null_count == rg.num_rows:
                vals.add(None)
            elif st.null_count == 0 and st.has_min_max and st.min == st.max and isinstance(st.min, str):
                vals.add(st.min)
            else:
                vals = {"", None}
                break
        if len(vals) == 1:
            out[name] = vals.pop()
    return out


def _runs(pf: pq.ParquetFile, groups: list[int], max_rows: int) -> Iterator[list[int]]:
    """Consecutive row groups read together, up to ``max_rows`` rows (at least one group) a run:
    few, large batches (one partial per fragment and slice for the usual file) in bounded memory."""
    run: list[int] = []
    rows = 0
    for g in groups:
        n = pf.metadata.row_group(g).num_rows
        if run and rows + n > max_rows:
            yield run
            run, rows = [], 0
        run.append(g)
        rows += n
    if run:
        yield run


def _row_groups(pf: pq.ParquetFile, slices: tuple[tuple[int, int], ...]) -> list[int]:
    """Row groups whose timestamp min/max (when recorded) overlap some slice ``[lo, hi)``."""
    md = pf.metadata
    names = [md.schema.column(j).path for j in range(md.num_columns)]
    ts_col = names.index("timestamp") if "timestamp" in names else -1
    keep: list[int] = []
    for i in range(md.num_row_groups):
        st = md.row_group(i).column(ts_col).statistics if ts_col >= 0 else None
        if st is not None and st.has_min_max:
            lo_t, hi_t = _ms(st.min), _ms(st.max)
            if lo_t is not None and hi_t is not None and not any(lo_t < hi and hi_t >= lo for lo, hi in slices):
                continue
        keep.append(i)
    return keep


def _ms(v: Any) -> int | None:
    """Epoch ms of a Parquet timestamp statistic (datetime, or int in the column's unit: ms here)."""
    if isinstance(v, datetime):
        v = v if v.tzinfo else v.replace(tzinfo=timezone.utc)
        return int(v.timestamp() * 1000)
    return int(v) if isinstance(v, int) else None


def _combine_list(parts: list[WindowPartials]) -> WindowPartials | None:
    from rooftop.analyzer.windows.reduce import combine_partials

    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    out: WindowPartials = combine_partials(parts)
    return out


def combine_many(*items: Fragment) -> Fragment:
    """The reduce step: slice-wise ``combine_partials`` over several fragments' partials (and
    ``combine_health`` over their health tables, the element that is a DataFrame), their counter
    ledgers merged in order."""
    from rooftop.analyzer.health.partials import combine_health

    n = len(items[0].parts)
    out: list[Any] = []
    for i in range(n):
        got = [p for p in (it.parts[i] for it in items) if p is not None]
        out.append(combine_health(got) if got and isinstance(got[0], pd.DataFrame) else _combine_list(got))
    return _merge_ledgers(tuple(out), list(items))


class TreeReducer:
    """Reduce items in a fixed tree: every ``fanin`` consecutive items at a level are combined.

    ``combine`` takes a list of handles and returns a handle (a value, or a Dask future): the tree's
    shape depends only on the number of items, never on timing, so results are reproducible.
    """

    def __init__(self, combine: Callable[[list[Any]], Any], fanin: int = FANIN) -> None:
        self.combine = combine
        self.fanin = fanin
        self.levels: list[list[Any]] = []
        self.count = 0

    def add(self, item: Any) -> None:
        self.count += 1
        self._push(0, item)

    def _push(self, level: int, item: Any) -> None:
        if len(self.levels) <= level:
            self.levels.append([])
        self.levels[level].append(item)
        if len(self.levels[level]) == self.fanin:
            full, self.levels[level] = self.levels[level], []
            self._push(level + 1, self.combine(full))

    def result(self) -> Any:
        """Flush: combine what is left at each level, lowest first. None when nothing was added."""
        if self.count == 0:
            return None
        carry: Any = None
        for level in range(len(self.levels)):
            pending = self.levels[level] + ([carry] if carry is not None else [])
            self.levels[level] = []
            if pending:
                carry = self.combine(pending) if len(pending) > 1 else pending[0]
        return carry


def run_local(paths: Sequence[str], spec: ScanSpec, threads: int = 1) -> Fragment | None:
    """Map and reduce in this process: fragments on ``threads`` threads (Parquet decoding and the
    numpy kernels release the GIL), at most ``2 × threads`` in flight; partials reduced in
    manifest order, so the result does not depend on ``threads``."""
    reducer = TreeReducer(lambda items: combine_many(*items), fanin=FANIN)
    if threads <= 1:
        for path in paths:
            reducer.add(fragment_partials(path, spec))
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            pending: deque[Future[Fragment]] = deque()
            for path in paths:
                pending.append(pool.submit(fragment_partials, path, spec))
                while len(pending) >= 2 * threads or (pending and pending[0].done()):
                    reducer.add(pending.popleft().result())
            while pending:
                reducer.add(pending.popleft().result())
    result: Fragment | None = reducer.result()
    return result


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int) -> Iterator[Any]:
    """A client for ``scheduler`` (``tcp://host:8786``), or for a fresh process-based LocalCluster."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise InputError("--engine dask", "needs Dask distributed, which is not installed",
                         "pip install 'rooftop[fleet]'") from exc
    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise InputError(scheduler, f"no Dask scheduler answers there ({exc})",
                             "check the address, or drop --scheduler for a local cluster") from exc
        try:
            yield client
        finally:
            client.close()
        return
    cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=40)  # any free port: None means 8787
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def run_dask(paths: Sequence[str], spec: ScanSpec, client: Any) -> Fragment | None:
    """Map and reduce on a Dask cluster: same functions, same tree, futures instead of values."""
    reducer = TreeReducer(lambda items: client.submit(combine_many, *items, pure=False), fanin=FANIN)
    futures = client.map(fragment_partials, list(paths), spec=spec, pure=False)
    for fut in futures:
        reducer.add(fut)
    handle = reducer.result()
    if handle is None:
        return None
    result: Fragment = handle.result()
    return result
