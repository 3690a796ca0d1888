"""An import run in a child process of its own: the app's window stays responsive, shows the import's stages
(engine/importers/progress.py) and can cancel it.

GPT-2 small's import reads, converts and writes half a gigabyte twice (about 35 s); on the GUI thread it froze
the window for all of that. In a child process it can also be stopped at any moment: `cancel` ends the
process, and since `create_run` builds a run under a hidden temporary name and renames it into place only
when whole, nothing is left but that temporary folder, which `cancel` removes (create.sweep_stale). The child
is spawned (the app has threads whose locks a fork would copy) and daemonic (it ends with the app).

    job = ImportProcess("hf", folder, run_dir)
    job.poll()    # [("stage", 2, 6, "reading the weights"), …, ("done", Imported)] or ("failed", "one line")
"""

from __future__ import annotations

import multiprocessing
import queue
import sys
import threading
import traceback
from pathlib import Path

KINDS = ("hf", "nanogpt")


def _importer(kind: str):
    if kind == "hf":
        from .hugging_face import import_hf

        return import_hf
    from .nanogpt import import_nanogpt

    return lambda source, run_dir, progress: import_nanogpt(source, run_dir, progress=progress)


def _work(kind: str, source: str, run_dir: str, events) -> None:
    """In the child: run the import, telling `events` each stage and then the outcome."""
    from ..errors import UserError

    try:
        done = _importer(kind)(Path(source), Path(run_dir),
                               lambda k, n, stage: events.put(("stage", k, n, stage)))
    except UserError as e:
        events.put(("failed", str(e)))
    except Exception as e:  # a bug: its traceback on stderr, one line for the window
        traceback.print_exc(file=sys.stderr)
        events.put(("failed", f"{type(e).__name__}: {e}"))
    else:
        events.put(("done", done))


class ImportProcess:
    """One import (`kind`: hf | nanogpt) of `source` into `run_dir`, started at once in a child process."""

    # Tests whose point is not the process set this (tests/conftest.py's children_in_thread): the same import,
    # stages and outcome on a thread of this process, which cannot be cancelled; the child imports torch, ~1.3 s
    # of CPU, more than a test's small import itself takes.
    in_thread = False

    def __init__(self, kind: str, source: str | Path, run_dir: str | Path):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}")
        self.kind, self.source, self.run_dir = kind, Path(source), Path(run_dir)
        self.finished = False
        self._on_thread = self.in_thread  # as started, whatever the class says later
        if self._on_thread:
            self._events = queue.Queue()
            self._process = threading.Thread(target=_work, args=(kind, str(source), str(run_dir), self._events),
                                             name=f"import {self.source.name}", daemon=True)
            self._process.start()
            return
        ctx = multiprocessing.get_context("spawn")
        self._events = ctx.Queue()
        self._process = ctx.Process(target=_work, args=(kind, str(source), str(run_dir), self._events),
                                    name=f"import {self.source.name}", daemon=True)
        self._process.start()

    def poll(self) -> list[tuple]:
        """What the child said since the last poll, never waiting: ("stage", done, total, name), then one
        ("done", Imported) or ("failed", a one-line message), also when the child died without a word."""
        out = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                break
        if any(e[0] in ("done", "failed") for e in out):
            self._end()
        elif not self.finished and not self._process.is_alive():
            try:  # its last words may still be in the pipe
                out.append(self._events.get(timeout=0.5))
            except queue.Empty:
                out.append(("failed", "the import stopped unexpectedly "
                                      f"(exit code {getattr(self._process, 'exitcode', None)})"))
            self._end()
        return out

    def cancel(self) -> None:
        """End the child now; what it had begun to write is removed, the target is left as it was."""
        if self.finished:
            return
        if self._on_thread:
            raise RuntimeError("an import on a thread cannot be ended: a test that cancels it runs it in a child")
        self._process.terminate()
        self._process.join(5)
        self._end()
        from ..rundir.create import sweep_stale

        sweep_stale(self.run_dir)

    def reap(self) -> bool:
        """Collect the child once it has exited, never waiting (reading its exit code does: the operating
        system's process entry goes with it, where an import left a zombie for the app's lifetime); True once
        it has."""
        if self._on_thread:
            return not self._process.is_alive()
        return self._process.exitcode is not None

    def _end(self) -> None:
        """No more events; the child, which has said its last, exits by itself (never waited for here: the
        window polls on its GUI thread)."""
        if not self.finished:
            self.finished = True
            if not self._on_thread:
                self._events.close()
