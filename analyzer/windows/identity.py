"""One identity per physical GPU and a MIG GPU counted once (docs/formulas.md#windows, "GPU identity"
and "MIG").

* Physical GPU: its UUID (``GPU-<hex>`` as NVML prints it); a window without one is its PCI bus id
  on its host (``host/pci 00000000:3B:00.0``, :mod:`rooftop.parsers.pci`), else ``host/index``
  (without a bus id, the one bus id its host + index carries elsewhere), each replaced by the one
  UUID it carries elsewhere when that is exactly one. Inputs that
  name no host get the input as host at ingest (``input:<name>#<tag>``), so two machines' GPU 0 are
  never one GPU. A MIG instance is part of its physical GPU, never a GPU of its own.
* GPU-time share of a window (``gpu_share``): 1 for a GPU without MIG; a MIG instance its compute
  slices ``g/n`` (``n`` = 7, A30: 4) from its profile, instances without a profile an equal part of
  what the known ones leave; the parent GPU's own windows (values of the whole GPU, beside its
  instances) the slices no instance holds, labelled ``unknown`` with "MIG: k of n slices active" and
  never a bound. So a physical GPU's shares sum to 1: its GPU-hours are its covered time, once.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

_UUID = re.compile(r"^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_MIG_G = re.compile(r"^(\d+)g\.(\d+)gb", re.IGNORECASE)
_MODEL_GB = re.compile(r"(\d+)\s*GB", re.IGNORECASE)


def _col(w: pd.DataFrame, c: str) -> np.ndarray:
    if c not in w.columns:
        return np.full(len(w), None, dtype=object)
    v = w[c].astype("object").to_numpy()
    return np.array([x if isinstance(x, str) and x else None for x in v], dtype=object)


def physical_ids(w: pd.DataFrame) -> np.ndarray:
    """The physical GPU of each window (object array of str): UUID, else PCI bus id on its host,
    else host/index, else the input itself (see module)."""
    host, gpu, uuid, bus = _col(w, "host"), _col(w, "gpu"), _col(w, "uuid"), _col(w, "pci_bus_id")
    hg = np.array([f"{h or '(none)'}/{g or '-'}" for h, g in zip(host, gpu, strict=True)], dtype=object)
    hb = np.array([None if b is None else f"{h or '(none)'}/pci {b}" for h, b in zip(host, bus, strict=True)],
                  dtype=object)
    valid = np.array([u is not None and bool(_UUID.match(u)) for u in uuid], dtype=bool)
    # a host's bus id (else host/index) -> its one UUID elsewhere (several: a swapped GPU, keep the key)
    own = np.where(hb != None, hb, hg)  # noqa: E711 - elementwise on an object array
    one_uuid = _only(own[valid], uuid[valid])
    # host/index without a bus id -> the one bus id that host/index carries elsewhere
    with_bus = hb != None  # noqa: E711
    one_bus = _only(hg[with_bus], hb[with_bus])
    out = []
    for u, ok, k, b in zip(uuid, valid, hg, hb, strict=True):
        if ok:
            out.append(u)
            continue
        key = b if b is not None else one_bus.get(k, k)
        out.append(one_uuid.get(key, key))
    return np.array(out, dtype=object)


def _only(keys: np.ndarray, values: np.ndarray) -> dict[str, str]:
    """``key -> value`` for the keys paired with exactly one distinct value."""
    if not len(keys):
        return {}
    pairs = pd.DataFrame({"k": keys, "v": values}).drop_duplicates()
    counts = pairs.groupby("k")["v"].transform("size")
    return dict(zip(pairs["k"][counts == 1], pairs["v"][counts == 1], strict=True))


def slices_of(model: Any) -> int:
    """Compute slices of a MIG-capable GPU: 4 on A30, else 7 (A100, H100, H200, B200)."""
    return 4 if isinstance(model, str) and "A30" in model.upper() else 7


def memory_share(profile: Any, model: Any) -> float | None:
    """Share of the GPU's DRAM and L2 bandwidth a MIG instance owns: its memory slices, the profile's
    memory over the GPU's (A100-40GB: 1g.5gb = 1/8, 3g.20gb = 4/8; A30: 1g.6gb = 1/4; NVIDIA MIG
    user guide, "Supported profiles"); None when the profile or the GPU's memory is unknown."""
    if not isinstance(profile, str):
        return None
    m = _MIG_G.match(profile.strip())
    if not m:
        return None
    total = 24.0 if isinstance(model, str) and "A30" in model.upper() else None
    if total is None and isinstance(model, str):
        g = _MODEL_GB.search(model)
        total = float(g.group(1)) if g else None
    if not total:
        return None
    return min(1.0, int(m.group(2)) / total)


