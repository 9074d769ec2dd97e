"""Entities of ``dcgmi dmon`` rows and the sample columns they give (docs/formulas.md#inputs).

``GPU n`` -> gpu ``n``; ``GPU-I n`` -> mig ``n`` (its gpu is found per tick, see
:mod:`rooftop.parsers.dcgm.dmon.ticks`); ``GPU-CI n`` -> mig ``ci<n>``; ``GPU g LINK l`` -> gpu ``g``,
field suffix ``[link l]``; other entities (``Switch 0``, ``CPU 1``) -> gpu ``"Switch 0"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rooftop.parsers.dcgm.dmon.scan import FAST_KINDS, KIND_STRIDE, MAX_ID_DIGITS

ENTITY = re.compile(
    r"^(?P<kind>GPU-I|GPU-CI|GPU|Switch|CPU Core|CPU|CX|vGPU|SW)\s+(?P<id>\d+)(?:\s+LINK\s+(?P<link>\d+))?$"
)


@dataclass(frozen=True)
class EntityArrays:
    """Per entity id: its sample columns and traits, as arrays for numpy/Arrow gathers."""

    gpu: pa.Array  # string
    mig: pa.Array  # string
    has_mig: np.ndarray  # bool
    isgpu: np.ndarray  # bool: a ``GPU n`` row (no link)
    inst: np.ndarray  # bool: a ``GPU-I``/``GPU-CI`` row
    suf: np.ndarray  # int64: code of the field suffix (0: none)
    suf_names: np.ndarray  # object: the suffixes by code


class Entities:
    """Entity names seen so far, numbered in order of appearance."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self._fast: dict[int, int] = {}  # fast-row entity key (parsers/dcgm/dmon/scan.py) -> entity id
        self._gpu: list[str | None] = []
        self._mig: list[str | None] = []
        self._suf: list[str] = []
        self._isgpu: list[bool] = []
        self._inst: list[bool] = []
        self._cache: tuple[int, EntityArrays | None] = (-1, None)

    def __len__(self) -> int:
        return len(self.ids)

    def id(self, name: str) -> int:
        """The id of an entity name (``GPU 0``, ``GPU 0 LINK 3``, ``Switch 1``)."""
        e = self.ids.get(name)
        if e is not None:
            return e
        e = self.ids[name] = len(self.ids)
        gpu = mig = None
        suf = ""
        isgpu = inst = False
        em = ENTITY.match(name)
        if em is not None:
            kind, eid, link = em.group("kind"), em.group("id"), em.group("link")
            if kind == "GPU":
                gpu, isgpu = eid, link is None
                suf = f"[link {link}]" if link is not None else ""
            elif kind in ("GPU-I", "GPU-CI"):
                inst, mig = True, (eid if kind == "GPU-I" else f"ci{eid}")
            else:
                gpu = f"{kind} {eid}" + (f" LINK {link}" if link else "")
        self._gpu.append(gpu)
        self._mig.append(mig)
        self._suf.append(suf)
        self._isgpu.append(isgpu)
        self._inst.append(inst)
        return e

    def fast_id(self, key: int) -> int:
        """The id of a fast row's entity key (kind, digits and number: parsers/dcgm/dmon/scan.py)."""
        e = self._fast.get(key)
        if e is None:
            digits, num = divmod(key, 10**MAX_ID_DIGITS)
            kind, width = divmod(digits, KIND_STRIDE)
            e = self._fast[key] = self.id(f"{FAST_KINDS[kind]} {num:0{width}d}")
        return e

    def arrays(self) -> EntityArrays:
        """Per-entity columns as arrays (rebuilt when entities were added)."""
        n, cached = self._cache
        if cached is None or n != len(self.ids):
            sufs = ["", *sorted(set(self._suf) - {""})]  # code 0: no suffix
            cached = EntityArrays(
                gpu=pa.array(self._gpu, pa.string()),
                mig=pa.array(self._mig, pa.string()),
                has_mig=np.array([m is not None for m in self._mig], dtype=bool),
                isgpu=np.array(self._isgpu, dtype=bool),
                inst=np.array(self._inst, dtype=bool),
                suf=np.array([sufs.index(s) for s in self._suf], dtype="int64"),
                suf_names=np.array(sufs, dtype=object),
            )
            self._cache = (len(self.ids), cached)
        return cached
