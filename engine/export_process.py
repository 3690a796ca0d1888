"""An export run in a child process of its own: the app's window stays responsive while matplotlib draws
(a GIF or MP4 of every saved step, a paged sheet of formulas), sees how far it is, and can stop it at once.

On a thread of the app's process an export's Python shares the interpreter lock the GUI thread needs to
paint; in a child it does not, and Cancel ends the child (terminate), not at the export's next progress report
but now. The export is written as the app's exports always are (engine/safe_io.py's `write_whole`): into a
hidden folder beside the target, renamed into place only whole; the child says which folder as it starts, so
a cancel removes it and nothing is left. The child is engine/child_job.py's.

`write(path)` must be picklable: a function of the engine, or a `functools.partial` of one with plain
arguments (arrays, strings, a run's folder — never a widget, a lambda or an open store), since it is sent to
the child; the child imports the function's module, so it never lives in `gui`.

    job = ExportProcess(Path("G.gif"), functools.partial(export_run_coefficient, run_dir=…, weight=…), options)
    job.poll()    # [("progress", 3, 20, "frames"), …, ("done", [paths])] or ("failed", "one line")
    job.cancel()  # the child ends now; its hidden folder is removed
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from .child_job import ChildJob, tell


def write_export(path: str, write: Callable[[Path], object], options) -> list[str]:
    """In the child: write `path` whole with `options`, saying first which hidden folder it writes in."""
    from .figures.options import using_figure_options
    from .safe_io import write_whole

    def whole(tmp: Path):
        tell("folder", str(tmp.parent))
        return write(tmp)

    return [str(p) for p in using_figure_options(options, write_whole, Path(path), whole)]


class ExportProcess:
    """One export of `path` by `write(tmp)`, started at once in a child process (engine/child_job.py)."""

    def __init__(self, path: str | Path, write: Callable[[Path], object], options=None):
        from .figures.options import FigureOptions

        self.path = Path(path)
        self._started = time.time()
        self._folder: str | None = None
        self._job = ChildJob(write_export, str(path), write, options or FigureOptions(),
                             name=f"export {self.path.name}")

    @property
    def pid(self) -> int | None:
        return self._job.pid

    @property
    def finished(self) -> bool:
        return self._job.finished

    def poll(self) -> list[tuple]:
        """What the child said since the last poll, never waiting: ("progress", done, total, unit), then one
        ("done", [paths written]) or ("failed", a one-line message), also when the child died without a word."""
        out = []
        for event in self._job.poll():
            if event[0] == "folder":
                self._folder = event[1]
            elif event[0] == "done":
                out.append(("done", [Path(p) for p in event[1]]))
            else:
                out.append(event)
        if out and out[-1][0] == "failed":
            self._remove_folder()  # a child that died mid-file left it
        return out

    def cancel(self) -> None:
        """End the child now; the hidden folder it was writing in goes, and no file asked for has changed."""
        if not self.finished:
            self._job.cancel()
            self._remove_folder()

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
