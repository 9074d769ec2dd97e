"""Kernel families: launches of the same kernel instantiation with the same launch configuration,
homogeneous in device, label and limiter (docs/formulas.md#families).

* :func:`family_key`: THE identity (also used by diff matching): :func:`qualified_name` (the full
  name with template arguments and tile configuration; return type and argument list dropped) +
  `` (grid G, block B)``.
* :func:`assign_families`: the key, split with a `` [label limiter]`` suffix when launches of one
  key disagree in device, label or limiter.
* :func:`family_table`: THE per-family aggregation used by findings and the reports.
* :func:`base_name` (no template arguments) and :func:`display_name` (short titles) for display.

Vectorised over *unique* names: normalisation runs once per distinct name, not per launch.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import column
from rooftop.analyzer.schema.vocab import MEMORY_LEVELS

ANON = "(anonymous)"
_ANON_FORMS = re.compile(
    r"\(anonymous namespace\)|\{anonymous\}|<unnamed>|`anonymous namespace'|(?<![\w<])unnamed>(?=::)")
_OPENERS = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}
_OPERATORS = re.compile(r"operator\s*(\(\)|<<=?|>>=?|<=?|>=?|\[\]|->\*?|[-+*/%^&|~!=,]+)")
_SENTINEL = "\x00"


def _demangle_itanium(name: str) -> str | None:
    """Qualified name of an Itanium-mangled symbol (``_Z[N]<len><id>...``); ``None`` if unsure."""
    m = re.match(r"_Z(L)?(N)?", name)
    if not m:
        return None
    i = m.end()
    nested = bool(m.group(2))
    parts: list[str] = []
    while i < len(name):
        if nested and name[i] in "KVr":  # cv-qualifiers of a nested name
            i += 1
            continue
        d = re.match(r"\d+", name[i:])
        if not d:
            break
        n = int(d.group())
        i += d.end()
        ident = name[i:i + n]
        if len(ident) < n:
            return None
        parts.append(ANON if ident.startswith("_GLOBAL__N") else ident)
        i += n
        if not nested:
            break
        if i < len(name) and name[i] == "I":  # template args follow: stop here
            break
        if i < len(name) and name[i] == "E":
            break
    return "::".join(parts) if parts else None


def _strip_brackets(text: str) -> str | None:
    """Characters at bracket depth 0 (drops template args, argument lists, lambdas); ``None``
    when the brackets do not balance."""
    out: list[str] = []
    stack: list[str] = []
    for ch in text:
        if ch in _OPENERS:
            stack.append(ch)
            continue
        if ch in _CLOSERS:
            if not stack or stack[-1] != _CLOSERS[ch]:
                if ch == ">" and stack and stack[-1] == "(":
                    continue  # `->` or a comparison inside an argument list
                return None
            stack.pop()
            continue
        if not stack:
            out.append(ch)
    return "".join(out) if not stack else None


def base_name(name: str) -> str:
    """Normalised base name of one kernel name (see the module docstring)."""
    raw = (name or "").strip()
    if not raw:
        return "?"
    if raw.startswith("_Z"):
        dem = _demangle_itanium(raw)
        if dem:
            return dem
    s = _ANON_FORMS.sub(_SENTINEL + "anon" + _SENTINEL, raw)
    s = _OPERATORS.sub(lambda m: "operator" + m.group(1).replace("(", "❨").replace(")", "❩")
                       .replace("<", "‹").replace(">", "›").replace("[", "⁅").replace("]", "⁆"), s)
    stripped = _strip_brackets(s)
    if stripped is None:
        stripped = re.split(r"[<(]", s, maxsplit=1)[0]
    tokens = stripped.split()
    if not tokens:
        return raw[:200]
    base = tokens[-1]
    # a trailing qualifier like `const` after an argument list is not the name
    while len(tokens) > 1 and tokens[-1] in ("const", "volatile", "noexcept", "&", "&&"):
        tokens = tokens[:-1]
        base = tokens[-1]
    base = base.replace(_SENTINEL + "anon" + _SENTINEL, ANON).replace(_SENTINEL, "")
    base = (base.replace("❨", "(").replace("❩", ")").replace("‹", "<").replace("›", ">")
            .replace("⁅", "[").replace("⁆", "]"))
    base = base.strip(":") or raw[:200]
    return base


def qualified_name(name: str) -> str:
    """The kernel's qualified name *with* its template arguments (tile shapes, dtypes, policies):
    the return type and the argument list are dropped, whitespace is collapsed, the anonymous
    namespace is written ``(anonymous)``. Itanium-mangled names are kept whole (they already
    encode the instantiation). docs/formulas.md#families."""
    raw = " ".join((name or "").split())
    if not raw:
        return "?"
    if raw.startswith("_Z"):
        return raw
    s = _ANON_FORMS.sub(_SENTINEL + "anon" + _SENTINEL, raw)
    s = _OPERATORS.sub(lambda m: "operator" + m.group(1).replace("(", "❨").replace(")", "❩")
                       .replace("<", "‹").replace(">", "›").replace("[", "⁅").replace("]", "⁆"), s)
    tokens = _top_level_tokens(s)
    if not tokens:
        return raw
    while len(tokens) > 1 and tokens[-1] in ("const", "volatile", "noexcept", "&", "&&"):
        tokens = tokens[:-1]
    head = _cut_arguments(tokens[-1])
    head = head.replace(_SENTINEL + "anon" + _SENTINEL, ANON).replace(_SENTINEL, "")
    head = (head.replace("❨", "(").replace("❩", ")").replace("‹", "<").replace("›", ">")
            .replace("⁅", "[").replace("⁆", "]"))
    return head.strip(":") or raw


