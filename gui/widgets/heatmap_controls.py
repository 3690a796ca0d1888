"""The controls every heatmap carries (issue 16, "heatmap controls people expect"): a visible "fit" that
undoes zoom and pan, and a "colours" menu with the colour map and the colour range: auto (the kind's: 0..1
for probabilities, symmetric for signed, min..max otherwise), symmetric about 0, or fixed (the range in use
when chosen, kept across steps so colours compare over training). One widget, built by HeatmapWidget
itself, so the attention grid, the masks, the positional views and the Weight pane's matrices all have
the same controls in the same place.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QHBoxLayout, QMenu, QToolButton, QWidget

from engine.figures import colormap_tables

# (label, matplotlib name); None: the kind's own map (engine.figures.export.COLORMAPS)
COLORMAP_CHOICES = (("by kind", None), *colormap_tables.CHOICES)
RANGES = (("auto", "auto: by kind"), ("symmetric", "symmetric about 0"), ("fixed", "fixed across steps"))


class HeatmapControls(QWidget):
    sig_fit = Signal()
    sig_colormap_chosen = Signal(object)  # a matplotlib name, or None for the kind's
    sig_range_chosen = Signal(str)        # auto, symmetric or fixed

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.fit_button = QToolButton(self)
        self.fit_button.setText("fit")
        self.fit_button.setToolTip("Reset zoom and pan: show the whole matrix (the wheel zooms, dragging pans)")
        self.fit_button.setAutoRaise(True)
        self.fit_button.clicked.connect(self.sig_fit)
        # its entries are made when it is first opened (or asked for): a window holds ~40 heatmaps, most never
        # opened, and their ten entries each were a third of a heatmap's making (12 of 39 ms for 40, load 8)
        self.menu = QMenu(self)
        self.menu.aboutToShow.connect(self._entries)
        self._groups: tuple[QActionGroup, QActionGroup] | None = None
        self.colours_button = QToolButton(self)
        self.colours_button.setText("colours")
        self.colours_button.setToolTip("Colour map and colour range")
        self.colours_button.setAutoRaise(True)
        self.colours_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.colours_button.setMenu(self.menu)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(self.fit_button)
        row.addWidget(self.colours_button)

    @property
    def colormaps(self) -> QActionGroup:
        """The colour map entries (data: a matplotlib name, or None for the kind's)."""
        return self._entries()[0]

    @property
    def ranges(self) -> QActionGroup:
        """The colour range entries (data: auto, symmetric or fixed)."""
        return self._entries()[1]

    def _entries(self) -> tuple[QActionGroup, QActionGroup]:
        if self._groups is None:
            self._groups = (self._group("Colour map", [(label, name) for label, name in COLORMAP_CHOICES],
                                        self.sig_colormap_chosen),
                            self._group("Range", list(RANGES), self.sig_range_chosen, data_first=True))
        return self._groups

    def _group(self, title: str, items, signal, data_first: bool = False) -> QActionGroup:
        self.menu.addSection(title)
        group = QActionGroup(self)
        for item in items:
            data, label = item if data_first else (item[1], item[0])
            action = QAction(label, group, checkable=True)
            action.setData(data)
            self.menu.addAction(action)
        group.actions()[0].setChecked(True)
        group.triggered.connect(lambda action: signal.emit(action.data()))
        return group

    def choose(self, group: QActionGroup, data) -> None:
        """Check and act on the entry holding `data` (as a click on it would)."""
        for action in group.actions():
            if action.data() == data:
                action.trigger()
                return
        raise ValueError(f"no entry {data!r}")
