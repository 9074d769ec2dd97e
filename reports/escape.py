"""Escaping for every place an input-derived string (kernel, host, pod names) is rendered.

- ``esc``: HTML and SVG text and double-quoted attribute values; what XML 1.0 forbids (C0
  controls other than tab, LF, CR; lone surrogates; U+FFFE/U+FFFF) becomes a visible stand-in
  (U+2400 + code, the Control Pictures block; U+FFFD), so every SVG and XHTML parser reads it.
- ``xml_text``: that replacement alone (text already escaped, or not HTML).
- ``md_fence``: a Markdown code block of one line of text (a command line): controls, bidi and
  line separators shown as ``\\x1b``-style escapes, the fence longer than any backtick run in it.
- ``script_json``: JSON placed inside ``<script type="application/json">`` (``<``, ``>``, ``&``,
  U+2028/U+2029 escaped, so ``</script>`` in a name cannot end the element).
- ``md``: one Markdown table cell or inline text (``|``, backticks, brackets, ``<``, newlines,
  emphasis characters neutralised) that renders the same on GitHub and Jira.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

import orjson

# orjson: compact UTF-8, NaN/inf -> null, numpy scalars/arrays, non-str keys as strings (like
# ``json``); datetimes and dataclasses go through ``default`` (``str``) as they do with ``json``.
_OPTS = (orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
         | orjson.OPT_PASSTHROUGH_DATACLASS)

_JSON_SCRIPT_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


# XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _stand_in(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    return chr(0x2400 + c) if c < 0x20 else "\ufffd"


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids replaced by a visible stand-in (see above)."""
    return _XML_FORBIDDEN.sub(_stand_in, text)


def md_fence(text: str) -> str:
    """``text`` as a fenced Markdown code block (see the module docstring)."""
    from rooftop.reports.terminal import escape_terminal

    line = escape_terminal(text)
    fence = "```"
    while fence in line:
        fence += "`"
    return f"{fence}\n{line}\n{fence}"


def esc(value: Any) -> str:
    """HTML-escape ``value`` for text nodes and quoted attributes (``None`` -> empty string), with
    what XML 1.0 forbids replaced (:func:`xml_text`)."""
    if value is None:
        return ""
    return xml_text(html.escape(str(value), quote=True))


def _plain(value: Any) -> Any:
    """JSON-ready copy: NaN/inf -> None, numpy scalars/arrays -> Python (slow path only)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, bool, int)):
        return value
    tolist = getattr(value, "tolist", None)
    if callable(tolist):  # numpy scalar or array
        return _plain(tolist())
    return str(value)


def _default(value: Any) -> Any:
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    return str(value)


def dumps_bytes(value: Any, *, indent: bool = False, newline: bool = False) -> bytes:
    """Strict JSON as UTF-8 bytes (no NaN/Infinity; non-finite numbers become ``null``).

    orjson (C/Rust) writes it; ``indent`` gives two-space indentation. What orjson refuses
    (integers beyond 64 bits, strings with lone surrogates, deep nesting) goes through
    :mod:`json` with the same rules. ``newline`` ends the text with one."""
    opts = _OPTS | (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_APPEND_NEWLINE if newline else 0)
    try:
        return orjson.dumps(value, default=_default, option=opts)
    except orjson.JSONEncodeError:
        # a lone surrogate becomes its JSON escape (\udcxx): the bytes stay valid UTF-8
        text = _stdlib_dumps(value, indent=2 if indent else None) + ("\n" if newline else "")
        return text.encode("utf-8", "backslashreplace")


def _stdlib_dumps(value: Any, *, indent: int | None) -> str:
    seps = (",", ": ") if indent else (",", ":")  # orjson's layout
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False, indent=indent, separators=seps,
                          default=_default)
    except ValueError:
        return json.dumps(_plain(value), allow_nan=False, ensure_ascii=False, indent=indent, separators=seps)


def dumps(value: Any, *, indent: bool = False) -> str:
    """:func:`dumps_bytes` as text."""
    return dumps_bytes(value, indent=indent).decode("utf-8")


def script_json(value: Any) -> str:
    """JSON safe to place verbatim between ``<script type="application/json">`` tags."""
    text = dumps(value)
    for ch, rep in _JSON_SCRIPT_ESCAPES.items():  # five C-level replaces (translate is per character)
        text = text.replace(chr(ch), rep)
    return text


_MD_SPECIAL = str.maketrans({
    "\\": "\\\\",
    "|": "\\|",
    "`": "'",
    "[": "\\[",
    "]": "\\]",
    "<": "&lt;",
    ">": "&gt;",
    "*": "\\*",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "!": "\\!",
    "#": "\\#",
    "\r": " ",
    "\n": " ",
    "\t": " ",
    "\u2028": " ",
    "\u2029": " ",
})


def md(value: Any, *, limit: int | None = None) -> str:
    """Neutralise Markdown in ``value`` for an inline span or a table cell (one line, no links,
    no HTML, no code spans, no emphasis). ``limit`` shortens very long strings with an ellipsis."""
    if value is None:
        return ""
    text = str(value)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 1)] + "…"
    text = _AUTOLINK.sub(lambda m: m.group(0)[:-1] + _WJ + m.group(0)[-1], text.translate(_MD_SPECIAL))
    return text.translate(_MD_CONTROLS)


# GitHub turns bare URLs, www. hosts and e-mail addresses into live links (GFM autolink extension), even
# in table cells: a WORD JOINER (U+2060, invisible) before the ':' of a scheme, the '.' after 'www' and
# the '@' of an address breaks the pattern and leaves the text as it reads.
_WJ = "\u2060"
_AUTOLINK = re.compile(r"(?i)(?<![a-z0-9])(?:[a-z][a-z0-9+.-]{1,20}:(?=//)|www\.|xmpp:|mailto:)|(?<=[a-z0-9._+-])@")
# C0/C1 controls -> space; bidi embeddings, overrides, isolates and marks -> their visible code point
_MD_CONTROLS = {**{c: " " for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))},
                **{c: f"U+{c:04X}" for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}}
