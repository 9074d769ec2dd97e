"""Ceilings from a device spec (the built-in table or a ``--device`` file), per kernel row:
which spec each row gets (device name from the export or an application line, else CC + SM
count) and its peaks, compute peaks rescaled to the measured SM clock
(docs/formulas.md#ceilings; docs/research/formulas.md §7 item 6). Used by :mod:`analyzer.ceilings.per_kernel`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.ceilings.device_match import DeviceMatch, match_device
from rooftop.analyzer.ceilings.devices import DeviceSpec
from rooftop.analyzer.metrics.columns import LEVELS


def tensor_peak_key(variant: str) -> tuple[str | None, float]:
    """Device-table key and sparsity factor for an ``sm__ops_path_tensor_<variant>`` (docs/research/formulas.md §1.6, §7 item 9)."""
    factor = 2.0 if "sparsity_on" in variant else 1.0
    v = variant.replace("_sparsity_on", "").replace("_sparsity_off", "")
    if "fp64" in v:
        return "fp64_tensor", factor
    if "int8" in v:
        return "int8", factor
    if "int4" in v or "int1" in v:
        return None, factor
    if "fp8" in v or "fp6" in v or "fp4" in v:
        return "fp8", factor
    if "tf32" in v and "fp16" not in v:
        return "tf32", factor
    if "fp16_dst_fp16" in v:
        return "tensor_fp16acc", factor
    if "fp16" in v or "bf16" in v:
        return "tensor", factor
    return None, factor


def device_keys(df: pd.DataFrame, launch: pd.DataFrame, hints: dict[str, dict[str, Any]] | None = None
                 ) -> pd.DataFrame:
    """Per row: device name, what named it, CC and SM count (export first, then application-line hints)."""
    name = df["device"].astype("string") if "device" in df.columns else pd.Series(pd.NA, index=df.index, dtype="string")
    cc = df["cc"].astype("string") if "cc" in df.columns else pd.Series(pd.NA, index=df.index, dtype="string")
    sms = launch["sm_count"].round().astype("Int64")
    basis = pd.Series("device name in the export", index=df.index, dtype="string").where(name.notna())
    if hints and "input" in df.columns:
        inp = df["input"].astype("string")
        for path, h in hints.items():
            rows = inp == path
            rows = rows.fillna(False).astype(bool)
            if h.get("name"):
                take = rows & name.isna()
                name = name.mask(take, str(h["name"]))
                basis = basis.mask(take, f"application line {h.get('line')} \"{h.get('text', '')}\"")
            if h.get("cc"):
                cc = cc.mask(rows & cc.isna(), str(h["cc"]))
            if h.get("sm_count"):
                sms = sms.mask(rows & sms.isna(), int(h["sm_count"]))
    return pd.DataFrame({"name": name, "basis": basis, "cc": cc, "sms": sms}, index=df.index)


def spec_per_row(keys: pd.DataFrame, option: DeviceSpec | None
                  ) -> tuple[pd.Series, dict[int, DeviceSpec], list[tuple[DeviceMatch, str | None, list[int]]]]:
    """Row -> id of the device spec for it (``-1`` none), the specs, and each distinct match with its
    row positions (for the lint). One match per distinct (name, basis, CC, SMs)."""
    ids = pd.Series(-1, index=keys.index, dtype="int64")
    specs: dict[int, DeviceSpec] = {}
    if option is not None:
        specs[0] = option
        return pd.Series(0, index=keys.index, dtype="int64"), specs, []
    k = keys.astype("object").where(keys.notna(), None)
    codes, uniq = pd.factorize(pd.Series(list(zip(k["name"], k["basis"], k["cc"], k["sms"], strict=True)),
                                         index=keys.index, dtype="object"))
    by_name: dict[str, int] = {}
    matches: list[tuple[DeviceMatch, str | None, list[int]]] = []
    for j, (nm, basis, cc, sms) in enumerate(uniq):  # distinct devices, not kernels
        m = match_device(None if nm is None else str(nm), str(basis or ""), None if cc is None else str(cc),
                         None if sms is None else int(sms))
        rows = codes == j
        matches.append((m, None if nm is None else str(nm), [int(i) for i in np.flatnonzero(rows)]))
        if m.spec is None:
            continue
        sid = by_name.setdefault(m.spec.name, len(by_name))
        specs[sid] = m.spec
        ids = ids.mask(pd.Series(rows, index=keys.index), sid)
    return ids, specs, matches


def spec_values(ids: pd.Series, specs: dict[int, DeviceSpec], sm_hz: pd.Series, ops: pd.DataFrame
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """Ceilings from device specs per row: (values per variant/class/level, detail text, source).

    Columns are NumPy arrays filled by row mask and framed once (the per-cell ``.loc`` writes
    cost more than the whole rule on a few kernels; bench/NOTES.md, command-line start-up)."""
    idx = ids.index
    n = len(idx)
    cols = [f"peak_{c}" for c in ("fp64", "fp32", "fp16")] + [f"bw_{lvl}" for lvl in LEVELS] + \
        [f"tensor:{v}" for v in ops.columns] + ["peak_tensor_display"]
    vals = {c: np.full(n, np.nan) for c in cols}
    detail = {c: np.full(n, np.nan, dtype=object) for c in cols}
    source = np.full(n, np.nan, dtype=object)
    id_arr = ids.to_numpy()
    hz = sm_hz.to_numpy(dtype="float64", na_value=np.nan)
    for sid, spec in specs.items():
        rows = id_arr == sid
        if not rows.any():
            continue
        source[rows] = spec.source
        boost = spec.clock_mhz.get("sm")
        nan = np.full(int(rows.sum()), np.nan)
        ratio = (hz[rows] / (boost * 1e6)) if boost else nan
        t_clock = spec.clock_mhz.get("tensor", boost)
        t_ratio = (hz[rows] / (t_clock * 1e6)) if t_clock else nan
        note = f" x measured SM clock / {boost:g} MHz" if boost else ""

        def put(col: str, value: float | None, key: str, r: np.ndarray, scaled: bool, factor: float = 1.0,
                rows: np.ndarray = rows, spec: DeviceSpec = spec, note: str = note) -> None:
            if value is None or (spec.source == "user" and spec.base and key not in spec.user_keys):
                return  # a key the user file took from its base: filled from the base, labelled builtin
            v = np.full(int(rows.sum()), value * factor)
            if scaled:
                v = v * np.where(np.isnan(r), 1.0, r)
            vals[col][rows] = v
            extra = " (2:4 sparse = 2 x dense)" if factor == 2.0 else ""
            detail[col][rows] = f"{spec.name}: {spec.sources.get(key, spec.source)}{extra}" + (note if scaled else "")

        for c in ("fp64", "fp32", "fp16"):
            put(f"peak_{c}", spec.peaks.get(c), c, ratio, True)
        for lvl in LEVELS:
            # L1 and L2 are bytes per clock x the boost clock (docs/formulas.md#device-table): at the measured clock
            put(f"bw_{lvl}", spec.bandwidth.get(lvl), lvl, ratio, lvl in ("l1", "l2"))
        for v in ops.columns:
            key, factor = tensor_peak_key(v)
            peak = spec.peaks.get(key) if key else None
            if key == "tensor_fp16acc" and peak is None:
                peak, key = spec.peaks.get("tensor"), "tensor"
            put(f"tensor:{v}", peak, key or "tensor", t_ratio, True, factor)
        put("peak_tensor_display", spec.peaks.get("tensor"), "tensor", t_ratio, True)
    return (pd.DataFrame(vals, index=idx, columns=cols), pd.DataFrame(detail, index=idx, columns=cols, dtype="object"),
            pd.Series(source, index=idx, dtype="object"))
