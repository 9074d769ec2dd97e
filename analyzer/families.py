"""Kernel families: launches of the same kernel with the same launch configuration.

Family key = normalised base name + launch configuration, e.g.
``at::native::vectorized_elementwise_kernel (grid 1024, block 128)``. The base name drops the
return type (``void``), the argument list and all template arguments; ``(anonymous namespace)::``
and ``<unnamed>::`` are written ``(anonymous)::``; Itanium-mangled names (``_Z...``) are reduced
to their qualified name. The key is short already; :func:`display_name` shortens very long
qualified names further for titles. The full name stays in each kernel's ``name``.

Vectorised over *unique* names: normalisation runs once per distinct name, not per launch.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

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


def display_name(key: str, limit: int = 80) -> str:
    """Shorten a long family key for titles: keep the last qualified components."""
    if len(key) <= limit:
        return key
    head, sep, config = key.rpartition(" (grid")
    name = head if sep else key
    suffix = sep + config if sep else ""
    parts = name.split("::")
    short = parts[-1]
    for p in reversed(parts[:-1]):
        if len(short) + len(p) + 2 > limit - 3 - len(suffix):
            break
        short = p + "::" + short
    if len(short) > limit - len(suffix):
        short = short[: max(limit - len(suffix) - 1, 8)] + "…"
    elif short != name:
        short = "…::" + short
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


def assign_families(results: pd.DataFrame) -> pd.Series:
    """Family key per kernel (same index as ``results``): base name + ``(grid G, block B)``.

    ``results`` needs ``name``; ``grid`` and ``block`` are used when present (missing values
    print as ``?``; both missing -> the base name alone).
    """
    if not len(results):
        return pd.Series([], index=results.index, dtype=object, name="family")
    names = results["name"].astype(object).where(results["name"].notna(), "")
    codes, uniques = pd.factorize(names.astype(str))
    bases = np.array([base_name(u) for u in uniques], dtype=object)
    base = pd.Series(bases[codes], index=results.index, dtype=object)
    grid = results["grid"] if "grid" in results else pd.Series(np.nan, index=results.index)
    block = results["block"] if "block" in results else pd.Series(np.nan, index=results.index)
    return (base + _config(grid, block)).rename("family")
