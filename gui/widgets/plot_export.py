"""One Export… for every plot: pyqtgraph puts its own "Export..." in each plot's right-click menu, a second
exporter beside the app's (other formats, no run or step in the figure, no resolution choice). The main
window routes each of those entries to the app's File → Export… of the pane the plot is in. A heatmap has
its own Export… (HeatmapWidget), which says what to write; the window hands that to the app's one export
queue (gui/exports.py), so the widget itself runs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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


def route_heatmap_exports(root: QWidget, serve: Callable[[Path, object, Callable, str], None]) -> int:
    """Hand the Export… of every heatmap in `root` (itself included) to `serve(path, options, write, what)`
    (the app's export queue); returns how many were routed."""
    from .attention_lines import AttentionLinesWidget
    from .heatmap import HeatmapWidget

    heatmaps = [root] * isinstance(root, HeatmapWidget) + root.findChildren(HeatmapWidget) \
        + root.findChildren(AttentionLinesWidget)
    for heatmap in heatmaps:
        heatmap.sig_export_requested.connect(serve)
    return len(heatmaps)
