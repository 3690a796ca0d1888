"""The console is bounded in the engine (issue 18, class 3): huge literals, indexes past any list, deep
nesting, exponential expansions and long lines end in one ConsoleError, for the GUI and `forms --eval`."""

from __future__ import annotations

import re
import threading

import pytest

from engine.cli import main
from engine.forms.console import Console
from engine.forms.console.limits import MAX_DEPTH, MAX_STEPS, describe_count
from engine.forms.console.syntax import ConsoleError

SYMBOLS = 'x = ["x"]; x.op = ""; y = ["y"]; y.op = ""; s = oplus(x, y); '

BOUNDED = {
    "5000-digit literal": ("1" * 5000, "5000 digits"),
    "5000-digit negative index": ("[1, 2][-" + "9" * 5000 + "]", "5000 digits"),
    "19-digit literal": ("encoder(" + "9" * 19 + ")", "19 digits"),
    "index past the list": ("[1, 2][999999999999999999]", "out of range"),
    "index past the form": ("forms(2, 999999999999)", "out of range"),
    "index past the stages": ("stages(encoder(2), 99999999)", "out of range"),
    "10^4 brackets": ("(" * 10_000 + "1" + ")" * 10_000, f"nested more than {MAX_DEPTH}"),
    "10^4 list brackets": ("[" * 10_000 + "]" * 10_000, f"nested more than {MAX_DEPTH}"),
    "10^4 calls": ("log(" * 10_000 + "1" + ")" * 10_000, f"nested more than {MAX_DEPTH}"),
    "10^4 indexes": ("a = [1]; a" + "[0]" * 10_000, f"nested more than {MAX_DEPTH}"),
    "10^4 properties": ("a = [1]; a" + ".length" * 10_000, f"nested more than {MAX_DEPTH}"),
    "10^5 brackets": ("(" * 100_000 + ")" * 100_000, "characters"),
    "40-fold product": (SYMBOLS + "expandAll(otimes(" + ", ".join(["s"] * 40) + "))", "2^40 terms"),
    "40-fold product, expandmm": (SYMBOLS + "expandmm(otimes(" + ", ".join(["s"] * 40) + "))", "2^40 terms"),
    "product of 3-term sums": (SYMBOLS + "t = oplus(x, y, x); expandAll(otimes(" + ", ".join(["t"] * 30) + "))",
                               "2.06 × 10¹⁴ terms"),
    "a network's whole form": ("expandmm(form(encoder(8)))", "more than the console expands"),
}


@pytest.mark.parametrize("case", BOUNDED, ids=list(BOUNDED))
def test_every_unbounded_line_is_one_console_error(case):
    line, expected = BOUNDED[case]
    with pytest.raises(ConsoleError, match=re.escape(expected)):
        Console().run(line)


@pytest.mark.parametrize("case", ["5000-digit literal", "10^4 brackets", "40-fold product"])
def test_forms_eval_shares_the_bounds(case, capsys):
    line, expected = BOUNDED[case]
    assert main(["forms", "--eval", line]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected.split()[0] in err[0] and "Traceback" not in err[0]


def test_a_small_expansion_still_runs_and_the_console_goes_on():
    console = Console()
    with pytest.raises(ConsoleError):
        console.run("(" * 1000 + "1" + ")" * 1000)
    out = console.run(SYMBOLS + "expandAll(otimes(s, s, s)).length")
    assert out[-1].content == "8"
    assert console.run("(" * (MAX_DEPTH - 1) + "1" + ")" * (MAX_DEPTH - 1))[-1].content == "1"


def test_the_step_budget_and_cancel():
    console = Console()
    console.run("a = forms(encoder(2)); b = [" + ", ".join(["a"] * 250) + "]")  # a few bytes each
    assert console.run("expandAll(b).length")[-1].content == "250"
    for line in ("c = [" + ", ".join(["b"] * 250) + "]; expandAll(c)", "log(c)", "c", "flatten(c)"):
        with pytest.raises(ConsoleError, match=f"more than {MAX_STEPS:,} steps"):  # 1.5 million items
            console.run(line)
    cancelled = Console()
    original = cancelled.tick

    def tick(pos, n=1):  # another thread presses Stop while the line runs
        t = threading.Thread(target=cancelled.cancel)
        t.start()
        t.join()
        original(pos, n)
    cancelled.tick = tick
    with pytest.raises(ConsoleError, match="cancelled"):
        cancelled.run("log(1, 2, 3)")
    assert describe_count(2 ** 40) == "2^40" and describe_count(12) == "12" and describe_count(3 ** 30) == "2.06 × 10¹⁴"
