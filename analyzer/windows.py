"""GPU time windows from DCGM samples: averaged, classified, and placed on the roofline.

Map-reduce shaped so the fleet engines can run it per Parquet partition and on Dask:

``window_partials`` (per partition) -> ``combine_partials`` (any number of times, any grouping)
-> ``finish_windows`` (means) -> ``classify_windows`` (label, limiter, estimates).
The fleet engines use ``window_partials_arrow`` (Arrow batches as read from Parquet), whose
partials are arrays (:class:`WindowPartials`, the same content; ``to_frame()`` gives the table):
rows are first reduced to runs of one (key, labels, window, field), the usual layout of series in
time order, so per-row work is a few vector passes.

Partials columns: ``KEY_COLUMNS``; for every metric in ``PROFILE_METRICS`` ``<m>__sum``,
``<m>__n`` and ``<m>__zero`` (samples exactly 0, for the multiplexing lint); ``n_samples``;
``first_ts``/``last_ts`` (epoch ms); ``window_s``; and for each workload label (``namespace``,
``pod``, ``container``, ``job``, ``mig_profile``) its most frequent value ``<l>`` with its count
``<l>__n``. Combining sums counts per (key, value) and keeps the top one: exact when a label
takes one value per window in each partition (the normal case), a close heuristic otherwise.

Classification (first match; thresholds are NVIDIA's published guidance where one exists, else
kempnerpulse's device-state rules, both collected in the shared docs/research/anchors.md §3 rows 15-18 and
docs/research/formulas.md §5.4/§6):

=============== =====================================================================================
idle            every activity signal (GR, SM, pipes, DRAM; NVML GPU_UTIL when GR is absent) < 0.05
memory-bound    DRAM active >= 0.5 and DRAM/0.8 (its practical peak) >= the busiest pipe; limiter dram
compute-bound   busiest pipe (tensor, fp64, fp32, fp16) >= 0.5; limiter = that pipe
overhead-bound  GR >= 0.4 with SM < 0.25 (tiny grids / launch-bound; limiter launch), or GR < 0.4
                while the GPU is doing something (host wait: input pipeline, sync, launch gaps;
                limiter host)
mixed           the rest; limiter = the busiest normalised signal when >= 0.2, else latency
=============== =====================================================================================

Estimates: achieved FLOP/s = Σ pipe activity x the device's peak for that pipe (tensor -> dense
FP16/BF16 tensor peak); DRAM bytes/s = DRAM active x peak DRAM bandwidth (docs/research/formulas.md §6.3; NVIDIA
says activity does not convert exactly to FLOPs: these are estimates). MIG instance values are
relative to the instance, so peaks are scaled by the instance's share ``g/7`` (``g/4`` on A30)
read from the ``Ng.XXgb`` profile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.parsers import dcgm_fields as F

PROFILE_METRICS: dict[int, str] = {
    1001: "gr_active",
    1002: "sm_active",
    1003: "sm_occupancy",
    1004: "tensor_active",
    1005: "dram_active",
    1006: "fp64_active",
    1007: "fp32_active",
    1008: "fp16_active",
    1009: "pcie_tx_bytes",
    1010: "pcie_rx_bytes",
    1011: "nvlink_tx_bytes",
    1012: "nvlink_rx_bytes",
    1013: "imma_active",
    1014: "hmma_active",
    1015: "dfma_active",
    203: "gpu_util",
    204: "mem_copy_util",
    155: "power_w",
    252: "fb_used_mib",
}
METRICS: tuple[str, ...] = tuple(PROFILE_METRICS.values())
KEY_COLUMNS = ["host", "gpu", "uuid", "model", "mig", "window_start"]
LABEL_COLUMNS = ("namespace", "pod", "container", "job", "mig_profile")
PIPES = {"tensor": "tensor_active", "fp64": "fp64_active", "fp32": "fp32_active", "fp16": "fp16_active"}
RATIO_METRICS = ("gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp64_active",
                 "fp32_active", "fp16_active", "imma_active", "hmma_active", "dfma_active")

IDLE_MAX = 0.05  # kempnerpulse "idle": GR < 5 %, DRAM < 5 % (docs/research/anchors.md §3 row 18)
GR_BUSY = 0.40  # kempnerpulse "busy-low-SM": GR >= 40 % ...
SM_LOW = 0.25  # ... and SM < 25 % -> "overhead, sync, or small kernels"
PIPE_HIGH = 0.50  # kempnerpulse "tensor-heavy" Tensor >= 50 %
DRAM_HIGH = 0.50  # kempnerpulse "memory-bound" DRAM >= 50 %
DRAM_PRACTICAL_PEAK = 0.80  # DCGM guide: "in practice a peak of ~0.8 (80%) is the maximum achievable"
SM_EFFECTIVE, SM_INEFFECTIVE = 0.80, 0.50  # DCGM guide, SM activity (docs/research/anchors.md §3 row 15)
DOMINANT_MIN = 0.20
_KEY_KEEP = [c for c in KEY_COLUMNS if c != "window_start"]
_MIG_G = re.compile(r"^(\d+)g\.")
_HOPPER_PLUS = re.compile(r"\b(H100|H200|H800|H20|GH200|B100|B200|B300|GB200|GB300|RTX PRO|RTX 50\d0)\b", re.I)


# ----------------------------------------------------------------------------------------- map
Codes = tuple[np.ndarray, np.ndarray]  # (int64 codes sorted like the values, missing = len(uniques); uniques)
Slices = tuple[tuple[int, int], ...]
_FID_MAX = max(PROFILE_METRICS) + 1
_FID_LUT = np.full(_FID_MAX + 1, -1, dtype="int8")  # field id -> metric column; -1 at both ends: "other"
_FID_LUT[list(PROFILE_METRICS)] = np.arange(len(PROFILE_METRICS))
_DENSE_MAX = 1 << 22  # largest dense code space (cells) tabulated with np.bincount without re-coding


def _codes(col: pd.Series, sel: np.ndarray | None = None, blank_missing: bool = False) -> Codes:
    """Dense codes of ``col[sel]`` sorted like the values, missing (and ``""`` if ``blank_missing``)
    coded ``len(uniques)`` (last, as groupby(sort=True, dropna=False)); and the sorted uniques.
    Strings go through Arrow ``dictionary_encode`` on the whole column (no Python objects per row)."""
    arr: Any = None
    try:
        arr = pa.array(col, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError):
        arr = None
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr is not None and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        codes, uniques = _arrow_codes(arr, blank_missing)
        return (codes if sel is None else codes[sel]), uniques
    obj = col.to_numpy(dtype=object)
    c, u = pd.factorize(obj if sel is None else obj[sel], sort=True, use_na_sentinel=True)
    codes, uniques = np.asarray(c, dtype="int64"), np.asarray(u, dtype=object)
    codes[codes < 0] = len(uniques)
    if blank_missing:
        codes, uniques = _drop_blank(codes, uniques)
    return codes, uniques


def _drop_blank(codes: np.ndarray, uniques: np.ndarray) -> Codes:
    blank = np.array([str(u) == "" for u in uniques], dtype=bool)
    if not blank.any():
        return codes, uniques
    keep = np.flatnonzero(~blank)
    remap = np.full(len(uniques) + 1, len(keep), dtype="int64")
    remap[keep] = np.arange(len(keep))
    return remap[codes], uniques[keep]


def _arrow_codes(arr: Any, blank_missing: bool = False) -> Codes:
    """:func:`_codes` of an Arrow string array, from :func:`_raw_codes`: dictionary indices mapped to
    sorted codes, so no string is hashed or materialised per row; only the (small) dictionary is sorted."""
    raw, remap, uniques = _raw_codes(arr, blank_missing)
    if _is_const(raw):  # one code for every row (a host's partition, an unused MIG column)
        return np.broadcast_to(remap[raw[0]] if len(raw) else np.int64(0), raw.shape), uniques
    if np.array_equal(remap, np.arange(len(remap))):
        return raw, uniques  # dictionary already sorted
    return remap[raw], uniques


def _group_codes(parts: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """One dense, order-preserving int64 code per distinct tuple of the per-column codes."""
    code = np.zeros(len(parts[0]) if parts else 0, dtype="int64")
    card = 1
    for c in parts:
        k = int(c.max()) + 1 if len(c) else 1
        if card * k >= 2**62:
            code, card = _dense(code)
        code = code * k + c
        card *= k
    return _dense(code)


def _dense(code: np.ndarray) -> tuple[np.ndarray, int]:
    inv, uniq = pd.factorize(code, sort=True)
    return np.asarray(inv, dtype="int64"), len(uniq)


@dataclass
class WindowPartials:
    """Window partials as arrays: one row per (key tuple, window), sorted by key codes (missing
    last) then window start. What the fleet engines pass between map and reduce (small, picklable,
    no per-row Python objects); :meth:`to_frame` gives the documented partials columns.

    ``uniques[i]``: sorted distinct values of ``_KEY_KEEP[i]`` (object array of str);
    ``codes[:, i]``: index into it, ``len(uniques[i])`` = missing. ``sums``/``counts``/``zeros``:
    ``(rows, len(METRICS))``. ``labels[lab]``: (top-value codes, uniques, top counts), code
    ``len(uniques)`` = none."""

    uniques: tuple[np.ndarray, ...]
    codes: np.ndarray
    window_start: np.ndarray
    sums: np.ndarray
    counts: np.ndarray
    zeros: np.ndarray
    first_ts: np.ndarray
    last_ts: np.ndarray
    window_s: float
    labels: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.window_start)

    def key_values(self, i: int) -> np.ndarray:
        """Column ``_KEY_KEEP[i]`` as an object array (None for missing)."""
        return _decode(self.codes[:, i], self.uniques[i])

    def to_frame(self) -> pd.DataFrame:
        """The documented partials table (module docstring)."""
        n = len(self)
        cols: dict[str, Any] = {name: self.key_values(i) for i, name in enumerate(_KEY_KEEP)}
        cols["window_start"] = self.window_start
        for j, m in enumerate(METRICS):
            cols[m + "__sum"] = self.sums[:, j]
            cols[m + "__n"] = self.counts[:, j]
            cols[m + "__zero"] = self.zeros[:, j]
        cols["n_samples"] = self.counts.sum(axis=1)
        cols["first_ts"], cols["last_ts"] = self.first_ts, self.last_ts
        cols["window_s"] = np.full(n, float(self.window_s))
        for lab in LABEL_COLUMNS:
            if lab in self.labels:
                c, u, k = self.labels[lab]
                cols[lab], cols[lab + "__n"] = _decode(c, u), k
            else:
                cols[lab], cols[lab + "__n"] = np.full(n, None, dtype=object), np.zeros(n, "int64")
        obj = {*_KEY_KEEP, *LABEL_COLUMNS}
        return pd.DataFrame({c: pd.Series(v, dtype=object) if c in obj else v for c, v in cols.items()},
                            copy=False)

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> WindowPartials:
        """Arrays of a partials table (rows as they are: not re-grouped, not sorted)."""
        n = len(df)
        keys = [_codes(df[c]) if c in df.columns else (np.full(n, 0, dtype="int64"), np.empty(0, dtype=object))
                for c in _KEY_KEEP]
        mat = {suf: np.zeros((n, len(METRICS)), dtype="float64" if suf == "__sum" else "int64")
               for suf in ("__sum", "__n", "__zero")}
        for suf, arr in mat.items():
            for j, m in enumerate(METRICS):
                if m + suf in df.columns:
                    arr[:, j] = df[m + suf].to_numpy(dtype=arr.dtype)
        ws = df["window_s"].to_numpy(dtype="float64") if "window_s" in df.columns else np.empty(0)
        labels = {}
        for lab in LABEL_COLUMNS:
            if lab in df.columns:
                c, u = _codes(df[lab], blank_missing=True)
                k = df[lab + "__n"].to_numpy(dtype="int64") if lab + "__n" in df.columns else np.ones(n, "int64")
                labels[lab] = (np.asarray(c, dtype="int64"), u, np.where(c < len(u), k, 0))
        return cls(uniques=tuple(u for _c, u in keys),
                   codes=np.stack([np.asarray(c, dtype="int64") for c, _u in keys], axis=1).reshape(n, len(keys)),
                   window_start=df["window_start"].to_numpy(dtype="int64"), sums=mat["__sum"],
                   counts=mat["__n"], zeros=mat["__zero"], first_ts=df["first_ts"].to_numpy(dtype="int64"),
                   last_ts=df["last_ts"].to_numpy(dtype="int64"),
                   window_s=float(ws[0]) if len(ws) else 60.0, labels=labels)


def _decode(codes: np.ndarray, uniques: np.ndarray) -> np.ndarray:
    return np.r_[uniques, np.array([None], dtype=object)].astype(object)[codes]


def window_partials(samples: pd.DataFrame, window_s: float) -> pd.DataFrame:
    """Per (``KEY_COLUMNS``) sums, counts and label counts of one partition of samples (pandas)."""
    n = len(samples)
    if not n:
        return _empty_partials(window_s).to_frame()
    keys = [_sorted_raw(_codes(samples[c])) if c in samples.columns else _missing(n) for c in _KEY_KEEP]
    labels = {lab: _sorted_raw(_codes(samples[lab], blank_missing=True))
              for lab in LABEL_COLUMNS if lab in samples.columns}
    runs = _runs(_epoch_ms(samples["timestamp"]), samples["field_id"].to_numpy(),
                 samples["value"].to_numpy(dtype="float64"), keys, labels, window_s, ((-(2**63), 2**63 - 1),))
    out = _group_runs([] if runs is None else [runs], window_s, 1)[0]
    return (out if out is not None else _empty_partials(window_s)).to_frame()


def window_partials_arrow(batch: pa.RecordBatch | pa.Table, window_s: float, slices: Slices,
                          constants: dict[str, str | None] | None = None) -> list[WindowPartials | None]:
    """:func:`window_partials` of an Arrow batch (as read from Parquet, strings dictionary-encoded
    or not) for each time slice ``[lo, hi)`` (epoch ms): one :class:`WindowPartials` per slice,
    None if empty. ``constants``: string columns absent from ``batch`` that hold one value (or
    None) on every row. A table is taken record batch by record batch (row group by row group
    from Parquet): dictionary indices are used as read, sorted codes are found per run."""
    batches = batch.to_batches() if isinstance(batch, pa.Table) else [batch]
    runs = [r for b in batches if b.num_rows for r in [_batch_runs(b, window_s, slices, constants or {})]
            if r is not None]
    return _group_runs(runs, window_s, len(slices))


def _batch_runs(batch: pa.RecordBatch, window_s: float, slices: Slices,
                consts: dict[str, str | None]) -> _Runs | None:
    n = batch.num_rows
    names = {*batch.schema.names, *consts}

    def column(name: str) -> Any:
        return _ConstColumn(consts[name], n) if name in consts else batch.column(name)

    tcol = batch.column("timestamp")
    ts = np.asarray(tcol.cast(pa.int64()).to_numpy())
    unit = tcol.type.unit if pa.types.is_timestamp(tcol.type) else "ms"
    ts = ts * 1000 if unit == "s" else ts // {"ms": 1, "us": 1000, "ns": 1_000_000}[unit] if unit != "ms" else ts
    keys = [_raw_codes(column(c)) if c in names else _missing(n) for c in _KEY_KEEP]
    labels = {lab: _raw_codes(column(lab), blank_missing=True) for lab in LABEL_COLUMNS if lab in names}
    return _runs(ts, np.asarray(batch.column("field_id").to_numpy()),
                 np.asarray(batch.column("value").to_numpy(), dtype="float64"), keys, labels, window_s, slices)


class _ConstColumn:
    """A string column with one value on every row, standing in for an Arrow column."""

    def __init__(self, value: str | None, n: int) -> None:
        self.value, self.n = value, n


Raw = tuple[np.ndarray, np.ndarray, np.ndarray]  # per-row raw codes; raw -> sorted code; sorted uniques


def _missing(n: int) -> Raw:
    return np.broadcast_to(np.int64(0), (n,)), np.zeros(1, dtype="int64"), np.empty(0, dtype=object)


def _sorted_raw(codes: Codes) -> Raw:
    c, u = codes
    return c, np.arange(len(u) + 1, dtype="int64"), u


def _raw_codes(arr: Any, blank_missing: bool = False) -> Raw:
    """Per-row dictionary indices of an Arrow string column as read (no per-row remapping: sorted
    codes are looked up per run), the index -> sorted code table (index ``len(dictionary)`` =
    null) and the sorted uniques. One value on every row: a zero-stride index array."""
    if isinstance(arr, _ConstColumn):
        if arr.value is None or (blank_missing and arr.value == ""):
            return _missing(arr.n)
        return np.broadcast_to(np.int64(0), (arr.n,)), np.zeros(1, dtype="int64"), np.array([arr.value], dtype=object)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    n = len(arr)
    if pa.types.is_null(arr.type):
        return _missing(n)
    if not pa.types.is_dictionary(arr.type):
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = arr.cast(pa.string())
        arr = arr.dictionary_encode()
    dic = arr.dictionary.to_numpy(zero_copy_only=False).astype(object)
    ok = np.array([isinstance(v, str) for v in dic], dtype=bool)
    uniques, inv = np.unique(dic[ok].astype(str), return_inverse=True)
    uniques = uniques.astype(object)
    remap = np.full(len(dic) + 1, len(uniques), dtype="int64")  # dictionary slot -> sorted code
    remap[np.flatnonzero(ok)] = inv
    if blank_missing:
        remap, uniques = _drop_blank(remap, uniques)
    nulls = arr.null_count
    if nulls == n:
        return np.broadcast_to(np.int64(len(dic)), (n,)), remap, uniques
    if nulls == 0 and len(dic) and bool((remap[:-1] == remap[0]).all()):
        return np.broadcast_to(np.int64(0), (n,)), remap, uniques
    ind = arr.indices
    raw = np.asarray((ind.fill_null(len(dic)) if nulls else ind).to_numpy(zero_copy_only=False))
    return raw, remap, uniques


def _is_const(c: np.ndarray) -> bool:
    """A zero-stride (broadcast) code array: the same code on every row."""
    return c.ndim == 1 and c.strides == (0,)


def _empty_partials(window_s: float) -> WindowPartials:
    m = len(METRICS)
    z = np.zeros(0, dtype="int64")
    return WindowPartials(uniques=tuple(np.empty(0, dtype=object) for _ in _KEY_KEEP),
                          codes=np.zeros((0, len(_KEY_KEEP)), dtype="int64"), window_start=z,
                          sums=np.zeros((0, m)), counts=np.zeros((0, m), "int64"),
                          zeros=np.zeros((0, m), "int64"), first_ts=z, last_ts=z, window_s=float(window_s))


def _run_starts(*cols: np.ndarray) -> np.ndarray | None:
    """First row of every run of rows equal in all ``cols`` when runs are long (mean >= 4 rows:
    series in time order), else None (interleaved rows: each row is its own run)."""
    n = len(cols[0])
    if n == 0:
        return None
    chg = cols[0][1:] != cols[0][:-1]
    for c in cols[1:]:
        chg |= c[1:] != c[:-1]
    starts = np.flatnonzero(chg)
    if 4 * (len(starts) + 1) > n:
        return None
    starts += 1
    return np.r_[np.int64(0), starts]


@dataclass
class _Runs:
    """Runs of rows with one (key tuple, labels, window, metric, slice): what each run adds."""

    keys: list[Codes]  # sorted codes per run and uniques, per _KEY_KEEP column
    labels: dict[str, Codes]
    win: np.ndarray  # absolute window number (epoch ms // window)
    metric: np.ndarray
    sl: np.ndarray | int  # slice per run, or one slice for all
    total: np.ndarray  # sum of values
    count: np.ndarray
    zeros: np.ndarray
    t_min: np.ndarray
    t_max: np.ndarray


def _runs(ts: np.ndarray, fid: np.ndarray, value: np.ndarray, keys: list[Raw], labels: dict[str, Raw],
          window_s: float, slices: Slices) -> _Runs | None:
    """Rows reduced to runs: one pass per column finds where (keys, labels, window, metric, slice)
    change; values are summed run by run (``np.add.reduceat``, pairwise inside a run). Rows that
    interleave series (mean run < 4 rows) are taken one by one. Out-of-slice and unknown-field
    rows are dropped; None when nothing is left."""
    win_ms = max(1, round(window_s * 1000))
    n_sl = len(slices)
    sl: np.ndarray | None = None
    sl0 = 0
    keep: np.ndarray | None = None
    t_lo, t_hi = (int(ts.min()), int(ts.max())) if len(ts) else (0, 0)
    whole = [i for i, (lo, hi) in enumerate(slices) if lo <= t_lo and t_hi < hi]
    if whole:  # the usual case: a partition's rows all fall in one slice, no per-row test
        sl0 = whole[0]
    elif n_sl == 1:
        lo, hi = slices[0]
        keep = (ts >= lo) & (ts < hi)
    else:
        sl = np.full(len(ts), -1, dtype="int64")
        for i, (lo, hi) in enumerate(slices):
            sl[(ts >= lo) & (ts < hi)] = i
        keep = sl >= 0
    raw_keys = [c for c, _r, _u in keys]
    raw_labels = {k: c for k, (c, _r, _u) in labels.items()}
    if keep is not None and not keep.all():
        ts, fid, value = ts[keep], fid[keep], value[keep]
        sl = None if sl is None else sl[keep]
        n_keep = len(ts)
        raw_keys = [_take(c, keep, n_keep) for c in raw_keys]
        raw_labels = {k: _take(c, keep, n_keep) for k, c in raw_labels.items()}
        t_lo, t_hi = (int(ts.min()), int(ts.max())) if n_keep else (0, 0)
    if not len(ts):
        return None
    w0 = t_lo // win_ms
    if t_hi - w0 * win_ms < 2**31:  # int32 division is several times cheaper than int64 (or float)
        win = (ts - w0 * win_ms).astype("int32") // np.int32(win_ms)
    else:
        win = (ts - w0 * win_ms) // win_ms
    varying = [c for c in (*raw_keys, *raw_labels.values()) if not _is_const(c)]
    starts = _run_starts(win, fid, *varying, *([] if sl is None else [sl]))
    zero = value == 0.0
    if starts is None:  # every row a run
        at: Any = slice(None)
        total, count, t_min, t_max = value, np.ones(len(ts), dtype="int64"), ts, ts
        zeros = zero.astype("int64")
    else:
        at = starts
        total = np.add.reduceat(value, starts)
        count = np.diff(np.r_[starts, np.int64(len(ts))])
        zeros = (np.add.reduceat(zero.view("uint8"), starts, dtype="int64") if np.count_nonzero(zero)
                 else np.zeros(len(starts), dtype="int64"))
        t_min, t_max = np.minimum.reduceat(ts, starts), np.maximum.reduceat(ts, starts)
    # field id -> metric per run (out-of-range ids clip onto the -1 slots at both ends); runs of
    # fields that are not windowed (temperature, clocks...) are dropped here, not row by row
    metric = _FID_LUT.take(fid[at], mode="clip").astype("int64")
    known: Any = slice(None) if not len(metric) or metric.min() >= 0 else np.flatnonzero(metric >= 0)
    if not isinstance(known, slice):
        if not len(known):
            return None
        at = known if starts is None else starts[known]
        metric, total, count, zeros = metric[known], total[known], count[known], zeros[known]
        t_min, t_max = t_min[known], t_max[known]
    n_runs = len(total)

    def codes(c: np.ndarray, remap: np.ndarray) -> np.ndarray:
        return remap[c[at]] if not _is_const(c) else np.broadcast_to(remap[c[:1]], (n_runs,))

    return _Runs(keys=[(codes(c, r), u) for c, (_c, r, u) in zip(raw_keys, keys, strict=True)],
                 labels={k: (codes(raw_labels[k], r), u) for k, (_c, r, u) in labels.items()},
                 win=np.asarray(win[at], dtype="int64") + w0, metric=metric,
                 sl=sl0 if sl is None else sl[at], total=total, count=count, zeros=zeros, t_min=t_min, t_max=t_max)


def _take(c: np.ndarray, keep: np.ndarray, n: int) -> np.ndarray:
    return np.broadcast_to(c[:1], (n,)) if _is_const(c) and len(c) else c[keep]


def _group_runs(runs: list[_Runs], window_s: float, n_sl: int) -> list[WindowPartials | None]:
    """Tabulate runs into partials per slice: group = (key codes, window, slice) in mixed radix
    (dense integers, sorted like the keys), cells = group × metric summed with ``np.bincount``
    in run order (the same runs in the same order give the same bits on every engine)."""
    if not runs:
        return [None] * n_sl
    win_ms = max(1, round(window_s * 1000))
    k = len(_KEY_KEEP)
    keys = [_unify([r.keys[i][1] for r in runs], [r.keys[i][0] for r in runs]) for i in range(k)]
    lab_names = [lab for lab in LABEL_COLUMNS if all(lab in r.labels for r in runs)]
    labels = {lab: _unify([r.labels[lab][1] for r in runs], [r.labels[lab][0] for r in runs]) for lab in lab_names}

    def cat(name: str) -> np.ndarray:
        return np.concatenate([np.broadcast_to(getattr(r, name), (len(r.total),)) for r in runs])

    win, metric, sl = cat("win"), cat("metric"), cat("sl")
    count = cat("count")
    w0 = int(win.min())
    n_win = int(win.max()) - w0 + 1
    radix = [len(u) + 1 for _c, u in keys] + [n_win, n_sl]
    parts = [c for c, _u in keys] + [win - w0, sl]
    space = 1
    for r in radix:
        space *= r
    n_runs = len(win)
    if space <= max(_DENSE_MAX, 4 * n_runs):
        code = np.zeros(n_runs, dtype="int64")
        for c, r in zip(parts, radix, strict=True):
            code *= r
            code += c
        present = np.bincount(code, minlength=space) > 0
        gcode = np.flatnonzero(present)
        lut = np.cumsum(present) - 1
        gid, n_g = lut[code], len(gcode)
        dec = gcode
        g_parts: list[np.ndarray] = [np.empty(0)] * len(parts)
        for i in range(len(parts) - 1, -1, -1):
            dec, g_parts[i] = np.divmod(dec, radix[i])
    else:
        gid, n_g = _group_codes(parts)
        rep = np.full(n_g, n_runs, dtype="int64")
        np.minimum.at(rep, gid, np.arange(n_runs))
        g_parts = [np.asarray(p)[rep] for p in parts]
    n_m = len(METRICS)
    cell = gid * n_m + metric
    size = n_g * n_m
    sums = np.bincount(cell, weights=cat("total"), minlength=size).reshape(n_g, n_m)
    cnts = np.rint(np.bincount(cell, weights=count, minlength=size)).astype("int64").reshape(n_g, n_m)
    zeros = np.rint(np.bincount(cell, weights=cat("zeros"), minlength=size)).astype("int64").reshape(n_g, n_m)
    first = np.full(n_g, np.iinfo("int64").max, dtype="int64")
    last = np.full(n_g, np.iinfo("int64").min, dtype="int64")
    np.minimum.at(first, gid, cat("t_min"))
    np.maximum.at(last, gid, cat("t_max"))
    tops = {lab: _top_labels(lc, gid, n_g, count) for lab, lc in labels.items()}
    g_sl = g_parts[-1]
    out: list[WindowPartials | None] = []
    for s in range(n_sl):
        rows = np.flatnonzero(g_sl == s)
        if not len(rows):
            out.append(None)
            continue
        out.append(WindowPartials(
            uniques=tuple(u for _c, u in keys),
            codes=np.stack([np.asarray(g_parts[i][rows], dtype="int64") for i in range(k)], axis=1),
            window_start=(g_parts[k][rows] + w0) * win_ms, sums=sums[rows], counts=cnts[rows], zeros=zeros[rows],
            first_ts=first[rows], last_ts=last[rows], window_s=float(window_s),
            labels={lab: (top[rows], labels[lab][1], top_n[rows]) for lab, (top, top_n) in tops.items()}))
    return out


def _top_labels(lab: Codes, grp: np.ndarray, n_grp: int,
                weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Most frequent label code per group from sorted label codes (``len(uniques)`` =
    missing/blank), counting each row ``weights`` times (default 1): ties go to the smallest
    value; ``len(uniques)``/0 where the group has none."""
    lc, uniq = lab
    n_l = len(uniq)
    top = np.full(n_grp, n_l, dtype="int64")
    top_n = np.zeros(n_grp, dtype="int64")
    ok = lc < n_l
    if weights is not None:
        ok &= weights > 0
    if not ok.any():
        return top, top_n
    pair, inv = np.unique(grp[ok] * n_l + lc[ok], return_inverse=True)
    w = None if weights is None else weights[ok].astype("float64")
    cnt = np.rint(np.bincount(inv.ravel(), weights=w, minlength=len(pair))).astype("int64")
    g, li = pair // n_l, pair % n_l
    order = np.lexsort((li, -cnt, g))
    g, li, cnt = g[order], li[order], cnt[order]
    head = np.r_[True, g[1:] != g[:-1]]
    top[g[head]] = li[head]
    top_n[g[head]] = cnt[head]
    return top, top_n