def _top_level_tokens(text: str) -> list[str] | None:
    """``text`` split at spaces outside any brackets; ``None`` when the brackets do not balance."""
    tokens: list[str] = []
    cur: list[str] = []
    stack: list[str] = []
    for ch in text:
        if ch in _OPENERS:
            stack.append(ch)
        elif ch in _CLOSERS:
            if not stack or stack[-1] != _CLOSERS[ch]:
                if not (ch == ">" and stack and stack[-1] == "("):  # `->` or `a > b` in parentheses
                    return None
            else:
                stack.pop()
        elif ch == " " and not stack:
            if cur:
                tokens.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if stack:
        return None
    if cur:
        tokens.append("".join(cur))
    return tokens


def _cut_arguments(token: str) -> str:
    """``token`` up to its first ``(`` outside template brackets (the argument list)."""
    stack: list[str] = []
    for i, ch in enumerate(token):
        if ch == "(" and not stack and i > 0:
            return token[:i]
        if ch in _OPENERS:
            stack.append(ch)
        elif ch in _CLOSERS and stack and stack[-1] == _CLOSERS[ch]:
            stack.pop()
    return token


_SUFFIX = re.compile(r"( \(grid [^()]*, block [^()]*\))?( \[[^\[\]]*\])?$")


def display_name(key: str, limit: int = 80) -> str:
    """Shorten a long family key for titles: the qualified base name, the start of its template
    arguments and the launch configuration / split suffix are kept (docs/formulas.md#families)."""
    if len(key) <= limit:
        return key
    m = _SUFFIX.search(key)
    suffix = key[m.start():] if m else ""
    name = key[: m.start()] if m else key
    lt = name.find("<")
    base = name[:lt] if lt > 0 else name
    parts = base.split("::")
    room = max(limit - len(suffix), 16)
    short = parts[-1]
    for p in reversed(parts[:-1]):
        if len(short) + len(p) + 2 > room // 2:
            break
        short = p + "::" + short
    if short != base:
        short = "…::" + short
    if lt > 0:
        left = max(room - len(short) - 3, 4)
        short += "<" + name[lt + 1: lt + 1 + left] + "…>"
    if len(short) > room:
        short = short[: room - 1] + "…"
    return short + suffix


def _config(grid: pd.Series, block: pd.Series) -> pd.Series:
    def fmt(s: pd.Series) -> pd.Series:
        num = pd.to_numeric(s, errors="coerce")
        try:
            out = num.astype("Int64").astype(str)
        except (TypeError, ValueError):  # non-integer sizes: print as they are
            out = num.astype(str)
        return out.where(num.notna(), "?").astype(object)

    g, b = fmt(grid), fmt(block)
    both_missing = (g == "?") & (b == "?")
    cfg = " (grid " + g + ", block " + b + ")"
    return cfg.where(~both_missing, "")


