"""Editors for single config fields and the words the forms show for them.

Labels and choice names are the GUI's wording; the tooltip of every field is the comment beside it in
engine/config.py, read from the source so the two never drift apart.
"""

from __future__ import annotations

import functools
import inspect
import re

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLineEdit, QPushButton,
                               QSpinBox, QWidget)

from engine import config as C
from engine.corpus import SHAKESPEARE

from . import dialogs

LABELS = {
    "model.n_layer": "Layers", "model.n_head": "Heads", "model.d_model": "d_model (width)",
    "model.d_ff": "d_ff (MLP width)", "model.n_ctx": "Context length", "model.vocab_size": "Vocabulary",
    "model.dropout": "Dropout", "model.pos_encoding": "Positions", "model.mask": "Mask",
    "model.band": "Band β", "model.norm": "Layer norm", "model.residual": "Residual connections",
    "model.activation": "Activation", "model.tied": "Tie embeddings", "model.loss": "Loss",
    "train.steps": "Steps", "train.batch_size": "Batch size", "train.lr": "Learning rate",
    "train.min_lr": "Final learning rate", "train.warmup_steps": "Warm-up steps",
    "train.weight_decay": "Weight decay", "train.beta1": "Adam β₁", "train.beta2": "Adam β₂",
    "train.grad_clip": "Gradient clip (0 = off)", "train.eval_every": "Evaluate every (steps)",
    "train.eval_batches": "Validation batches", "train.report_every": "Report every (steps)",
    "train.checkpoint_every": "Checkpoint every (steps)", "train.keep_checkpoints": "Checkpoints kept",
    "train.snapshot_every": "Snapshot every (steps)", "train.snapshot_budget_mb": "Snapshot budget (MB)",
    "train.probe_batch": "Probe batch (sequences)", "train.sample_tokens": "Logged sample length",
    "train.optimizer": "Optimizer", "train.adam_eps": "Adam ε", "train.momentum": "SGD momentum",
    "train.muon_lr": "Muon learning rate", "train.muon_momentum": "Muon momentum",
    "train.muon_ns_steps": "Muon Newton–Schulz steps",
    "train.seed": "Seed", "train.device": "Device", "train.torch_threads": "Torch threads (0 = all)",
    "train.precision": "Precision", "train.compile": "Compile (torch.compile)",
    "data.corpus": "Corpus", "data.tokenizer": "Tokenizer", "data.max_vocab": "Vocabulary size",
    "data.val_fraction": "Validation fraction",
}
CHOICES = {
    "model.pos_encoding": C.POS_ENCODINGS, "model.mask": C.MASKS, "model.norm": C.NORMS,
    "model.activation": C.ACTIVATIONS, "model.loss": C.LOSSES, "data.tokenizer": C.TOKENIZERS,
    "train.device": C.DEVICES, "train.precision": C.PRECISIONS, "train.optimizer": C.OPTIMIZERS,
}
CHOICE_LABELS = {
    "sinusoidal": "sinusoidal", "learned": "learned", "none": "none", "causal": "causal",
    "banded": "banded causal", "pre": "pre-LN (GPT-2)", "post": "post-LN (2017)", "relu": "ReLU",
    "gelu": "GELU (exact)", "gelu_tanh": "GELU, tanh form (GPT-2)", "cross_entropy": "cross-entropy", "squared_error": "squared error (Euler form)",
    "char": "characters", "word": "words", "bpe": "byte-level BPE", "auto": "auto (CUDA, else CPU)", "cpu": "CPU", "cuda": "CUDA",
    "mps": "Apple MPS", "adamw": "AdamW (diagonal metric)", "sgd": "SGD (Euclidean)",
    "muon": "Muon (spectral; AdamW for the rest)",
}
# Where one field's choice reads differently from the same word elsewhere.
FIELD_CHOICE_LABELS = {"train.precision": {"auto": "auto (bf16 on a GPU that has it)", "float32": "float32",
                                           "bf16": "bf16 (mixed precision)"}}
# Fields only meaningful when another field has a given value (or one of a tuple of values).
DEPENDS = {"model.band": ("model.mask", "banded"), "data.max_vocab": ("data.tokenizer", ("word", "bpe")),
           "train.beta1": ("train.optimizer", ("adamw", "muon")), "train.beta2": ("train.optimizer", ("adamw", "muon")),
           "train.adam_eps": ("train.optimizer", ("adamw", "muon")), "train.momentum": ("train.optimizer", "sgd"),
           "train.muon_lr": ("train.optimizer", "muon"), "train.muon_momentum": ("train.optimizer", "muon"),
           "train.muon_ns_steps": ("train.optimizer", "muon")}


@functools.lru_cache(maxsize=None)
def field_docs(cls: type) -> dict[str, str]:
    """The trailing comment of each field in the dataclass's source: ``name: int = 4  # comment``."""
    docs = {}
    for m in re.finditer(r"^\s+(\w+): \w+ = .*?#\s*(.+)$", inspect.getsource(cls), re.M):
        docs[m.group(1)] = m.group(2).strip()
    return docs


def label(key: str) -> str:
    return LABELS.get(key, key.split(".")[-1].replace("_", " ").capitalize())


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
        self.combo.addItem("Shakespeare (bundled)", SHAKESPEARE)
        self.combo.addItem("Text file…", "")
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
        if corpus == SHAKESPEARE:
            self.combo.setCurrentIndex(0)
        else:
            self._path = corpus
            self.combo.setItemText(1, f"File: {corpus}" if corpus else "Text file…")
            self.combo.setCurrentIndex(1)
        self.combo.setToolTip(corpus)

    def value(self) -> str:
        return SHAKESPEARE if self.combo.currentIndex() == 0 else self._path

    def _on_combo_activated(self, index: int) -> None:
        if index == 1 and not self._path:
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


def make_editor(key: str, default) -> QWidget:
    """The editor for one field, chosen by its type (or the corpus widget)."""
    if key == "data.corpus":
        return CorpusEdit()
    if key in CHOICES:
        box = compact(QComboBox())
        labels = {**CHOICE_LABELS, **FIELD_CHOICE_LABELS.get(key, {})}
        for value in CHOICES[key]:
            box.addItem(labels.get(value, value), value)
        return box
    if isinstance(default, bool):
        return QCheckBox()
    if isinstance(default, int):
        spin = QSpinBox()
        spin.setRange(0, 2_147_483_647)
        spin.setGroupSeparatorShown(True)
        return spin
    if isinstance(default, float):
        return FloatEdit()
    return QLineEdit()
