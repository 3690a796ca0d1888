"""The console's bounds: what one line may ask of the machine, checked in the engine so that the GUI's
console and `gpt-explorer forms --eval` refuse the same lines with the same message.

A line is typed by a person (or pasted from anywhere): it may hold a 5000-digit number, brackets nested
10⁵ deep, a million list items, or an `expandAll` of a 40-fold product of sums, whose 2^40 terms would
never finish. The parser refuses long lines, long numbers and deep nesting before building anything;
expansions are counted (`rules.summand_count`) before they are made; every evaluation step is counted,
and the line stops at `MAX_STEPS`, after `MAX_SECONDS`, or as soon as `Console.cancel()` is called from
another thread.
"""

from __future__ import annotations

from ..count_text import count_text

MAX_LINE = 100_000     # characters in one line
MAX_DIGITS = 18        # an integer literal fits in 64 bits
MAX_DEPTH = 100        # nested brackets, calls, indexes and properties (Python's own stack holds ~1000)
MAX_STEPS = 1_000_000  # evaluation steps (nodes evaluated and list items built) for one line
MAX_TERMS = 10_000     # what the console will expand or list at once
MAX_SECONDS = 60       # wall time of one line, checked between evaluation steps


def describe_count(n: int) -> str:
    """2^40 for a power of two (an expansion's count often is), else as every term count is written
    (count_text: 1,234, or 2.06 × 10¹⁴ for a large one)."""
    if n > 1024 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return count_text(n)


def leaf_count(v, memo: dict[int, int] | None = None) -> int:
    """Items a function (or the echo) would visit in a value: a list shared many times over, as in
    b = [a, a, …]; c = [b, b, …], is a few bytes but millions of items to expand or print."""
    if not isinstance(v, list):
        return 1
    memo = {} if memo is None else memo
    got = memo.get(id(v))
    if got is None:
        got = memo[id(v)] = sum(leaf_count(x, memo) for x in v)
    return got
