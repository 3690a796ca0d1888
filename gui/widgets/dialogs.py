"""The one way the app asks the user a question: a path (`ask_path`), where and how to export a figure
(`ask_export`: the path with a resolution and a width), what Train on a finished run should do
(`ask_finished_run`), or whether to stop a run that trains (`ask_stop_training`). Tests replace these with
plain functions, so no test ever opens a native dialog; call them as ``dialogs.ask_path(...)`` so the
replacement is seen."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QGridLayout, QHBoxLayout,
                               QLabel, QMessageBox, QSpinBox, QVBoxLayout, QWidget)

from engine.figures.options import DPI_CHOICES, WIDTH_CHOICES, FigureOptions

from .. import settings


EXPORTS = "Export"  # one remembered folder for every export: a pane's Export… and File → Export… alike


def ask_path(parent: QWidget | None, kind: str, title: str, filters: str = "",
             suggested: str = "", start: str | Path = "", remember: str = "") -> Path | None:
    """kind: "open" a file, "save" a file, or choose a "folder". None when the user cancels.

    The folder last used under `remember` (the title when not given) is remembered between sessions,
    `start` before there is one, else the runs folder (never the process's working folder); for a chosen
    folder its parent is remembered (the next run is opened from beside the last, not inside).
    """
    key = remember or title
    start = _start(key, suggested, start)
    if kind == "folder":
        chosen = QFileDialog.getExistingDirectory(parent, title, start)
    elif kind == "save":
        chosen, _ = QFileDialog.getSaveFileName(parent, title, start, filters)
    else:
        chosen, _ = QFileDialog.getOpenFileName(parent, title, start, filters)
    if not chosen:
        return None
    path = Path(chosen)
    settings.set_last_folder(key, path.parent)
    return path


def _start(key: str, suggested: str, default: str | Path = "") -> str:
    """The folder (with the suggested name) a dialog opens in: the remembered one, else `default`, else the
    runs folder, or the nearest of their parents that exists (a folder deleted since, a fresh install)."""
    folder = Path(settings.last_folder(key) or default or settings.runs_root()).expanduser()
    while not folder.is_dir() and folder.parent != folder:
        folder = folder.parent
    return str(folder / suggested) if suggested else str(folder)


def ask_export(parent: QWidget | None, title: str, filters: str, suggested: str = "",
               start: str | Path = "") -> tuple[Path, FigureOptions] | None:
    """A save dialog with the figure's resolution and width under the file list (Qt's own dialog: a
    native one cannot hold them), in the last export folder, else `start` (the open run's folder);
    None when the user cancels."""
    box = QFileDialog(parent, title, _start(EXPORTS, suggested, start), filters)
    box.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    box.setOption(QFileDialog.Option.DontUseNativeDialog, True)
    dpi, width = QComboBox(box), QComboBox(box)
    for d in DPI_CHOICES:
        dpi.addItem(f"{d} dpi", d)
    dpi.setCurrentIndex(dpi.findData(settings.export_dpi()))
    dpi.setToolTip("Pixels per inch of a PNG (SVG and PDF are vector: any resolution)")
    for name, inches in WIDTH_CHOICES.items():
        width.addItem(name, inches)
    width.setToolTip("Scale the figure to a journal column; text keeps its size on the page")
    row = QWidget(box)
    line = QHBoxLayout(row)
    line.setContentsMargins(0, 0, 0, 0)
    for w in (QLabel("Resolution:"), dpi, QLabel("Width:"), width):
        line.addWidget(w)
    line.addStretch(1)
    grid = box.layout()
    if isinstance(grid, QGridLayout):
        grid.addWidget(row, grid.rowCount(), 0, 1, grid.columnCount())
    if not box.exec() or not box.selectedFiles():
        return None
    path = Path(box.selectedFiles()[0])
    settings.set_last_folder(EXPORTS, path.parent)
    settings.set_export_dpi(dpi.currentData())
    return path, FigureOptions(dpi.currentData(), width.currentData())


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


def ask_new_run(parent: QWidget | None, reason: str, lost: tuple[str, ...]) -> bool:
    """Train after an edit the shown run cannot follow: whether to start a new run, which will not keep `lost`
    (the run shown stays as it is)."""
    kept = f" and will not keep {', '.join(lost)}" if lost else ""
    box = QMessageBox(QMessageBox.Icon.Question, "This edit needs a new run",
                      f"The run shown cannot continue with this config: {reason}. A new run starts from new "
                      f"weights{kept}; the run shown stays as it is.", QMessageBox.StandardButton.Cancel,
                      parent if isinstance(parent, QWidget) else None)
    new = box.addButton("Start a new run", QMessageBox.ButtonRole.AcceptRole)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is new


def ask_stop_training(parent: QWidget | None, doing: str) -> bool:
    """While a run trains, before something that would stop it (opening another run, a new one): whether to
    stop it. The run is checkpointed either way; the question is only whether to stop now."""
    box = QMessageBox(QMessageBox.Icon.Question, "Training is running",
                      f"A run is training. Stop it to {doing}? It is checkpointed, and Train resumes it "
                      "when it is opened again.", QMessageBox.StandardButton.Cancel,
                      parent if isinstance(parent, QWidget) else None)
    stop = box.addButton("Stop and go on", QMessageBox.ButtonRole.AcceptRole)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is stop
