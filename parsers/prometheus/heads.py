"""Heads of Prometheus sample lines (``name{labels}``): field name and ID, the label columns rooftop
keeps, validity; each distinct head parsed once per file (dcgm-exporter repeats every head in every
scrape).

Labels (drift handled, docs/formulas.md#inputs): host ``Hostname``|``hostname``; uuid
``UUID``|``uuid``|``gpu_uuid``; PCI bus id ``pci_bus_id`` (normalised, :mod:`parsers.pci`); model ``modelName``|``model_name``; MIG ``GPU_I_ID``/``GPU_I_PROFILE``;
workload ``exported_namespace``/``exported_pod``/``exported_container`` preferred over
``namespace``/``pod``/``container``; job ``hpc_job``. Empty and ``<<<NULL>>>``-style values are null.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.pci import normalise_array
from rooftop.parsers.prometheus.grammar import NAME_OK
from rooftop.parsers.prometheus.scan import bool_mask

# output column -> label names, first present wins
LABELS: dict[str, tuple[str, ...]] = {
    "host": ("Hostname", "hostname"),
    "gpu": ("gpu",),
    "uuid": ("UUID", "uuid", "gpu_uuid"),
    "pci_bus_id": ("pci_bus_id",),
    "model": ("modelName", "model_name"),
    "mig": ("GPU_I_ID",),
    "mig_profile": ("GPU_I_PROFILE",),
    "namespace": ("exported_namespace", "namespace"),
    "pod": ("exported_pod", "pod"),
    "container": ("exported_container", "container"),
    "job": ("hpc_job",),
}


def label_regex(name: str) -> str:
    return r'(?:^|[,{ \t*])' + name + r'="(?P<v>(?:[^"\\]|\\.)*)"'


@dataclass
class Heads:
    """Parsed heads, one element per head: name (string array), field ID (-1: unknown), valid
    (``DCGM_FI_[A-Za-z0-9_]+`` name and a closed label block), label columns, ``<<<`` sentinels."""

    name: pa.Array
    fid: np.ndarray
    valid: np.ndarray
    labels: dict[str, pa.Array]
    sentinels: np.ndarray

    def take(self, idx: np.ndarray) -> Heads:
        t = pa.array(idx, pa.int64())
        return Heads(self.name.take(t), self.fid[idx], self.valid[idx],
                     {c: a.take(t) for c, a in self.labels.items()}, self.sentinels[idx])

    def concat(self, more: Heads) -> Heads:
        return Heads(pa.concat_arrays([self.name, more.name]), np.concatenate([self.fid, more.fid]),
                     np.concatenate([self.valid, more.valid]),
                     {c: pa.concat_arrays([a, more.labels[c]]) for c, a in self.labels.items()},
                     np.concatenate([self.sentinels, more.sentinels]))


SMALL_BLOCKS = 64  # at most this many distinct label blocks: read with `re` (no per-call Arrow cost)


@lru_cache(maxsize=64)
def _label_re(name: str) -> re.Pattern[str]:
    return re.compile(label_regex(name))


def _label_values_small(blocks: list[str | None], names: tuple[str, ...], seen: set[str]) -> pa.Array:
    """:func:`label_values` for a few blocks, one ``re`` search each: ~40 Arrow calls cost more
    than the work when a file holds a handful of GPUs (many small files; bench/many_files.py).
    Same rules: the first name present wins, ``\\x`` unescaped, empty and ``<<<...>>>`` null."""
    out: list[str | None] = []
    for block in blocks:
        value = None
        for name in names:
            m = _label_re(name).search(block) if block is not None else None
            if m is not None:
                seen.add(name)
                if value is None:
                    value = m.group("v")
        if value is not None and "\\" in value:
            value = re.sub(r"\\(.)", r"\1", value)
        if value == "" or (value is not None and value.startswith("<<<") and value.endswith(">>>")):
            value = None
        out.append(value)
    return pa.array(out, pa.string())


def label_values(blocks: pa.Array, names: tuple[str, ...], seen: set[str]) -> pa.Array:
    """One label's values over ``blocks`` (a small array: distinct label blocks); names found go
    to ``seen``."""
    if len(blocks) <= SMALL_BLOCKS:
        return _label_values_small(blocks.to_pylist(), names, seen)
    out: pa.Array | None = None
    for name in names:
        got = pc.struct_field(pc.extract_regex(blocks, label_regex(name)), "v")
        if pc.any(pc.is_valid(got)).as_py():
            seen.add(name)
        out = got if out is None else pc.coalesce(out, got)
    assert out is not None
    if pc.any(pc.match_substring(out, "\\")).as_py():
        out = pc.replace_substring_regex(out, r"\\(.)", r"\1")
    sent = pc.fill_null(pc.and_(pc.starts_with(out, "<<<"), pc.ends_with(out, ">>>")), False)
    empty = pc.or_(pc.fill_null(pc.equal(out, ""), False), sent)
    return pc.if_else(empty, pa.scalar(None, pa.string()), out)


def parse_heads(heads: pa.Array, seen: set[str]) -> Heads:
    """Split each distinct ``name{labels}`` head: name, field ID, label columns, validity."""
    brace = np.asarray(pc.find_substring(heads, "{").to_numpy(zero_copy_only=False)) >= 0
    sp = pc.split_pattern(heads, "{", max_splits=1)
    name = pc.list_element(sp, 0)
    sp = pc.if_else(pa.array(brace), sp, pa.scalar(["", "}"], sp.type))  # label-less: empty block
    labels = pc.utf8_slice_codeunits(pc.list_element(sp, 1), 0, -1)
    names = name.to_pylist()
    valid = np.array([bool(NAME_OK.match(n or "")) for n in names], dtype=bool)
    valid &= ~brace | bool_mask(pc.ends_with(heads, "}"))
    fid = np.array([-1 if (i := F.name_id(n or "")) is None else i for n in names], dtype="int32")
    blocks = pc.dictionary_encode(labels)  # one label block per GPU, repeated for every field
    bidx = blocks.indices
    lcols = {col: label_values(blocks.dictionary, lab_names, seen).take(bidx) for col, lab_names in LABELS.items()}
    lcols["pci_bus_id"] = normalise_array(lcols["pci_bus_id"])  # NVML's form (parsers/pci.py)
    sentinels = np.asarray(pc.count_substring(blocks.dictionary, "<<<").to_numpy(zero_copy_only=False),
                           dtype="int64")[np.asarray(bidx, dtype="int64")]
    return Heads(name, fid, valid, lcols, sentinels)


@dataclass
class HeadCache:
    """Every distinct head of a file parsed once: later chunks repeat the first chunk's heads."""

    seen: set[str] = field(default_factory=set)  # label names found
    ids: dict[str, int] = field(default_factory=dict)  # head -> row in ``parsed``
    parsed: Heads | None = None

    def lookup(self, heads: pa.Array) -> Heads:
        """:func:`parse_heads` of ``heads`` (a chunk's distinct heads), from the cache."""
        keys = heads.to_pylist()
        if not keys:
            return parse_heads(heads, self.seen)
        new = [k for k in dict.fromkeys(keys) if k not in self.ids]
        if new:
            h = parse_heads(pa.array(new, pa.string()), self.seen)
            for k in new:
                self.ids[k] = len(self.ids)
            self.parsed = h if self.parsed is None else self.parsed.concat(h)
        assert self.parsed is not None
        return self.parsed.take(np.fromiter((self.ids[k] for k in keys), dtype=np.int64, count=len(keys)))
