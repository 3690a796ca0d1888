"""What the forms pane inspects: the bar that edits the choice between the note's encoder chain (depth 1–6 and
its options) and the model of the Architecture pane (engine/forms/source.py's `SourceChoice`, which the forms
process derives)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from engine.forms.source import KINDS, MAX_DEPTH, MAX_HEADS, SourceChoice

__all__ = ["KINDS", "SourceBar", "SourceChoice"]


class SourceBar(QWidget):
    sig_changed = Signal(object)  # SourceChoice

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = QComboBox()
        self.kind.setObjectName("forms_source")
        self.kind.addItems(["The note's encoder chain", "The Architecture pane's model"])
        self.depth = QSpinBox()
        self.depth.setObjectName("forms_depth")
        self.depth.setRange(1, MAX_DEPTH)
        self.depth.setValue(2)
        self.depth.setPrefix("depth ")
        self.heads = QSpinBox()
        self.heads.setRange(1, MAX_HEADS)
        self.heads.setPrefix("heads ")
        self.flags = {name: QCheckBox(label) for name, label in (
            ("residual", "residual"), ("layer_norm", "layer norm"), ("cross_entropy", "cross-entropy head"),
            ("causal", "causal mask"))}
        self.kind.setToolTip("Inspect the note's chain, or the model being built and trained")
        self.depth.setToolTip("Layers of the chain (the note goes to 6: 2184 terms)")
        self.heads.setToolTip("Attention heads per layer of the chain")
        # two rows, so the pane stays narrow enough for a dock beside others
        self.row = QHBoxLayout()
        self.row.setContentsMargins(0, 0, 0, 0)
        self.row.addWidget(QLabel("Source:"))
        self.row.addWidget(self.kind)
        self.row.addStretch(1)
        self.options = QWidget()
        options = QHBoxLayout(self.options)
        options.setContentsMargins(0, 0, 0, 0)
        options.addWidget(QLabel("Chain:"))
        self.chain_widgets = [self.depth, self.heads, *self.flags.values()]
        for w in self.chain_widgets:
            options.addWidget(w)
        options.addStretch(1)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(self.row)
        col.addWidget(self.options)
        self.kind.currentIndexChanged.connect(self._on_edited)
        self.depth.valueChanged.connect(self._on_edited)
        self.heads.valueChanged.connect(self._on_edited)
        for box in self.flags.values():
            box.toggled.connect(self._on_edited)

    def add_widget(self, widget: QWidget) -> None:
        self.row.addWidget(widget)

    def choice(self) -> SourceChoice:
        return SourceChoice(KINDS[self.kind.currentIndex()], self.depth.value(),
                            heads=self.heads.value(), **{k: b.isChecked() for k, b in self.flags.items()})

    def set_choice(self, choice: SourceChoice) -> None:
        widgets = [self.kind, self.depth, self.heads, *self.flags.values()]
        blocked = [w.blockSignals(True) for w in widgets]
        self.kind.setCurrentIndex(KINDS.index(choice.kind))
        self.depth.setValue(choice.depth)
        self.heads.setValue(choice.heads)
        for k, box in self.flags.items():
            box.setChecked(getattr(choice, k))
        for w, b in zip(widgets, blocked):
            w.blockSignals(b)
        self._on_edited()

    def _on_edited(self, *_) -> None:
        self.options.setVisible(self.kind.currentIndex() == 0)
        self.sig_changed.emit(self.choice())
