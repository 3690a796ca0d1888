"""The panes of the main window, in their default order. Adding a pane is one line here.

The pane contract: a QWidget class in ``gui/panes/<name>.py``, constructed as ``XPane(session, parent=None)``
with class attributes ``title`` (the dock's title and View-menu entry) and ``object_name`` (the dock's
objectName, which the saved layout refers to). A pane binds to the app only through the Session. It may
offer ``export_job() -> (filters, suggested_name, fn(path) -> Path) | None`` for File → Export…; `fn` runs
off the GUI thread, so it must capture copies, not widgets.

A pane whose module is not in this installation yet is skipped (its issue has not landed); a module that
exists but fails to import is a bug and raises.
"""

from __future__ import annotations

import importlib

PANES = [
    ("gui.panes.architecture", "ArchitecturePane"),
    ("gui.panes.training", "TrainingPane"),
    ("gui.panes.heatmaps", "HeatmapsPane"),
    ("gui.panes.forms", "FormsPane"),
    ("gui.panes.weight", "WeightPane"),
    ("gui.panes.runs", "RunsPane"),
    ("gui.panes.run_curves", "RunCurvesPane"),
    ("gui.panes.run_diff", "RunDiffPane"),
]


def pane_classes() -> list[type]:
    classes = []
    for module_name, class_name in PANES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name == module_name:
                continue
            raise
        classes.append(getattr(module, class_name))
    return classes
