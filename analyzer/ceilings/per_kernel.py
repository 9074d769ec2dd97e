"""Per-kernel ceilings (peak FLOP/s per class, bandwidth per level) with their provenance.

Order of precedence per ceiling (docs/research/formulas.md §4.3 [synthesis]: prefer ncu's own peaks):

1. ``--device`` (a built-in name or a user file) where it gives that ceiling;
2. the export: ``<metric>.peak_sustained`` x the unit's measured ``*__cycles_elapsed.avg.per_second``,
   per kernel, exactly as ncu's roofline sections draw the roofs (docs/research/formulas.md §1.1-1.6);
3. the built-in table matched by device name, else CC + SM count (:func:`analyzer.ceilings.devices.lookup`),
   compute peaks rescaled to the measured SM clock when both are known (docs/research/formulas.md §7 item 6).

Columns (``CEILING_COLUMNS``): ``peak_fp64 peak_fp32 peak_fp16 peak_tensor bw_l1 bw_l2 bw_dram``.
For each, ``source`` holds ``"export" | "builtin" | "user" | None`` and ``detail`` a short text.
The L1/L2 ceilings follow the byte convention of that kernel's achieved bytes (ncu's
``lsu_writeback``/``lts2xbar`` vs NERSC's ``*_t_bytes``), as docs/research/formulas.md §7 item 1 requires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.ceilings.device_match import DeviceMatch, device_lint
from rooftop.analyzer.ceilings.devices import DeviceSpec, lookup
from rooftop.analyzer.ceilings.export import export_bw, export_fp_peaks
from rooftop.analyzer.ceilings.table import device_keys, spec_per_row, spec_values
from rooftop.analyzer.metrics.columns import LEVELS, column
from rooftop.analyzer.metrics.work import clock_hz
from rooftop.analyzer.schema.vocab import FLOP_CLASSES

PEAK_CLASSES = FLOP_CLASSES
CEILING_COLUMNS = tuple(f"peak_{c}" for c in PEAK_CLASSES) + tuple(f"bw_{lvl}" for lvl in LEVELS)


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


def _cells(values: pd.Series, take: np.ndarray) -> np.ndarray:
    """The selected cells as objects, missing ones as NaN (as a ``.loc`` write into an object column
    stores them)."""
    out: np.ndarray = values.to_numpy(dtype=object)[take]
    missing = pd.isna(out)
    if missing.any():
        out[missing] = np.nan
    return out


def resolve_ceilings(df: pd.DataFrame, *, dur: pd.Series, cc: pd.Series, launch: pd.DataFrame,
                     tensor_ops: pd.DataFrame, bytes_conv: pd.DataFrame, option: DeviceSpec | None = None,
                     hints: dict[str, dict[str, Any]] | None = None) -> Ceilings:
    """Every kernel's ceilings, each with its source (see the module docstring for the order).

    One piece because the order of the ``fill`` calls is the precedence (--device, export, table,
    tensor mix), kept in one place so that it reads as the rule in docs/formulas.md#ceilings.
    """
    idx = df.index
    n = len(idx)
    sm_hz, _ = clock_hz(df, "sm")
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
    keys = device_keys(df, launch, hints)
    opt_ids, opt_specs, _ = spec_per_row(keys, option) if option else (None, {}, [])
    if option is not None and opt_ids is not None:
        o_vals, o_detail, o_src = spec_values(opt_ids, opt_specs, sm_hz, tensor_ops)
        for col in CEILING_COLUMNS:
            if col in o_vals:
                fill(col, o_vals[col], o_src, o_detail[col])

    # 2. export
    fp = export_fp_peaks(df, sm_hz)
    for cls, (v, s) in fp.items():
        fill(f"peak_{cls}", v, "export", s)
    bw = export_bw(df, cc, sm_hz, dur)
    for lvl, by_conv in bw.items():
        conv = bytes_conv[lvl]
        for cname, (v, s) in by_conv.items():
            # t_bytes: the export's own *_t_bytes.peak_sustained ceilings (the "nersc" entry's metrics)
            match = (conv == cname) | (conv.isna() & (cname == "ncu")) | ((conv == "t_bytes") & (cname == "nersc"))
            fill(f"bw_{lvl}", v.where(match), "export", s)

    # 3. built-in table: the user file's base device, else the device the export's hints name
    ids, specs, matches = _table_rows(keys, option)
    b_vals, b_detail, b_src = spec_values(ids, specs, sm_hz, tensor_ops)
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
    dev_name = _device_names(df, ids, specs, option)
    devices = used_devices(df, values, source, detail, specs, ids, option, launch["sm_count"])
    builtin_name = ids.map({sid: s.name for sid, s in specs.items()}).astype("object")
    lint, assumed = device_lint(keys, matches, option)
    return Ceilings(values, source, detail, dev_name.where(dev_name.notna(), None), devices, t_missing,
                    builtin_name.where(builtin_name.notna(), None), lint, assumed)


def _table_rows(keys: pd.DataFrame, option: DeviceSpec | None
                ) -> tuple[pd.Series, dict[int, DeviceSpec], list[tuple[DeviceMatch, str | None, list[int]]]]:
    """Step 3's spec per row: the user file's base device, none beside a built-in ``--device``
    (it decides; no other entry mixes in), else the device each row's name or hints match."""
    base = lookup(option.base) if option is not None and option.base else None
    if base is not None:
        return pd.Series(0, index=keys.index, dtype="int64"), {0: base}, []
    if option is not None and option.source == "builtin":
        return pd.Series(-1, index=keys.index, dtype="int64"), {}, []
    return spec_per_row(keys, None)


