"""Term counts as text: grouped digits, a power of ten from 13 digits on (issue 40: GPT-2 small's 21-digit
counts printed as one unbroken number)."""

from __future__ import annotations

from engine.forms.count_text import SCIENTIFIC_FROM, count_text


def test_counts_are_grouped_in_threes_then_written_as_a_power_of_ten():
    assert [count_text(n) for n in (0, 208, 2184, 1_234_567, SCIENTIFIC_FROM - 1)] == \
        ["0", "208", "2,184", "1,234,567", "999,999,999,999"]
    assert count_text(SCIENTIFIC_FROM) == "1.00 × 10¹²"
    assert count_text(117_964_800_000_000_000_000) == "1.18 × 10²⁰"  # 21 digits
    assert count_text(10 ** 21 - 1) == "1.00 × 10²¹"  # rounding carries into the power