def _epoch_ms(ts: pd.Series) -> np.ndarray:
    t = pd.to_datetime(ts, utc=True)
    return (t.dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ms]")
            .to_numpy().astype("int64"))


# -------------------------------------------------------------------------------------- reduce
def _unify(uniques: list[np.ndarray], codes: list[np.ndarray]) -> Codes:
    """Codes of several parts, each into its own sorted uniques (``len`` = missing), re-coded
    into the sorted union (missing last), concatenated."""
    first = uniques[0]
    if all(len(u) == len(first) and (u is first or bool((u == first).all())) for u in uniques[1:]):
        return np.concatenate(codes), first
    code, union = pd.factorize(np.concatenate([np.asarray(u, dtype=object) for u in uniques]), sort=True)
    union = np.asarray(union, dtype=object)
    out = []
    at = 0
    for u, c in zip(uniques, codes, strict=True):
        remap = np.r_[code[at:at + len(u)], len(union)].astype("int64")
        at += len(u)
        out.append(remap[c])
    return np.concatenate(out), union


def combine_partials(parts: Any) -> Any:
    """Re-aggregate partials of several partitions (sums of sums and counts; label counts merged).

    Takes :class:`WindowPartials` (a list, returns one) or partials tables (one or a list,
    returns a table). Rows of one (key, window) are reduced in part order (``reduceat`` over a
    stable sort), so the same partials in the same order give the same bits; rows come out
    sorted by key (missing last) and window start."""
    if isinstance(parts, WindowPartials):
        return _combine([parts])
    if isinstance(parts, list) and parts and all(isinstance(p, WindowPartials) for p in parts):
        return _combine(parts)
    df = pd.concat(parts, ignore_index=True) if isinstance(parts, list) else parts
    if not len(df):
        return df.copy()
    return _combine([WindowPartials.from_frame(df)]).to_frame()


