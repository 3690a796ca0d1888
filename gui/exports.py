"""The app's one export queue, and its face in the status bar.

Every file the user asks for — File → Export…, a heatmap's Export…, the Forms pane's formula snapshots, the
Weight pane's animations — is an `ExportRequest` served here, so every export behaves alike:

- it runs off the GUI thread, after every export asked before it (none is dropped for a newer one);
- it writes under a temporary name and is renamed once whole (engine.safe_io.write_whole): a file appears
  only complete, and a failed or cancelled export leaves nothing behind;
- it reports how far it is (engine.figures.export.report_progress: rows, pages, frames), shown in the
  status bar with a Cancel button (`ExportStatus`), which stops the export at its next report;
- it ends with one message that names where it wrote and how many files (pages) it wrote.

Panes ask through the Session (`Session.request_export`); a widget that offers Export… emits what to write
and the window hands it here (gui/widgets/plot_export.py), so no widget imports the job machinery.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

from engine.figures.options import FigureOptions
from engine.safe_io import written

from .jobs import JobQueue

PROGRESS_EVERY_S = 0.1  # a report reaches the GUI thread at most this often (a sheet reports every row)


@dataclass(frozen=True)
class ExportRequest:
    """Write `path` with write(at), off the GUI thread. `write` is given a temporary path with the same
    name (it may write further pages beside it, name-p2.svg …), captures copies rather than widgets, and
    may call report_progress; `options` are the export dialog's (resolution, width); `what` names the
    export in messages (default: the file's name)."""
    path: Path
    write: Callable[[Path], object]
    options: FigureOptions = field(default_factory=FigureOptions)
    what: str = ""

    @property
    def name(self) -> str:
        return self.what or Path(self.path).name


def _export(request: ExportRequest, stop: threading.Event, report: Callable) -> list[Path] | None:
    """On a pool thread: the files written, or None when cancelled (nothing written)."""
    from engine.figures.export import ExportCancelled, reporting_progress, using_figure_options
    from engine.safe_io import write_whole

    last = [0.0, ""]

    def progress(done: int, total: int, unit: str) -> None:
        if stop.is_set():
            raise ExportCancelled
        now = time.monotonic()
        if done >= total or unit != last[1] or now - last[0] >= PROGRESS_EVERY_S:
            last[:] = [now, unit]
            report(done, total, unit)

    if stop.is_set():
        return None
    try:
        return using_figure_options(request.options, reporting_progress, progress, write_whole,
                                    Path(request.path), request.write)
    except ExportCancelled:
        return None


class _Relay(QObject):
    sig_progress = Signal(object, int, int, str)  # the request, done, total, unit (queued to the GUI thread)


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
        self._jobs = JobQueue(self)
        self._jobs.sig_done.connect(self._on_done)
        self._jobs.sig_failed.connect(self._on_failed)
        self._relay = _Relay(self)
        self._relay.sig_progress.connect(self.sig_progress)
        self._asked: list[tuple[ExportRequest, threading.Event]] = []  # the first is running
        self._session = session
        if session is not None:
            session.sig_export_requested.connect(self.submit)

    @property
    def running(self) -> ExportRequest | None:
        return self._asked[0][0] if self._asked else None

    @property
    def waiting(self) -> int:
        """Requests asked after the running one, not started yet."""
        return max(0, len(self._asked) - 1)

    def submit(self, request: ExportRequest) -> None:
        stop = threading.Event()
        self._asked.append((request, stop))
        if len(self._asked) == 1:
            self.sig_started.emit(request)
        self.sig_queue_changed.emit()
        report = self._relay.sig_progress.emit
        self._jobs.submit(request, _export, request, stop, lambda *a, r=request: report(r, *a))

    def serve(self, path, options: FigureOptions, write: Callable[[Path], object], what: str = "") -> None:
        """submit, from the parts a widget's export request carries (HeatmapWidget.sig_export_requested)."""
        self.submit(ExportRequest(Path(path), write, options, what))

    @property
    def cancelling(self) -> bool:
        """Whether the running export was asked to stop (it stops at its next report)."""
        return bool(self._asked) and self._asked[0][1].is_set()

    def cancel(self) -> None:
        """Stop the running export at its next progress report; what it wrote so far is removed."""
        if self._asked and not self.cancelling:
            self._asked[0][1].set()
            self.sig_queue_changed.emit()

    def cancel_all(self) -> None:
        """Stop the running export and drop those waiting behind it (each says it was cancelled)."""
        for _request, stop in self._asked:
            stop.set()
        self.sig_queue_changed.emit()

    def _finish(self, request: ExportRequest) -> None:
        self._asked.pop(0)
        if self._asked:
            self.sig_started.emit(self._asked[0][0])
        self.sig_queue_changed.emit()
        if not self._asked:
            self.sig_idle.emit()

    def _on_done(self, request: ExportRequest, paths) -> None:
        self._finish(request)
        if paths is None:
            self._post(f"Export of {request.name} cancelled; nothing was written.", "info")
            self.sig_cancelled.emit(request)
            return
        self._post(f"Exported {written(paths)}", "info")
        self.sig_finished.emit(request, paths)

    def _on_failed(self, request: ExportRequest, message: str) -> None:
        self._finish(request)
        self._post(f"Export of {request.name} failed: {message}", "error")
        self.sig_failed.emit(request, message)

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
        if self.exports.cancelling:
            text = f"Cancelling {request.name} (at the end of the page or row being written)…"
        else:
            text = f"Exporting {request.name}" + (f": {self._progress}" if self._progress else "…")
        self.cancel_button.setEnabled(not self.exports.cancelling)
        self.cancel_all_button.setVisible(self.exports.waiting > 0)
        if self.exports.waiting:
            text += f" · {self.exports.waiting} more waiting"
        self.label.setText(text)
        self.label.setToolTip(str(request.path))
