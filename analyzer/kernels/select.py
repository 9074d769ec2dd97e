"""``-k/--kernel REGEX``: analyse only the kernels whose name matches (docs/formulas.md#kernel-filter).

ncu's own flag: ``-k NAME`` there matches the function name exactly and ``-k regex:PATTERN`` by a
regular expression; here the value is always a regular expression searched in the kernel's name
as the export spells it (demangled, with its template and argument lists), and a ``regex:`` prefix
is accepted and dropped so an ncu command line's value works unchanged."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from rooftop.errors import InputError

PREFIX = "regex:"


def compile_filter(pattern: str) -> re.Pattern[str]:
    """The filter as a compiled expression; a pattern that does not compile is an :class:`InputError`."""
    text = pattern.removeprefix(PREFIX)
    try:
        return re.compile(text)
    except re.error as exc:
        raise InputError(f"-k {pattern}", f"is not a regular expression ({exc})",
                         "escape ( ) [ ] < > * + ? with \\, or pass part of the name") from exc


def select_kernels(kernels: pd.DataFrame, pattern: str, where: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The rows of ``kernels`` whose ``name`` matches ``pattern`` (re.search), and the lint entry
    that says so (``kernel-filter``). No kernel at all, or none matching: an :class:`InputError`
    naming a few of the names there are."""
    names = kernels["name"].astype("string").fillna("").tolist() if len(kernels) else []
    keep = matching_positions(names, pattern, where)
    chosen = kernels.iloc[keep].reset_index(drop=True)
    lint = {"code": "kernel-filter", "kernels": [],
            "message": f"-k {pattern!r}: {len(chosen):,} of {len(kernels):,} kernel launches analysed (those whose "
                       "name matches); time shares, labels and findings are of those alone "
                       "(docs/formulas.md#kernel-filter)"}
    return chosen, lint


def matching_positions(names: list[str], pattern: str, where: str) -> list[int]:
    """Positions of the names ``pattern`` matches (re.search). No name at all, or none matching:
    an :class:`InputError` naming a few of the names there are."""
    rx = compile_filter(pattern)
    if not names:
        raise InputError(where, f"has no kernels for -k {pattern!r} to select",
                         "-k selects kernels of ncu profiles; drop it for DCGM or trace inputs")
    keep = [i for i, n in enumerate(names) if rx.search(n or "") is not None]
    if not keep:
        some = ", ".join(list(dict.fromkeys(_short(n or "") for n in names))[:5])
        raise InputError(where, f"no kernel name matches -k {pattern!r}", f"the names here include: {some}")
    return keep


def _short(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"
