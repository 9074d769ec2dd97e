"""Dictionary codes: strings and key tuples as dense sorted integers (no Python object per row)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.analyzer.windows.fields import Codes


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



def _decode(codes: np.ndarray, uniques: np.ndarray) -> np.ndarray:
    return np.asarray(np.r_[uniques, np.array([None], dtype=object)].astype(object)[codes], dtype=object)



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
    ms = t.dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ms]").to_numpy()
    return np.asarray(ms).astype("int64")



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
