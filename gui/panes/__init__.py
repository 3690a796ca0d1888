"""The panes of the main window, in their default order. Adding a pane is one line here.

The pane contract: a package ``gui/panes/<name>/`` whose ``pane.py`` holds a QWidget class, constructed as
``XPane(session, parent=None)``, with class attributes ``title`` (the dock's title and View-menu entry) and
``object_name`` (the dock's objectName, which the saved layout refers to); the widgets only that pane uses
live beside it in the package. A pane binds to the app only through the Session. It may offer
``export_job() -> (filters, suggested_name, fn(path) -> Path) | None`` for File → Export…; `fn` runs off the
GUI thread, so it must capture copies, not widgets.
"""

from __future__ import annotations


def pane_classes() -> list[type]:
    """The pane classes in their default order; imported when the window is built, not before."""
    from .architecture import ArchitecturePane
    from .forms import FormsPane
    from .heatmaps import HeatmapsPane
    from .run_curves import RunCurvesPane
    from .run_diff import RunDiffPane
    from .runs import RunsPane
    from .training import TrainingPane
    from .weight import WeightPane

    return [ArchitecturePane, TrainingPane, HeatmapsPane, FormsPane, WeightPane, RunsPane, RunCurvesPane,
            RunDiffPane]