def _combine(parts: list[WindowPartials]) -> WindowPartials:
    parts = [p for p in parts if len(p)] or parts[:1]
    window_s = parts[0].window_s
    if any(p.window_s != window_s for p in parts):
        raise ValueError("cannot combine partials of different window lengths")
    n = sum(len(p) for p in parts)
    if n == 0:
        return parts[0]
    k = len(_KEY_KEEP)
    cols: list[np.ndarray] = []
    uniques: list[np.ndarray] = []
    for i in range(k):
        c, u = _unify([p.uniques[i] for p in parts], [p.codes[:, i] for p in parts])
        cols.append(c)
        uniques.append(u)
    ws = np.concatenate([p.window_start for p in parts])
    wcodes, wuniq = pd.factorize(ws, sort=True)
    grp, n_grp = _group_codes([*cols, np.asarray(wcodes, dtype="int64")])
    in_order = bool((grp[1:] > grp[:-1]).all())  # disjoint parts already in key order (hosts in turn)
    order = np.arange(n) if in_order else np.argsort(grp, kind="stable")  # a group's rows in part order
    g_sorted = grp[order]
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    rep = order[starts]  # the first row of each group

    def red(name: str, how: np.ufunc = np.add) -> np.ndarray:
        vals = np.concatenate([getattr(p, name) for p in parts])
        vals = vals if in_order else vals[order]
        # parts with disjoint keys (other hosts): nothing to reduce, only to order
        out = vals if n_grp == n else np.asarray(how.reduceat(vals, starts, axis=0))
        if how is np.add:
            np.add(out, 0, out=out)  # -0.0 -> 0.0, as a sum from 0 would give
        return out

    labels: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for lab in LABEL_COLUMNS:
        if not all(lab in p.labels for p in parts):
            if any(lab in p.labels for p in parts):  # a part without the column counts no values
                parts_l = [p.labels.get(lab, (np.zeros(len(p), "int64"), np.empty(0, dtype=object),
                                              np.zeros(len(p), "int64"))) for p in parts]
            else:
                continue
        else:
            parts_l = [p.labels[lab] for p in parts]
        lc, lu = _unify([u for _c, u, _k in parts_l], [c for c, _u, _k in parts_l])
        lk = np.concatenate([kk for _c, _u, kk in parts_l])
        top, top_n = _top_labels((lc, lu), grp, n_grp, lk)
        labels[lab] = (top, lu, top_n)
    return WindowPartials(uniques=tuple(uniques), codes=np.stack([c[rep] for c in cols], axis=1),
                          window_start=np.asarray(wuniq, dtype="int64")[np.asarray(wcodes)[rep]],
                          sums=red("sums"), counts=red("counts"), zeros=red("zeros"),
                          first_ts=red("first_ts", np.minimum), last_ts=red("last_ts", np.maximum),
                          window_s=window_s, labels=labels)


