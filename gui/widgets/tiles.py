"""Laying out a pane's views: in one row or rows of two, whichever suits the space (for views that keep
their aspect), and a row of controls."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QWidget

MIN_SIDE = 100               # px: the least square a tile's matrix is given where the room allows (height_for)
CHROME_GUESS = QSize(150, 80)  # a heatmap's title row, axes and colour bar before one is laid out


class Tiles(QWidget):
    """Widgets in one row or in rows of two, whichever gives each the larger square for what it shows: a
    heatmap keeps its aspect, and its title row, axes and colour bar (its `chrome()`) take their room first.
    Counting whole tiles, a GPT-2 prompt's four one-head heatmaps were put in one row of ~165 px tiles, each
    ~160 px of axes and colour bar around an ~8 px matrix."""

    def __init__(self, widgets: list[QWidget], parent: QWidget | None = None):
        super().__init__(parent)
        self._widgets, self._columns = widgets, 0
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._arrange(min(2, len(widgets)))  # a row of all would set a minimum width before any resize

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        w, h = event.size().width(), event.size().height()
        fits = {c for c in self._choices() if self._least_width(c) <= w} or {min(self._choices())}
        self._arrange(max(fits, key=lambda columns: self._side(w, h, columns)))

    def minimumSizeHint(self) -> QSize:
        """Room for every tile's minimum in the most rows and the fewest columns it may use, whatever the
        arrangement now: a least height that changed with the arrangement changed with the width, and the
        scroll bar it brought or took away in a scrolling pane changed the width again."""
        columns = min(self._choices())
        rows = -(-len(self._widgets) // columns)
        gap = max(0, self._grid.verticalSpacing())
        return QSize(self._least_width(columns), rows * self._least_tile().height() + (rows - 1) * gap)

    def height_for(self, width: int, side: int = MIN_SIDE) -> int:
        """The least height at which an arrangement gives each tile's matrix a square of `side` px at `width`;
        0 when none can at this width."""
        chrome, n = self._chrome(), len(self._widgets)
        fits = [-(-n // c) * (side + chrome.height()) for c in self._choices() if width / c - chrome.width() >= side]
        return min(fits, default=0)

    def _least_tile(self) -> QSize:
        """The most any tile asks for as its least size (its explicit minimum where set)."""
        sizes = [w.minimumSizeHint().expandedTo(w.minimumSize()) for w in self._widgets] or [QSize(0, 0)]
        return QSize(max(s.width() for s in sizes), max(s.height() for s in sizes))

    def _least_width(self, columns: int) -> int:
        return columns * self._least_tile().width() + (columns - 1) * max(0, self._grid.horizontalSpacing())

    def _choices(self) -> set[int]:
        n = len(self._widgets)
        return {n, min(2, n)}

    def _side(self, w: int, h: int, columns: int) -> float:
        chrome = self._chrome()
        return min(w / columns - chrome.width(), h / -(-len(self._widgets) // columns) - chrome.height())

    def _chrome(self) -> QSize:
        """The most any tile takes beside its matrix, as laid out now (a guess before that)."""
        sizes = [w.chrome() for w in self._widgets if hasattr(w, "chrome")]
        sizes = [s for s in sizes if s is not None]
        if not sizes:
            return CHROME_GUESS if any(hasattr(w, "chrome") for w in self._widgets) else QSize(0, 0)
        return QSize(max(s.width() for s in sizes), max(s.height() for s in sizes))

    def _arrange(self, columns: int) -> None:
        if columns == self._columns:
            return
        self._columns = columns
        for w in self._widgets:
            self._grid.removeWidget(w)
        for i, w in enumerate(self._widgets):
            self._grid.addWidget(w, i // columns, i % columns)


def row_of(*widgets: QWidget, stretch: bool = True) -> QHBoxLayout:
    """A margin-free row of controls, pushed to the left."""
    row = QHBoxLayout()
    row.setContentsMargins(0, 0, 0, 0)
    for w in widgets:
        row.addWidget(w)
    if stretch:
        row.addStretch(1)
    return row
