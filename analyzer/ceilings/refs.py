"""Each kernel's ceilings as a reference into the document's ``devices[]`` (docs/contract.md):
the entry most of its ceilings came from, the other entries by key, and only the values that
differ from the entry's (clock-scaled or per-kernel export ceilings)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.ceilings.per_kernel import CEILING_COLUMNS

REF_COLUMNS = (*CEILING_COLUMNS, "sm_count", "ceiling_device")


def _entry_codes(source: pd.DataFrame, ceiling_device: pd.Series, export_device: pd.Series,
                 builtin_device: pd.Series | None
                 ) -> tuple[dict[str, np.ndarray], dict[str, list[str]], np.ndarray]:
    """Per ceiling, the ``"<name>|<source>"`` key of each kernel as codes into a few distinct
    strings (no per-kernel string building): ``codes[col]``, ``texts[col]``, and one code per
    distinct combination over all ceilings."""
    codes: dict[str, np.ndarray] = {}
    texts: dict[str, list[str]] = {}
    combined = np.zeros(len(source), dtype=np.int64)
    for col in CEILING_COLUMNS:
        s = source[col].astype("object")
        name = export_device.astype("object").where(s == "export", ceiling_device.astype("object"))
        if builtin_device is not None:  # --device given: its builtin fallbacks come from another entry
            bd = builtin_device.astype("object")
            name = name.mask((s == "builtin") & bd.notna(), bd)
        cs, us = pd.factorize(s)
        cn, un = pd.factorize(name)
        pair_codes, pairs = pd.factorize((cs.astype(np.int64) + 1) * (len(un) + 1) + (cn + 1))
        words = []
        for p in np.asarray(pairs).tolist():
            i_s, i_n = divmod(int(p), len(un) + 1)
            words.append("" if i_s == 0 else f"{'' if i_n == 0 else un[i_n - 1]}|{us[i_s - 1]}")
        codes[col], texts[col] = np.asarray(pair_codes), words
        combined = pd.factorize(combined * len(words) + codes[col])[0].astype(np.int64)
    return codes, texts, combined


def ceiling_refs(values: pd.DataFrame, source: pd.DataFrame, ceiling_device: pd.Series, export_device: pd.Series,
                 sm_count: pd.Series, devices: list[dict[str, Any]], builtin_device: pd.Series | None = None
                 ) -> pd.DataFrame:
    """Per kernel, the ceilings as a reference into ``devices[]`` plus only what it does not imply.

    Column ``ceilings``: ``"<name>|<source>"`` of the entry most ceilings came from, then
    ``"; <keys>=<name>|<source>"`` for ceilings from another entry and ``"; <keys>=none"`` for
    ceilings not known (``None`` when no ceiling is known). ``peak_<class>``, ``bw_<lvl>``,
    ``sm_count`` and ``ceiling_device`` keep the kernel's value only where it differs from that
    entry's (clock-scaled or per-kernel export ceilings); NaN/None elsewhere.
    """
    idx = values.index
    codes, texts, combined = _entry_codes(source, ceiling_device, export_device, builtin_device)
    _, first, combo_codes = np.unique(combined, return_index=True, return_inverse=True)
    refs: list[str | None] = []
    primary: list[str] = []
    for row in np.asarray(first).tolist():  # distinct ceiling combinations, not kernels
        parts = [texts[col][codes[col][row]] for col in CEILING_COLUMNS]
        counts: dict[str, int] = {}
        for p in parts:
            if p:
                counts[p] = counts.get(p, 0) + 1
        if not counts:
            refs.append(None)
            primary.append("")
            continue
        top = max(counts, key=lambda k: (counts[k], -parts.index(k)))
        others: dict[str, list[str]] = {}
        for col, p in zip(CEILING_COLUMNS, parts, strict=True):
            if p != top:
                others.setdefault(p or "none", []).append(col.split("_", 1)[1])
        refs.append(top + "".join(f"; {','.join(cs)}={k}" for k, cs in others.items()))
        primary.append(top)
    out = pd.DataFrame(index=idx)
    out["ceilings"] = pd.Series(np.asarray(refs, dtype=object)[combo_codes], index=idx, dtype="object")
    entries: dict[str, dict[str, Any]] = {}
    for d in devices:
        entries.setdefault(f"{d.get('name')}|{d.get('source')}", d)
    for col in CEILING_COLUMNS:
        key = col.split("_", 1)[1]
        implied = {k: float(e["ceilings"][key]) for k, e in entries.items()
                   if isinstance(e.get("ceilings"), dict) and e["ceilings"].get(key) is not None}
        expected = np.array([implied.get(t, np.nan) for t in texts[col]], dtype="float64")[codes[col]]
        v = values[col].astype("float64")
        out[col] = v.where(v != expected)
    sms = {k: float(e["sm_count"]) for k, e in entries.items() if e.get("sm_count") is not None}
    sm = sm_count.astype("float64")
    out["sm_count"] = sm.where(sm != np.array([sms.get(p, np.nan) for p in primary], dtype="float64")[combo_codes])
    prim_name = pd.Series(np.asarray([p.rsplit("|", 1)[0] for p in primary], dtype=object)[combo_codes], index=idx)
    cdev = ceiling_device.astype("object")
    out["ceiling_device"] = cdev.where(cdev.notna() & (cdev != prim_name), None)
    return out