def gpu_shares(w: pd.DataFrame, compute_share: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """Per window: its share of its physical GPU's time (``gpu_share``), whether it is a MIG parent
    window (whole-GPU values beside instances), and the parent's "MIG: k of n slices active" text.

    ``compute_share``: each window's ``g/n`` from its MIG profile (1.0 where there is none)."""
    n = len(w)
    share = np.ones(n, dtype="float64")
    parent = np.zeros(n, dtype=bool)
    text: list[str | None] = [None] * n
    if not n or "mig" not in w.columns:
        return share, parent, text
    phys = physical_ids(w)
    mig = _col(w, "mig")
    profiles = _col(w, "mig_profile")
    models = _col(w, "model")
    is_inst = np.array([m is not None for m in mig], dtype=bool)
    if not is_inst.any():
        return share, parent, text
    has_profile = np.array([isinstance(p, str) and bool(_MIG_G.match(p.strip())) for p in profiles], dtype=bool)
    inst = pd.DataFrame({"p": phys[is_inst], "m": mig[is_inst], "s": np.where(has_profile, compute_share, np.nan)[is_inst],
                         "g": [int(_MIG_G.match(str(p).strip()).group(1)) if k else np.nan  # type: ignore[union-attr]
                               for p, k in zip(profiles[is_inst], has_profile[is_inst], strict=True)],
                         "model": models[is_inst]})
    per = inst.groupby(["p", "m"], sort=False).agg(s=("s", "max"), g=("g", "max"), model=("model", "first"))
    per = per.reset_index()
    known = per.groupby("p")["s"].sum(min_count=1).fillna(0.0)
    unknown_n = per["s"].isna().groupby(per["p"]).sum()
    left = (1.0 - known).clip(lower=0.0)
    each_unknown = (left / unknown_n.where(unknown_n > 0)).fillna(0.0)
    per["share"] = per["s"].fillna(per["p"].map(each_unknown))
    inst_share = dict(zip(zip(per["p"], per["m"], strict=True), per["share"], strict=True))
    used = per.groupby("p")["share"].sum()
    n_inst = per.groupby("p").size()
    g_sum = per.groupby("p")["g"].sum(min_count=1)
    all_known = unknown_n == 0
    model_of = per.groupby("p")["model"].first()
    for i in np.flatnonzero(is_inst):
        share[i] = inst_share[(phys[i], mig[i])]
    for i in np.flatnonzero(~is_inst):
        p = phys[i]
        if p not in used.index:
            continue
        parent[i] = True
        share[i] = max(0.0, 1.0 - float(used[p]))
        slices = slices_of(model_of[p] or models[i])
        text[i] = (f"MIG: {int(g_sum[p])} of {slices} slices active ({int(n_inst[p])} instance(s)); the parent's "
                   "values are the whole GPU's, its work is in the instances' windows: not labelled"
                   if bool(all_known[p]) else
                   f"MIG: {int(n_inst[p])} instance(s), profiles unknown (each counted an equal part of the GPU); "
                   "the parent's values are the whole GPU's, its work is in the instances' windows: not labelled")
    return share, parent, text
