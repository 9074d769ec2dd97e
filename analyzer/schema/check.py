"""The reference check of a document: a plain recursive walk, value by value, that names the first
bad key (``$.kernels[3].label: expected one of ...``) in a :class:`rooftop.errors.SchemaError`."""

from __future__ import annotations

import math
import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from rooftop.errors import SchemaError


def describe(tp: Any) -> str:
    """A type in words, for error messages."""
    origin = get_origin(tp)
    if tp is Any:
        return "any JSON value"
    if tp is type(None):
        return "null"
    if tp is float:
        return "a finite number"
    if tp in (int, str, bool):
        return {int: "an integer", str: "a string", bool: "true/false"}[tp]
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(describe(a) for a in get_args(tp))
    if origin is list:
        return f"a list of ({describe(get_args(tp)[0])})"
    if origin is dict:
        return f"an object of ({describe(get_args(tp)[1])})"
    if is_typeddict(tp):
        return f"an object {tp.__name__}"
    return repr(tp)


def type_hints(td: Any) -> dict[str, Any]:
    """The resolved type of each key of the TypedDict ``td`` (cached)."""
    cached = _HINTS.get(td)
    if cached is None:
        cached = _HINTS[td] = get_type_hints(td)
    return cached


_HINTS: dict[Any, dict[str, Any]] = {}


def _is_float(v: Any) -> bool:
    return (type(v) is float and math.isfinite(v)) or type(v) is int


def check_value(tp: Any, v: Any, path: str) -> None:
    """The reference: walk ``v`` value by value; raise :class:`SchemaError` at the first bad one."""
    origin = get_origin(tp)
    if tp is Any:
        return
    if origin in (Union, types.UnionType):
        errors = []
        for member in get_args(tp):
            try:
                check_value(member, v, path)
                return
            except SchemaError as exc:
                errors.append(exc)
        deepest = max(errors, key=lambda e: len(e.path or ""))
        if deepest.path != path:  # one member matched the shape: its error is the useful one
            raise deepest
        raise SchemaError(f"expected {describe(tp)}, got {_show(v)}", path=path)
    ok = {type(None): lambda: v is None, float: lambda: _is_float(v), int: lambda: type(v) is int,
          str: lambda: type(v) is str, bool: lambda: type(v) is bool}.get(tp)
    if ok is not None or origin is Literal:
        good = ok() if ok is not None else (type(v) in (str, int) and v in get_args(tp))
        if not good:
            raise SchemaError(f"expected {describe(tp)}, got {_show(v)}", path=path)
        return
    if origin is list:
        if type(v) is not list:
            raise SchemaError(f"expected {describe(tp)}, got {_show(v)}", path=path)
        for i, item in enumerate(v):
            check_value(get_args(tp)[0], item, f"{path}[{i}]")
        return
    if origin is dict or is_typeddict(tp):
        _check_object(tp, v, path)
        return
    raise SchemaError(f"the schema check cannot check the type {tp!r}", path=path)


def _check_object(tp: Any, v: Any, path: str) -> None:
    if type(v) is not dict:
        raise SchemaError(f"expected {describe(tp)}, got {_show(v)}", path=path)
    if get_origin(tp) is dict:
        key_tp, item_tp = get_args(tp)
        for k, item in v.items():
            if type(k) is not str:
                raise SchemaError(f"key {_show(k)} is not a string", path=path)
            if get_origin(key_tp) is Literal and k not in get_args(key_tp):
                raise SchemaError(f"unknown key (expected {describe(key_tp)})", path=f"{path}.{k}")
            check_value(item_tp, item, f"{path}.{k}")
        return
    missing = [k for k in tp.__required_keys__ if k not in v]
    if missing:
        raise SchemaError(f"missing key {sorted(missing)[0]!r} ({describe(tp)})", path=path)
    hints = type_hints(tp)
    for k, item in v.items():
        if k not in hints:
            raise SchemaError(f"unknown key (declare it in {tp.__name__} in rooftop/analyzer/schema/)", path=f"{path}.{k}")
        check_value(hints[k], item, f"{path}.{k}")


def _show(v: Any) -> str:
    s = repr(v)
    return f"{type(v).__name__} {s if len(s) <= 60 else s[:57] + '...'}"
