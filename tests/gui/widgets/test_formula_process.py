"""Formulas are typeset in the app's symbolic process, which stays free of torch and Qt: what the renderer sends
must not import the Forms pane there (its package loads torch: the restructure into pane packages once grew the
formula process from ~100 to ~350 MB)."""

from __future__ import annotations

import os
import queue

from gui import symbolic_process
from gui.widgets.formula import FormulaRenderer, RenderKey
from tests.engine.service_questions import WhereAmI


def test_rendering_a_formula_loads_neither_torch_nor_qt_in_the_symbolic_process(qtbot):
    renderer = FormulaRenderer()
    key = RenderKey("x^2", 200, 1.0, (0, 0, 0))
    try:
        with qtbot.waitSignal(renderer.sig_ready, timeout=60_000):
            renderer.request(key)
        got: queue.Queue = queue.Queue()
        symbolic_process.service().ask(WhereAmI(), lambda n, kind, payload: got.put(payload))
        pid, heavy = got.get(timeout=120)
        assert pid != os.getpid() and heavy == []
    finally:
        renderer.shutdown()
