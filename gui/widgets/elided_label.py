"""A one-line label that ends in "…" when it is narrower than its text, with the whole text as its tooltip.

QLabel clips a line it has no room for mid-letter and says nothing; heatmap titles in a narrow dock ("encoding
P (64 positions × 64 dimensions)") were cut so. This one draws what fits and keeps the rest in the tooltip.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class ElidedLabel(QLabel):
    def __init__(self, text: str = "", parent: QWidget | None = None):
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setToolTip(text)

    def setText(self, text: str) -> None:  # Qt's name
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, super().minimumSizeHint().height())

    def shown_text(self) -> str:
        """What is painted: the text, or as much as fits followed by "…"."""
        width = self.contentsRect().width()
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, width)

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        flags = int(self.alignment() | Qt.AlignmentFlag.AlignVCenter)
        painter.drawText(self.contentsRect(), flags, self.shown_text())