def family_key(results: pd.DataFrame) -> pd.Series:
    """THE family identity per launch (same index as ``results``): :func:`qualified_name` +
    `` (grid G, block B)``. Diff matching and :func:`assign_families` use it; it does not depend
    on the verdict, so the same kernel pairs across runs even when its label changed.

    ``results`` needs ``name``; ``grid`` and ``block`` are used when present (missing values print
    as ``?``; both missing -> the name alone). docs/formulas.md#families.
    """
    if not len(results):
        return pd.Series([], index=results.index, dtype=object, name="family")
    names = results["name"].astype(object).where(results["name"].notna(), "")
    codes, uniques = pd.factorize(names.astype(str))
    quals = np.array([qualified_name(u) for u in uniques], dtype=object)
    qual = pd.Series(quals[codes], index=results.index, dtype=object)
    grid = results["grid"] if "grid" in results else pd.Series(np.nan, index=results.index)
    block = results["block"] if "block" in results else pd.Series(np.nan, index=results.index)
    return (qual + _config(grid, block)).rename("family")


SPLIT_BY = ("device", "label", "limiter")


def assign_families(results: pd.DataFrame) -> pd.Series:
    """Family per launch: :func:`family_key`, split so that each family is homogeneous in device,
    label and limiter (when those columns are present). A key whose launches disagree gets a
    suffix naming what differs, e.g. ``k<float> (grid 8, block 128) [overhead-bound launch]``;
    a homogeneous key is left as it is. docs/formulas.md#families."""
    key = family_key(results)
    cols = [c for c in SPLIT_BY if c in results.columns]
    if not len(results) or not cols:
        return key
    parts = {c: results[c].astype(object).where(results[c].notna(), "?").astype(str) for c in cols}
    frame = pd.DataFrame({"key": key, **parts})
    suffix = pd.Series("", index=results.index, dtype=object)
    for c in cols:
        mixed = frame.groupby("key", sort=False)[c].transform("nunique") > 1
        suffix = suffix.where(~mixed, suffix + " " + parts[c])
    split = suffix != ""
    return key.where(~split, key + " [" + suffix.str.strip() + "]").rename("family")


FAMILY_COLUMNS = (
    "family", "key", "name", "device", "grid", "block", "label", "limiter", "kernels", "representative",
    "launches", "time_s", "time_share", "flops", "bytes_l1", "bytes_l2", "bytes_dram",
    "intensity_l1", "intensity_l2", "intensity_dram", "achieved_flops_s", "attainable_flops_s", "nvtx",
)
_LEVELS = MEMORY_LEVELS



def launch_weights(results: pd.DataFrame) -> pd.Series:
    """Launches each row stands for: ``invocations`` (``--print-summary per-kernel`` rows stand for
    N launches, their metrics are per-launch averages), 1 where absent. docs/formulas.md#families."""
    w = column(results, "invocations")
    return w.where(w > 0, 1.0).fillna(1.0)


def family_table(results: pd.DataFrame) -> pd.DataFrame:
    """THE family aggregation (one row per family, largest GPU time first); findings and the
    report's family rows use it. docs/formulas.md#families.

    ``results``: the analyzed kernels (``name``, ``duration_s``, ``flops``, ``bytes_<lvl>``,
    ``label``, ``limiter``, … ; ``family`` is computed with :func:`assign_families` when absent).
    Sums are weighted by :func:`launch_weights`. ``kernels``: row positions of the family's rows;
    ``representative``: position of its longest row. ``intensity_<lvl>`` = Σ FLOP / Σ bytes and
    ``achieved_flops_s`` = Σ FLOP / Σ time over the rows where both are known (NaN where none);
    ``attainable_flops_s``: time-weighted mean over rows that have one. ``nvtx``: the distinct NVTX
    paths, in order of first appearance.
    """
    n = len(results)
    if not n:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in FAMILY_COLUMNS})
    fam = results["family"].astype(str) if "family" in results.columns else assign_families(results)
    frame = _weighted_rows(results, fam)
    g = frame.groupby("family", sort=False)
    out = pd.DataFrame({"launches": g["w"].sum(), "time_s": g["time"].sum(min_count=1),
                        "flops": g["flops"].sum(min_count=1)})
    with np.errstate(divide="ignore", invalid="ignore"):
        ft, tf = g["flops_t"].sum(min_count=1), g["time_f"].sum(min_count=1)
        out["achieved_flops_s"] = (ft / tf).where(tf > 0)
        out["attainable_flops_s"] = (g["att_t"].sum(min_count=1) / g["time_a"].sum(min_count=1))
        for lvl in _LEVELS:
            out[f"bytes_{lvl}"] = g[f"bytes_{lvl}"].sum(min_count=1)
            fl, by = g[f"fl_{lvl}"].sum(min_count=1), g[f"by_{lvl}"].sum(min_count=1)
            # 0 FLOPs measured: no intensity (no place on the FLOP roofline, docs/formulas.md#work-bytes)
            out[f"intensity_{lvl}"] = (fl / by).where((by > 0) & (fl > 0))
    _rates_only(out, results, fam, frame["w"])
    total = float(np.nansum(frame["time"]))
    out["time_share"] = (out["time_s"] / total).where(out["time_s"].notna()) if total > 0 else \
        pd.Series(np.nan, index=out.index).where(out["time_s"].isna(), 0.0)
    positions = g.indices
    out["kernels"] = [[int(p) for p in positions[f]] for f in out.index]
    longest = frame.assign(t=np.nan_to_num(frame["time"], nan=-1.0)).sort_values(
        "t", ascending=False, kind="stable").drop_duplicates("family").set_index("family")["pos"]
    out["representative"] = longest.reindex(out.index).astype(int)
    rep = out["representative"].to_numpy()
    keys = (family_key(results) if "name" in results.columns else fam).to_numpy(dtype=object)
    out["key"] = keys[rep]
    for col in ("name", "device", "grid", "block", "label", "limiter"):
        vals = results[col].to_numpy(dtype=object) if col in results.columns else np.full(n, None, dtype=object)
        out[col] = [None if _isna(v) else v for v in vals[rep]]
    out["nvtx"] = _nvtx_paths(results, out["kernels"])
    out = out.rename_axis("family").reset_index()
    out = out.sort_values(["time_s", "launches"], ascending=[False, False], kind="stable", na_position="last")
    return out[list(FAMILY_COLUMNS)].reset_index(drop=True)


