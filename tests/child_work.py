"""Work for tests of child processes (engine/child_job.py, the export process), picklable so that a spawned child
can run it: a sheet whose pages wait for the test between them, a write that fails, one that writes which
process it ran in, one that dies, one that reports and says more; and whether a process is still alive."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from engine.progress import report as report_progress  # the export's name for it; no NumPy in the children

CAP_S = 120  # a generous cap on any wait for the test, never an assertion


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie waiting for init to reap it counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


class Sheet:
    """A write of `pages` pages, page by page, that stops after each page until the test lets it go (`go`): the
    test decides what happens between pages (cancel, another request) without timing anything. `written`
    (a multiprocessing Event per page) is set once a page is on disk."""

    def __init__(self, pages: int = 3):
        ctx = multiprocessing.get_context("spawn")
        self.pages = pages
        self.gates = [ctx.Event() for _ in range(pages)]
        self.written = [ctx.Event() for _ in range(pages)]

    def __call__(self, at: Path) -> Path:
        for k in range(self.pages):
            page = at if k == 0 else at.with_name(f"{at.stem}-p{k + 1}{at.suffix}")
            page.write_text(f"page {k + 1}")
            self.written[k].set()
            report_progress(k + 1, self.pages, "pages written")
            self.gates[k].wait(CAP_S)
        return at

    def go(self) -> None:
        for gate in self.gates:
            gate.set()


def fail(at: Path) -> None:
    at.write_text("half")
    raise OSError(28, "No space left on device")


def write_one(at: Path) -> None:
    at.write_text("1")


def write_pid(at: Path) -> None:
    """The process that wrote the file, in it."""
    at.write_text(str(os.getpid()))


def sendable(write) -> bool:
    """Whether the export process can be sent `write`: it pickles, and what it runs is the engine's (the
    process imports the function's module, and a module of `gui` would bring Qt into it)."""
    import pickle

    pickle.loads(pickle.dumps(write))
    return getattr(write, "func", write).__module__.startswith("engine.")


def die(at: Path) -> None:
    """A write whose process ends mid-file (a crash, the out-of-memory killer)."""
    at.write_text("half")
    os._exit(9)


def counted(n: int, gate=None) -> int:
    """Reports 1 … n items, tells the parent ("note", n), waits for `gate` (a multiprocessing Event) if given,
    and returns its process id."""
    from engine.child_job import tell

    for k in range(n):
        report_progress(k + 1, n, "items")
    tell("note", n)
    if gate is not None:
        gate.wait(CAP_S)
    return os.getpid()
