"""A dialog that shows a text to be read or sent on (versions, a traceback) with a Copy button: About and the
crash dialog are both this, with their own introduction above the text."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout,
                               QWidget)


class ReportDialog(QDialog):
    def __init__(self, title: str, intro: str, text: str, copy_label: str = "Copy",
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.intro = QLabel(intro, self)
        self.intro.setWordWrap(True)
        self.intro.setOpenExternalLinks(True)
        self.intro.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.text = QPlainTextEdit(self)
        self.text.setObjectName("report_text")
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setPlainText(text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.copy_button = QPushButton(copy_label, self)
        self.copy_button.setObjectName("report_copy")
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.copy_button.clicked.connect(self._copy)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.resize(640, 420)

    def report(self) -> str:
        """What Copy puts on the clipboard: the text shown (subclasses add to it)."""
        return self.text.toPlainText()

    def _copy(self) -> None:
        QGuiApplication.clipboard().setText(self.report())
        self.copy_button.setText("Copied")
