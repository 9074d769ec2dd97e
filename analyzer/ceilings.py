"""Per-kernel ceilings (peak FLOP/s per class, bandwidth per level) with their provenance.

Order of precedence per ceiling (docs/research/formulas.md §4.3 [synthesis]: prefer ncu's own peaks):

1. ``--device`` (a built-in name or a user file) where it gives that ceiling;
2. the export: ``<metric>.peak_sustained`` x the unit's measured ``*__cycles_elapsed.avg.per_second``,
   per kernel, exactly as ncu's roofline sections draw the roofs (docs/research/formulas.md §1.1-1.6);
3. the built-in table matched by device name, else CC + SM count (:func:`analyzer.devices.lookup`),
   compute peaks rescaled to the measured SM clock when both are known (docs/research/formulas.md §7 item 6).

Columns (``CEILING_COLUMNS``): ``peak_fp64 peak_fp32 peak_fp16 peak_tensor bw_l1 bw_l2 bw_dram``.
For each, ``source`` holds ``"export" | "builtin" | "user" | None`` and ``detail`` a short text.
The L1/L2 ceilings follow the byte convention of that kernel's achieved bytes (ncu's
``lsu_writeback``/``lts2xbar`` vs NERSC's ``*_t_bytes``), as docs/research/formulas.md §7 item 1 requires.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer import metrics as M
from rooftop.analyzer.device_match import DeviceMatch, device_lint, match_device
from rooftop.analyzer.devices import DeviceSpec, lookup

PEAK_CLASSES = ("fp64", "fp32", "fp16", "tensor")
CEILING_COLUMNS = tuple(f"peak_{c}" for c in PEAK_CLASSES) + tuple(f"bw_{lvl}" for lvl in M.LEVELS)

# (FMA op, FLOPs per FMA) for the FP peaks (docs/research/formulas.md §1.2-1.4: _x2 / _x4 derived metrics)
_FMA = {"fp64": ("dfma", 2.0), "fp32": ("ffma", 2.0), "fp16": ("hfma", 4.0)}


@dataclass
class Ceilings:
    """Ceilings per kernel (aligned to the kernel table's index) and the devices behind them."""

    values: pd.DataFrame
    source: pd.DataFrame
    detail: pd.DataFrame
    device_name: pd.Series
    devices: list[dict[str, Any]] = field(default_factory=list)
    tensor_missing_peak: pd.Series | None = None  # variants with work but no known peak
    builtin_name: pd.Series | None = None  # per kernel, the table device behind its ``builtin`` ceilings
    lint: list[dict[str, Any]] = field(default_factory=list)  # device-assumed/-ambiguous/-unknown/-contradiction
    assumed: pd.Series | None = None  # per kernel, the evidence sentence on the device assumed


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


def _export_fp_peaks(df: pd.DataFrame, sm_hz: pd.Series) -> dict[str, tuple[pd.Series, pd.Series]]:
    out = {}
    for cls, (op, x) in _FMA.items():
        recipes = (
            M.Recipe((f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained",), x),
            M.Recipe((f"derived__sm__sass_thread_inst_executed_op_{op}_pred_on_x{int(x)}",)),
        )
        per_cycle, src = M.resolve(df, recipes)
        out[cls] = (per_cycle * sm_hz, src.where(src.isna(), src + " x sm__cycles_elapsed.avg.per_second"))
    return out


def _export_bw(df: pd.DataFrame, cc: pd.Series, sm_hz: pd.Series
               ) -> dict[str, dict[str, tuple[pd.Series, pd.Series]]]:
    """level -> convention -> (bytes/s ceiling, description)."""
    clocks: dict[str, pd.Series] = {}  # each unit's clock once (the L1 has four recipes)

    def clock(unit: str) -> pd.Series:
        if unit not in clocks:
            hz, _ = M.clock_hz(df, unit)
            clocks[unit] = hz.fillna(sm_hz) if unit == "l1tex" else hz
        return clocks[unit]

    def per(recipes: tuple[M.Recipe, ...], unit: str) -> tuple[pd.Series, pd.Series]:
        per_cycle, src = M.resolve(df, recipes)
        return per_cycle * clock(unit), src.where(src.isna(), src + f" x {unit}__cycles_elapsed.avg.per_second")

    dram = _dram_peak(df, per((M.Recipe(("dram__bytes.sum.peak_sustained",)),), "dram"))
    l2 = per((M.Recipe(("lts__lts2xbar_cycles_active.sum.peak_sustained",), M.L2_BYTES_PER_CYCLE),
              M.Recipe(("derived__lts__lts2xbar_bytes.sum.peak_sustained",))), "lts")
    l2n = per((M.Recipe(("lts__t_bytes.sum.peak_sustained",)),), "lts")
    l1_by = {}
    for k, name in (("lgds", "l1tex__lsu_writeback_active_mem_lgds"), ("lg", "l1tex__lsu_writeback_active_mem_lg"),
                    ("all", "l1tex__lsu_writeback_active")):
        dname = name.replace("l1tex__lsu_writeback_active", "derived__l1tex__lsu_writeback_bytes")
        l1_by[k] = per((M.Recipe((f"{name}.sum.peak_sustained",), M.L1_BYTES_PER_CYCLE),
                        M.Recipe((f"{dname}.sum.peak_sustained",))), "l1tex")
    prefer = M.l1_order(cc)
    l1v, l1s = pd.Series(np.nan, index=df.index), pd.Series(None, index=df.index, dtype="object")
    for only_preferred in (True, False):
        for k in ("lgds", "lg", "all"):
            v, s = l1_by[k]
            take = l1v.isna() & v.notna() & (prefer[k] if only_preferred else True)
            l1v, l1s = l1v.mask(take, v), l1s.mask(take, s)
    l1n = per((M.Recipe(("l1tex__t_bytes.sum.peak_sustained",)),), "l1tex")
    return {"dram": {"ncu": dram}, "l2": {"ncu": l2, "nersc": l2n}, "l1": {"ncu": (l1v, l1s), "nersc": l1n}}


def _dram_peak(df: pd.DataFrame, ncu: tuple[pd.Series, pd.Series]) -> tuple[pd.Series, pd.Series]:
    """DRAM ceiling: ncu's ``dram__bytes.sum.peak_sustained`` x DRAM cycles/s; else from the bus width.

    * legacy ncu (2019-2020: ``dram__frequency``): bus width / 8 bytes x ``dram__frequency``, the peak
      behind its ``fbpa__sol_pct`` / ``dram__read_pct + dram__write_pct``;
    * otherwise bus width / 4 bytes per DRAM cycle (two transfers per cycle; equal to
      ``dram__bytes.sum.peak_sustained`` on every corpus report that has both) x the measured
      ``dram__cycles_elapsed.avg.per_second``. docs/formulas.md#ceilings.
    """
    v, s = ncu
    bus = M.column(df, "device__attribute_global_memory_bus_width")
    legacy_hz = M.column(df, "dram__frequency")
    legacy = bus / 8.0 * legacy_hz
    take = v.isna() & legacy.notna() & (legacy > 0)
    v = v.mask(take, legacy)
    s = s.mask(take, "device__attribute_global_memory_bus_width / 8 B x dram__frequency (legacy ncu's DRAM peak)")
    modern = bus / 4.0 * M.column(df, "dram__cycles_elapsed.avg.per_second")
    take = v.isna() & modern.notna() & (modern > 0)
    v = v.mask(take, modern)
    s = s.mask(take, "device__attribute_global_memory_bus_width / 4 B x dram__cycles_elapsed.avg.per_second")
    return v, s


def _device_keys(df: pd.DataFrame, launch: pd.DataFrame, hints: dict[str, dict[str, Any]] | None = None
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


def _spec_per_row(keys: pd.DataFrame, option: DeviceSpec | None
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


def _spec_values(ids: pd.Series, specs: dict[int, DeviceSpec], sm_hz: pd.Series, ops: pd.DataFrame
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """Ceilings from device specs per row: (values per variant/class/level, detail text, source).

    Columns are NumPy arrays filled by row mask and framed once (the per-cell ``.loc`` writes
    cost more than the whole rule on a few kernels; bench/NOTES.md, command-line start-up)."""
    idx = ids.index
    n = len(idx)
    cols = [f"peak_{c}" for c in ("fp64", "fp32", "fp16")] + [f"bw_{lvl}" for lvl in M.LEVELS] + \
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
        for lvl in M.LEVELS:
            put(f"bw_{lvl}", spec.bandwidth.get(lvl), lvl, ratio, lvl == "l1")
        for v in ops.columns:
            key, factor = tensor_peak_key(v)
            peak = spec.peaks.get(key) if key else None
            if key == "tensor_fp16acc" and peak is None:
                peak, key = spec.peaks.get("tensor"), "tensor"
            put(f"tensor:{v}", peak, key or "tensor", t_ratio, True, factor)
        put("peak_tensor_display", spec.peaks.get("tensor"), "tensor", t_ratio, True)
    return (pd.DataFrame(vals, index=idx, columns=cols), pd.DataFrame(detail, index=idx, columns=cols, dtype="object"),
            pd.Series(source, index=idx, dtype="object"))


def _cells(values: pd.Series, take: np.ndarray) -> np.ndarray:
    """The selected cells as objects, missing ones as NaN (as a ``.loc`` write into an object column
    stores them)."""
    out = values.to_numpy(dtype=object)[take]
    missing = pd.isna(out)
    if missing.any():
        out[missing] = np.nan
    return out


def resolve_ceilings(df: pd.DataFrame, *, dur: pd.Series, cc: pd.Series, launch: pd.DataFrame,
                     tensor_ops: pd.DataFrame, bytes_conv: pd.DataFrame, option: DeviceSpec | None = None,
                     hints: dict[str, dict[str, Any]] | None = None) -> Ceilings:
    """Every kernel's ceilings, each with its source (see the module docstring for the order)."""
    idx = df.index
    n = len(idx)
    sm_hz, _ = M.clock_hz(df, "sm")
    # per ceiling a NumPy column, framed once at the end (bench/NOTES.md, command-line start-up)
    val: dict[str, np.ndarray] = {col: np.full(n, np.nan) for col in CEILING_COLUMNS}
    src: dict[str, np.ndarray] = {col: np.full(n, np.nan, dtype=object) for col in CEILING_COLUMNS}
    det: dict[str, np.ndarray] = {col: np.full(n, np.nan, dtype=object) for col in CEILING_COLUMNS}

    def fill(col: str, v: pd.Series, src_word: str | pd.Series, text: pd.Series) -> None:
        arr = v.to_numpy(dtype="float64", na_value=np.nan)
        take = np.isnan(val[col]) & (arr > 0)  # NaN > 0 is False: a value, and a positive one
        if take.any():
            val[col][take] = arr[take]
            src[col][take] = _cells(src_word, take) if isinstance(src_word, pd.Series) else src_word
            det[col][take] = _cells(text, take)

    # 1. --device override
    keys = _device_keys(df, launch, hints)
    opt_ids, opt_specs, _ = _spec_per_row(keys, option) if option else (None, {}, [])
    if option is not None and opt_ids is not None:
        o_vals, o_detail, o_src = _spec_values(opt_ids, opt_specs, sm_hz, tensor_ops)
        for col in CEILING_COLUMNS:
            if col in o_vals:
                fill(col, o_vals[col], o_src, o_detail[col])

    # 2. export
    fp = _export_fp_peaks(df, sm_hz)
    for cls, (v, s) in fp.items():
        fill(f"peak_{cls}", v, "export", s)
    bw = _export_bw(df, cc, sm_hz)
    for lvl, by_conv in bw.items():
        conv = bytes_conv[lvl]
        for cname, (v, s) in by_conv.items():
            # t_bytes: the export's own *_t_bytes.peak_sustained ceilings (the "nersc" entry's metrics)
            match = (conv == cname) | (conv.isna() & (cname == "ncu")) | ((conv == "t_bytes") & (cname == "nersc"))
            fill(f"bw_{lvl}", v.where(match), "export", s)

    # 3. built-in table: the user file's base device, else the device the export's hints name
    base = lookup(option.base) if option is not None and option.base else None
    matches: list[tuple[DeviceMatch, str | None, list[int]]] = []
    if base is not None:
        ids, specs = pd.Series(0, index=idx, dtype="int64"), {0: base}
    elif option is not None and option.source == "builtin":
        ids, specs = pd.Series(-1, index=idx, dtype="int64"), {}  # --device decides; no other entry mixes in
    else:
        ids, specs, matches = _spec_per_row(keys, None)
    b_vals, b_detail, b_src = _spec_values(ids, specs, sm_hz, tensor_ops)
    for col in CEILING_COLUMNS:
        if col in b_vals:
            fill(col, b_vals[col], b_src, b_detail[col])

    # tensor: serial-mix peak over the variants that did work (docs/research/formulas.md §1.6: per-variant peaks)
    t_val, t_src, t_det, t_missing = _tensor_peak(df, sm_hz, tensor_ops, (o_vals, o_detail, o_src) if option else None,
                                                  (b_vals, b_detail, b_src))
    fill("peak_tensor", t_val, t_src, t_det)

    values = pd.DataFrame(val, index=idx, columns=list(CEILING_COLUMNS))
    source = pd.DataFrame(src, index=idx, columns=list(CEILING_COLUMNS), dtype="object")
    detail = pd.DataFrame(det, index=idx, columns=list(CEILING_COLUMNS), dtype="object")
    dev_name = pd.Series(None, index=idx, dtype="object")
    if option is not None:
        dev_name[:] = option.name
    else:
        names = {sid: s.name for sid, s in specs.items()}
        dev_name = ids.map(names).astype("object")
        if "device" in df.columns:
            exported = df["device"].astype("object").where(df["device"].notna(), None)
            dev_name = dev_name.where(dev_name.notna(), exported)
    devices = _used_devices(df, values, source, detail, specs, ids, option, launch["sm_count"])
    builtin_name = ids.map({sid: s.name for sid, s in specs.items()}).astype("object")
    lint, assumed = device_lint(keys, matches, option)
    return Ceilings(values, source, detail, dev_name.where(dev_name.notna(), None), devices, t_missing,
                    builtin_name.where(builtin_name.notna(), None), lint, assumed)


def _tensor_peak(df: pd.DataFrame, sm_hz: pd.Series, ops: pd.DataFrame,
                 opt: tuple[pd.DataFrame, pd.DataFrame, pd.Series] | None,
                 builtin: tuple[pd.DataFrame, pd.DataFrame, pd.Series]
                 ) -> tuple[pd.Series, pd.Series, pd.Series, pd.Series]:
    """Σ ops / Σ (ops_v / peak_v) over variants with work; the FP16 dense peak when none did work."""
    idx = df.index
    num = pd.Series(0.0, index=idx)
    den = pd.Series(0.0, index=idx)
    all_export = pd.Series(True, index=idx)
    missing = pd.Series("", index=idx, dtype="object")
    for v in ops.columns:
        work = ops[v].fillna(0.0)
        has = work > 0
        if not has.any():
            continue
        peak_v = pd.Series(np.nan, index=idx)
        is_export = pd.Series(False, index=idx)
        if opt is not None:
            peak_v = peak_v.fillna(opt[0][f"tensor:{v}"])
        col = f"sm__ops_path_tensor_{v}.sum.peak_sustained"
        exp = M.column(df, col) * sm_hz
        is_export = peak_v.isna() & exp.notna()
        peak_v = peak_v.fillna(exp)
        peak_v = peak_v.fillna(builtin[0][f"tensor:{v}"])
        all_export &= ~has | is_export
        unknown = has & (peak_v.isna() | (peak_v <= 0))
        missing = missing.mask(unknown, missing + v + " ")
        num = num + work.where(has, 0.0)
        den = den + (work / peak_v).where(has, 0.0)
    did_work = num > 0
    val = (num / den).where(did_work & (missing == ""))
    # nothing ran on the tensor cores: show the dense FP16/BF16 roof (export variant, else table)
    disp = pd.Series(np.nan, index=idx)
    disp_src = pd.Series(None, index=idx, dtype="object")
    for v in ("src_fp16_dst_fp32", "src_fp16", "src_bf16_dst_fp32", "src_fp16_bf16_tf32_dst_fp32",
              "src_fp16_dst_fp32_sparsity_off", "src_bf16_dst_fp32_sparsity_off"):
        e = M.column(df, f"sm__ops_path_tensor_{v}.sum.peak_sustained") * sm_hz
        take = disp.isna() & e.notna()
        disp, disp_src = disp.mask(take, e), disp_src.mask(take, f"sm__ops_path_tensor_{v}.sum.peak_sustained x sm__cycles_elapsed.avg.per_second")
    val = val.where(did_work, disp)
    src = pd.Series(None, index=idx, dtype="object")
    src = src.mask(did_work & all_export & val.notna(), "export").mask(~did_work & disp.notna(), "export")
    det = pd.Series(None, index=idx, dtype="object")
    det = det.mask(did_work & all_export & val.notna(), "sm__ops_path_tensor_<variant>.sum.peak_sustained x sm__cycles_elapsed.avg.per_second (ops-weighted over variants)")
    det = det.mask(~did_work & disp.notna(), disp_src)
    other = val.notna() & src.isna()
    fallback_src = (opt[2] if opt is not None else builtin[2])
    src = src.mask(other, fallback_src.where(fallback_src.notna(), builtin[2]))
    det = det.mask(other, "device table tensor peaks (ops-weighted over variants)")
    # no work, no export peak: the table's dense FP16/BF16 roof
    tbl = (opt[0]["peak_tensor_display"] if opt is not None else pd.Series(np.nan, index=idx)).fillna(builtin[0]["peak_tensor_display"])
    tbl_det = (opt[1]["peak_tensor_display"] if opt is not None else pd.Series(None, index=idx, dtype="object")).fillna(builtin[1]["peak_tensor_display"])
    take = val.isna() & ~did_work & tbl.notna()
    val = val.mask(take, tbl)
    src = src.mask(take, fallback_src.where(fallback_src.notna(), builtin[2]))
    det = det.mask(take, tbl_det)
    return val, src, det, missing.str.strip().replace("", None)


def _used_devices(df: pd.DataFrame, values: pd.DataFrame, source: pd.DataFrame, detail: pd.DataFrame,
                  specs: dict[int, DeviceSpec], ids: pd.Series, option: DeviceSpec | None,
                  sms: pd.Series) -> list[dict[str, Any]]:
    """Contract ``devices[]``: the option / built-in specs used, plus one ``export`` entry per
    exported device name holding the median of its kernels' export ceilings."""
    out: list[dict[str, Any]] = []
    if option is not None:
        out.append(option.as_contract())
    used_builtin = set(ids[(source == "builtin").any(axis=1)].unique())
    out += [s.as_contract() for sid, s in specs.items() if sid in used_builtin and s.source == "builtin"]
    exp_rows = (source == "export").any(axis=1)
    if exp_rows.any():
        name = df["device"].astype("object").where(df["device"].notna(), "unnamed device") if "device" in df.columns \
            else pd.Series("unnamed device", index=df.index)
        cc = df["cc"] if "cc" in df.columns else pd.Series(None, index=df.index)
        for nm in name[exp_rows].unique():
            rows = exp_rows & (name == nm)
            peaks: dict[str, float] = {}
            bws: dict[str, float] = {}
            srcs: dict[str, str] = {}
            for col in CEILING_COLUMNS:
                sel = rows & (source[col] == "export")
                if not sel.any():
                    continue
                key = col.split("_", 1)[1]
                med = float(values.loc[sel, col].median())
                (peaks if col.startswith("peak_") else bws)[key] = med
                srcs[key] = str(detail.loc[sel, col].iloc[0]) + " (median over kernels)"
            ccs = cc[rows].dropna()
            smv = sms[rows].dropna()
            spec = DeviceSpec(name=str(nm), source="export", sm_count=int(smv.iloc[0]) if len(smv) else None,
                              cc=str(ccs.iloc[0]) if len(ccs) else None, peaks=peaks, bandwidth=bws, sources=srcs)
            out.append(spec.as_contract())
    return out


REF_COLUMNS = (*CEILING_COLUMNS, "sm_count", "ceiling_device")


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
    n = len(idx)
    # Per ceiling, the "<name>|<source>" key of each kernel as codes into a few distinct strings
    # (no per-kernel string building): codes[col], texts[col].
    codes: dict[str, np.ndarray] = {}
    texts: dict[str, list[str]] = {}
    combined = np.zeros(n, dtype=np.int64)
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
