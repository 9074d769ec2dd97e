"""The evidence of every kernel, as facts (docs/formulas.md#kernel-labels, docs/contract.md#evidence):
why it got its label, its work, each memory level, the binding level, and what the export lacks.

Each fact is a rule id of :data:`rooftop.analyzer.schema.evidence.RULES` (which holds its sentence
template) and the values that sentence needs, decided here for a whole column of kernels at once:
``Facts.add(rule, mask, **columns)``. Nothing is formatted here; a sentence is drawn from a fact
only for the kernels whose sentences are shown (:meth:`Facts.sentences`), so a 100,000-launch
export no longer formats 600,000 sentences (bench/NOTES.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.document import gc_paused
from rooftop.analyzer.kernels.classify import LAUNCH_S, LEVEL_NAMES
from rooftop.analyzer.metrics.columns import FLOP_CLASSES, LEVELS
from rooftop.analyzer.schema.evidence import RULES, SENTENCE_KERNELS, EvidenceFacts, render


@dataclass
class _Group:
    """One ``add``: a rule, the kernel positions it holds for, its values at those positions."""

    rule: str
    params: dict[str, Any]
    pos: np.ndarray
    values: dict[str, np.ndarray]


@dataclass
class Facts:
    """The evidence facts of ``n`` kernels, column-wise, in the order their sentences are read."""

    n: int
    groups: list[_Group] = field(default_factory=list)

    def add(self, rule: str, mask: Any, params: Mapping[str, Any] | None = None, **columns: Any) -> None:
        """Rule ``rule`` holds for the kernels where ``mask`` is true, with ``columns`` (one value per
        kernel: a Series, an array) as its values; ``params``: values shared by all of them."""
        if rule not in RULES:
            raise KeyError(f"evidence rule {rule!r} is not in analyzer/schema/evidence.py RULES")
        pos = np.flatnonzero(_mask(mask))
        if not len(pos):
            return
        self.groups.append(_Group(rule, dict(params or {}), pos,
                                  {k: _column(v, self.n)[pos] for k, v in columns.items()}))

    def only(self, mask: Any, rule: str) -> None:
        """Where ``mask`` is true, ``rule`` is the kernel's only fact (first in order)."""
        m = _mask(mask)
        if not m.any():
            return
        for g in self.groups:
            keep = ~m[g.pos]
            g.pos, g.values = g.pos[keep], {k: v[keep] for k, v in g.values.items()}
        self.groups = [g for g in self.groups if len(g.pos)]
        self.groups.insert(0, _Group(rule, {}, np.flatnonzero(m), {}))

    def sentences(self, rows: Iterable[int]) -> dict[int, list[str]]:
        """Each of ``rows``' evidence sentences, drawn from its facts (the registry's templates)."""
        want = np.unique(np.asarray(list(rows), dtype=np.int64))
        out: dict[int, list[str]] = {int(r): [] for r in want.tolist()}
        for g in self.groups:
            at = np.searchsorted(g.pos, want)
            hit = (at < len(g.pos)) & (g.pos[np.minimum(at, len(g.pos) - 1)] == want)
            template = RULES[g.rule]["template"]
            for r, j in zip(want[hit].tolist(), at[hit].tolist(), strict=True):
                values = {k: _plain(v[j]) for k, v in g.values.items()}
                out[r].append(render(template, {**g.params, **values}))
        return out

    def document(self) -> list[EvidenceFacts]:
        """The document's ``evidence_facts``: per group, the rule, its kernels and value columns as
        plain JSON values (not finite: null; text: str)."""
        with gc_paused():
            return [{"rule": g.rule, "params": dict(g.params), "kernels": g.pos.tolist(),
                     "values": {k: _json_list(v) for k, v in g.values.items()}} for g in self.groups]


def _mask(mask: Any) -> np.ndarray:
    if isinstance(mask, np.ndarray) and mask.dtype == bool:
        return mask
    if isinstance(mask, pd.Series) and mask.dtype == bool:
        arr: np.ndarray = mask.to_numpy()
        return arr
    return np.asarray(pd.Series(mask).fillna(False).to_numpy(dtype=bool))