# -------------------------------------------------------------------------------------- finish
def finish_windows(partials: WindowPartials | pd.DataFrame) -> pd.DataFrame:
    """One row per window: means per metric (short names), ``n_samples``, ``start``/``end``, labels;
    sorted by host, gpu, mig (missing first), window start."""
    p = partials if isinstance(partials, WindowPartials) else WindowPartials.from_frame(partials)
    n = len(p)
    ws = np.full(n, float(p.window_s))
    order = np.lexsort((p.window_start, *[(p.codes[:, _KEY_KEEP.index(c)] + 1) % (len(p.uniques[_KEY_KEEP.index(c)]) + 1)
                                          for c in ("mig", "gpu", "host")]))
    cols: dict[str, Any] = {c: pd.Series(p.key_values(i)[order], dtype=object) for i, c in enumerate(_KEY_KEEP)}
    wstart = p.window_start[order]
    cols["window_start"] = wstart
    start = pd.to_datetime(wstart, unit="ms", utc=True)
    cols["start"] = start
    cols["end"] = start + pd.to_timedelta(np.round(ws * 1000).astype("int64"), unit="ms")
    cols["window_s"] = ws
    sums, cnts, zeros = p.sums[order], p.counts[order], p.zeros[order]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(cnts > 0, sums / np.where(cnts > 0, cnts, 1), np.nan)
    for j, m in enumerate(METRICS):
        cols[m] = means[:, j]
        cols[m + "__n"] = cnts[:, j]
        cols[m + "__zero"] = zeros[:, j]
    cols["n_samples"] = cnts.sum(axis=1)
    cols["first_ts"] = pd.to_datetime(p.first_ts[order], unit="ms", utc=True)
    cols["last_ts"] = pd.to_datetime(p.last_ts[order], unit="ms", utc=True)
    for lab in LABEL_COLUMNS:
        if lab in p.labels:
            c, u, _k = p.labels[lab]
            cols[lab] = pd.Series(_decode(c, u)[order], dtype=object)
        else:
            cols[lab] = pd.Series(np.full(n, None, dtype=object), dtype=object)
    return pd.DataFrame(cols, copy=False)


