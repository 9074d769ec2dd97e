"""Which GPU activities a kind of runtime call made (``docs/formulas.md#timelines``): the calls whose
name matches a pattern, keyed by correlation id and process, and the activities with those keys
(the process only where the activity's row has one: Kineto GPU rows carry none)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer.timeline.arrays import NA, ints
from rooftop.analyzer.timeline.names import EventNames

ASYNC_COPY = r"Memcpy\w*Async"  # cudaMemcpyAsync, cudaMemcpy2DAsync, cuMemcpyHtoDAsync...
GRAPH_LAUNCH = r"(?i)graph\w*launch"  # cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch


def call_keys(ev: pd.DataFrame, pattern: str, names: EventNames | None = None) -> set[tuple[int, int]]:
    """(correlation, pid) and (correlation, ``NA``) of the runtime calls whose name matches ``pattern``.
    The pattern is tested once per distinct name (a trace repeats a few dozen call names over thousands
    of rows) and taken by code; ``names``: ``ev``'s encoded kinds and names (made here when not given);
    :func:`call_keys_ref` tests every row and is held equal to it."""
    n = names if names is not None else EventNames.of(ev)
    rt = n.rows("runtime")
    return _keys(ev, rt[n.test(rt, lambda a: pc.match_substring_regex(a, pattern))])


def call_keys_ref(ev: pd.DataFrame, pattern: str) -> set[tuple[int, int]]:
    """:func:`call_keys` with the pattern tested on every runtime row (the plain reference)."""
    rt = np.flatnonzero((ev["kind"] == "runtime").to_numpy(dtype=bool, na_value=False))
    names = pa.array(ev["name"].array).take(pa.array(rt, type=pa.int64()))
    hit = rt[np.asarray(pc.match_substring_regex(names, pattern).fill_null(False)
                        .to_numpy(zero_copy_only=False), dtype=bool)]
    return _keys(ev, hit)


def _keys(ev: pd.DataFrame, hit: np.ndarray) -> set[tuple[int, int]]:
    corr, pid = ints(ev["correlation"])[hit], ints(ev["pid"])[hit]
    keep = corr != NA
    c, p = corr[keep].tolist(), pid[keep].tolist()  # Python ints
    return set(zip(c, p, strict=True)) | {(x, NA) for x in c}


def made_by(corr: np.ndarray, pid: np.ndarray, keys: set[tuple[int, int]]) -> np.ndarray:
    """Per activity (int64 columns, ``NA`` for missing): whether a call of ``keys`` made it."""
    if not keys:
        return np.zeros(len(corr), dtype=bool)
    return np.array([k in keys for k in zip(corr.tolist(), pid.tolist(), strict=True)], dtype=bool)
