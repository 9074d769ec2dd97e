"""Time axes that span years name the year on every tick (issue 24, 'year on axes that span years';
reports/svg_axes.TimeAxis); within one year the ticks stay short."""

from __future__ import annotations

from datetime import datetime, timezone

from rooftop.reports.svg_axes import TimeAxis


def _t(*a: int) -> float:
    return datetime(*a, tzinfo=timezone.utc).timestamp()


def test_a_span_across_new_year_names_the_year() -> None:
    # two scrapes of one GPU 257 days apart (the corpus case of issue 24) read "04-10 00:00" ... "01-20": no year
    labels = [lab for _, lab in TimeAxis(_t(2025, 3, 1), _t(2026, 1, 20), epoch=True).ticks()]
    assert labels and all(lab.startswith(("2025-", "2026-")) for lab in labels)
    hours = [lab for _, lab in TimeAxis(_t(2025, 12, 31, 20), _t(2026, 1, 1, 4), epoch=True).ticks()]
    assert "2025-12-31 22:00" in hours and "2026-01-01 02:00" in hours


def test_a_span_within_one_year_keeps_short_ticks() -> None:
    labels = [lab for _, lab in TimeAxis(_t(2025, 3, 1), _t(2025, 3, 3), epoch=True).ticks()]
    assert labels == ["03-01 00:00", "03-01 12:00", "03-02 00:00", "03-02 12:00", "03-03 00:00"]
    first = TimeAxis(_t(2025, 3, 1, 10), _t(2025, 3, 1, 10, 5), epoch=True).ticks()[0]
    assert first[1] == "10:00"
