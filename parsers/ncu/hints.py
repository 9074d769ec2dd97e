"""Device hints in the text around an ncu export: the application's own output lines.

ncu interleaves the profiled program's stdout with its CSV or console output (FORMATS.md §2:
``Detected GPU: Tesla V100-PCIE-32GB (SM 7.0)``, ``device: NVIDIA GeForce RTX 5070 (sm_120), 48 SMs``).
Such a line names the GPU the kernels ran on when the export itself does not (details-page and
console exports carry no device name). A line is a hint only when it reads ``<gpu|device> ...: <name>``
and the name starts like an NVIDIA product name; the rule is docs/formulas.md#ceilings.

:func:`scan` returns ``meta["device_hints"]``: one dict per distinct hinted name,
``{"name", "cc", "sm_count", "line", "text"}`` (``cc``/``sm_count`` ``None`` when the line has none).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# "<label>: <name>" where label names a GPU/device, e.g. "Detected GPU:", "GPU 0:", "Device name =",
# "Using device:", "device:".
_LINE = re.compile(
    r"^\s*(?:detected\s+|using\s+|running\s+on\s+)?(?:cuda\s+)?(?:gpu|device)(?:\s*\d+)?(?:\s+name)?\s*[:=]\s*(?P<rest>.+)$",
    re.IGNORECASE,
)
# the name must start like an NVIDIA product name (a vendor word, a product line, or a known chip prefix)
_NAME_START = re.compile(
    r"^(?:NVIDIA|Tesla|Quadro|GeForce|TITAN|RTX|GTX|GRID|Jetson|[ABHLTVP]\d{1,3}\b|[ABHLTVP]\d{1,3}[A-Z]|G[HB]\d{3})",
    re.IGNORECASE,
)
_CC = re.compile(r"\(\s*(?:SM|sm_|compute capability|CC)\s*(?P<maj>\d{1,2})\.?(?P<min>\d)\s*\)", re.IGNORECASE)
_SMS = re.compile(r"(?P<n>\d{1,4})\s*(?:SMs|multiprocessors)\b", re.IGNORECASE)


def parse_line(line: str) -> dict[str, Any] | None:
    """The hint in one application line, or ``None``."""
    if not line or line[0] in "\"=" or len(line) > 300:
        return None
    m = _LINE.match(line)
    if not m:
        return None
    rest = m.group("rest").strip()
    cut = re.search(r"\s*(?:\(|,|\bwith\b|\bcc\b)", rest, re.IGNORECASE)
    name = (rest[: cut.start()] if cut else rest).strip().strip("'\"")
    if not name or not _NAME_START.match(name) or len(name) > 80:
        return None
    cc = None
    c = _CC.search(rest)
    if c:
        cc = f"{int(c.group('maj'))}.{int(c.group('min'))}"
    s = _SMS.search(rest)
    return {"name": name, "cc": cc, "sm_count": int(s.group("n")) if s else None, "text": line.strip()[:200]}


def scan(lines: Iterable[tuple[int, str]]) -> list[dict[str, Any]]:
    """Hints from (line number, text) pairs that are not CSV rows nor ncu's own lines; first per name."""
    out: dict[str, dict[str, Any]] = {}
    for n, line in lines:
        hint = parse_line(line)
        if hint is not None and hint["name"] not in out:
            out[hint["name"]] = {**hint, "line": n}
    return list(out.values())


_CANDIDATE = re.compile(r'^(?![" =\t])[^\n]*(?:gpu|device)[^\n]*$', re.IGNORECASE | re.MULTILINE)


_SKIP_START = frozenset('" =\t')
_WORD = re.compile(r"gpu|device", re.IGNORECASE)


def scan_text(text: str) -> list[dict[str, Any]]:
    """:func:`scan` over a whole export text (CSV rows, ncu's ``==`` lines and indented lines skipped):
    the lines :data:`_CANDIDATE` matches, found by splitting the text once (the multi-line regex tries
    every character of a 40 MB export; ``tests/test_kernel_fast_paths.py`` holds the two equal)."""
    return scan((no + 1, line.rstrip("\r")) for no, line in enumerate(text.split("\n"))
                if line and line[0] not in _SKIP_START and _WORD.search(line))


def scan_text_reference(text: str) -> list[dict[str, Any]]:
    """:func:`scan_text` by the multi-line regex (the plain form)."""
    return scan((text.count("\n", 0, m.start()) + 1, m.group(0).rstrip("\r")) for m in _CANDIDATE.finditer(text))
