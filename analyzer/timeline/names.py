"""One input's events table with its ``kind`` and ``name`` columns dictionary-encoded once
(``docs/formulas.md#timelines``): every name test of the timeline analysis (blocking calls, host
categories, copy and graph-launch calls) runs on the distinct names and is taken by code, instead of a
pandas string pass over all rows per test. Each user keeps its per-row form as the ``*_ref`` reference,
held equal in tests/test_timeline_names_fast.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def arrow_strings(col: pd.Series) -> pa.Array:
    """A string column as one Arrow ``large_string`` array (nulls kept)."""
    arr = pa.chunked_array([pa.array(col.array)]).combine_chunks()
    return arr if arr.type == pa.large_string() else arr.cast(pa.large_string())


def encode_strings(arr: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Codes (int64, -1: null) into the distinct values (``dictionary_encode``)."""
    enc = pc.dictionary_encode(arr)
    codes = np.asarray(enc.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return codes, enc.dictionary


@dataclass(frozen=True)
class EventNames:
    """Per row of an events table: its kind and its name as positions in distinct values (-1: null)."""

    kind: np.ndarray  # int64 codes into ``kinds``
    kinds: tuple[str, ...]
    code: np.ndarray  # int64 codes into ``names``
    names: pa.Array  # the distinct names (large_string)

    @classmethod
    def of(cls, ev: pd.DataFrame) -> EventNames:
        kind, kinds = encode_strings(arrow_strings(ev["kind"]))
        code, names = encode_strings(arrow_strings(ev["name"]))
        return cls(kind, tuple(kinds.to_pylist()), code, names)

    def take(self, rows: np.ndarray) -> EventNames:
        """The rows ``rows`` (the distinct values shared)."""
        return EventNames(self.kind[rows], self.kinds, self.code[rows], self.names)

    def text(self, rows: np.ndarray) -> list[str | None]:
        """The names of ``rows`` as Python strings (None: null)."""
        codes = self.code[rows]
        found = self.names.take(pa.array(np.maximum(codes, 0), type=pa.int64())).to_pylist() if len(self.names) \
            else [None] * len(codes)
        return [None if c < 0 else n for c, n in zip(codes.tolist(), found, strict=True)]

    def is_kind(self, *kinds: str) -> np.ndarray:
        """Boolean mask of the rows of any of ``kinds``."""
        lut = np.zeros(len(self.kinds) + 1, dtype=bool)  # the trailing entry: a null kind (code -1)
        lut[:-1] = [k in kinds for k in self.kinds]
        out: np.ndarray = lut[self.kind]
        return out

    def rows(self, *kinds: str) -> np.ndarray:
        """Positions of the rows of any of ``kinds``."""
        return np.flatnonzero(self.is_kind(*kinds))

    def test(self, rows: np.ndarray, fn: Callable[[pa.Array], pa.Array]) -> np.ndarray:
        """``fn`` (an Arrow predicate over strings; null: False) per row of ``rows``, computed once
        per distinct name among them; a null name is False."""
        code = self.code[rows]
        used = np.unique(code)
        used = used[used >= 0]
        lut = np.zeros(len(self.names) + 1, dtype=bool)  # the trailing entry: a null name (code -1)
        if len(used):
            hit = fn(self.names.take(pa.array(used, type=pa.int64()))).fill_null(False)
            lut[used] = np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)
        out: np.ndarray = lut[code]
        return out


__all__ = ["EventNames", "arrow_strings", "encode_strings"]
