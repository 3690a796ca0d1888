"""Questions for tests of engine/service_process.py, importable in its spawned process."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass


def make_state() -> dict:
    return {"asked": []}


@dataclass(frozen=True)
class WhereAmI:
    lane = "quick"

    def answer(self, state, job):
        return os.getpid(), sorted(m for m in ("torch", "PySide6") if m in sys.modules)


@dataclass(frozen=True)
class Asked:
    lane = "quick"

    def answer(self, state, job):
        return list(state["asked"])


@dataclass(frozen=True)
class Parts:
    n: int
    lane = "quick"

    def answer(self, state, job):
        for k in range(self.n):
            job.emit(k)
        return "all"


@dataclass(frozen=True)
class UntilCancelled:
    """Runs until cancelled, on a lane of its own: says it started (a part), then polls job.stopped."""

    lane = "slow"

    def answer(self, state, job):
        import time

        state["asked"].append("slow")
        job.emit("started")
        while not job.stopped:
            time.sleep(0.001)
        return "stopped"


@dataclass(frozen=True)
class Waits:
    """Queued on the slow lane behind UntilCancelled."""

    lane = "slow"

    def answer(self, state, job):
        state["asked"].append("waits")
        return "ran"


@dataclass(frozen=True)
class Fails:
    lane = "quick"

    def answer(self, state, job):
        from engine.errors import UserError

        raise UserError("a clear message")


@dataclass(frozen=True)
class Dies:
    lane = "quick"

    def answer(self, state, job):
        os._exit(3)


@dataclass(frozen=True)
class Reports:
    """Long work that says how far it is (engine/progress.py) until it is cancelled."""

    lane = "slow"

    def answer(self, state, job):
        import time

        from engine.progress import report

        k = 0
        while True:
            k += 1
            report(k, 10**9, "ticks")
            time.sleep(0.005)


@dataclass(frozen=True)
class ThreadsAndNiceness:
    lane = "quick"

    def answer(self, state, job):
        import torch

        return torch.get_num_threads(), os.nice(0)
