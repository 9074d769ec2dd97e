"""`rooftop explain CITATION` (issue 27): the rules every printed citation names ship with the package,
so ``docs/formulas.md#diff`` resolves from an install without the repository's docs/."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rooftop.cli.commands import main
from rooftop.errors import InputError
from rooftop.explain import DOCS, anchors, rule_text


def test_every_anchor_of_every_shipped_doc_resolves() -> None:
    for doc in DOCS:
        names = anchors(doc)
        assert names, doc
        for anchor in names:
            text = rule_text(f"docs/{doc}#{anchor}")
            assert text.startswith("#"), (doc, anchor)  # the section, from its heading


def test_section_ends_at_the_next_heading_of_its_level() -> None:
    diff = rule_text("docs/formulas.md#diff")
    assert diff.startswith("## Diff\n") and "Mann–Whitney U" in diff
    assert "## Timelines" not in diff and '<a id="diff">' not in diff
    # a level-3 section stops at the next level-3 or higher heading
    join = rule_text("timeline-join")  # bare anchor: looked up in formulas.md first
    assert join.startswith("### Timeline joined to ncu") and "### Diff of two timelines" not in join


def test_unknown_citations_say_what_exists() -> None:
    with pytest.raises(InputError, match=r"no section #nope in formulas\.md.*diff"):
        rule_text("docs/formulas.md#nope")
    with pytest.raises(InputError, match="not a shipped document"):
        rule_text("docs/research/x.md#y")


def test_cli_prints_the_rule_and_exits_2_on_an_unknown_one() -> None:
    res = CliRunner().invoke(main, ["explain", "docs/formulas.md#windows"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("## DCGM windows")
    bad = CliRunner().invoke(main, ["explain", "formulas.md#no-such-rule"])
    assert bad.exit_code == 2 and "no section #no-such-rule" in bad.output