def _device_names(df: pd.DataFrame, ids: pd.Series, specs: dict[int, DeviceSpec], option: DeviceSpec | None
                  ) -> pd.Series:
    """Per kernel, the device its ceilings are named after: ``--device``, else the table entry, else
    the exported name."""
    dev_name = pd.Series(None, index=df.index, dtype="object")
    if option is not None:
        dev_name[:] = option.name
        return dev_name
    dev_name = ids.map({sid: s.name for sid, s in specs.items()}).astype("object")
    if "device" in df.columns:
        exported = df["device"].astype("object").where(df["device"].notna(), None)
        dev_name = dev_name.where(dev_name.notna(), exported)
    return dev_name


def _tensor_peak(df: pd.DataFrame, sm_hz: pd.Series, ops: pd.DataFrame,
                 opt: tuple[pd.DataFrame, pd.DataFrame, pd.Series] | None,
                 builtin: tuple[pd.DataFrame, pd.DataFrame, pd.Series]
                 ) -> tuple[pd.Series, pd.Series, pd.Series, pd.Series]:
    """Σ ops / Σ (ops_v / peak_v) over variants with work; the FP16 dense peak when none did work.
    On NumPy columns (bench/NOTES.md, command-line start-up)."""
    idx = df.index
    n = len(idx)
    hz = _floats(sm_hz)
    num, den = np.zeros(n), np.zeros(n)
    all_export = np.ones(n, dtype=bool)
    missing = np.full(n, "", dtype=object)
    for v in ops.columns:
        work = _floats(ops[v].fillna(0.0))
        has = work > 0
        if not has.any():
            continue
        peak_v = _floats(opt[0][f"tensor:{v}"]) if opt is not None else np.full(n, np.nan)
        exp = dense_peak_per_cycle(df, v)[0] * hz
        is_export = np.isnan(peak_v) & ~np.isnan(exp)
        peak_v = np.where(np.isnan(peak_v), exp, peak_v)
        peak_v = np.where(np.isnan(peak_v), _floats(builtin[0][f"tensor:{v}"]), peak_v)
        all_export &= ~has | is_export
        unknown = has & (np.isnan(peak_v) | (peak_v <= 0))
        missing[unknown] = missing[unknown] + (v + " ")
        num = num + np.where(has, work, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            den = den + np.where(has, work / peak_v, 0.0)
    did_work = num > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(did_work & (missing == ""), num / den, np.nan)
    # nothing ran on the tensor cores: show the dense FP16/BF16 roof (export variant, else table)
    disp, disp_src = _export_dense_tensor_peak(df, hz)
    val = np.where(did_work, val, disp)
    src = np.full(n, np.nan, dtype=object)
    det = np.full(n, np.nan, dtype=object)
    export_mix = did_work & all_export & ~np.isnan(val)
    src[export_mix | (~did_work & ~np.isnan(disp))] = "export"
    det[export_mix] = ("sm__ops_path_tensor_<variant>.sum.peak_sustained (dense: on CC >= 9.0 the fastest "
                       "op_*_sparsity_off path) x sm__cycles_elapsed.avg.per_second (ops-weighted over variants)")
    shown = ~did_work & ~np.isnan(disp)
    det[shown] = disp_src[shown]
    other = ~np.isnan(val) & pd.isna(src)
    fallback_src = (opt[2] if opt is not None else builtin[2])
    fallback = fallback_src.where(fallback_src.notna(), builtin[2]).to_numpy(dtype=object)
    src[other] = fallback[other]
    det[other] = "device table tensor peaks (ops-weighted over variants)"
    # no work, no export peak: the table's dense FP16/BF16 roof
    tbl = _first(opt[0]["peak_tensor_display"] if opt is not None else None, builtin[0]["peak_tensor_display"])
    tbl_det = _first(opt[1]["peak_tensor_display"] if opt is not None else None, builtin[1]["peak_tensor_display"])
    tbl_v = _floats(tbl)
    take = np.isnan(val) & ~did_work & ~np.isnan(tbl_v)
    val[take] = tbl_v[take]
    src[take] = fallback[take]
    det[take] = tbl_det.to_numpy(dtype=object)[take]
    named = np.full(n, None, dtype=object)  # the variants without a peak, space-joined; None where none lacks one
    for i in np.flatnonzero(missing != "").tolist():
        named[i] = missing[i].strip() or None
    missing_peak = pd.Series(named, index=idx, dtype="object")
    return (pd.Series(val, index=idx, dtype="float64"), pd.Series(src, index=idx, dtype="object"),
            pd.Series(det, index=idx, dtype="object"), missing_peak)


def _export_dense_tensor_peak(df: pd.DataFrame, hz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The export's dense FP16/BF16 tensor peak per row (first variant present) and its metric text."""
    n = len(df)
    disp = np.full(n, np.nan)
    disp_src = np.full(n, np.nan, dtype=object)
    for v in ("src_fp16_dst_fp32", "src_fp16", "src_bf16_dst_fp32", "src_fp16_bf16_tf32_dst_fp32",
              "src_fp16_dst_fp32_sparsity_off", "src_bf16_dst_fp32_sparsity_off"):
        per_cycle, metric = dense_peak_per_cycle(df, v)
        e = per_cycle * hz
        take = np.isnan(disp) & ~np.isnan(e)
        disp[take] = e[take]
        disp_src[take] = np.char.add(metric[take].astype(str), " x sm__cycles_elapsed.avg.per_second")
    return disp, disp_src


_OP_PEAK = re.compile(r"^sm__ops_path_tensor_op_[a-z0-9]+?_(?P<rest>src_[a-z0-9_]+)\.sum\.peak_sustained$")
_NO_SPARSITY = ("fp64", "int1")  # tensor types without a 2:4-sparse path


def dense_peak_per_cycle(df: pd.DataFrame, variant: str) -> tuple[np.ndarray, np.ndarray]:
    """The dense per-cycle peak of the aggregate tensor ``variant`` per row, and the metric it came from.

    On GH100 and later (CC >= 9.0) the unqualified aggregates (``src_bf16_dst_fp32``, ``src_fp16``,
    ``src_tf32_dst_fp32``, ``src_int8``) report the fastest path's 2:4-sparse rate as their
    ``.peak_sustained`` (measured on an H100: 1,081,344 FLOP/cycle for bf16, twice the dense
    ``op_hgmma_src_bf16_dst_fp32_sparsity_off`` 540,672; fixtures/README.md#capture). The dense peak
    is the fastest ``op_*_<variant>*_sparsity_off`` path of the same source type; without such a
    column the aggregate is not used on CC >= 9.0 (the device table decides). Qualified aggregates
    (``*_sparsity_off``), FP64 and INT1, and older GPUs keep their own peak
    (docs/formulas.md#ceilings, "Tensor peaks")."""
    n = len(df)
    own = _floats(column(df, f"sm__ops_path_tensor_{variant}.sum.peak_sustained"))
    metric = np.full(n, f"sm__ops_path_tensor_{variant}.sum.peak_sustained", dtype=object)
    if "sparsity" in variant or any(t in variant for t in _NO_SPARSITY):
        return own, metric
    best, best_metric = np.full(n, np.nan), np.full(n, None, dtype=object)
    for name in df.columns:
        m = _OP_PEAK.match(str(name))
        if not m or not m["rest"].startswith(variant):
            continue
        rest = m["rest"]
        if "sparsity" in rest and not rest.endswith("_sparsity_off"):
            continue
        v = _floats(column(df, str(name)))
        take = ~np.isnan(v) & (np.isnan(best) | (v > best))
        best[take] = v[take]
        best_metric[take] = str(name)
    cc = pd.to_numeric(df["cc"], errors="coerce").to_numpy(dtype="float64") if "cc" in df.columns \
        else np.full(n, np.nan)
    hopper_on = cc >= 9.0
    out = np.where(~np.isnan(best), best, np.where(hopper_on, np.nan, own))
    metric = np.where(~np.isnan(best), best_metric, metric)
    return out, metric


def _first(preferred: pd.Series | None, fallback: pd.Series) -> pd.Series:
    """``preferred`` where present, else ``fallback`` (an object column: fillna() on object dtype
    downcasts, a FutureWarning on pandas 2.x)."""
    if preferred is None:
        return fallback.astype(object)
    keep = preferred.notna().to_numpy(dtype=bool)
    return pd.Series(np.where(keep, preferred.to_numpy(dtype=object), fallback.to_numpy(dtype=object)),
                     index=preferred.index, dtype=object)


def _floats(values: pd.Series) -> np.ndarray:
    """A column as float64 (missing: NaN), a fresh array."""
    out: np.ndarray = values.to_numpy(dtype="float64", na_value=np.nan, copy=True)
    return out


def used_devices(df: pd.DataFrame, values: pd.DataFrame, source: pd.DataFrame, detail: pd.DataFrame,
                  specs: dict[int, DeviceSpec], ids: pd.Series, option: DeviceSpec | None,
                  sms: pd.Series) -> list[dict[str, Any]]:
    """Contract ``devices[]``: the option / built-in specs used, plus one ``export`` entry per
    exported device name holding the median of its kernels' export ceilings."""
    out: list[dict[str, Any]] = []
    if option is not None:
        out.append(option.as_contract())
    builtin_rows = (source == "builtin").any(axis=1)
    used_builtin = set(ids[builtin_rows].unique())
    exported = df["device"].astype("object") if "device" in df.columns else pd.Series(None, index=df.index, dtype="object")
    for sid, spec in specs.items():
        if sid not in used_builtin or spec.source != "builtin":
            continue
        entry = spec.as_contract()
        # the exported GPU names whose kernels take ceilings from this entry: one GPU, two sources
        serves = sorted({str(n) for n in exported[builtin_rows & (ids == sid)].dropna().unique() if n != spec.name})
        if serves:
            entry["serves"] = serves
        out.append(entry)
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
