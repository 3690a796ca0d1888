"""A count of terms as text: its digits grouped in threes ("2,184"), and from SCIENTIFIC_FROM on its first three
digits and its power of ten ("1.18 × 10²⁰"). GPT-2 small's weights have up to 21-digit term counts, which
printed as one unbroken number: too long to read or to compare, and wider than the Weight pane's list.

The one rule for every place that shows a term count (the Weight and Forms panes, the formulas, the messages and
the command line).
"""

from __future__ import annotations

SCIENTIFIC_FROM = 10 ** 12  # a 13-digit count and up is written as a power of ten
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def count_text(n: int) -> str:
    """`n` (a whole count, ≥ 0) for people: 208 -> '208', 2184 -> '2,184', 117_964_800_000_000_000_000 ->
    '1.18 × 10²⁰' (rounded: the exact count is the integer the engine holds)."""
    n = int(n)
    if abs(n) < SCIENTIFIC_FROM:
        return f"{n:,}"
    mantissa, exponent = f"{n:.2e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"