def _column(values: Any, n: int) -> np.ndarray:
    """A column as float64 (numbers), bool, or object (texts: None where missing)."""
    if isinstance(values, np.ndarray) and values.dtype in (np.float64, np.bool_):
        return values
    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if s.dtype == bool:
        out: np.ndarray = s.to_numpy()
        return out
    if pd.api.types.is_numeric_dtype(s.dtype):
        return np.asarray(pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan))
    obj = s.astype("object")
    return np.asarray(obj.where(obj.notna(), None).to_numpy(dtype=object))


def _plain(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if np.isfinite(f) else None
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def _json_list(v: np.ndarray) -> list[Any]:
    out: list[Any] = v.tolist()
    if v.dtype == np.float64:
        for i in np.flatnonzero(~np.isfinite(v)).tolist():
            out[i] = None
    elif v.dtype == object and not set(map(type, out)) <= {str, type(None)}:  # texts already: kept as they are
        out = [x if x is None or isinstance(x, str) else str(x) for x in out]
    return out


def shown(durations: Any, limit: int = SENTENCE_KERNELS) -> list[int]:
    """The positions of the ``limit`` longest launches (no duration counts as 0; ties in order):
    the kernels whose evidence is written out as sentences."""
    d = np.nan_to_num(pd.to_numeric(pd.Series(durations), errors="coerce").to_numpy(dtype=float), nan=0.0)
    longest: list[int] = np.argsort(-d, kind="stable")[:limit].tolist()
    return longest


def _fin(f: pd.DataFrame, col: str) -> np.ndarray:
    finite: np.ndarray = np.isfinite(_column(f[col], len(f)))
    return finite


def _where(mask: np.ndarray, values: Any) -> np.ndarray:
    """``values`` (numbers) where ``mask``, NaN elsewhere."""
    return np.where(mask, _column(values, len(mask)), np.nan)


def _missing_levels(f: pd.DataFrame) -> pd.Series:
    """Per kernel, the memory levels whose utilisation is unknown and why, e.g.
    ``"L1 (no ceiling), L2 (no bytes in the export)"``; ``""`` when every level is known."""
    n = len(f)
    out = np.full(n, "", dtype=object)
    nan = np.full(n, np.nan)
    for lvl in LEVELS:
        util = f[f"bw_util_{lvl}"].isna().to_numpy() if f"bw_util_{lvl}" in f.columns else np.isnan(nan)
        unit = f[f"unit_{lvl}"].isna().to_numpy() if f"unit_{lvl}" in f.columns else np.isnan(nan)
        has_bytes = f[f"bytes_{lvl}"].notna().to_numpy() if f"bytes_{lvl}" in f.columns else ~np.isnan(nan)
        why = np.where(has_bytes, f", {LEVEL_NAMES[lvl]} (no ceiling)",
                       f", {LEVEL_NAMES[lvl]} (no bytes in the export)").astype(object)
        miss = util & unit
        out[miss] = out[miss] + why[miss]
    return pd.Series([t.lstrip(", ") for t in out.tolist()], index=f.index, dtype=object)


def kernel_facts(f: pd.DataFrame, c: pd.DataFrame) -> Facts:
    """The evidence facts of every kernel (``f``: the facts frame, ``c``: the classification), section
    by section (docs/formulas.md#kernel-labels)."""
    facts = Facts(len(f))
    for section in (_decision, _overhead, _work, _levels, _binding, _launch, _provenance):
        section(facts, f, c)
    return facts


def explain(f: pd.DataFrame, c: pd.DataFrame) -> list[list[str]]:
    """Every kernel's evidence sentences (all of them drawn: for small tables and tests)."""
    facts = kernel_facts(f, c)
    drawn = facts.sentences(range(facts.n))
    return [drawn[i] for i in range(facts.n)]


def _basis(c: pd.DataFrame) -> pd.Series:
    return c["basis"] if "basis" in c.columns else pd.Series("none", index=c.index)


def _decision(facts: Facts, f: pd.DataFrame, c: pd.DataFrame) -> None:
    """The rule that decided (docs/formulas.md#kernel-labels)."""
    basis = _basis(c)
    facts.add("sol-verdict", c["sol_verdict"].notna() & f["sol_compute_pct"].notna() & f["sol_memory_pct"].notna(),
              compute_pct=f["sol_compute_pct"], memory_pct=f["sol_memory_pct"], verdict=c["sol_verdict"],
              legacy=_mask(f["sol_source"] == "legacy"))
    high = c["sol_verdict"] == "High Throughput"
    facts.add("sol-one-side-compute", high & f["sol_compute_pct"].notna() & f["sol_memory_pct"].isna(),
              compute_pct=f["sol_compute_pct"])
    facts.add("sol-one-side-memory", high & f["sol_memory_pct"].notna() & f["sol_compute_pct"].isna(),
              memory_pct=f["sol_memory_pct"])
    if "ncu_stored_verdict" in f.columns:
        facts.add("ncu-stored-verdict", f["ncu_stored_verdict"].notna(), verdict=f["ncu_stored_verdict"])
    sides = {"memory_side_pct": c["memory_side_pct"], "compute_side_pct": c["compute_side_pct"]}
    facts.add("roofline-sol", basis == "roofline-sol", **sides, label=c["label"], limiter=c["limiter"])
    thin = _mask(basis == "thin")
    mem, cmp_ = _column(c["memory_side_pct"], len(c)), _column(c["compute_side_pct"], len(c))
    with np.errstate(invalid="ignore"):
        one_side = thin & (np.fmax(mem, cmp_) >= 60.0) & ~(np.isfinite(mem) & np.isfinite(cmp_))
    facts.add("sol-one-side-thin", one_side, **sides)
    if (thin & ~one_side).any():
        unknown = _missing_levels(f).where(lambda x: x != "", "the compute side")
        facts.add("thin", thin & ~one_side, **sides, unknown=unknown)


def _overhead(facts: Facts, f: pd.DataFrame, c: pd.DataFrame) -> None:
    """Why an overhead-bound kernel is: launch cost, small grid, tail, latency."""
    n, lim, basis = len(f), c["limiter"], _basis(c)
    over = (c["label"] == "overhead-bound").to_numpy()
    ld = f["launch_duration_s"] if "launch_duration_s" in f.columns else f["duration_s"]
    facts.add("launch", over & (lim == "launch").to_numpy(), params={"launch_us": LAUNCH_S * 1e6},
              duration_s=ld, median=_mask(ld != f["duration_s"]))
    grid = f["grid"].astype("float64")
    fewer = (grid < f["sm_count"]).fillna(False).to_numpy()
    small = over & (lim == "small-grid").to_numpy()
    facts.add("small-grid", small & fewer, grid=grid, sm_count=f["sm_count"], idle_sms=f["sm_count"] - grid)
    facts.add("ncu-small-grid", small & ~fewer, grid=grid, waves=f["waves"])
    ncu_tail = f["ncu_tail"].astype("object").eq(True).to_numpy() if "ncu_tail" in f.columns else np.zeros(n, bool)
    ncu_no_tail = f["ncu_tail"].astype("object").eq(False).to_numpy() if "ncu_tail" in f.columns else np.zeros(n, bool)
    facts.add("tail", over & (lim == "tail").to_numpy(), waves=f["waves"],
              last_wave_pct=100.0 * (f["waves"] - np.floor(f["waves"])), tail_pct=c["tail_speedup_pct"],
              ncu_tail=ncu_tail)
    fills = (grid >= f["sm_count"]).fillna(False).to_numpy(dtype=bool)
    facts.add("latency", over & (lim == "latency").to_numpy(), fills=fills,
              ncu_sol=_mask(basis == "ncu-sol"), ncu_no_tail=ncu_no_tail, waves=f["waves"],
              tail_pct=c["tail_speedup_pct"])


def _roof(f: pd.DataFrame) -> dict[str, Any]:
    """The compute roof the work is measured against: utilisation, peak and its source."""
    dom = f["dominant_class"].fillna("fp32")
    src = np.full(len(f), None, dtype=object)
    for k in FLOP_CLASSES:
        pick = (dom == k).to_numpy()
        src[pick] = _column(f[f"src_peak_{k}"], len(f))[pick]
    return {"compute_util_pct": _where(_fin(f, "compute_util"), 100.0 * f["compute_util"]),
            "compute_peak": f["compute_peak"], "peak_source": src}


def _work(facts: Facts, f: pd.DataFrame, c: pd.DataFrame) -> None:
    """The work (FLOPs by class) and where it sits under the compute roof."""
    tot = f["flops"]
    mix: dict[str, Any] = {}
    for k in FLOP_CLASSES:
        share = 100.0 * f[f"flops_{k}"] / tot.where(tot > 0)
        mix[f"{k}_pct"] = _where((share.notna() & (f[f"flops_{k}"] > 0)).to_numpy(dtype=bool), share)
    roof = _roof(f)
    zero = _mask(_flag(f, "zero_flops"))
    facts.add("work", _mask(tot.notna() & f["duration_s"].notna()) & ~zero, flops=tot, **mix,
              achieved_flops_s=f["achieved_flops_s"], **roof)
    facts.add("zero-flops", zero, fp16_uncollected=_mask(_flag(f, "fp16_uncollected")))
    if "tensor_source" in f.columns:
        facts.add("tensor-from-name", f["tensor_source"].astype("string").str.contains("kernel name", na=False),
                  source=f["tensor_source"])
    if "tensor_uncounted" in f.columns:
        counted = f["fp_flops_counted"] if "fp_flops_counted" in f.columns else pd.Series(np.nan, index=f.index)
        facts.add("tensor-uncounted", _mask(_flag(f, "tensor_uncounted")), counted=counted)
    if "rate_only" in f.columns:
        rates: dict[str, Any] = {}
        for lvl in LEVELS:
            known = _fin(f, f"rate_{lvl}") & _fin(f, f"bw_util_{lvl}")
            rates |= {f"rate_{lvl}": _where(known, f[f"rate_{lvl}"]),
                      f"util_pct_{lvl}": 100.0 * f[f"bw_util_{lvl}"], f"bw_{lvl}": f[f"bw_{lvl}"],
                      f"bw_source_{lvl}": f[f"src_bw_{lvl}"], f"ai_{lvl}": f[f"intensity_{lvl}"]}
        facts.add("rate-only", f["rate_only"].fillna(False).astype(bool), achieved_flops_s=f["achieved_flops_s"],
                  **roof, **rates)


def _levels(facts: Facts, f: pd.DataFrame, c: pd.DataFrame) -> None:
    """Each memory level: bytes, rate against its ceiling, arithmetic intensity against the ridge."""
    for lvl in LEVELS:
        b, ai, ridge = f[f"bytes_{lvl}"], f[f"intensity_{lvl}"], f[f"ridge_{lvl}"]
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = b / f["duration_s"]
        facts.add(f"level-{lvl}", b.notna(), bytes=b, bytes_source=f[f"bytes_{lvl}_source"],
                  util_pct=_where(_fin(f, f"bw_util_{lvl}"), 100.0 * f[f"bw_util_{lvl}"]), rate=rate,
                  bw=f[f"bw_{lvl}"], bw_source=f[f"src_bw_{lvl}"], rate_known=_fin(f, "duration_s"),
                  ai=ai, ridge=ridge, below_ridge=_mask(ai < ridge))


def _binding(facts: Facts, f: pd.DataFrame, c: pd.DataFrame) -> None:
    """Binding level, the memory units, and the decision."""
    label, lim, basis = c["label"], c["limiter"], _basis(c)
    bind = f["binding_level"].map(LEVEL_NAMES)
    facts.add("binding", bind.notna() & f["attainable_flops_s"].notna(), level=bind,
              attainable_flops_s=f["attainable_flops_s"], pct_of_roof=f["pct_of_roof"])
    bw_t = f["bw_time_s"] if "bw_time_s" in f.columns else pd.Series(np.nan, index=f.index)
    facts.add("bw-time", f["attainable_flops_s"].isna().to_numpy() & _fin(f.assign(_t=bw_t), "_t") & _fin(f, "duration_s"),
              bw_time_s=bw_t, pct=100.0 * bw_t / f["duration_s"], duration_s=f["duration_s"],
              incomplete=~_mask(_flag(f, "bw_time_complete")))
    if "roof_unknown_level" in f.columns:
        facts.add("roof-unknown-level", f["roof_unknown_level"].notna(), level=bind)
    units: dict[str, Any] = {f"unit_{lvl}": _where(_fin(f, f"unit_{lvl}"), f[f"unit_{lvl}"]) for lvl in LEVELS}
    facts.add("memory-units", np.any([np.isfinite(u) for u in units.values()], axis=0), **units)
    facts.add("sides", c["memory_side_pct"].notna() & c["compute_side_pct"].notna() & (label != "overhead-bound")
              & (basis == "ncu-sol"), memory_side_pct=c["memory_side_pct"],
              compute_side_pct=c["compute_side_pct"], label=label, limiter=lim)


def _launch(facts: Facts, f: pd.DataFrame, c: pd.DataFrame) -> None:
    """NCU's launch facts: occupancy achieved of theoretical and its limiter, registers, shared memory per
    block, waves, local-memory traffic (docs/formulas.md#kernel-labels)."""
    if "occupancy_achieved_pct" not in f.columns:
        return
    nan = pd.Series(np.nan, index=f.index)
    col = {k: f[k] if k in f.columns else nan for k in (
        "occupancy_achieved_pct", "occupancy_theoretical_pct", "registers_per_thread", "shared_mem_per_block",
        "waves", "local_memory_ops")}
    fin = {k: np.isfinite(_column(v, len(f))) for k, v in col.items()}
    occ = fin["occupancy_achieved_pct"] | fin["occupancy_theoretical_pct"]
    full = _column(col["occupancy_theoretical_pct"], len(f)) >= 100.0  # nothing limits a full occupancy
    lim = f["occupancy_limiter"] if "occupancy_limiter" in f.columns else pd.Series(None, index=f.index, dtype=object)
    local = _column(col["local_memory_ops"], len(f))
    shown_lim = lim.astype("object").where(lim.notna().to_numpy() & ~full & occ, None)
    facts.add("launch-facts", occ | fin["registers_per_thread"] | fin["shared_mem_per_block"] | fin["waves"]
              | np.isfinite(local), occupancy=occ,
              achieved_pct=col["occupancy_achieved_pct"], theoretical_pct=col["occupancy_theoretical_pct"],
              limiter=shown_lim, registers_per_thread=col["registers_per_thread"],
              shared_mem_per_block=col["shared_mem_per_block"], waves=col["waves"],
              local_known=np.isfinite(local), local_memory_ops=np.where(local > 0, local, np.nan))


def _flag(f: pd.DataFrame, col: str) -> pd.Series:
    """Where ``col`` is True (absent column: nowhere)."""
    if col not in f.columns:
        return pd.Series(False, index=f.index)
    return f[col].astype("object").eq(True)


def _provenance(facts: Facts, f: pd.DataFrame, c: pd.DataFrame) -> None:
    """Provenance (device assumed, byte convention, duration source) and what the export lacks."""
    label, basis = c["label"], _basis(c)
    if "device_assumed" in f.columns:
        facts.add("device-assumed", f["device_assumed"].notna(), text=f["device_assumed"])
    nersc = f["bytes_convention"].isin(["nersc", "mixed"]).to_numpy()
    ceil_12 = (f["bw_l1"].notna() | f["bw_l2"].notna()).to_numpy()
    facts.add("bytes-nersc", nersc & ceil_12)
    facts.add("bytes-nersc-no-ceiling", nersc & ~ceil_12)
    facts.add("bytes-t-bytes", f["bytes_convention"] == "t_bytes")
    facts.add("duration-source", f["duration_source"].notna() & (f["duration_source"] != "gpu__time_duration.sum"),
              source=f["duration_source"])
    ro = f["rate_only"].fillna(False).astype(bool) if "rate_only" in f.columns else pd.Series(False, index=f.index)
    missing: dict[str, Any] = {f"{lvl}_bytes": _mask(f[f"bytes_{lvl}"].isna() & ~(ro & f[f"rate_{lvl}"].notna()))
               for lvl in LEVELS}
    unc = _flag(f, "tensor_uncounted")
    missing |= {"flops": _mask(f["flops"].isna() & ~(ro & f["achieved_flops_s"].notna()) & ~unc),
                "tensor_flops": _mask(unc),
                "sol": _mask(f["sol_compute_pct"].isna() | f["sol_memory_pct"].isna()),
                "duration": _mask(f["duration_s"].isna())}
    facts.add("not-in-export", np.any(list(missing.values()), axis=0), **missing)
    if "metrics_na" in f.columns:
        facts.add("metrics-na", f["metrics_na"].notna(), metrics=f["metrics_na"])
    facts.add("nothing-decides", (label == "unknown") & (basis == "none"))
