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
from rooftop.analyzer.timeline.copies import HOST_LINK, copy_kind

SIGNATURE = ("name", "input_dims", "input_types", "concrete_inputs", "collective")
_HOST_COPY = ("HtoD", "DtoH", "Host-to-Device", "Device-to-Host", "HtoH", "PtoP", "Peer")  # memcpy names


@dataclass(frozen=True)
class LinkCopies:
    """A signature's copies across the host link (``HtoD``/``DtoH`` memcpys): their time, their bytes (each
    byte once; None when a copy records none) and, per copy name, (count, bytes or None, ns)."""

    ns: int
    bytes: int | None
    by_name: dict[str, tuple[int, int | None, int]]


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
    link: LinkCopies | None = None  # its host<->device copies, when it has any
    link_only: bool = False  # every GPU activity is a host<->device copy: bound by the host link

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


def _links(g: np.ndarray, n: int, kinds: np.ndarray, names: np.ndarray, dur: np.ndarray, nbytes: pd.Series
           ) -> tuple[dict[int, LinkCopies], np.ndarray]:
    """Per signature group: its host-link copies, and whether they are all its GPU activities."""
    link_names = {str(x) for x in set(names[kinds == "memcpy"].tolist()) if copy_kind(str(x))[1] in HOST_LINK}
    is_link = (kinds == "memcpy") & np.isin(names, np.array(sorted(link_names), dtype=object))
    link_only = np.bincount(g, weights=is_link, minlength=n) == np.bincount(g, minlength=n)
    sel = np.flatnonzero(is_link)
    nb = nbytes.iloc[sel].astype("Int64")
    df = pd.DataFrame({"g": g[sel], "name": names[sel], "ns": dur[sel],
                       "bytes": nb.fillna(0).to_numpy(np.int64), "missing": nb.isna().to_numpy(dtype=bool)})
    per = df.groupby(["g", "name"], sort=True).agg(count=("ns", "size"), ns=("ns", "sum"), bytes=("bytes", "sum"),
                                                   missing=("missing", "any"))
    by: dict[int, dict[str, tuple[int, int | None, int]]] = {}
    for (gi, name), row in per.iterrows():
        by.setdefault(int(gi), {})[str(name)] = (int(row["count"]), None if row["missing"] else int(row["bytes"]),
                                                 int(row["ns"]))
    out = {gi: LinkCopies(sum(v[2] for v in d.values()),
                          None if any(v[1] is None for v in d.values()) else sum(int(v[1] or 0) for v in d.values()), d)
           for gi, d in by.items()}
    return out, link_only & (np.bincount(g, weights=is_link, minlength=n) > 0)


def _text(v: object) -> str | None:
    return v if isinstance(v, str) else None


def signatures(att: Attribution) -> list[Signature]:
    """Group the attributed activities of one input by (device, op signature), column-wise."""
    acts = att.acts[att.acts["op"] >= 0]
    if not len(acts):
        return []
    hosts = att.hosts
    op = acts["op"].to_numpy(np.int64)
    # one code per distinct host signature, then per (device, signature)
    codes = [pd.factorize(hosts[c].to_numpy(dtype=object, na_value=None), sort=False) for c in SIGNATURE]
    sig_code = np.zeros(len(hosts), dtype=np.int64)
    for code, uniques in codes:  # one column at a time, renumbered after each so the codes stay small
        sig_code = np.unique(sig_code * (len(uniques) + 1) + code + 1, return_inverse=True)[1].reshape(-1)
    first = np.unique(sig_code, return_index=True)[1]
    sig_keys = [tuple(None if code[i] < 0 else uniques[code[i]] for code, uniques in codes) for i in first]
    dev_code, devices = pd.factorize(acts["device"].fillna("").to_numpy(dtype=object), sort=False)
    pair = dev_code.astype(np.int64) * (len(sig_keys) + 1) + sig_code[op]
    groups, g = np.unique(pair, return_inverse=True)
    g = g.reshape(-1)
    n = len(groups)
    dur = (acts["end_ns"] - acts["start_ns"]).to_numpy(np.int64)
    kinds = acts["kind"].to_numpy(dtype=object)
    is_kernel = kinds == "kernel"
    time_ns = np.bincount(g, weights=dur, minlength=n)
    activities = np.bincount(g, minlength=n)
    kernels = np.bincount(g, weights=is_kernel, minlength=n)
    calls = np.bincount(np.unique(np.stack([g, op]), axis=1)[0], minlength=n)
    grid_code, grids = pd.factorize(acts["grid_dim"].to_numpy(dtype=object, na_value=None), sort=False)
    blocks = np.array([_blocks(x) or 0 for x in grids] + [0], dtype=np.int64)[grid_code]
    max_blocks = np.zeros(n, dtype=np.int64)
    np.maximum.at(max_blocks, g, np.where(is_kernel, blocks, 0))
    names = acts["name"].fillna("").to_numpy(dtype=object)
    copy = (kinds == "memcpy") & pd.Series(names).str.contains("|".join(_HOST_COPY), regex=True).to_numpy(dtype=bool)
    host_copy = np.bincount(g, weights=copy, minlength=n) > 0
    links, link_only = _links(g, n, kinds, names, dur, acts["bytes"])
    by_name = pd.DataFrame({"g": g, "name": names, "dur": dur}).groupby(["g", "name"], sort=False)["dur"].sum()
    kernel_names: list[Counter[str]] = [Counter() for _ in range(n)]
    for (gi, kn), d in by_name.items():
        kernel_names[int(gi)][str(kn)] += int(d)
    out: list[Signature] = []
    cache: dict[int, Modelled] = {}
    n_sig = len(sig_keys) + 1
    for i, code in enumerate(groups.tolist()):
        sc = code % n_sig
        name, dims, types, concrete, coll = sig_keys[sc]
        m = cache.get(sc)
        if m is None:
            m = cache[sc] = model(str(name), _text(dims), _text(types), _text(concrete), _text(coll))
        out.append(Signature(str(devices[code // n_sig]), str(name), _text(dims), _text(types), _text(concrete), m,
                             calls=int(calls[i]), activities=int(activities[i]), kernels=int(kernels[i]),
                             time_ns=int(time_ns[i]), kernel_names=kernel_names[i], host_copy=bool(host_copy[i]),
                             max_blocks=int(max_blocks[i]) or None, link=links.get(i), link_only=bool(link_only[i])))
    return out
