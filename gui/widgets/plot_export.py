"""One Export… for every plot: pyqtgraph puts its own "Export..." in each plot's right-click menu, a second
exporter beside the app's (other formats, no run or step in the figure, no resolution choice). The main
window routes each of those entries to the app's File → Export… of the pane the plot is in. A heatmap
already has its own Export… there (HeatmapWidget) and is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QWidget


def route_plot_exports(pane: QWidget, export: Callable[[], None]) -> int:
    """Replace pyqtgraph's exporter in the plots of `pane` by `export`; returns how many were routed."""
    import pyqtgraph as pg  # loaded by the panes already: not at the window's start

    routed = 0
    for view in pane.findChildren(pg.GraphicsView):
        scene = view.scene()
        menu = getattr(scene, "contextMenu", None)
        if not menu or len(menu) != 1 or menu[0].text() != "Export...":
            continue
        action = QAction("Export…", scene)
        action.setToolTip("The app's export: PNG, SVG or PDF with run and step, or the numbers")
        action.triggered.connect(lambda _=False: export())
        scene.contextMenu = [action]
        routed += 1
    return routed
