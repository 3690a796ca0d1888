"""The Forms pane's tests share the app's one formula renderer (gui/widgets/formula.py) and its symbolic process.
A test's formulas still waiting to be typeset when it ends are forgotten then, as when the application quits
(FormulaRenderer.shutdown): their views are closed, and the renderer would otherwise typeset them during the next
test, for no one. Traced with a log of every Typeset answer (tests/gui/panes/forms, -n 0): the first test of
test_formula_widget.py waited ~8 s while the process laid out and drew 63 formulas of the panes of the tests before
it (the chain of six layers' walkthrough, the console's lists), ~2.5 s of its CPU, before its own 4; the list test
drew 13 of them among its own rows."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def forget_leftover_formulas():
    yield
    from gui.widgets import formula

    if formula._RENDERER is not None:  # only a renderer this or an earlier test made: none is made here
        formula._RENDERER.shutdown()
