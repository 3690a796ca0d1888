"""Exports of the weight pane: the heatmap at a step (PNG, SVG, PDF, or G as NPY), an animation over the
saved steps (GIF, MP4), the stack of matrices over steps (NPY), the norms (CSV) and G (or the route class shown)
as code that computes and checks it (a .py and its .npz, engine/ascode/generate.py).

Each is a request to the app's export queue (Session.request_export, gui/exports.py: every request is
answered, written whole or not at all, in the export process, and its frames are reported in the status bar,
where Cancel stops it) running the engine's `export_run_coefficient` (engine/coefficients/export.py) on the
run's folder: the export process opens the run's CoefficientStore, which reads the records the analysis
process cached on disk for the pane, so a file holds the numbers the pane shows.
"""

from __future__ import annotations

import functools
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QToolButton

from engine.coefficients.export import export_run_coefficient

from ...exports import ExportRequest
from ...widgets import dialogs

FILTERS = {
    "heatmap": "PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf);;NumPy array of G (*.npy)",
    "animation": "GIF animation (*.gif);;MP4 video (*.mp4)",
    "stack": "NumPy array, steps × matrix (*.npy)",
    "norms": "CSV table (*.csv)",
    "code": "Python file, with its data beside it as .npz (*.py)",
}
ALL = ("PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf);;NumPy array of G (*.npy);;"
       "CSV norms over steps (*.csv);;GIF animation (*.gif);;MP4 video (*.mp4)")
MP4 = ";;MP4 video (*.mp4)"


def offered(filters: str) -> str:
    """The filters without MP4 where ffmpeg, which writes it, is not installed."""
    from engine.coefficients.export import mp4_available

    return filters if mp4_available() else filters.replace(MP4, "")


def _write(kind: str, run, weight: str, step: int | None, part: str | None):
    """write(path) of `kind` for the export process: it names the run by its folder. As code, `part` is a route
    class or None (the whole G): a term is not written as code (docs/readings.md#as-code)."""
    if kind == "code":
        from engine.ascode.generate import export_run_code

        return functools.partial(export_run_code, run_dir=str(run.path), weight=weight, step=step, part=part)
    return functools.partial(export_run_coefficient, run_dir=str(run.path), weight=weight, step=step, part=part,
                             stack=kind == "stack")


class WeightExporter(QObject):
    """The pane's Export… button and File → Export…; `export(kind, path)` is what both call."""

    def __init__(self, pane):
        super().__init__(pane)
        self.pane = pane
        self.button = QToolButton()
        self.button.setText("Export…")
        self.button.setToolTip("Save the heatmap, an animation over training, the matrices or the norms")
        self.button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.button)
        for kind, label in (("heatmap", "Heatmap at this step…"), ("animation", "Animation over steps…"),
                            ("stack", "Matrices over steps (NPY)…"), ("norms", "Norms over steps (CSV)…"),
                            ("code", "As code that computes and checks it (.py)…")):
            action = QAction(label, menu)
            action.triggered.connect(lambda _checked=False, k=kind: self.ask(k))
            menu.addAction(action)
        self.button.setMenu(menu)
        pane.export_row.addWidget(self.button)

    def _target(self, kind: str = "heatmap"):
        """(run, weight, step, part) on screen: the workspace's weight and step, the part chosen in the pane (as
        code, a route class or the whole G: a term shown is its whole G)."""
        from engine.views.weight import shown_step

        v, ws = self.pane.view, self.pane.session.workspace
        weight = v.weight(ws)
        if weight is None or ws.open_run is None or ws.open_run.run is None:
            return None
        part = v.part if (v.kind == "class" if kind == "code" else v.kind != "total") else None
        return ws.open_run.run, weight, shown_step(ws), part

    def ask(self, kind: str) -> None:
        target = self._target(kind)
        if target is None:
            self.pane.session.post_message("Nothing to export yet: train, or open a run, first.", "info")
            return
        suffix = {"heatmap": "png", "animation": "gif", "stack": "npy", "norms": "csv", "code": "py"}[kind]
        name = f"{target[1]}-{'G' if kind != 'stack' else 'stack'}.{suffix}"
        from engine.coefficients.export import mp4_available

        title = "Export coefficient" + ("" if kind != "animation" or mp4_available() else " (MP4 needs ffmpeg)")
        path = dialogs.ask_path(self.pane, "save", title, offered(FILTERS[kind]), suggested=name,
                                start=target[0].path, remember=dialogs.EXPORTS)
        if path is not None:
            self.export(kind, path)

    def export(self, kind: str, path) -> None:
        """Write `kind` ("heatmap", "animation", "stack", "norms", "code"; the file's suffix sets the format)."""
        target = self._target(kind)
        if target is None:
            self.pane.session.post_message("Nothing to export yet: train, or open a run, first.", "info")
            return
        self.pane.session.request_export(ExportRequest(Path(path), _write(kind, *target)))

    def export_job(self):
        """File → Export…: (filters, suggested name, fn(path) -> Path), by the suffix chosen."""
        target = self._target()
        if target is None:
            return None
        return offered(ALL), f"{target[1]}-G.png", _write("file", *target)
