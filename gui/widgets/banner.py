"""A message strip across the top of the window: what went wrong and what to do, never a traceback.

Errors stay until dismissed or replaced; information fades out by itself after a few seconds. With
`float_over` the banner lies over the top of a window instead of in its layout, so showing and hiding it
never moves the panes under it (in the layout, each "Exported …" pushed every pane down ~37 px and back).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

_STYLES = {
    "error": ("#5c1f1f", "#ffd7d7", "#a33a3a", "Error"),
    "warning": ("#5a4513", "#fff0c2", "#a57d1e", "Warning"),
    "info": ("#1d3d5c", "#d6ebff", "#3a6ea3", "Note"),
}
INFO_SECONDS = 6
MARGIN = 8  # pixels between a floating banner and its window's edges


class Banner(QFrame):
    sig_dismissed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.level = ""
        self._kind = QLabel(self)
        self._kind.setObjectName("banner_kind")
        self._text = QLabel(self)
        self._text.setObjectName("banner_text")
        self._text.setWordWrap(True)
        self._text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton(self)
        close.setText("✕")
        close.setToolTip("Dismiss")
        close.setAutoRaise(True)
        close.clicked.connect(self.dismiss)
        self._close = close
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 6, 6)
        row.addWidget(self._kind, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self._text, 1)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self._fade = QTimer(self, singleShot=True, interval=INFO_SECONDS * 1000)
        self._fade.timeout.connect(self.dismiss)
        self._host: QWidget | None = None
        self._below: QWidget | None = None
        self.hide()

    def float_over(self, host: QWidget, below: QWidget) -> None:
        """Lie over `host` (the banner's parent), across its width just under `below` (its menu bar)."""
        self._host, self._below = host, below
        host.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if watched is self._host and event.type() == QEvent.Type.Resize and self.isVisible():
            self._place()
        return False

    def _place(self) -> None:
        if self._host is None:
            return
        width = max(1, self._host.width() - 2 * MARGIN)
        top = self._below.mapTo(self._host, QPoint(0, self._below.height())).y() if self._below else 0
        height = self.heightForWidth(width) if self.hasHeightForWidth() else self.sizeHint().height()
        self.setGeometry(MARGIN, top + 2, width, max(height, self.minimumSizeHint().height()))
        self.raise_()  # docks made after the banner would otherwise be stacked over it

    @property
    def text(self) -> str:
        return self._text.text()

    def show_message(self, level: str, text: str) -> None:
        if level not in _STYLES:
            level = "error"
        bg, fg, border, kind = _STYLES[level]
        self.level = level
        self.setStyleSheet(
            f"QFrame#banner {{ background: {bg}; border: 1px solid {border}; border-radius: 4px; }}"
            f"QLabel {{ color: {fg}; background: transparent; }}"
            f"QLabel#banner_kind {{ font-weight: bold; }}"
            f"QToolButton {{ color: {fg}; }}")
        self._kind.setText(kind + ":")
        self._text.setText(text)
        self._place()
        self.show()
        if level == "info":
            self._fade.start()
        else:
            self._fade.stop()

    def dismiss(self) -> None:
        self._fade.stop()
        self.level = ""
        self._text.clear()
        self.hide()
        self.sig_dismissed.emit()
