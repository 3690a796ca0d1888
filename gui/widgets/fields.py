"""Editors for single config fields, made from engine/configs/fields.py's table.

The table gives each field's label, tooltip, choices with their words, bounds and the field it depends
on; this module only turns them into Qt widgets.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLineEdit, QPushButton,
                               QSpinBox, QWidget)

from engine.configs.fields import BY_KEY, Field
from engine.text.corpus import BUNDLED

from . import dialogs

SPIN_MAX = 2_147_483_647  # QSpinBox holds a C int


def label(key: str) -> str:
    """The builder's label for a field (``section.name``): its name and unit."""
    f = BY_KEY.get(key)
    return f.display_label() if f is not None else key


class FloatEdit(QLineEdit):
    """A float typed as text so 3e-4 reads as the user wrote it; `value()` is None while unparsable."""

    def set_value(self, v: float) -> None:
        self.setText(f"{v:g}")

    def value(self) -> float | None:
        try:
            return float(self.text().strip())
        except ValueError:
            return None


def compact(box: QComboBox, chars: int = 12) -> QComboBox:
    """A combo box as narrow as `chars` characters, whatever its items: a long item (a corpus file's path,
    "squared error (the note's Euler form)") is elided in the box, not allowed to widen the whole pane."""
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    box.setMinimumContentsLength(chars)
    return box


class CorpusEdit(QWidget):
    """The bundled Shakespeare or a text file the user chooses."""

    sig_changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.combo = compact(QComboBox(self))
        for name, label in BUNDLED.items():
            self.combo.addItem(label, name)
        self.combo.addItem("Text file…", "")
        self._file = self.combo.count() - 1
        self.choose = QPushButton("Choose…", self)
        self.choose.setToolTip("Choose a UTF-8 text file to train on")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.combo, 1)
        row.addWidget(self.choose)
        self._path = ""
        self.combo.activated.connect(self._on_combo_activated)
        self.choose.clicked.connect(self._on_choose_clicked)

    def set_value(self, corpus: str) -> None:
        if corpus in BUNDLED:
            self.combo.setCurrentIndex(self.combo.findData(corpus))
        else:
            self._path = corpus
            self.combo.setItemText(self._file, f"File: {corpus}" if corpus else "Text file…")
            self.combo.setCurrentIndex(self._file)
        self.combo.setToolTip(corpus)

    def value(self) -> str:
        return self._path if self.combo.currentIndex() == self._file else self.combo.currentData()

    def _on_combo_activated(self, index: int) -> None:
        if index == self._file and not self._path:
            self._on_choose_clicked()
        else:
            self.sig_changed.emit()

    def _on_choose_clicked(self) -> None:
        path = dialogs.ask_path(self, "open", "Choose a corpus", "Text files (*.txt *.md);;All files (*)")
        if path is None:
            if not self._path:
                self.combo.setCurrentIndex(0)
            return
        self.set_value(str(path))
        self.sig_changed.emit()


def make_editor(f: Field, default) -> QWidget:
    """The editor for one field: a list of its choices, a spin box within its bounds, a check box, a
    float typed as text, or the corpus widget."""
    if f.key == "data.corpus":
        return CorpusEdit()
    if f.choices:
        box = compact(QComboBox())
        for value, words in f.choices:
            box.addItem(words, value)
        return box
    if isinstance(default, bool):
        return QCheckBox()
    if isinstance(default, int):
        spin = QSpinBox()
        spin.setRange(int(f.lo) if f.lo is not None else 0, min(int(f.hi), SPIN_MAX) if f.hi is not None else SPIN_MAX)
        spin.setGroupSeparatorShown(True)
        return spin
    if isinstance(default, float):
        return FloatEdit()
    return QLineEdit()
