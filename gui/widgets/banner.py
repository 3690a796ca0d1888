"""A message strip: what went wrong and what to do, never a traceback.

Errors and warnings stay until dismissed or replaced; information fades out by itself after a few seconds.
The window keeps it in its own row of the layout, above the status bar (gui/main_window.py): a banner that
floated over the top of the window covered the Train and Pause buttons and took the clicks meant for them,
and one in the layout at the top pushed every pane down and back; at the bottom only the panes' lower edge
moves while it shows.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton

_STYLES = {
    "error": ("#5c1f1f", "#ffd7d7", "#a33a3a", "Error"),
    "warning": ("#5a4513", "#fff0c2", "#a57d1e", "Warning"),
    "info": ("#1d3d5c", "#d6ebff", "#3a6ea3", "Note"),
}
INFO_SECONDS = 6


class Banner(QFrame):
    sig_shown = Signal()
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
        self.hide()

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
        self.sig_shown.emit()
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