def _weighted_rows(results: pd.DataFrame, fam: pd.Series) -> pd.DataFrame:
    """Per row: family, position, launch weight and the weighted sums :func:`family_table` adds up
    (a ratio's numerator and denominator only where both are known)."""
    n = len(results)
    w = launch_weights(results).to_numpy()
    dur = column(results, "duration_s").to_numpy()
    flops = column(results, "flops").to_numpy()
    att = column(results, "attainable_flops_s").to_numpy()
    cols: dict[str, Any] = {"family": fam.to_numpy(dtype=object), "pos": np.arange(n), "w": w,
                            "time": dur * w, "flops": flops * w}
    ok_t = np.isfinite(dur) & np.isfinite(flops)
    cols["flops_t"] = np.where(ok_t, flops * w, np.nan)
    cols["time_f"] = np.where(ok_t, dur * w, np.nan)
    ok_a = np.isfinite(att) & np.isfinite(dur)
    cols["att_t"] = np.where(ok_a, att * dur * w, np.nan)
    cols["time_a"] = np.where(ok_a, dur * w, np.nan)
    for lvl in _LEVELS:
        b = column(results, f"bytes_{lvl}").to_numpy()
        ok = np.isfinite(b) & np.isfinite(flops)
        cols[f"bytes_{lvl}"] = b * w
        cols[f"fl_{lvl}"] = np.where(ok, flops * w, np.nan)
        cols[f"by_{lvl}"] = np.where(ok, b * w, np.nan)
    return pd.DataFrame(cols)


def _rates_only(out: pd.DataFrame, results: pd.DataFrame, fam: pd.Series, w: pd.Series) -> None:
    """Families the sums leave unplaced because the export has no durations (rates-only section CSVs):
    achieved and attainable FLOP/s and each level's intensity are the launch-weighted mean of their
    launches' own values, computed from ncu's rates (no time to weight by); only where the sums give
    nothing (docs/formulas.md#families)."""
    no_dur = column(results, "duration_s").isna().to_numpy()
    if not no_dur.any():
        return
    wv = w.to_numpy()
    for col in ("achieved_flops_s", "attainable_flops_s", *(f"intensity_{lvl}" for lvl in _LEVELS)):
        v = column(results, col).to_numpy()
        ok = no_dur & np.isfinite(v)
        if not ok.any():
            continue
        g = pd.DataFrame({"family": fam.to_numpy(dtype=object), "vw": np.where(ok, v * wv, np.nan),
                          "w": np.where(ok, wv, np.nan)}).groupby("family", sort=False)
        mean = g["vw"].sum(min_count=1) / g["w"].sum(min_count=1)
        out[col] = out[col].fillna(mean.reindex(out.index))


def _isna(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _nvtx_paths(results: pd.DataFrame, kernels: pd.Series) -> list[list[str]]:
    if "nvtx" not in results.columns:
        return [[] for _ in range(len(kernels))]
    vals = results["nvtx"].to_numpy(dtype=object)
    return [list(dict.fromkeys(str(vals[p]) for p in ks if not _isna(vals[p]) and str(vals[p]))) for ks in kernels]
