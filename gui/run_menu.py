"""File-menu entries for runs: Recent runs (rebuilt each time the menu opens), Import nanoGPT
checkpoint… and Open Hugging Face model…; and the run folder remembered each time the window's run changes,
so the app reopens it.

An import runs in a child process of its own (engine/importers/process.py) while a progress dialog names its
stage and offers Cancel: GPT-2 small's import (about 35 s) froze the window when it ran on the GUI thread.
Kept apart from gui/menus.py so the run browser's entries are one call there.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QMenu, QProgressDialog

from . import recent, settings
from .widgets import dialogs

POLL_MS = 100  # how often the window reads what the import's process said
DIALOG_WIDTH = 460  # px, at least: the import's progress dialog keeps one width throughout


def add_run_entries(window, file_menu: QMenu, actions: dict[str, QAction], before: QAction) -> None:
    menu = QMenu("Recent &runs", window)
    menu.setObjectName("menu_recent_runs")
    menu.aboutToShow.connect(lambda: fill_recent(window, menu))
    file_menu.insertMenu(before, menu)
    window.recent_menu = menu
    imp = QAction("&Import nanoGPT checkpoint…", window)
    imp.setObjectName("action_import_nanogpt")
    imp.setStatusTip("Turn a nanoGPT out_dir (ckpt.pt and its meta.pkl) into a run, and open it")
    imp.triggered.connect(lambda: import_nanogpt(window))
    file_menu.insertAction(before, imp)
    actions["import_nanogpt"] = imp
    hf = QAction("Open &Hugging Face model…", window)
    hf.setObjectName("action_import_hf")
    hf.setStatusTip("Turn a GPT-2-family folder (config.json, weights, tokenizer) into a run, and open it")
    hf.triggered.connect(lambda: import_hf(window))
    file_menu.insertAction(before, hf)
    actions["import_hf"] = hf
    window.session.sig_run_replaced.connect(lambda open_run: open_run and open_run.path and
                                            recent.add_recent_run(str(open_run.path)))
    window.session.sig_run_attached.connect(lambda run: recent.add_recent_run(str(run.path)))


def fill_recent(window, menu: QMenu) -> None:
    menu.clear()
    runs = recent.recent_runs()
    for path in runs:
        act = menu.addAction(path.name, lambda p=path: window.open_run(p))
        act.setToolTip(str(path))
    if not runs:
        menu.addAction("(none yet)").setEnabled(False)


def import_nanogpt(window, out_dir: str | Path | None = None) -> ImportJob | None:
    """Ask for a nanoGPT out_dir, then write a run of ours under the runs folder and open it (in the
    background: the returned job says when)."""

    def opened(done, source) -> None:
        window.session.post_message(f"Imported {source} at step {done.step} as {done.run_dir.name}.", "info")

    return _import(window, out_dir, "Import nanoGPT checkpoint", "nanogpt", opened)


def import_hf(window, folder: str | Path | None = None) -> ImportJob | None:
    """Ask for a Hugging Face GPT-2-family folder, then write a run of ours under the runs folder and open it
    (in the background: the returned job says when)."""

    def opened(done, source) -> None:
        window.session.post_message(f"Opened {source} as {done.run_dir.name}; Train fine-tunes it on the run's "
                                    "corpus.", "info")
        if done.ignored:  # a tokenizer file is read for its vocabulary, merges and special tokens only
            window.session.post_message(f"Ignored in {done.tokenizer_source}: {'; '.join(done.ignored[:3])}"
                                        f"{' …' if len(done.ignored) > 3 else ''}", "warning")

    return _import(window, folder, "Open Hugging Face model", "hf", opened)


def _import(window, source, title: str, kind: str, opened) -> ImportJob | None:
    """Start importing `source` (asked for when None) as a new run under the runs folder; None when the
    user chose nothing."""
    from .controller import new_run_path

    if source is None:
        source = dialogs.ask_path(window, "folder", title)
        if source is None:
            return None
    source = Path(source)
    run_dir = new_run_path(settings.runs_root(), f"{kind}-{source.name}")
    return ImportJob(window, kind, source, run_dir, title, opened)


class ImportJob(QObject):
    """One import in its child process, shown in a window-modal progress dialog whose Cancel ends it. When it
    is written the window opens the run; a refusal is the banner's one line. `sig_finished` carries the run's
    folder, or None when it was refused or cancelled."""

    sig_finished = Signal(object)

    def __init__(self, window, kind: str, source: Path, run_dir: Path, title: str, opened):
        super().__init__(window)
        from engine.importers.process import ImportProcess

        self.window, self.source, self._opened = window, source, opened
        self.process = ImportProcess(kind, source, run_dir)
        self._started = time.monotonic()
        self._stage = "starting"
        self.dialog = QProgressDialog(f"Importing {source.name}: starting…", "Cancel", 0, 0, window)
        self.dialog.setWindowTitle(title)
        # one width from the start, room for its title, its label wrapping within it: it was as wide as each
        # new label, so it jumped as the stages changed, and its title was elided at the first one
        label = QLabel(self.dialog.labelText(), self.dialog)
        label.setWordWrap(True)
        self.dialog.setLabel(label)
        self.dialog.setFixedWidth(max(DIALOG_WIDTH, self.dialog.fontMetrics().horizontalAdvance(title) + 160))
        self.dialog.setWindowModality(Qt.WindowModality.WindowModal)
        self.dialog.setMinimumDuration(0)
        self.dialog.setAutoClose(False)
        self.dialog.setAutoReset(False)
        self.dialog.canceled.connect(self.cancel)
        self.dialog.show()
        self._timer = QTimer(self, interval=POLL_MS)
        self._timer.timeout.connect(self._poll)
        self._timer.start()

    def cancel(self) -> None:
        """End the import; nothing of it is left in the runs folder (unless it was whole already: then it
        opens as if Cancel had not been pressed)."""
        self._poll()  # what it said before the click: perhaps that it is done
        if self.process.finished:
            return
        self.process.cancel()
        if self.process.run_dir.exists():  # renamed into place, whole, just before it was ended
            self._finish(self.process.run_dir, f"{self.source.name} was imported before it could be cancelled.",
                         "info")
            self.window.open_run(self.process.run_dir)
            return
        self._finish(None, f"Import of {self.source.name} cancelled; nothing was written.", "info")

    def _poll(self) -> None:
        for event in self.process.poll():
            if event[0] == "stage":
                _, k, n, self._stage = event
                self.dialog.setMaximum(n)
                self.dialog.setValue(k)
            elif event[0] == "done":
                done = event[1]
                self._finish(done.run_dir)
                self.window.open_run(done.run_dir)
                self._opened(done, self.source.name)
                return
            else:
                self._finish(None, f"Cannot import {self.source.name}: {event[1]}")
                return
        self.dialog.setLabelText(f"Importing {self.source.name}: {self._stage} "
                                 f"({time.monotonic() - self._started:.0f} s)…")

    def _reap(self) -> None:
        if self.process.reap():
            self._reaper.stop()

    def _finish(self, run_dir, message: str | None = None, level: str = "error") -> None:
        self._timer.stop()
        self._reaper = QTimer(self, interval=POLL_MS)  # the child, done, exits by itself: collected when it has
        self._reaper.timeout.connect(self._reap)
        self._reaper.start()
        self.dialog.canceled.disconnect(self.cancel)
        self.dialog.close()
        if message:
            self.window.session.post_message(message, level)
        self.sig_finished.emit(run_dir)
