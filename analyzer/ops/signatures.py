"""Attributed GPU activities grouped by op signature (``docs/formulas.md#op-verdicts``): one row per
(input, device, op name, dims, dtypes, concrete inputs), with its calls, GPU activities and time, the
modelled work of all its calls, and the names of its kernels."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rooftop.analyzer.ops.attribution import Attribution
from rooftop.analyzer.ops.model import Modelled, model

SIGNATURE = ("name", "input_dims", "input_types", "concrete_inputs", "collective")
_HOST_COPY = ("HtoD", "DtoH", "Host-to-Device", "Device-to-Host", "HtoH", "PtoP", "Peer")


@dataclass
class Signature:
    """One op signature on one device."""

    device: str
    name: str
    dims: str | None
    types: str | None
    concrete: str | None
    modelled: Modelled
    calls: int = 0
    activities: int = 0
    kernels: int = 0
    time_ns: int = 0
    kernel_names: Counter[str] = field(default_factory=Counter)
    host_copy: bool = False  # a copy between host and device (or peers): not on the HBM roof
    max_blocks: int | None = None  # the largest grid (blocks) of its kernels, when the trace records grids

    @property
    def mean_activity_ns(self) -> float:
        return self.time_ns / self.activities if self.activities else 0.0


def _blocks(grid: object) -> int | None:
    """Blocks of a ``"(x, y, z)"`` launch grid."""
    if not isinstance(grid, str):
        return None
    try:
        x, y, z = (int(v) for v in grid.strip("()").split(","))
    except ValueError:
        return None
    return x * y * z


def _text(v: object) -> str | None:
    return v if isinstance(v, str) else None


def signatures(att: Attribution) -> list[Signature]:
    """Group the attributed activities of one input by (device, op signature)."""
    acts = att.acts[att.acts["op"] >= 0]
    if not len(acts):
        return []
    hosts = att.hosts
    op = acts["op"].to_numpy(np.int64)
    sig = hosts.loc[:, list(SIGNATURE)].astype(object).where(hosts.loc[:, list(SIGNATURE)].notna(), None)
    keys = pd.DataFrame({"device": acts["device"].fillna("").to_numpy(dtype=object)})
    for col in SIGNATURE:
        keys[col] = sig[col].to_numpy(dtype=object)[op]
    keys["op"] = op
    keys["dur"] = (acts["end_ns"] - acts["start_ns"]).to_numpy(np.int64)
    keys["kind"] = acts["kind"].to_numpy(dtype=object)
    keys["kname"] = acts["name"].fillna("").to_numpy(dtype=object)
    keys["blocks"] = [_blocks(g) for g in acts["grid_dim"].to_numpy(dtype=object, na_value=None).tolist()]
    out: list[Signature] = []
    cache: dict[tuple[object, ...], Modelled] = {}
    for key, g in keys.groupby(["device", *SIGNATURE], sort=False, dropna=False):
        device, name, dims, types, concrete, coll = (None if isinstance(k, float) else k for k in key)
        mkey = (name, dims, types, concrete, coll)
        m = cache.get(mkey)
        if m is None:
            m = cache[mkey] = model(str(name), _text(dims), _text(types), _text(concrete), _text(coll))
        kinds = g["kind"].to_numpy(dtype=object)
        knames = g["kname"].to_numpy(dtype=object)
        s = Signature(str(device), str(name), _text(dims), _text(types), _text(concrete), m,
                      calls=int(g["op"].nunique()), activities=len(g), kernels=int((kinds == "kernel").sum()),
                      time_ns=int(g["dur"].sum()))
        durs = g["dur"].to_numpy(np.int64)
        for kn, d in zip(knames.tolist(), durs.tolist(), strict=True):
            s.kernel_names[str(kn)] += d
        blocks = [b for b, kind in zip(g["blocks"].tolist(), kinds.tolist(), strict=True) if kind == "kernel" and b]
        s.max_blocks = max(blocks) if blocks else None
        s.host_copy = any(kind == "memcpy" and any(t in str(kn) for t in _HOST_COPY)
                          for kind, kn in zip(kinds.tolist(), knames.tolist(), strict=True))
        out.append(s)
    return out
