"""The one way the app asks the user for a path. Tests replace `ask_path` with a plain function, so no
test ever opens a native dialog; call it as ``dialogs.ask_path(...)`` so the replacement is seen."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

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
