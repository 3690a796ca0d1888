"""A row of buttons that wraps onto a second line when the pane is too narrow for it, so that every button
stays in sight (Qt's flow layout example).

The run browser's acts were a tool bar, which puts what does not fit under a » menu: in a 370 px dock Add
folder and Refresh were hidden there, and a faint » was all that said so.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QStyle, QWidget


class ButtonFlow(QLayout):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setContentsMargins(0, 0, 0, 0)

    # ---- QLayout's interface -----------------------------------------------------------------

    def addItem(self, item: QLayoutItem) -> None:  # Qt's name
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # Qt's name
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # Qt's name
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # Qt's name
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # Qt's name
        return True

    def heightForWidth(self, width: int) -> int:  # Qt's name
        return self._place(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # Qt's name
        super().setGeometry(rect)
        self._place(rect, move=True)

    def sizeHint(self) -> QSize:  # Qt's name: every button on one line
        width = sum(i.sizeHint().width() for i in self._items) + self._gap() * max(0, len(self._items) - 1)
        height = max((i.sizeHint().height() for i in self._items), default=0)
        m = self.contentsMargins()
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:  # Qt's name: the widest button
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    # ---- placing -----------------------------------------------------------------------------

    def _gap(self) -> int:
        spacing = self.spacing()
        if spacing >= 0:
            return spacing
        parent = self.parentWidget()
        return parent.style().pixelMetric(QStyle.PixelMetric.PM_LayoutHorizontalSpacing) if parent else 6

    def _place(self, rect: QRect, move: bool) -> int:
        """Lay the buttons out left to right in `rect`, wrapping; the height they take."""
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line = area.x(), area.y(), 0
        gap = self._gap()
        for item in self._items:
            hint = item.sizeHint()
            if x + hint.width() > area.right() + 1 and line > 0:
                x, y, line = area.x(), y + line + gap, 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + gap
            line = max(line, hint.height())
        return y + line - rect.y() + m.bottom()

    def lines(self) -> int:
        """How many lines the buttons take now (tests)."""
        return len({item.geometry().y() for item in self._items})
