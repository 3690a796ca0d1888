"""A console function for tests that runs until its line is cancelled, added in the symbolic process itself (a
setup of engine/service_process.py's ServiceProcess): a real line that long would be a race with Stop, since
the engine's lines are fast."""

from __future__ import annotations

import time

from engine.forms.console.values import Builtin


def add_spin(started, desk) -> None:
    """Give the desk's console `spin()`, which sets `started` (a multiprocessing Event) and then ticks, as every
    evaluation step does, until the line is cancelled (or reaches its time limit)."""
    console = desk.console

    def spin(pos):
        started.set()
        while True:
            console.tick(pos)
            time.sleep(0.001)

    console.builtins["spin"] = Builtin(spin, "", "runs until the line is cancelled", 0, 0)
