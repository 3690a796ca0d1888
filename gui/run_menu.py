"""File-menu entries for runs: Recent runs (rebuilt each time the menu opens), Import nanoGPT
checkpoint… and Open Hugging Face model…; and the run folder remembered each time the window's run changes,
so the app reopens it.

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
    hf = QAction("Open &Hugging Face model…", window)
    hf.setObjectName("action_import_hf")
    hf.setStatusTip("Turn a GPT-2-family folder (config.json, weights, tokenizer) into a run, and open it")
    hf.triggered.connect(lambda: import_hf(window))
    file_menu.insertAction(before, hf)
    actions["import_hf"] = hf
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
    from engine.importers.nanogpt import import_nanogpt as write_run

    done = _import(window, out_dir, "Import nanoGPT checkpoint", "nanogpt", write_run)
    if done is None:
        return None
    window.session.post_message(f"Imported {done[1]} at step {done[0].step} as {done[0].run_dir.name}.", "info")
    return done[0].run_dir


def import_hf(window, folder: str | Path | None = None) -> Path | None:
    """Ask for a Hugging Face GPT-2-family folder, write a run of ours under the runs folder, and open it."""
    from engine.importers.hugging_face import import_hf as write_run

    done = _import(window, folder, "Open Hugging Face model", "hf", write_run)
    if done is None:
        return None
    window.session.post_message(f"Opened {done[1]} as {done[0].run_dir.name}; Train fine-tunes it on the run's "
                                "corpus.", "info")
    return done[0].run_dir


def _import(window, source, title: str, prefix: str, write_run):
    """Write a run from `source` (asked for when None) with `write_run(source, run_dir)`, open it, and
    return (what was written, the source); a refusal is the banner's one line. GPT-2 small takes seconds
    (0.5 GB of weights read, converted and written twice, as a checkpoint and a snapshot): the cursor says so."""
    from .controller import new_run_path

    if source is None:
        source = dialogs.ask_path(window, "folder", title)
        if source is None:
            return None
    source = Path(source)
    run_dir = new_run_path(settings.runs_root(), f"{prefix}-{source.name}")
    QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
    try:
        done = write_run(source, run_dir)
    except UserError as e:
        window.session.post_message(f"Cannot import {source.name}: {e}")
        return None
    finally:
        QApplication.restoreOverrideCursor()
    window.open_run(done.run_dir)
    return done, source
