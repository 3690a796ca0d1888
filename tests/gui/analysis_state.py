"""Run in the GUI tests' shared analysis process (Qt-free, as everything that process runs): resetting it
between tests, and questions that tests of the door itself ask."""

import os
import time
from dataclasses import dataclass
from typing import Any

from engine.analysis.questions import Question


def forget_everything() -> None:
    """The door's state as a freshly started process has it: no RunAnalysis kept, no live model, no curves
    read (the held published copies stay, in step with the GUI's mirror of them)."""
    from engine.analysis import door

    door.reset()


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
class Slow(Echo):
    """An Echo that reads every saved step, as the head timeline does."""

    background = True


@dataclass(frozen=True)
class Total(Question[float]):
    """The sum of every entry of published weights."""

    weights: Any

    def answer(self, door):
        return float(sum(t.sum() for t in self.weights.values()))
