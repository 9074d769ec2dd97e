"""Health observations of a sample table, reduced per GPU: the map and reduce steps the fleet
engines run per Parquet fragment (and ``analyze`` once), order-free so both engines agree exactly.

One row per (GPU, observation, code) with ``n`` samples, ``first_ms``/``last_ms`` (epoch ms),
``vmin``/``vmax``, ``min_last_ms`` (the last time the value was at ``vmin``) and ``max_first_ms``
(the first time it was at ``vmax``). Observations (docs/formulas.md#health):

``field``     every sample of a health field (code = field id): what was collected, max, counters
``xid``       a non-zero XID (code = the XID)
``nonzero``   a sample > 0 of :data:`~.rules.NONZERO_IDS` (code = field id)
``bit``       a set clock-event-reasons bit (code = the bit)
``hot``       GPU temperature >= the slowdown temperature in the same sample (values: the temperature)
``at_limit``  power >= :data:`~.rules.POWER_AT_LIMIT` x the limit in the same sample (values: draw / limit)

Every reduction is a min, max or integer sum, so any grouping and order of combining gives the same
table (:func:`combine_health`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer.health import rules as R

GPU_COLUMNS = ("host", "gpu", "uuid", "pci_bus_id", "mig", "model")  # the windows' GPU identity
COLUMNS = (*GPU_COLUMNS, "obs", "code", "n", "first_ms", "last_ms", "vmin", "vmax", "min_last_ms", "max_first_ms")
_IDS = pa.array(R.HEALTH_IDS, pa.int32())


def empty_health() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype="object" if c in (*GPU_COLUMNS, "obs") else
                                      "float64" if c in ("vmin", "vmax") else "int64") for c in COLUMNS})


def health_partial(table: pa.Table, consts: Mapping[str, str | None] | None = None,
                   span: tuple[int, int] | None = None) -> pd.DataFrame:
    """The reduced observations of ``table`` (``SAMPLE_SCHEMA`` columns; a column absent from it takes
    its value from ``consts``), samples in ``span`` = ``[lo, hi)`` epoch ms only when given."""
    consts = consts or {}
    if table.num_rows == 0 or "field_id" not in table.column_names:
        return empty_health()
    mask = pc.is_in(table["field_id"], _IDS)
    if span is not None:
        ts = table["timestamp"].cast(pa.int64()) if pa.types.is_timestamp(table["timestamp"].type) \
            else table["timestamp"]
        mask = pc.and_(mask, pc.and_(pc.greater_equal(ts, span[0]), pc.less(ts, span[1])))
    t = table.filter(mask)
    if t.num_rows == 0:
        return empty_health()
    ts_col = t["timestamp"]
    ms = (ts_col.cast(pa.int64()) if pa.types.is_timestamp(ts_col.type) else ts_col).to_numpy()
    cols: dict[str, object] = {}
    for c in GPU_COLUMNS:
        if c in t.column_names:
            arr = t[c]
            if pa.types.is_dictionary(arr.type):
                arr = arr.cast(pa.string())
            cols[c] = np.asarray(arr.to_pylist(), dtype="object")
        else:
            cols[c] = np.full(t.num_rows, consts.get(c), dtype="object")
    df = pd.DataFrame({**cols, "field_id": t["field_id"].to_numpy().astype("int64"),
                       "value": t["value"].to_numpy().astype("float64"), "ms": ms.astype("int64")})
    df = df[df["gpu"].notna() | df["uuid"].notna()]  # a sample that names no GPU is no GPU's health
    return _reduce(pd.concat(_observations(df), ignore_index=True))


def _observations(df: pd.DataFrame) -> list[pd.DataFrame]:
    """Per-sample observation rows (GPU columns, obs, code, ms, value)."""
    keep = [*GPU_COLUMNS, "ms"]
    fid, v = df["field_id"], df["value"]
    out = [df[keep].assign(obs="field", code=fid, value=v)]
    x = df[(fid == R.XID) & (v != 0)]
    out.append(x[keep].assign(obs="xid", code=x["value"].astype("int64"), value=x["value"]))
    nz = df[fid.isin(R.NONZERO_IDS) & (v > 0)]
    out.append(nz[keep].assign(obs="nonzero", code=nz["field_id"], value=nz["value"]))
    th = df[(fid == R.CLOCKS_EVENT_REASONS) & (v > 0)]
    if len(th):
        masks = th["value"].astype("int64").to_numpy()
        for bit in R.EVENT_BITS:
            on = (masks & bit) != 0
            if on.any():
                out.append(th.loc[on, keep].assign(obs="bit", code=bit, value=float(bit)))
    out.append(_paired(df, (R.GPU_TEMP,), (R.SLOWDOWN_TEMP,), "hot", lambda a, b: a >= b, lambda a, b: a))
    out.append(_paired(df, (R.POWER, R.POWER_INSTANT), (R.POWER_ENFORCED, R.POWER_MGMT), "at_limit",
                       lambda a, b: (b > 0) & (a >= R.POWER_AT_LIMIT * b), lambda a, b: a / b))
    return out


def _paired(df: pd.DataFrame, values: Sequence[int], limits: Sequence[int], obs: str,
            hit: object, shown: object) -> pd.DataFrame:
    """Samples where a value (the first of ``values`` a sample time has) meets its limit (the first
    of ``limits`` at the same GPU and time): one row each, value ``shown(value, limit)``."""
    keys = [*GPU_COLUMNS, "ms"]
    a = _first_of(df, values)
    b = _first_of(df, limits)
    if not len(a) or not len(b):
        return pd.DataFrame(columns=[*keys, "obs", "code", "value"])
    m = a.merge(b, on=keys, how="inner", suffixes=("", "_lim"))
    x, y = m["value"].to_numpy(), m["value_lim"].to_numpy()
    on = hit(x, y)  # type: ignore[operator]
    m = m[on]
    return m[keys].assign(obs=obs, code=-1, value=shown(x[on], y[on]))  # type: ignore[operator]


def _first_of(df: pd.DataFrame, fids: Sequence[int]) -> pd.DataFrame:
    """One value per GPU and time: that of the first field of ``fids`` present there (the largest
    value where one field repeats at a time)."""
    keys = [*GPU_COLUMNS, "ms"]
    sub = df[df["field_id"].isin(fids)]
    if not len(sub):
        return sub[[*keys, "value"]]
    rank = {f: i for i, f in enumerate(fids)}
    sub = sub.assign(_r=sub["field_id"].map(rank)).sort_values(["_r", "value"], ascending=[True, False],
                                                                 kind="stable")
    return sub.drop_duplicates(keys, keep="first")[[*keys, "value"]]


_GROUP = [*GPU_COLUMNS, "obs", "code"]


def _reduce(obs: pd.DataFrame) -> pd.DataFrame:
    """Per (GPU, obs, code): counts, first/last time, min/max and when they were reached."""
    if not len(obs):
        return empty_health()
    obs = obs.assign(code=obs["code"].astype("int64"), value=obs["value"].astype("float64"),
                     n=1, first_ms=obs["ms"], last_ms=obs["ms"], vmin=obs["value"], vmax=obs["value"],
                     min_last_ms=obs["ms"], max_first_ms=obs["ms"])
    return combine_health([obs[list(COLUMNS)]])


def combine_health(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One reduced table from several (any grouping, any order: the same result)."""
    parts = [p for p in parts if p is not None and len(p)]
    if not parts:
        return empty_health()
    df = pd.concat(parts, ignore_index=True)
    for c in GPU_COLUMNS:
        df[c] = df[c].astype("object").where(df[c].notna(), "\x00")  # None keys group together
    g = df.groupby(_GROUP, sort=True)
    out = g.agg(n=("n", "sum"), first_ms=("first_ms", "min"), last_ms=("last_ms", "max"),
                vmin=("vmin", "min"), vmax=("vmax", "max"))
    lo = g["vmin"].transform("min")
    hi = g["vmax"].transform("max")
    out["min_last_ms"] = df["min_last_ms"].where(df["vmin"] == lo).groupby(
        [df[c] for c in _GROUP], sort=True).max()
    out["max_first_ms"] = df["max_first_ms"].where(df["vmax"] == hi).groupby(
        [df[c] for c in _GROUP], sort=True).min()
    out = out.reset_index()
    for c in GPU_COLUMNS:
        out[c] = out[c].where(out[c] != "\x00", None)
    for c in ("n", "first_ms", "last_ms", "min_last_ms", "max_first_ms"):
        out[c] = out[c].astype("int64")
    return out[list(COLUMNS)]
