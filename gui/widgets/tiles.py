"""Laying out a pane's views: in one row or rows of two, whichever suits the space (for views that keep
their aspect), and a row of controls."""

from __future__ import annotations

from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QWidget


class Tiles(QWidget):
    """Widgets in one row or in rows of two, whichever gives each the larger square (heatmaps keep their
    aspect, so a wide, short area wants one row and a tall one two)."""

    def __init__(self, widgets: list[QWidget], parent: QWidget | None = None):
        super().__init__(parent)
        self._widgets, self._columns = widgets, 0
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._arrange(min(2, len(widgets)))  # a row of all would set a minimum width before any resize

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        w, h, n = event.size().width(), event.size().height(), len(self._widgets)

        def side(columns: int) -> float:
            return min(w / columns, h / -(-n // columns))

        self._arrange(max({n, min(2, n)}, key=side))

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
