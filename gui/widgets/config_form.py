"""A form for one section of the experiment config (model, train or data): an editor per dataclass field,
and beside it the problem `validate()` found with that field, shown while the user types."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QLabel, QLineEdit, QSpinBox,
                               QVBoxLayout, QWidget)

from engine.configs.problem import Problem
from engine.configs.fields import BY_KEY

from .fields import CorpusEdit, FloatEdit, make_editor

PROBLEM_STYLE = "color: #ff6b6b; font-weight: bold;"
READ_ONLY = {"model.vocab_size"}  # set from the tokenizer when training starts


class SectionForm(QWidget):
    """Editors for every field of one config dataclass; `read()` returns the values and parse problems."""

    sig_edited = Signal()

    def __init__(self, section: str, cls: type, parent=None):
        super().__init__(parent)
        self.section, self.cls = section, cls
        self.editors: dict[str, QWidget] = {}
        self.problem_labels: dict[str, QLabel] = {}
        self._labels: dict[str, QLabel] = {}
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        # a pane too narrow for a label and its field beside it puts the field under the label
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        defaults = cls()
        for f in dataclasses.fields(cls):
            key = f"{section}.{f.name}"
            spec = BY_KEY[key]
            editor = make_editor(spec, getattr(defaults, f.name))
            editor.setObjectName(f"field_{section}_{f.name}")
            editor.setToolTip(spec.help)
            if key in READ_ONLY:
                editor.setEnabled(False)
                editor.setToolTip("Set from the corpus's tokenizer when training starts")
            problem = QLabel(self)  # styled when first shown (show_problems): ~60 a window, few ever shown
            problem.setObjectName(f"problem_{section}_{f.name}")
            problem.setWordWrap(True)
            problem.hide()
            cell = QWidget(self)
            col = QVBoxLayout(cell)
            col.setContentsMargins(0, 0, 0, 0)
            col.setSpacing(2)
            col.addWidget(editor)
            col.addWidget(problem)
            text = QLabel(spec.display_label() + ":", self)
            text.setToolTip(editor.toolTip())
            form.addRow(text, cell)
            self.editors[f.name], self.problem_labels[f.name], self._labels[f.name] = editor, problem, text
            self._connect_editor(editor)

    def _connect_editor(self, editor: QWidget) -> None:
        if isinstance(editor, CorpusEdit):
            editor.sig_changed.connect(self.sig_edited)
        elif isinstance(editor, QComboBox):
            editor.currentIndexChanged.connect(self.sig_edited)
        elif isinstance(editor, QCheckBox):
            editor.toggled.connect(self.sig_edited)
        elif isinstance(editor, QSpinBox):
            editor.valueChanged.connect(self.sig_edited)
        elif isinstance(editor, QLineEdit):
            editor.textEdited.connect(self.sig_edited)

    def set_values(self, obj) -> None:
        """Show a config section without reporting it as an edit."""
        for name, editor in self.editors.items():
            value = getattr(obj, name)
            was = editor.blockSignals(True)
            if isinstance(editor, CorpusEdit | FloatEdit):
                editor.set_value(value)
            elif isinstance(editor, QComboBox):
                editor.setCurrentIndex(max(editor.findData(value), 0))
            elif isinstance(editor, QCheckBox):
                editor.setChecked(value)
            elif isinstance(editor, QSpinBox):
                editor.setValue(value)
            else:
                editor.setText(str(value))
            editor.blockSignals(was)
        self._update_dependent(obj)

    def read(self, base) -> tuple[object, list[Problem]]:
        """A copy of `base` with the edited values; floats that do not parse keep their old value and come
        back as problems."""
        values, problems = {}, []
        for name, editor in self.editors.items():
            if isinstance(editor, FloatEdit):
                v = editor.value()
                if v is None:
                    problems.append(Problem(f"{self.section}.{name}", "not a number"))
                    continue
            elif isinstance(editor, CorpusEdit):
                v = editor.value()
            elif isinstance(editor, QComboBox):
                v = editor.currentData()
            elif isinstance(editor, QCheckBox):
                v = editor.isChecked()
            elif isinstance(editor, QSpinBox):
                v = editor.value()
            else:
                v = editor.text()
            values[name] = v
        obj = dataclasses.replace(base, **values)
        self._update_dependent(obj)
        return obj, problems

    def show_problems(self, problems: list[Problem]) -> int:
        """Show this section's problems beside their fields; returns how many there are."""
        mine: dict[str, list[str]] = {}
        for p in problems:
            section, _, name = p.field.partition(".")
            if section == self.section and name in self.problem_labels:
                mine.setdefault(name, []).append(p.message)
        for name, lab in self.problem_labels.items():
            lab.setText("; ".join(mine.get(name, [])))
            if name in mine and not lab.styleSheet():
                lab.setStyleSheet(PROBLEM_STYLE)
            lab.setVisible(name in mine)
        return sum(len(v) for v in mine.values())

    def _update_dependent(self, obj) -> None:
        """Grey out the fields that do not count for the values shown (a band without a banded mask)."""
        values = {f"{self.section}.{f.name}": getattr(obj, f.name) for f in dataclasses.fields(obj)}
        for name in self.editors:
            spec = BY_KEY[f"{self.section}.{name}"]
            if spec.depends is not None and spec.depends[0] in values:
                on = spec.matters(values)
                self.editors[name].setEnabled(on)
                self._labels[name].setEnabled(on)
