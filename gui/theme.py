"""Dark and light themes: the Fusion style with an explicit palette (the platform colour-scheme hint does
nothing on Linux without a desktop theme), and the few colours plots and the diagram draw with.

Widgets that paint with their own colours (plots, the block diagram) read them from `plot_colors()` and
restyle on `QEvent.PaletteChange`, which Qt sends to every widget when the application palette changes.
A widget with a style sheet (a bold title, a monospace label) is the exception: the style-sheet style fixed
its palette when it was polished and does not take a new application palette, so its text kept the old
theme's colour, invisible on the new background; `apply_theme` polishes those again.

The style is Fusion with one change (`ThemeStyle`): the frame of a check box or radio button. Fusion draws it
in the window colour darkened, which on the dark theme is the colour of the field it stands on (#1f2023 on
#1e1f22), so the run browser's tick boxes and every unticked option were all but invisible.

The series palette of runs and parts is the figures' (engine/figures/palette.py), re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle

from engine.figures.palette import SERIES, color_of  # noqa: F401  (the one series palette, the figures' too)

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
# The frame of a check box or radio button: 3:1 against the field at least (WCAG's contrast for a control).
INDICATOR_FRAME = {"dark": "#8a8d93", "light": "#767676"}


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


def style_plot(plot, colors: PlotColors, grid: bool = True) -> None:
    """A pyqtgraph PlotItem in the theme: its left and bottom axes and their labels in the foreground colour,
    and a grid of the theme's strength (pyqtgraph draws black plots with grey axes otherwise)."""
    if grid:
        plot.showGrid(x=True, y=True, alpha=colors.grid_alpha)
    for name in ("left", "bottom"):
        plot.getAxis(name).setPen(colors.foreground)
        plot.getAxis(name).setTextPen(colors.foreground)


def recolor_legend(legend, color: str) -> None:
    """Give a pyqtgraph legend's labels the colour `color`, those already drawn too: LegendItem's own
    setLabelTextColor only stores it for later labels (pyqtgraph 0.14), so a legend made in the dark theme
    kept its near-white names on the light theme's white."""
    legend.setLabelTextColor(color)
    for _, label in legend.items:
        label.setText(label.text, color=color)


class ThemeStyle(QProxyStyle):
    """Fusion, with the frame of check boxes and radio buttons (also in item views) in INDICATOR_FRAME.
    Fusion's frame is its palette's window colour darkened by 140 %, so the option is given a window colour
    that darkens to the frame's; nothing else of the indicator reads that colour."""

    _INDICATORS = (QStyle.PrimitiveElement.PE_IndicatorCheckBox, QStyle.PrimitiveElement.PE_IndicatorRadioButton)

    def __init__(self):
        super().__init__("Fusion")

    def drawPrimitive(self, element, option, painter, widget=None) -> None:  # Qt's name
        if element in self._INDICATORS:
            option = type(option)(option)
            pal = QPalette(option.palette)
            pal.setColor(_R.Window, QColor(INDICATOR_FRAME[current_theme()]).lighter(140))
            option.palette = pal
        super().drawPrimitive(element, option, painter, widget)


def apply_theme(app: QApplication, name: str) -> None:
    """The app's style (ThemeStyle) and the named palette for the whole application."""
    if name not in _COLORS:
        name = "dark"
    if isinstance(app.style(), ThemeStyle) and current_theme() == name and app.palette() == palette(name):
        # on already: nothing to polish again. The walk over every widget alive, each style sheet set again,
        # took 9 ms with one window alive and 120 ms with ten, and the tests make the app for each window
        return
    if not isinstance(app.style(), ThemeStyle):
        app.setStyle(ThemeStyle())
    app.setProperty("gpt_explorer_theme", name)
    app.setPalette(palette(name))
    for widget in app.allWidgets():
        sheet = widget.styleSheet()
        if sheet:
            widget.setStyleSheet(sheet)  # setting it again polishes the widget with the new palette
