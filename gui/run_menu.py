"""File-menu entries for runs: Recent runs (rebuilt each time the menu opens) and Import nanoGPT
checkpoint…; and the run folder remembered each time the window's run changes, so the app reopens it.

Kept apart from gui/menus.py so the run browser's entries are one call there.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QMenu

from engine.errors import UserError

from . import recent, settings
from .widgets import dialogs


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
    window.controller.sig_run_dir_changed.connect(lambda path: path and recent.add_recent_run(path))


def fill_recent(window, menu: QMenu) -> None:
    menu.clear()
    runs = recent.recent_runs()
    for path in runs:
        act = menu.addAction(path.name, lambda p=path: window.open_run(p))
        act.setToolTip(str(path))
    if not runs:
        menu.addAction("(none yet)").setEnabled(False)


def import_nanogpt(window, out_dir: str | Path | None = None) -> Path | None:
    """Ask for a nanoGPT out_dir, write a run of ours under the runs folder, and open it."""
    from engine.nanogpt_import import import_nanogpt as write_run

    from .controller import new_run_path

    if out_dir is None:
        out_dir = dialogs.ask_path(window, "folder", "Import nanoGPT checkpoint")
        if out_dir is None:
            return None
    out_dir = Path(out_dir)
    run_dir = new_run_path(settings.runs_root(), f"nanogpt-{out_dir.name}")
    QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)  # a large checkpoint takes a second or two
    try:
        done = write_run(out_dir, run_dir)
    except UserError as e:
        window.session.post_message(f"Cannot import {out_dir.name}: {e}")
        return None
    finally:
        QApplication.restoreOverrideCursor()
    window.open_run(done.run_dir)
    window.session.post_message(f"Imported {out_dir} at step {done.step} as {done.run_dir.name}.", "info")
    return done.run_dir
