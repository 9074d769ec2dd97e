"""Window partials: per (key, window) sums, counts and label counts, the map-reduce currency."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.codes import _codes, _decode
from rooftop.analyzer.windows.fields import (
    _KEY_KEEP,
    LABEL_COLUMNS,
    METRICS,
)


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



def _empty_partials(window_s: float) -> WindowPartials:
    m = len(METRICS)
    z = np.zeros(0, dtype="int64")
    return WindowPartials(uniques=tuple(np.empty(0, dtype=object) for _ in _KEY_KEEP),
                          codes=np.zeros((0, len(_KEY_KEEP)), dtype="int64"), window_start=z,
                          sums=np.zeros((0, m)), counts=np.zeros((0, m), "int64"),
                          zeros=np.zeros((0, m), "int64"), first_ts=z, last_ts=z, window_s=float(window_s))
