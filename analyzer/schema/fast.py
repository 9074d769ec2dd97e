"""The fast check of a document: the same types as :mod:`.check`, over a whole column of values at
once (a list of 100k kernels is checked one key at a time over all kernels, with set and ``map``
operations). It says only whether the values match; :mod:`.check` explains a failure."""

from __future__ import annotations

import math
import types
from collections import Counter
from collections.abc import Iterable
from functools import cache, partial
from itertools import chain, filterfalse
from operator import is_, itemgetter
from typing import Any, Literal, Union, get_args, get_origin, is_typeddict

from rooftop.analyzer.schema.check import type_hints


def _ok(tp: Any, values: list[Any]) -> bool:
    """Whether every value in ``values`` is a ``tp`` (column-wise; no path on failure)."""
    if not values or tp is Any:
        return True
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return _ok_union(get_args(tp), values)
    kinds = set(map(type, values))
    if tp is float:
        return kinds <= {float, int} and all(map(math.isfinite, values))
    if tp in (int, str, bool, type(None)):
        return kinds <= {tp}
    if origin is Literal:
        return kinds <= {str, int} and set(values) <= set(get_args(tp))
    if origin is list:  # (a list of any JSON value is not flattened to be checked: evidence_facts columns)
        return kinds <= {list} and (get_args(tp)[0] is Any or _ok(get_args(tp)[0], list(chain.from_iterable(values))))
    if kinds - {dict}:
        return False
    if origin is dict:
        key_tp, item_tp = get_args(tp)
        keys = set(chain.from_iterable(values))
        return (set(map(type, keys)) <= {str}
                and (get_origin(key_tp) is not Literal or keys <= set(get_args(key_tp)))
                and _ok(item_tp, list(chain.from_iterable(map(dict.values, values)))))
    if is_typeddict(tp):
        return _ok_object(tp, values)
    return False


def _ok_object(tp: Any, values: list[dict[str, Any]]) -> bool:
    required, hints = tp.__required_keys__, type_hints(tp)
    allowed = set(hints)
    counts = Counter(chain.from_iterable(values))  # each key: in how many objects
    n = len(values)
    if not counts.keys() <= allowed or any(counts[k] != n for k in required):
        return False
    everywhere = {k for k, c in counts.items() if c == n}
    for k, ktp in hints.items():
        if k in everywhere:
            column = list(map(itemgetter(k), values))
        else:
            column = [d[k] for d in values if k in d]
        if not _ok(ktp, column):
            return False
    return True


def _ok_union(members: Iterable[Any], values: list[Any]) -> bool:
    """Each value goes to the member its Python type can only be (``None`` to null, a dict to the
    one object type, ...); values two members could take are checked one by one."""
    members = tuple(members)
    kinds = set(map(type, values))
    takers = {t: [m for m in members if t in _python_types(m)] for t in kinds}
    if not all(takers.values()):
        return False
    others = {id(m): m for t, ms in takers.items() if t is not type(None) for m in ms}
    if len(others) <= 1 and len(takers.get(type(None), [None])) == 1:  # e.g. float | None
        rest = list(filterfalse(partial(is_, None), values)) if type(None) in kinds else values
        return not others or _ok(next(iter(others.values())), rest)
    by_type: dict[type, list[Any]] = {}
    for v in values:
        by_type.setdefault(type(v), []).append(v)
    for t, vals in by_type.items():
        ms = takers[t]
        if not ms:
            return False
        if len(ms) == 1:
            if not _ok(ms[0], vals):
                return False
        elif not all(any(_ok(m, [v]) for m in ms) for v in vals):
            return False
    return True


@cache
def _python_types(tp: Any) -> frozenset[type]:
    origin = get_origin(tp)
    if tp is Any:
        return frozenset({type(None), bool, int, float, str, list, dict})
    if tp is float:
        return frozenset({float, int})
    if origin is Literal:
        return frozenset(type(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return frozenset().union(*(_python_types(m) for m in get_args(tp)))
    if origin is list:
        return frozenset({list})
    if origin is dict or is_typeddict(tp):
        return frozenset({dict})
    return frozenset({tp})
