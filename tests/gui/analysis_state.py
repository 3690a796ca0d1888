"""Run in the GUI tests' shared analysis process (Qt-free, as everything that process runs): resetting it
between tests, and questions that tests of the door itself ask."""

import os
import time
from dataclasses import dataclass
from typing import Any

from engine.analysis.questions import Question


@dataclass(frozen=True)
class Forget(Question[None]):
    """The door's state as a freshly started process has it: no RunAnalysis kept, no live model, no curves
    read (the held published copies stay, in step with the GUI's mirror of them). Asked in the long lane, it
    is answered once the window's long work there is done or stopped."""

    lane = "long"

    def answer(self, door):
        from engine.analysis import door as door_module

        door_module.reset()


@dataclass(frozen=True)
class Pid(Question[int]):
    """Which process answers."""

    def answer(self, door):
        return os.getpid()


@dataclass(frozen=True)
class Echo(Question[Any]):
    value: Any
    wait_s: float = 0.0  # held in the process this long first, so that questions queue behind it

    def answer(self, door):
        time.sleep(self.wait_s)
        return self.value


@dataclass(frozen=True)
class Total(Question[float]):
    """The sum of every entry of published weights."""

    weights: Any

    def answer(self, door):
        return float(sum(t.sum() for t in self.weights.values()))


@dataclass(frozen=True)
class Held(Question[Any]):
    """A long question held in the process until the file `gate` exists: it reports progress meanwhile (where
    a cancel stops it), and leaves `gate`.started when it begins and `gate`.finished when it answers, so a test
    sees what the process did."""

    lane = "long"

    gate: str
    value: Any = "done"

    def answer(self, door):
        from pathlib import Path

        from engine.progress import report

        Path(self.gate + ".started").touch()
        k = 0
        while not os.path.exists(self.gate):
            k += 1
            report(k, 10**6, "ticks")
            time.sleep(0.01)
        Path(self.gate + ".finished").touch()
        return self.value


@dataclass(frozen=True)
class Gated(Question[Any]):
    """A light question answered once the file `gate` exists, with no progress report on its way (so a cancel
    cannot stop it: its answer comes whatever the asker wants); `gate`.started and `gate`.finished as Held's."""

    gate: str
    value: Any = "done"

    def answer(self, door):
        from pathlib import Path

        Path(self.gate + ".started").touch()
        while not os.path.exists(self.gate):
            time.sleep(0.01)
        Path(self.gate + ".finished").touch()
        return self.value
