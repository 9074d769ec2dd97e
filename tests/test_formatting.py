"""Number formatting shared by the HTML, Markdown and terminal renderers."""

from __future__ import annotations

import pytest

from rooftop.reports.formatting import fmt_num, fmt_pct, fmt_time, num


@pytest.mark.parametrize(("value", "text"), [
    (1.23e12, "1.23 TFLOP/s"), (989.4e12, "989 TFLOP/s"), (3.35e12, "3.35 TFLOP/s"),
    (512.0, "512 FLOP/s"), (None, "—"), (float("nan"), "—"), ("n/a", "n/a"),
])
def test_fmt_num(value: object, text: str) -> None:
    assert fmt_num(value, "FLOP/s") == text


@pytest.mark.parametrize(("value", "text"), [
    (2.5, "2.5 s"), (1.73e-3, "1.73 ms"), (12.34e-6, "12.3 µs"), (0, "0 µs"), (850e-9, "850 ns"),
    (None, "—"), (float("inf"), "—"),
])
def test_fmt_time(value: object, text: str) -> None:
    assert fmt_time(value) == text


def test_fmt_pct_and_num() -> None:
    assert fmt_pct(0.123) == "12.3%" and fmt_pct(None) == "—" and fmt_pct(float("nan")) == "—"
    assert num(True) is None and num("1") is None and num(2) == 2.0
