"""An export run in a child process of its own: the app's window stays responsive while matplotlib draws
(a GIF or MP4 of every saved step, a paged sheet of formulas), sees how far it is, and can stop it at once.

On a thread of the app's process an export's Python shares the interpreter lock the GUI thread needs to
paint; in a child it does not, and Cancel ends the child (terminate), not at the export's next progress report
but now. The export is written as the app's exports always are (engine/safe_io.py's `write_whole`): into a
hidden folder beside the target, renamed into place only whole; the child says which folder as it starts, so
a cancel removes it and nothing is left. The child is spawned (the app has threads whose locks a fork would
copy) and daemonic (it ends with the app).

`write(path)` must be picklable: a function of the engine, or a `functools.partial` of one with plain
arguments (arrays, strings, a run's folder — never a widget, a lambda or an open store), since it is sent to
the child; the child imports the function's module, so it never lives in `gui`.

    job = ExportProcess(Path("G.gif"), functools.partial(export_run_coefficient, run_dir=…, weight=…), options)
    job.poll()    # [("progress", 3, 20, "frames"), …, ("done", [paths])] or ("failed", "one line")
    job.cancel()  # the child ends now; its hidden folder is removed
"""

from __future__ import annotations

import multiprocessing
import queue
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

PROGRESS_EVERY_S = 0.1  # a report is sent at most this often (a sheet reports every row)


def _work(path: str, write: Callable[[Path], object], options, events) -> None:
    """In the child: write `path` whole, telling `events` its hidden folder, its progress and the outcome."""
    from .errors import UserError
    from .figures.export import reporting_progress
    from .figures.options import using_figure_options
    from .safe_io import write_whole
    from .training.thread_policy import for_helper

    for_helper()  # one torch thread, a lower priority: training keeps its cores
    last = [0.0, ""]

    def progress(done: int, total: int, unit: str) -> None:
        now = time.monotonic()
        if done >= total or unit != last[1] or now - last[0] >= PROGRESS_EVERY_S:
            last[:] = [now, unit]
            events.put(("progress", done, total, unit))

    def whole(tmp: Path):
        events.put(("folder", str(tmp.parent)))
        return write(tmp)

    try:
        paths = using_figure_options(options, reporting_progress, progress, write_whole, Path(path), whole)
    except UserError as e:
        events.put(("failed", str(e)))
    except Exception as e:  # a bug: its traceback on stderr, one line for the window
        traceback.print_exc(file=sys.stderr)
        events.put(("failed", f"{type(e).__name__}: {e}"))
    else:
        events.put(("done", [str(p) for p in paths]))


class ExportProcess:
    """One export of `path` by `write(tmp)`, started at once in a child process."""

    def __init__(self, path: str | Path, write: Callable[[Path], object], options=None):
        from .figures.options import FigureOptions

        self.path = Path(path)
        self._started = time.time()
        ctx = multiprocessing.get_context("spawn")
        self._events = ctx.Queue()
        self._folder: str | None = None
        self._process = ctx.Process(target=_work, args=(str(path), write, options or FigureOptions(), self._events),
                                    name=f"export {self.path.name}", daemon=True)
        self._process.start()
        self.finished = False

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def poll(self) -> list[tuple]:
        """What the child said since the last poll, never waiting: ("progress", done, total, unit), then one
        ("done", [paths written]) or ("failed", a one-line message), also when the child died without a word."""
        out = []
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                break
            if event[0] == "folder":
                self._folder = event[1]
            else:
                out.append(event)
        if any(e[0] in ("done", "failed") for e in out):
            self._end()
        elif not self.finished and not self._process.is_alive():
            try:  # its last words may still be in the pipe
                out.append(self._events.get(timeout=0.5))
            except queue.Empty:
                out.append(("failed", f"the export stopped unexpectedly (exit code {self._process.exitcode})"))
            self._end()
            if out[-1][0] != "done":
                self._remove_folder()
        if out and out[-1][0] == "done":
            out[-1] = ("done", [Path(p) for p in out[-1][1]])
        return out

    def cancel(self) -> None:
        """End the child now; the hidden folder it was writing in goes, and no file asked for has changed."""
        if self.finished:
            return
        self._process.terminate()
        self._process.join(5)
        self._drain()
        self._remove_folder()
        self._end()

    def _drain(self) -> None:
        """Read what the child said without keeping it (after a cancel: only its folder matters)."""
        while True:
            try:
                event = self._events.get_nowait()
            except (queue.Empty, OSError, ValueError):
                return
            if event[0] == "folder":
                self._folder = event[1]

    def _remove_folder(self) -> None:
        """The hidden folder the child wrote in, and any other of this target's made since it started (the
        child may end before it could say which folder it made)."""
        folders = [Path(self._folder)] if self._folder is not None else []
        try:
            folders += [f for f in self.path.parent.glob(f".{self.path.name}.*.partial")
                        if f.is_dir() and f.stat().st_mtime >= self._started - 1]
        except OSError:
            pass
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)

    def _end(self) -> None:
        if not self.finished:
            self.finished = True
            self._events.close()
