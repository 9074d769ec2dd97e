"""The rules behind a citation, from an installed rooftop: ``rooftop explain docs/formulas.md#diff``.

Every label, number and sentence rooftop prints cites the rule it follows as ``docs/FILE.md#anchor``
(docs/formulas.md, docs/contract.md, docs/architecture.md). The docs ship inside the package
(``rooftop/docs``, a link to the repository's ``docs/``), so a citation resolves without a clone:
:func:`rule_text` returns the cited section, from its heading to the next heading of the same or a
higher level. Anchors are the explicit ``<a id="...">`` ones and GitHub's heading slugs.
"""

from __future__ import annotations

import re
from importlib import resources

from rooftop.errors import InputError

DOCS = ("formulas.md", "contract.md", "architecture.md")
_HEADING = re.compile(r"^(#+)\s+(.+?)\s*$")
_ANCHOR = re.compile(r'<a id="([^"]+)"')
_ANCHOR_LINE = re.compile(r'^\s*<a id="[^"]+"></a>\s*$')


def slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation but ``-``/``_`` dropped, spaces to ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _doc(name: str) -> str:
    return resources.files("rooftop").joinpath("docs").joinpath(name).read_text(encoding="utf-8")


def _section(lines: list[str], anchor: str) -> str | None:
    """The section a heading slug or an explicit anchor names (anchor lines dropped), or None. An
    explicit anchor belongs to the heading just above it (docs put ``<a id>`` under the heading)."""
    for i, line in enumerate(lines):
        m = _HEADING.match(line)
        if m and slug(m.group(2)) == anchor:
            start = i
        elif anchor in _ANCHOR.findall(line):
            above = [j for j in range(max(0, i - 2), i) if _HEADING.match(lines[j])]
            start = above[-1] if above else next(
                (j for j in range(i + 1, len(lines)) if _HEADING.match(lines[j])), i)
        else:
            continue
        head = _HEADING.match(lines[start])
        level = len(head.group(1)) if head else 6
        end = next((j for j in range(start + 1, len(lines))
                    if (h := _HEADING.match(lines[j])) and len(h.group(1)) <= level), len(lines))
        body = [ln for ln in lines[start:end] if not _ANCHOR_LINE.match(ln)]
        return "\n".join(body).strip() + "\n"
    return None


def anchors(name: str) -> list[str]:
    """Every anchor of a shipped doc, in order (explicit ones first where a heading has both)."""
    out: list[str] = []
    for line in _doc(name).splitlines():
        out += _ANCHOR.findall(line)
        if m := _HEADING.match(line):
            out.append(slug(m.group(2)))
    return list(dict.fromkeys(out))


def rule_text(cite: str) -> str:
    """The section ``cite`` names: ``docs/formulas.md#diff``, ``formulas.md#diff`` or ``diff``
    (a bare anchor is looked up in formulas.md, then contract.md, then architecture.md)."""
    ref = cite.strip()
    name, _, anchor = ref.rpartition("#")
    name = name.removeprefix("docs/")
    names = [name] if name else list(DOCS)
    if name and name not in DOCS:
        raise InputError(cite, f"not a shipped document (one of {', '.join(DOCS)})",
                         "cite as docs/formulas.md#ANCHOR")
    for doc in names:
        found = _section(_doc(doc).splitlines(), anchor)
        if found is not None:
            return found
    known = ", ".join(anchors(names[0])[:40])
    raise InputError(cite, f"no section #{anchor} in {' or '.join(names)}",
                     f"anchors of {names[0]}: {known}")