# ------------------------------------------------------------------------------------ classify
def _devices_module() -> Any:
    try:
        from rooftop.analyzer import devices
    except ImportError:  # pragma: no cover - devices is part of the package
        return None
    return devices


def resolve_devices(models: list[Any], device: str | None) -> dict[Any, Any]:
    """model name -> DeviceSpec (or None); ``device`` (a name or file) overrides every model."""
    d = _devices_module()
    if d is None:
        return {m: None for m in models}
    if device:
        spec = d.load_device_option(device)
        return {m: spec for m in models}
    out: dict[Any, Any] = {}
    for m in models:
        try:
            out[m] = d.lookup(m) if isinstance(m, str) and m else None
        except Exception:  # an odd model string must never stop the analysis
            out[m] = None
    return out


def mig_share(profile: Any, model: Any) -> float:
    """Share of the whole GPU a MIG instance owns: ``g/7`` (``g/4`` on A30); 1.0 when not MIG."""
    if not isinstance(profile, str):
        return 1.0
    m = _MIG_G.match(profile.strip())
    if not m:
        return 1.0
    slices = 4.0 if isinstance(model, str) and "A30" in model.upper() else 7.0
    return min(1.0, int(m.group(1)) / slices)


def _strs(template: str, vals: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``template % v`` for the rows in ``mask`` (None elsewhere), one column at a time."""
    out = np.full(len(mask), None, dtype=object)
    if mask.any():
        out[mask] = np.char.mod(template, vals[mask]).astype(object)
    return out


def _const(text: str, mask: np.ndarray) -> np.ndarray:
    out = np.full(len(mask), None, dtype=object)
    out[mask] = text
    return out


def _classify(out: pd.DataFrame, evidence: bool = True) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Label, limiter and evidence columns (object arrays, None = no line) for every window."""
    v = {m: out[m].to_numpy(dtype="float64") for m in ("gr_active", "sm_active", "dram_active", "gpu_util",
                                                      *PIPES.values())}
    ok = {m: np.isfinite(x) for m, x in v.items()}
    gr, sm, dram, util = v["gr_active"], v["sm_active"], v["dram_active"], v["gpu_util"]
    p_gr, p_sm, p_dram, p_util = ok["gr_active"], ok["sm_active"], ok["dram_active"], ok["gpu_util"]
    pipe_cols = list(PIPES.values())
    pipe_v = np.stack([np.where(ok[c], v[c], -np.inf) for c in pipe_cols], axis=1)
    has_pipe = np.isfinite(pipe_v).any(axis=1)
    ninf = -np.inf
    signals = np.stack([np.where(p_gr, gr, ninf), np.where(p_sm, sm, ninf), np.where(p_dram, dram, ninf),
                        np.where(~p_gr & p_util, util, ninf)], axis=1)
    activity = np.maximum(signals.max(axis=1), pipe_v.max(axis=1))
    only_util = ~p_gr & ~p_sm & ~p_dram & ~has_pipe
    no_sig = only_util & ~p_util
    idle = ~no_sig & (activity < IDLE_MAX)
    ou_mixed = ~no_sig & ~idle & only_util
    rest = ~no_sig & ~idle & ~only_util
    top_i = pipe_v.argmax(axis=1)
    top_val = np.where(has_pipe, pipe_v.max(axis=1), 0.0)
    top_pipe = np.array(list(PIPES), dtype=object)[top_i]
    with np.errstate(invalid="ignore"):
        mem = rest & p_dram & (dram >= DRAM_HIGH) & (dram / DRAM_PRACTICAL_PEAK >= top_val)
        comp = rest & ~mem & has_pipe & (top_val >= PIPE_HIGH)
        busy = np.where(p_gr, gr, util)
        launch = rest & ~mem & ~comp & (p_gr | p_util) & (busy >= GR_BUSY) & p_sm & (sm < SM_LOW)
        host = rest & ~mem & ~comp & ~launch & p_gr & (gr < GR_BUSY)
        norm = np.concatenate([pipe_v, np.where(p_dram, dram / DRAM_PRACTICAL_PEAK, ninf)[:, None]], axis=1)
    mixed_rest = rest & ~(mem | comp | launch | host)
    lim_name = np.array([*PIPES, "dram"], dtype=object)[norm.argmax(axis=1)]
    dom = mixed_rest & (norm.max(axis=1) >= DOMINANT_MIN)
    latency = mixed_rest & ~dom
    label = np.select([no_sig, idle, ou_mixed, mem, comp, launch, host],
                      ["mixed", "idle", "mixed", "memory-bound", "compute-bound", "overhead-bound",
                       "overhead-bound"], "mixed").astype(object)
    limiter = np.select([no_sig, idle, ou_mixed, mem, comp, launch, host, dom],
                        ["unknown", "none", "unknown", "dram", top_pipe, "launch", "host", lim_name],
                        "latency").astype(object)
    if not evidence:
        return label, limiter, []
    sm_note = np.where(sm >= SM_EFFECTIVE, " (>= 0.8: SMs well used)",
                       np.where(sm < SM_INEFFECTIVE, " (< 0.5: likely ineffective use, NVIDIA)", ""))
    sm_ev = _strs("SM active %.2f", sm, rest & p_sm)
    sm_ev[rest & p_sm] = sm_ev[rest & p_sm] + sm_note[rest & p_sm].astype(object)
    gr_ev = _strs("GR active %.2f", gr, rest & p_gr)
    util_ev = _strs("GPU_UTIL %.2f", util, rest & ~p_gr & p_util)
    ev = [
        _const("no activity fields in this window", no_sig),
        _const("only NVML GPU_UTIL (no DCGM profiling fields): coarse 'any kernel resident' signal",
               only_util & ~no_sig),
        _strs(f"all activity < {IDLE_MAX} (max %.3f)", activity, idle),
        _strs("GPU_UTIL %.2f: busy, but what limits it is unknown", activity, ou_mixed),
        np.where(gr_ev == None, util_ev, gr_ev),  # noqa: E711 - elementwise on an object array
        sm_ev,
        *[_strs(f"{p} pipe active %.2f", v[c], rest & ok[c]) for p, c in PIPES.items()],
        _dram_ev(dram, rest & p_dram),
        _const("engine busy but few SMs occupied: tiny grids / launch-bound", launch),
        _strs("GPU engine idle %.0f%% of the window: host-side wait (input pipeline, synchronisation, "
              "launch gaps)", (1 - np.clip(gr, 0, 1)) * 100, host),  # corrupt ratios are linted, not computed with
        _const("pipes and DRAM lightly used while kernels run: latency/stall-bound", latency),
    ]
    return label, limiter, ev


def _dram_ev(dram: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.full(len(mask), None, dtype=object)
    if mask.any():
        d = dram[mask]
        out[mask] = np.char.add(np.char.mod("DRAM active %.2f (~", d),
                                np.char.mod("%.0f%% of the practical 0.8 peak)", (d / DRAM_PRACTICAL_PEAK) * 100)
                                ).astype(object)
    return out


def classify_windows(wide: pd.DataFrame, device: str | None = None, evidence: bool = True) -> pd.DataFrame:
    """Add ``label``, ``limiter``, ``est_flops_s``, ``est_dram_bytes_s``, ``est_intensity``,
    ``evidence`` (list of str; None for every window when ``evidence`` is False, which skips
    formatting text for windows no report lists) and ``device`` (the spec's name) to finished windows."""
    out = wide.copy(deep=False)  # columns are added, never changed in place (copy-on-write)
    n = len(out)
    if not n:
        for c in ("label", "limiter", "device", "evidence"):
            out[c] = pd.Series([], dtype=object)
        for c in ("est_flops_s", "est_dram_bytes_s", "est_intensity"):
            out[c] = pd.Series([], dtype="float64")
        return out
    for m in METRICS:
        if m not in out.columns:
            out[m] = np.nan
    label, limiter, ev = _classify(out, evidence)
    out["label"] = label.tolist()
    out["limiter"] = limiter.tolist()
    models = out["model"].to_numpy(dtype=object) if "model" in out.columns else np.full(n, None, dtype=object)
    mcode, muniq = pd.factorize(models, use_na_sentinel=True)
    mcode = np.where(mcode < 0, len(muniq), mcode)
    mkeys: list[Any] = [*muniq, None]
    specs = resolve_devices(list(dict.fromkeys(mkeys)), device)
    mspecs = [specs.get(m) for m in mkeys]
    profiles = out["mig_profile"].to_numpy(dtype=object) if "mig_profile" in out.columns \
        else np.full(n, None, dtype=object)
    pcode, puniq = pd.factorize(profiles, use_na_sentinel=True)
    pcode = np.where(pcode < 0, len(puniq), pcode)
    pair, inv = np.unique(pcode * (len(mkeys) + 1) + mcode, return_inverse=True)
    rep = np.zeros(len(pair), dtype="int64")
    rep[inv] = np.arange(n)
    share = np.array([mig_share(profiles[i], models[i]) for i in rep], dtype="float64")[inv]
    names = np.array([s.name if s is not None else None for s in mspecs], dtype=object)[mcode]
    flops = np.zeros(n)
    have = np.zeros(n, dtype=bool)
    for pipe, col in PIPES.items():
        peak = np.array([(s.peaks.get(pipe) or 0.0) if s is not None else 0.0 for s in mspecs])[mcode]
        v = out[col].to_numpy(dtype="float64")
        use = (peak != 0) & np.isfinite(v)
        flops = flops + np.where(use, np.nan_to_num(v) * peak * share, 0.0)
        have |= use
    bw = np.array([(s.bandwidth.get("dram") or 0.0) if s is not None else 0.0 for s in mspecs])[mcode]
    dram = out["dram_active"].to_numpy(dtype="float64")
    dram_bw = np.where((bw != 0) & np.isfinite(dram), dram * bw * share, np.nan)
    out["est_flops_s"] = np.where(have, flops, np.nan)
    out["est_dram_bytes_s"] = dram_bw
    with np.errstate(invalid="ignore", divide="ignore"):
        out["est_intensity"] = np.where(dram_bw > 0, out["est_flops_s"] / dram_bw, np.nan)
    if not evidence:  # labels and estimates only (the fleet roll-ups); evidence is text per window
        out["evidence"] = None
        out["device"] = names.tolist()
        return out
    ev.append(_strs("MIG instance: values relative to the instance; peaks scaled by %.3f of the GPU",
                    share, share < 1.0))
    est = names.astype(bool) & have
    tflops = _strs("est. %.1f TFLOP/s (activity x ", out["est_flops_s"].to_numpy() / 1e12, est)
    tflops[est] = tflops[est] + names[est] + " peaks; an estimate, not a count)"
    ev.append(tflops)
    out["evidence"] = [[x for x in row if x is not None] for row in zip(*ev, strict=True)]
    out["device"] = names.tolist()
    return out


def window_devices(windows: pd.DataFrame, device: str | None = None) -> list[dict[str, Any]]:
    """Contract ``devices`` entries for the device specs the windows used."""
    models = windows["model"].tolist() if len(windows) and "model" in windows.columns else []
    specs = resolve_devices(list(dict.fromkeys(models)), device) if models or device else {}
    if device and not specs:
        specs = resolve_devices([None], device)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for spec in specs.values():
        if spec is not None and spec.name not in seen:
            seen.add(spec.name)
            out.append(spec.as_contract())
    return out


# ------------------------------------------------------------------------------ lint, findings
def _txt(x: Any) -> str:
    return x if isinstance(x, str) and x else "-"


def _pre_hopper(model: Any, spec: Any) -> bool:
    if spec is not None and getattr(spec, "cc", None):
        try:
            return float(spec.cc) < 9.0
        except ValueError:
            pass
    return isinstance(model, str) and not _HOPPER_PLUS.search(model)


def _lint(samples: pd.DataFrame, windows: pd.DataFrame, device: str | None) -> list[dict[str, Any]]:
    lint: list[dict[str, Any]] = []

    def add(code: str, message: str) -> None:
        lint.append({"code": code, "message": message, "kernels": []})

    if not len(windows):
        return lint
    # multiplexing zeros: SM active exactly 0 in samples while GR active > 0 (pre-Hopper profiling module)
    specs = resolve_devices(list(dict.fromkeys(windows["model"].tolist())), device)
    susp = windows[(windows["gr_active"] > IDLE_MAX) & (windows["sm_active__n"] > 0)
                   & (windows["sm_active__zero"] >= 0.2 * windows["sm_active__n"])]
    susp = susp[[_pre_hopper(m, specs.get(m)) for m in susp["model"]]]
    if len(susp):
        gpus = sorted({f"{_txt(h)}/{_txt(g)}" for h, g in zip(susp["host"], susp["gpu"], strict=True)})
        add("dcgm-multiplexing-zeros",
            f"{len(susp)} window(s) on pre-Hopper GPUs ({', '.join(gpus[:5])}) read SM active exactly 0 "
            "while the graphics engine was busy: profiling counters from different hardware groups are "
            "multiplexed (or held by another profiler); treat those zeros as missing, watch fewer "
            "profiling fields at once")
    # sampling interval, gaps, the 30 s exporter default
    ent = ["host", "gpu", "uuid", "mig"]
    s = samples[[c for c in ent if c in samples.columns] + ["timestamp"]].drop_duplicates()
    ms = _epoch_ms(s["timestamp"])
    s = s.assign(_t=ms).sort_values([*[c for c in ent if c in s.columns], "_t"], kind="stable")
    keys = [c for c in ent if c in s.columns]
    s = s.assign(_d=s.groupby(keys, dropna=False, sort=False)["_t"].diff())
    s = s[s["_d"] > 0]
    if len(s):
        med = s.groupby(keys, dropna=False, sort=False)["_d"].transform("median").to_numpy(dtype="float64")
        d = s["_d"].to_numpy(dtype="float64")
        ent_med = s.assign(_m=med).drop_duplicates(keys)
        at30 = ent_med[(ent_med["_m"] - 30000).abs() <= 1000]
        if len(at30):
            names = [f"{_txt(h)}/{_txt(g)}" for h, g in zip(at30["host"], at30["gpu"], strict=True)]
            add("dcgm-exporter-30s-interval",
                f"samples of {len(at30)} GPU(s) ({', '.join(sorted(set(names))[:5])}) are 30 s apart "
                "(dcgm-exporter's default collect interval, -c 30000): phases shorter than a minute are "
                "averaged away; use -c 1000 (or dcgmi dmon -d 1000) to see them")
        gap = d > np.maximum(3 * med, 1.0)
        if gap.any():
            worst = float(d[gap].max()) / 1000
            add("dcgm-sampling-gap",
                f"{int(gap.sum())} gap(s) in sampling longer than 3x the GPU's usual interval "
                f"(longest {worst:g} s): exporter restarts, node down or scrape failures; those times "
                "have no windows")
    # missing profiling fields per GPU
    prof = [f"{m}__n" for m in ("gr_active", "sm_active", "tensor_active", "dram_active",
                                 "fp64_active", "fp32_active", "fp16_active")]
    per = windows.assign(_p=windows[prof].sum(axis=1)).groupby(
        ["host", "gpu", "mig"], dropna=False, sort=True).agg(p=("_p", "sum"), model=("model", "first"))
    none = per[per["p"] == 0]
    if len(none):
        names = [f"{_txt(h)}/{_txt(g)}{'/' + mg if isinstance(mg, str) else ''}"
                 f" ({mo or 'model unknown'})" for (h, g, mg), mo in zip(none.index, none["model"], strict=True)]
        add("dcgm-no-profiling-fields",
            f"no DCGM profiling fields (1001-1008) for {len(none)} GPU(s): {', '.join(names[:6])}. "
            "vGPU guests and pre-Volta GPUs have none; dcgm-exporter's default CSV enables only GR, tensor "
            "and DRAM; another profiler may hold the counters. Those windows use NVML GPU_UTIL only")
    # sentinel / implausible values that reached the table
    vals = samples["value"].to_numpy(dtype="float64")
    sent = F.sentinel_mask(vals)
    if sent.any():
        add("dcgm-sentinel-values", f"{int(sent.sum())} sample(s) hold DCGM blank sentinel values "
                                    "(DCGM_*_BLANK/NOT_SUPPORTED...): ignored as data")
    ratio_ids = [k for k, v in PROFILE_METRICS.items() if v in RATIO_METRICS]
    fid = samples["field_id"].to_numpy()
    big = np.isin(fid, ratio_ids) & (vals > 1.2) & ~sent
    if big.any():
        add("dcgm-implausible-ratio", f"{int(big.sum())} profiling ratio sample(s) above 1.2 (max "
                                      f"{float(vals[big].max()):g}); ratios are 0..1 (slightly above 1 "
                                      "is possible under MIG): check units or placeholder values")
    return lint


_RECO = {
    "memory-bound": "Cut DRAM traffic: fuse element-wise/normalisation kernels (torch.compile, fused "
                    "optimizers), use lower precision (bf16/fp8) for activations and weights, improve reuse "
                    "(larger tiles, flash-attention style kernels); profile the top kernels with ncu.",
    "overhead-bound": "Keep the GPU fed: overlap input loading (more DataLoader workers, pinned memory, "
                      "prefetch), batch larger, capture steady-state steps in CUDA graphs / torch.compile, "
                      "remove host synchronisation (.item(), .cpu()) from the loop.",
    "idle": "The GPU is allocated to a workload but idle: release it, scale the deployment down, or share "
            "it (MIG / time-slicing).",
}


def _findings(w: pd.DataFrame) -> list[dict[str, Any]]:
    if not len(w):
        return []
    hours = w["window_s"].to_numpy(dtype="float64") / 3600.0
    total = float(hours.sum()) or 1.0
    ns = w["namespace"].astype("object")
    ident = [f"{_txt(h)}/{_txt(g)}" + (f"/mig {m}" if isinstance(m, str) else "")
             for h, g, m in zip(w["host"], w["gpu"], w["mig"], strict=True)]
    group = [f"namespace {n}" if isinstance(n, str) and n else f"GPU {i}" for n, i in zip(ns, ident, strict=True)]
    df = w.assign(_h=hours, _group=group, _workload=ns.notna() | w["pod"].notna())
    out: list[dict[str, Any]] = []
    for (grp, label), sub in df.groupby(["_group", "label"], sort=True):
        if label == "idle":
            sub = sub[sub["_workload"]]
        if label not in _RECO or not len(sub):
            continue
        gh = float(sub["_h"].sum())
        means = {m: float(np.nanmean(sub[m])) for m in ("gr_active", "sm_active", "tensor_active", "dram_active")
                 if sub[m].notna().any()}
        share = gh / total

        def ratio(metric: str, means: dict[str, float] = means) -> str:
            v = means.get(metric)
            return f"{v:.2f}" if v is not None and np.isfinite(v) else "not collected"

        if label == "memory-bound":
            title = (f"{grp}: {gh:.2f} GPU-hours memory-bound at DRAM-active {ratio('dram_active')} "
                     f"and tensor-active {ratio('tensor_active')}")
            saving = None
        elif label == "overhead-bound":
            title = (f"{grp}: {gh:.2f} GPU-hours overhead-bound (GR-active {ratio('gr_active')}, "
                     f"SM-active {ratio('sm_active')})")
            idle_frac = (1.0 - sub["gr_active"]).clip(lower=0).fillna(0).to_numpy()
            saving = float((sub["window_s"].to_numpy() * idle_frac).sum())
        else:
            title = f"{grp}: {gh:.2f} GPU-hours allocated to a workload but idle"
            saving = float(sub["window_s"].sum())
        out.append({
            "rank": 0, "rule": f"dcgm-{label if label != 'idle' else 'idle-allocated'}",
            "severity": "high" if share >= 0.25 else "medium" if share >= 0.05 else "low",
            "title": title, "kernels": [], "time_share": share, "est_saving_s": saving,
            "recommendation": _RECO[label], "gpu_hours": gh, "group": grp, "label": label,
            "windows": len(sub), "metrics": means,
        })
    out.sort(key=lambda f: (-f["gpu_hours"], f["title"]))
    for i, f in enumerate(out, start=1):
        f["rank"] = i
    return out


# ------------------------------------------------------------------------------------ analysis
@dataclass
class WindowAnalysis:
    windows: pd.DataFrame
    devices: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)

    def records(self) -> list[dict[str, Any]]:
        """Contract ``windows`` entries (plus extras: uuid, mig, labels, device, evidence, n_samples)."""
        w = self.windows
        if w is None or not len(w):
            return []
        recs: list[dict[str, Any]] = []
        for r in w.to_dict("records"):
            metrics = {m: r[m] for m in METRICS if r.get(m) is not None and np.isfinite(r[m])}
            r = {k: (None if isinstance(v, float) and not np.isfinite(v) and k in _STR_FIELDS else v)
                 for k, v in r.items()}
            rec: dict[str, Any] = {
                "host": r["host"], "gpu": r["gpu"], "model": r["model"],
                "start": _iso(r["start"]), "end": _iso(r["end"]),
                "label": r["label"], "limiter": r["limiter"], "metrics": metrics,
                "est_flops_s": _num(r.get("est_flops_s")), "est_dram_bytes_s": _num(r.get("est_dram_bytes_s")),
                "est_intensity": _num(r.get("est_intensity")),
                "uuid": r.get("uuid"), "mig": r.get("mig"), "mig_profile": r.get("mig_profile"),
                "namespace": r.get("namespace"), "pod": r.get("pod"), "container": r.get("container"),
                "job": r.get("job"), "device": r.get("device"), "n_samples": int(r["n_samples"]),
                "evidence": list(r.get("evidence") or []),
            }
            recs.append(rec)
        return recs

    def timelines(self) -> dict[str, dict[str, list[Any]]]:
        """``{"<host>/<gpu>[/mig <id>]": {"t": [iso...], "<metric>": [...], "label": [...]}}``."""
        w = self.windows
        out: dict[str, dict[str, list[Any]]] = {}
        if w is None or not len(w):
            return out
        for r in w.to_dict("records"):
            key = f"{_txt(r['host'])}/{_txt(r['gpu'])}" + (f"/mig {r['mig']}" if isinstance(r.get("mig"), str) else "")
            tl = out.setdefault(key, {"t": [], "gr_active": [], "sm_active": [], "tensor_active": [],
                                      "dram_active": [], "label": []})
            tl["t"].append(_iso(r["start"]))
            for m in ("gr_active", "sm_active", "tensor_active", "dram_active"):
                tl[m].append(_num(r.get(m)))
            tl["label"].append(r["label"])
        return out


_STR_FIELDS = frozenset({*_KEY_KEEP, *LABEL_COLUMNS, "device", "label", "limiter"})


def _num(x: Any) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _iso(ts: Any) -> str:
    return pd.Timestamp(ts).tz_convert("UTC").isoformat().replace("+00:00", "Z")


def analyze_windows(samples: pa.Table, window_s: float = 60.0, device: str | None = None) -> WindowAnalysis:
    """Window, classify and lint one sample table (``SAMPLE_SCHEMA``); empty table -> empty analysis."""
    if samples is None or samples.num_rows == 0:
        return WindowAnalysis(windows=pd.DataFrame())
    df = samples.to_pandas()
    wide = finish_windows(window_partials(df, window_s))
    if not len(wide):
        return WindowAnalysis(windows=pd.DataFrame())
    windows = classify_windows(wide, device)
    return WindowAnalysis(windows=windows, devices=window_devices(windows, device),
                          lint=_lint(df, windows, device), findings=_findings(windows))
