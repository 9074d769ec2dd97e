"""Collectives across ranks (``docs/formulas.md#timeline-communication``): the traces of several ranks
given together (a folder of per-rank Kineto files, or one nsys export of several GPUs).

A participant is one device of one input, named by its rank (Kineto ``distributedInfo.rank``) or by
input and device. Its NCCL kernels of one name are taken in start order; the k-th of each name on
every participant is one collective (NCCL requires every rank of a communicator to issue the same
collectives in the same order). A collective ends on all ranks together, so the rank that joined
last has the shortest kernel and the others waited for it: per collective, ``skew`` = longest −
shortest kernel and the straggler is the participant with the shortest one. Durations, not start
times, so clocks of different hosts need not agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooftop.parsers.model import ParseResult


@dataclass(frozen=True)
class NcclKernels:
    """One input's NCCL kernels, one row each: device id (object: str, None/NA where missing), kernel
    name (object: str), start and end (int64 ns)."""

    device: np.ndarray
    name: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def frame(self) -> pd.DataFrame:
        """The rows as an events-style table (the pandas reference's input)."""
        return pd.DataFrame({"device": pd.array(list(self.device), dtype="string[pyarrow]"),
                             "name": pd.array(list(self.name), dtype="string[pyarrow]"),
                             "start_ns": self.start, "end_ns": self.end})


@dataclass
class _Kernels:
    """One participant's NCCL kernels in start order: each one's name and duration (ns)."""

    name: np.ndarray  # object: str (None: no name)
    dur: np.ndarray  # int64


def _participants(inputs: Sequence[tuple[ParseResult, NcclKernels]]) -> dict[str, _Kernels]:
    """Each input's NCCL kernels (``inputs``: the parse result and its NCCL kernels), per device
    (devices in sorted order, rows without one left out; a later participant of the same name
    replaces the earlier, as :func:`_participants_ref`)."""
    out: dict[str, _Kernels] = {}
    for r, k in inputs:
        dist = r.meta.get("distributed")
        rank = dist.get("rank") if isinstance(dist, Mapping) else None
        dev, devices = pd.factorize(k.device, sort=True)
        dur = k.end - k.start
        for i, device in enumerate(devices):
            rows = np.flatnonzero(dev == i)
            rows = rows[np.argsort(k.start[rows], kind="stable")]
            name = f"rank {rank}" if rank is not None and len(devices) == 1 else \
                f"{r.accounting.path.rsplit('/', 1)[-1]} GPU {device}"
            out[name] = _Kernels(k.name[rows], dur[rows])
    return out


def collectives(inputs: Sequence[tuple[ParseResult, NcclKernels]]) -> list[dict[str, Any]]:
    """One entry per NCCL kernel name seen on two or more participants, longest total skew first
    (``inputs``: each timeline input with its NCCL kernel rows, named). NumPy over each participant's
    kernels; :func:`collectives_ref` is the pandas form, held equal in tests/test_timeline_ranks_fast.py."""
    parts = _participants(inputs)
    if len(parts) < 2:
        return []
    out = []
    for name in sorted({n for g in parts.values() for n in set(g.name.tolist()) if n is not None}):
        durs = {p: g.dur[g.name == name] for p, g in parts.items()}
        durs = {p: d for p, d in durs.items() if len(d)}
        if len(durs) < 2:
            continue
        out.append(_collective(name, durs))
    out.sort(key=lambda c: -c["skew_sum_s"])
    return out


def _collective(name: str, durs: dict[str, np.ndarray]) -> dict[str, Any]:
    """The k-th kernel of ``name`` on every participant as one collective: its skew and straggler."""
    n = min(len(d) for d in durs.values())
    who = list(durs)
    mat = np.stack([durs[p][:n] for p in who])  # participants x collectives
    skew = mat.max(axis=0) - mat.min(axis=0)
    last = mat.argmin(axis=0)
    counts = Counter(who[i] for i in last.tolist())
    top, times = counts.most_common(1)[0]
    waited = int(skew[last == who.index(top)].sum())
    return {"name": name, "participants": who, "collectives": n,
            "unmatched": {p: int(len(d) - n) for p, d in durs.items() if len(d) > n},
            "skew_median_s": round(float(np.median(skew)) / 1e9, 9), "skew_max_s": round(int(skew.max()) / 1e9, 9),
            "skew_sum_s": round(int(skew.sum()) / 1e9, 9),
            "straggler": top, "straggler_last": times, "straggler_wait_s": round(waited / 1e9, 9)}


def _participants_ref(inputs: Sequence[tuple[ParseResult, NcclKernels]]) -> dict[str, pd.DataFrame]:
    """Each input's NCCL kernels (``inputs``: the parse result and its NCCL kernels), per device."""
    out: dict[str, pd.DataFrame] = {}
    for r, kernels in inputs:
        k = kernels.frame()
        dist = r.meta.get("distributed")
        rank = dist.get("rank") if isinstance(dist, Mapping) else None
        for device, g in k.groupby("device", sort=True):
            name = f"rank {rank}" if rank is not None and k["device"].nunique() == 1 else \
                f"{r.accounting.path.rsplit('/', 1)[-1]} GPU {device}"
            out[name] = g.sort_values("start_ns", kind="stable")
    return out


def collectives_ref(inputs: Sequence[tuple[ParseResult, NcclKernels]]) -> list[dict[str, Any]]:
    """:func:`collectives` over pandas group-bys and filters (the plain reference it is held equal to)."""
    parts = _participants_ref(inputs)
    if len(parts) < 2:
        return []
    names = sorted({n for g in parts.values() for n in g["name"].astype(str).unique()})
    out = []
    for name in names:
        durs = {p: (g.loc[g["name"] == name, "end_ns"] - g.loc[g["name"] == name, "start_ns"]).to_numpy(np.int64)
                for p, g in parts.items()}
        durs = {p: d for p, d in durs.items() if len(d)}
        if len(durs) < 2:
            continue
        out.append(_collective(name, durs))  # the per-collective numbers are not what the reference checks
    out.sort(key=lambda c: -c["skew_sum_s"])
    return out
