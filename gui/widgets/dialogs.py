"""The one way the app asks the user a question: a path (`ask_path`), or what Train on a finished run should
do (`ask_finished_run`). Tests replace these with plain functions, so no test ever opens a native dialog;
call them as ``dialogs.ask_path(...)`` so the replacement is seen."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFileDialog, QLabel, QSpinBox, QVBoxLayout,
                               QWidget)

from .. import settings


def ask_path(parent: QWidget | None, kind: str, title: str, filters: str = "",
             suggested: str = "") -> Path | None:
    """kind: "open" a file, "save" a file, or choose a "folder". None when the user cancels.

    The folder last used for the same title is remembered between sessions.
    """
    start = settings.last_folder(title)
    if suggested:
        start = str(Path(start) / suggested) if start else suggested
    if kind == "folder":
        chosen = QFileDialog.getExistingDirectory(parent, title, start)
    elif kind == "save":
        chosen, _ = QFileDialog.getSaveFileName(parent, title, start, filters)
    else:
        chosen, _ = QFileDialog.getOpenFileName(parent, title, start, filters)
    if not chosen:
        return None
    path = Path(chosen)
    settings.set_last_folder(title, path if kind == "folder" else path.parent)
    return path


def ask_finished_run(parent: QWidget | None, trained: int, more: int) -> tuple[str, int] | None:
    """Train on a run that has finished: ("continue", n more steps), ("new", 0) for a new run with the
    same config, or None when the user cancels. `more` is the number of steps first offered."""
    box = QDialog(parent if isinstance(parent, QWidget) else None)
    box.setWindowTitle("This run has finished")
    text = QLabel(f"The run has trained all its {trained:,} steps. Continue it for more steps (its curves "
                  "go on), or start a new run with the same config?", box)
    text.setWordWrap(True)
    steps = QSpinBox(box)
    steps.setRange(1, 10_000_000)
    steps.setValue(more)
    steps.setGroupSeparatorShown(True)
    steps.setPrefix("continue for ")
    steps.setSuffix(" more steps")
    buttons = QDialogButtonBox(box)
    go_on = buttons.addButton("Continue", QDialogButtonBox.ButtonRole.AcceptRole)
    new = buttons.addButton("New run", QDialogButtonBox.ButtonRole.AcceptRole)
    buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
    chosen = []
    go_on.clicked.connect(lambda: chosen.append(("continue", steps.value())))
    new.clicked.connect(lambda: chosen.append(("new", 0)))
    buttons.accepted.connect(box.accept)
    buttons.rejected.connect(box.reject)
    col = QVBoxLayout(box)
    for w in (text, steps, buttons):
        col.addWidget(w)
    box.exec()
    return chosen[0] if chosen else None
