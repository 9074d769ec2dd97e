"""The JSON output: the contract document, strict JSON (no NaN/Infinity), UTF-8 kept.

The text is exactly ``json.dumps(doc, allow_nan=False, ensure_ascii=False, indent=1)`` (non-finite
numbers as ``null``). Python's ``indent`` path is the pure-Python encoder (slow for 100k kernels), so
:func:`render_json` builds the same text level by level: all values at one nesting depth are encoded in
one call of the C encoder, then joined with the indentation for that depth. Anything other than plain
``dict``/``list``/``tuple``/``str``/``int``/``float``/``bool``/``None`` takes the generic path.
"""

from __future__ import annotations

import json
import math
from itertools import chain
from operator import itemgetter
from typing import Any

from reports.escape import dumps

# C encoder, one value per line: a raw newline never occurs inside an encoded scalar.
_LINES = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=("\n", ":"))


class _Generic(Exception):
    """A value the level-wise encoder does not handle; use the generic path."""


_SCALAR = frozenset({str, int, float, bool, type(None)})


def _scalars(values: list[Any]) -> list[str]:
    """JSON text of plain scalars, one C-encoder call for all (non-finite floats -> ``null``)."""
    if not values:
        return []
    try:
        text = _LINES.encode(values)
    except ValueError:  # NaN/inf
        text = _LINES.encode([None if type(v) is float and not math.isfinite(v) else v for v in values])
    return text[1:-1].split("\n")


def _dicts(values: list[dict[Any, Any]], depth: int) -> list[str]:
    """Dicts grouped by key tuple; each key's values are encoded as one column, then filled into a template."""
    shapes = list(map(tuple, values))
    groups: dict[tuple[Any, ...], list[int]] = {}
    if shapes.count(shapes[0]) == len(shapes):
        groups[shapes[0]] = list(range(len(values)))
    else:
        for i, k in enumerate(shapes):
            groups.setdefault(k, []).append(i)
    out: list[str] = [""] * len(values)
    inner = "\n" + " " * (depth + 1)
    close = "\n" + " " * depth + "}"
    for keys, idx in groups.items():
        if not keys:
            for i in idx:
                out[i] = "{}"
            continue
        if not all(type(k) is str for k in keys):
            raise _Generic
        rows = [values[i] for i in idx]
        columns = zip(*map(itemgetter(*keys), rows), strict=True) if len(keys) > 1 \
            else iter([[d[keys[0]] for d in rows]])
        cols = [_level(list(col), depth + 1) for col in columns]
        template = "{" + inner + ("," + inner).join(
            k.replace("%", "%%") + ": %s" for k in _scalars(list(keys))) + close
        for i, row in zip(idx, zip(*cols, strict=True), strict=True):
            out[i] = template % row
    return out


def _lists(values: list[Any], depth: int) -> list[str]:
    """Lists/tuples: all items encoded in one flat call, then joined per list."""
    sizes = list(map(len, values))
    enc = _level(list(chain.from_iterable(values)), depth + 1)
    inner = "\n" + " " * (depth + 1)
    sep = "," + inner
    close = "\n" + " " * depth + "]"
    out: list[str] = []
    pos = 0
    for n in sizes:
        out.append("[" + inner + sep.join(enc[pos:pos + n]) + close if n else "[]")
        pos += n
    return out


def _level(values: list[Any], depth: int) -> list[str]:
    """JSON text (``indent=1`` layout) of ``values``, all sitting at nesting ``depth``."""
    if not values:
        return []
    types = set(map(type, values))
    if types <= _SCALAR:
        return _scalars(values)
    if types == {dict}:
        return _dicts(values, depth)
    if types <= {list, tuple}:
        return _lists(values, depth)
    if not types <= _SCALAR | {dict, list, tuple}:
        raise _Generic
    out: list[str] = [""] * len(values)
    for kind in (_SCALAR, {dict}, {list, tuple}):
        idx = [i for i, v in enumerate(values) if type(v) in kind]
        for i, s in zip(idx, _level([values[i] for i in idx], depth), strict=True):
            out[i] = s
    return out


def render_json(doc: dict[str, Any]) -> str:
    """``json.dumps(doc, allow_nan=False, indent=1)``; non-finite numbers become ``null``."""
    try:
        return _level([doc], 0)[0] + "\n"
    except _Generic:
        return dumps(doc, indent=1) + "\n"
