"""The app's one export queue, and its face in the status bar.

Every file the user asks for — File → Export…, a heatmap's Export…, the Forms pane's formula snapshots, the
Weight pane's animations — is an `ExportRequest` served here, so every export behaves alike:

- it runs in a child process of its own (engine/export_process.py), after every export asked before it (none is
  dropped for a newer one): matplotlib's Python never shares the interpreter lock the GUI thread paints with;
- it writes under a temporary name and is renamed once whole (engine.safe_io.write_whole): a file appears
  only complete, and a failed or cancelled export leaves nothing behind;
- it reports how far it is (engine.figures.export.report_progress: rows, pages, frames), shown in the
  status bar with a Cancel button (`ExportStatus`), which ends the child at once;
- it ends with one message that names where it wrote and how many files (pages) it wrote.

A request's `write` is sent to that process, so it is an engine function or a `functools.partial` of one with
plain arguments (what is shown, copied: arrays, rows, a run's folder), never a lambda or a widget's method.

Panes ask through the Session (`Session.request_export`); a widget that offers Export… emits what to write
and the window hands it here (gui/widgets/plot_export.py), so no widget imports the job machinery.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

from engine.figures.options import FigureOptions
from engine.safe_io import written

POLL_MS = 50  # how often the GUI thread reads what the export's process said (a queue read, never a wait)


@dataclass(frozen=True)
class ExportRequest:
    """Write `path` with write(at), in the export process. `write` is given a temporary path with the same
    name (it may write further pages beside it, name-p2.svg …), is picklable (module docstring), and may
    call report_progress; `options` are the export dialog's (resolution, width); `what` names the export in
    messages (default: the file's name)."""
    path: Path
    write: Callable[[Path], object]
    options: FigureOptions = field(default_factory=FigureOptions)
    what: str = ""

    @property
    def name(self) -> str:
        return self.what or Path(self.path).name


class Exports(QObject):
    """The queue. `submit` adds a request; `cancel` stops the one running, `cancel_all` every one asked; with a
    `session`, it serves the session's export requests and posts each outcome to the session's messages."""

    sig_started = Signal(object)              # the ExportRequest now running
    sig_progress = Signal(object, int, int, str)  # the request, done, total, unit
    sig_finished = Signal(object, object)     # the request, list[Path] written
    sig_failed = Signal(object, str)          # the request, a one-line message
    sig_cancelled = Signal(object)            # the request (nothing was written)
    sig_queue_changed = Signal()              # a request was added, or one ended
    sig_idle = Signal()                       # nothing running or waiting

    def __init__(self, session=None, parent: QObject | None = None):
        super().__init__(parent)
        self._asked: list[ExportRequest] = []  # the first is running
        self._process = None                   # engine.export_process.ExportProcess of the one running
        self._timer = QTimer(self, interval=POLL_MS)
        self._timer.timeout.connect(self._poll)
        self._session = session
        if session is not None:
            session.sig_export_requested.connect(self.submit)

    @property
    def running(self) -> ExportRequest | None:
        return self._asked[0] if self._asked else None

    @property
    def waiting(self) -> int:
        """Requests asked after the running one, not started yet."""
        return max(0, len(self._asked) - 1)

    @property
    def pid(self) -> int | None:
        """The process writing the running export (None when none runs)."""
        return None if self._process is None else self._process.pid

    def submit(self, request: ExportRequest) -> None:
        self._asked.append(request)
        self.sig_queue_changed.emit()
        if len(self._asked) == 1:
            self._start()

    def serve(self, path, options: FigureOptions, write: Callable[[Path], object], what: str = "") -> None:
        """submit, from the parts a widget's export request carries (HeatmapWidget.sig_export_requested)."""
        self.submit(ExportRequest(Path(path), write, options, what))

    def cancel(self) -> None:
        """Stop the running export now; what it wrote so far is removed."""
        if self._process is not None:
            self._process.cancel()
            self._ended(self._asked[0], "cancelled", None)

    def cancel_all(self) -> None:
        """Stop the running export and drop those waiting behind it (each says it was cancelled)."""
        waiting, self._asked[1:] = self._asked[1:], []
        self.cancel()
        for request in waiting:
            self._report(request, "cancelled", None)
        self.sig_queue_changed.emit()
        if not self._asked:
            self.sig_idle.emit()

    def _start(self) -> None:
        from engine.export_process import ExportProcess

        request = self._asked[0]
        self.sig_started.emit(request)
        try:
            self._process = ExportProcess(request.path, request.write, request.options)
        except (pickle.PicklingError, AttributeError, TypeError) as e:  # a write that cannot be sent: a bug
            self._ended(request, "failed", f"this export cannot run in the export process ({e})")
            return
        self._timer.start()

    def _poll(self) -> None:
        process, request = self._process, self.running
        if process is None:
            return
        for event in process.poll():
            if event[0] == "progress":
                self.sig_progress.emit(request, *event[1:])
            elif event[0] == "done":
                self._ended(request, "done", event[1])
            else:
                self._ended(request, "failed", event[1])

    def _ended(self, request: ExportRequest, how: str, detail) -> None:
        self._timer.stop()
        self._process = None
        self._asked.pop(0)
        self._report(request, how, detail)
        if self._asked:
            self._start()
        self.sig_queue_changed.emit()
        if not self._asked:
            self.sig_idle.emit()

    def _report(self, request: ExportRequest, how: str, detail) -> None:
        if how == "done":
            self._post(f"Exported {written(detail)}", "info")
            self.sig_finished.emit(request, detail)
        elif how == "failed":
            self._post(f"Export of {request.name} failed: {detail}", "error")
            self.sig_failed.emit(request, detail)
        else:
            self._post(f"Export of {request.name} cancelled; nothing was written.", "info")
            self.sig_cancelled.emit(request)

    def _post(self, text: str, level: str) -> None:
        if self._session is not None:
            self._session.post_message(text, level)


class ExportStatus(QWidget):
    """The status bar's part for exports, shown only while one runs: what it writes, how far it is
    (rows, pages or frames of how many), how many wait behind it, and Cancel."""

    def __init__(self, exports: Exports, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("export_status")
        self.exports = exports
        self.label = QLabel()
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(140)
        self.bar.setTextVisible(False)
        self.cancel_button = QToolButton()
        self.cancel_button.setText("Cancel")
        self.cancel_button.setToolTip("Stop this export; nothing of it is written")
        self.cancel_button.setAutoRaise(True)
        self.cancel_all_button = QToolButton()
        self.cancel_all_button.setText("Cancel all")
        self.cancel_all_button.setToolTip("Stop this export and those waiting behind it; none of them is written")
        self.cancel_all_button.setAutoRaise(True)
        self.cancel_all_button.hide()  # shown while exports wait behind the running one
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w in (self.label, self.bar, self.cancel_button, self.cancel_all_button):
            layout.addWidget(w)
        self._progress = ""
        self.cancel_button.clicked.connect(exports.cancel)
        self.cancel_all_button.clicked.connect(exports.cancel_all)
        exports.sig_started.connect(self._on_started)
        exports.sig_progress.connect(self._on_progress)
        exports.sig_queue_changed.connect(self._show_text)
        exports.sig_idle.connect(self.hide)
        self.hide()

    def _on_started(self, request: ExportRequest) -> None:
        self.bar.setRange(0, 0)  # busy until the export says how much it has to do
        self._progress = ""
        self._show_text()
        self.show()

    def _on_progress(self, request: ExportRequest, done: int, total: int, unit: str) -> None:
        if request is not self.exports.running:
            return
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        self._progress = f"{done:,} of {total:,} {unit}".strip()
        self._show_text()

    def _show_text(self) -> None:
        request = self.exports.running
        if request is None:
            return
        text = f"Exporting {request.name}" + (f": {self._progress}" if self._progress else "…")
        self.cancel_all_button.setVisible(self.exports.waiting > 0)
        if self.exports.waiting:
            text += f" · {self.exports.waiting} more waiting"
        self.label.setText(text)
        self.label.setToolTip(str(request.path))
