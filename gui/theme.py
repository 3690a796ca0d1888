"""Dark and light themes: the Fusion style with an explicit palette (the platform colour-scheme hint does
nothing on Linux without a desktop theme), and the few colours plots and the diagram draw with.

Widgets that paint with their own colours (plots, the block diagram) read them from `plot_colors()` and
restyle on `QEvent.PaletteChange`, which Qt sends to every widget when the application palette changes.
A widget with a style sheet (a bold title, a monospace label) is the exception: the style-sheet style fixed
its palette when it was polished and does not take a new application palette, so its text kept the old
theme's colour, invisible on the new background; `apply_theme` polishes those again.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

_R = QPalette.ColorRole
_G = QPalette.ColorGroup

_DARK = {
    _R.Window: "#2b2d31", _R.WindowText: "#e3e3e3", _R.Base: "#1e1f22", _R.AlternateBase: "#313338",
    _R.ToolTipBase: "#1e1f22", _R.ToolTipText: "#e3e3e3", _R.PlaceholderText: "#8a8d93",
    _R.Text: "#e3e3e3", _R.Button: "#3a3c42", _R.ButtonText: "#e3e3e3", _R.BrightText: "#ff6b6b",
    _R.Highlight: "#3d7be0", _R.HighlightedText: "#ffffff", _R.Link: "#6ea8fe", _R.LinkVisited: "#b48efa",
    _R.Light: "#4a4d55", _R.Midlight: "#3f4248", _R.Mid: "#2f3136", _R.Dark: "#1b1c1f", _R.Shadow: "#000000",
}
_LIGHT = {
    _R.Window: "#f0f0f0", _R.WindowText: "#1b1b1b", _R.Base: "#ffffff", _R.AlternateBase: "#f5f5f7",
    _R.ToolTipBase: "#ffffe1", _R.ToolTipText: "#1b1b1b", _R.PlaceholderText: "#7a7a7a",
    _R.Text: "#1b1b1b", _R.Button: "#e6e6e6", _R.ButtonText: "#1b1b1b", _R.BrightText: "#c00000",
    _R.Highlight: "#2f6fd6", _R.HighlightedText: "#ffffff", _R.Link: "#1a56c4", _R.LinkVisited: "#6b3fb0",
    _R.Light: "#ffffff", _R.Midlight: "#e9e9e9", _R.Mid: "#b8b8b8", _R.Dark: "#9f9f9f", _R.Shadow: "#5a5a5a",
}
# Disabled text must stay readable but look inactive.
_DISABLED = {"dark": "#7c7f86", "light": "#9a9a9a"}


@dataclass(frozen=True)
class PlotColors:
    background: str
    foreground: str
    grid_alpha: float
    train: str      # train loss curve
    val: str        # validation loss curve
    lr: str
    accent: str     # selection, hover line
    block: str      # block frame in the diagram
    weight: str     # a weight matrix in the diagram
    vector: str     # a bias or gain in the diagram


_COLORS = {
    "dark": PlotColors("#1e1f22", "#d8d8d8", 0.25, "#4ea1ff", "#ffa94d", "#8ce99a", "#ffd43b",
                       "#44474e", "#2f4a6d", "#3d4a3a"),
    "light": PlotColors("#ffffff", "#222222", 0.2, "#1c64d1", "#e8590c", "#2b8a3e", "#d9480f",
                        "#c9ccd1", "#cfe0fa", "#dcefd9"),
}


# The app's series palette (Tableau 10): one colour per run in Run curves, per part in the Weight pane's
# charts and list. pyqtgraph's own hues made three runs red, orange and yellow.
SERIES = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
          "#bab0ac")


def color_of(index: int) -> str:
    """The series colour of the index-th run or part, repeating after ten."""
    return SERIES[index % len(SERIES)]


def palette(name: str) -> QPalette:
    pal = QPalette()
    for role, color in (_DARK if name == "dark" else _LIGHT).items():
        pal.setColor(role, QColor(color))
    for role in (_R.WindowText, _R.Text, _R.ButtonText):
        pal.setColor(_G.Disabled, role, QColor(_DISABLED[name]))
    return pal


def current_theme() -> str:
    app = QApplication.instance()
    name = app.property("gpt_explorer_theme") if app is not None else None
    return name if name in _COLORS else "dark"


def plot_colors() -> PlotColors:
    return _COLORS[current_theme()]


def recolor_legend(legend, color: str) -> None:
    """Give a pyqtgraph legend's labels the colour `color`, those already drawn too: LegendItem's own
    setLabelTextColor only stores it for later labels (pyqtgraph 0.14), so a legend made in the dark theme
    kept its near-white names on the light theme's white."""
    legend.setLabelTextColor(color)
    for _, label in legend.items:
        label.setText(label.text, color=color)


def apply_theme(app: QApplication, name: str) -> None:
    """Fusion style and the named palette for the whole application."""
    if name not in _COLORS:
        name = "dark"
    if app.style().name().lower() != "fusion":
        app.setStyle(QStyleFactory.create("Fusion"))
    app.setProperty("gpt_explorer_theme", name)
    app.setPalette(palette(name))
    for widget in app.allWidgets():
        sheet = widget.styleSheet()
        if sheet:
            widget.setStyleSheet(sheet)  # setting it again polishes the widget with the new palette
