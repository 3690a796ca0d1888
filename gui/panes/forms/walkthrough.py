"""The forms pane's walkthrough: the note's pipeline — encoder(n), form, expandAll, expandmm, shiftmm,
cycle — as steps to go through for the whole form or for one term, each stage rendered as mathematics
(docs/rules.md: layers composed by substitution, shifts with their transposes); and the note's own question,
how Q_3 shapes K_5's coefficient, as the same method applied once more (engine/forms/walkthrough.py).

The stages are derived and printed in the symbolic process (engine/forms/questions.py's Walkthrough); a whole
form with more terms than the engine lists (DEFAULT_LIMIT) walks only as far as the form itself and says to
follow one term instead.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QLabel, QListWidget, QPushButton, QSplitter, QVBoxLayout, QWidget)

from engine.forms import questions as fq
from engine.forms import snapshot_export as se
from engine.forms.source import Source

from ...widgets.formula import FormulaList
from ...widgets.tiles import row_of
from .process import FormsJob

SCOPES = ("whole form", "one term", "the note's question")
ABOUT = {
    "encoder": "The network: every named value defined by a word in the values before it.",
    "form": "ω = trace(Eᵗ dF): the differential of the error's form, to be pulled back to the weights.",
    "expandAll": "The Leibniz rule with every named value's differential substituted by its definition's "
                 "(layers compose by substitution), multiplied out — outside operator arguments.",
    "expandmm": "expandAll through operator arguments as well (operators are linear): one summand per "
                "route, each carrying exactly one differential of a weight.",
    "shiftmm": "Each operator shifted onto the rest of the trace, each with its transpose (see shift), until "
               "the weight's differential stands outside every operator.",
    "cycle": "trace(L f R) → trace(R L f): the differential last; what precedes it is the coefficient.",
    "shift": "One shift: trace(P op_B[A]) → trace(opᵀ_{Bᵗ}[P] A), the transposed kind on the transposed base.",
    "finish": "trace(P dW) gives G = P; trace(P dWᵗ) gives G = Pᵗ; trace(P diag(dg)) gives diag(P).",
    "seed": "The note's question: how does A's update, with the error E, move B's coefficient? Hold a direction "
            "V on B: σ = ⟨G_B, V⟩ is a sum of traces, one per term of B, whose factors are all known.",
    "differentiate": "dσ by the Leibniz rule: every named value's differential by its definition, E's by its "
                     "own, and each operator differentiated by its base too (aa2, gg2, ln2).",
    "pull back": "Each summand shifted and cycled until A's differential stands last: trace(M dA).",
    "mixed terms": "The mixed terms' coefficients M: summed, ∂⟨G_B, V⟩/∂A = −H_AB V; at V = ΔB, read against "
                   "ΔA, they give −⟨ΔB, H_BA ΔA⟩, the pair's part of the loss change's curvature term.",
}

class WalkthroughView(QWidget):
    sig_stage_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.source: Source | None = None
        self.derived: fq.Derived | None = None
        self.term: fq.TermRow | None = None
        self.shown_term: fq.TermRow | None = None   # the term the shown stages follow (None: the whole form)
        self.shown_question = False                 # the shown stages are the note's question's
        self.sheets: list[tuple[str, se.Sheet]] = []
        self._job = FormsJob(self)
        self._build()
        self._connect()

    def _build(self) -> None:
        self.scope = QComboBox()
        self.scope.setObjectName("walk_scope")
        self.scope.addItems([s.capitalize() for s in SCOPES])
        self.scope.setToolTip("Walk the whole form, the route of the term chosen in Terms, or the note's question: "
                              "how the query weight two layers below shapes the last key weight's coefficient")
        self.prev_button = QPushButton("◀ Previous stage")
        self.next_button = QPushButton("Next stage ▶")
        self.stages = QListWidget()
        self.stages.setObjectName("walk_stages")
        self.stages.setMaximumWidth(180)
        self.about = QLabel()
        self.about.setWordWrap(True)
        self.about.setObjectName("walk_about")
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.hide()
        self.rows = FormulaList()
        right = QWidget()
        col = QVBoxLayout(right)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.about)
        col.addWidget(self.note)
        col.addWidget(self.rows, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.stages)
        split.addWidget(right)
        split.setStretchFactor(1, 1)
        split.setSizes([150, 600])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row_of(QLabel("Walk through:"), self.scope, self.prev_button, self.next_button))
        layout.addWidget(split, 1)

    def _connect(self) -> None:
        self.scope.currentIndexChanged.connect(lambda *_: self.refresh())
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.next_button.clicked.connect(lambda: self.step(+1))
        self.stages.currentRowChanged.connect(self._on_stage_row_changed)
        self._job.sig_done.connect(self._on_sheets)
        self._job.sig_failed.connect(self._on_failed)

    @property
    def one_term(self) -> bool:
        return self.scope.currentIndex() == 1

    @property
    def question(self) -> bool:
        return self.scope.currentIndex() == 2

    @property
    def busy(self) -> bool:
        return self._job.busy

    def set_forms(self, source: Source, derived: fq.Derived) -> None:
        self.source, self.derived, self.term = source, derived, None
        self.refresh()

    def set_term(self, term: fq.TermRow | None) -> None:
        self.term = term
        if self.one_term:
            self.refresh()

    def refresh(self) -> None:
        if self.source is None:
            return
        question = fq.Walkthrough(self.source, self.term.id if self.term is not None else None, self.one_term,
                                  self.question)
        self.about.setText("Deriving the stages…")
        self._job.forget()  # only the newest is wanted
        self._job.ask(question, question)

    def step(self, delta: int) -> None:
        row = self.stages.currentRow() + delta
        if 0 <= row < self.stages.count():
            self.stages.setCurrentRow(row)

    @property
    def sheet(self) -> se.Sheet | None:
        row = self.stages.currentRow()
        return self.sheets[row][1] if 0 <= row < len(self.sheets) else None

    def _on_sheets(self, asked: fq.Walkthrough, stages: fq.Stages) -> None:
        if asked.source != self.source or asked.question != self.question:
            return
        self.shown_question = stages.question
        sheets, note = list(stages.sheets), stages.note
        self.shown_term = stages.term
        keep = self.stages.currentItem().text() if self.stages.currentItem() else ""
        self.sheets = sheets
        self.note.setText(note)
        self.note.setVisible(bool(note))
        was = self.stages.blockSignals(True)
        self.stages.clear()
        names = [self._stage_label(name) for name, _ in sheets]
        self.stages.addItems(names)
        self.stages.blockSignals(was)
        self.stages.setCurrentRow(names.index(keep) if keep in names else 0)
        self._on_stage_row_changed(self.stages.currentRow())

    def _stage_label(self, name: str) -> str:
        if name == "encoder":
            depth = self.derived.depth
            return f"encoder({depth})" if depth is not None else "network"
        return name

    def _on_failed(self, _tag, message: str) -> None:
        self.about.setText(f"Could not derive the stages: {message}")

    def _on_stage_row_changed(self, row: int) -> None:
        if not 0 <= row < len(self.sheets):
            return
        name, sheet = self.sheets[row]
        key = name.split()[0]
        what = ("the note's question, {} by {}".format(*self.derived.question) if self.shown_question
                else f"term {self.shown_term.id}" if self.shown_term is not None else "the whole form")
        self.about.setText(f"<b>{self.stages.item(row).text()}</b> — {what} — step {row + 1} of "
                           f"{len(self.sheets)}. {ABOUT.get(name, ABOUT.get(key, ''))}")
        self.rows.set_rows([(f.label, f.tex, f.html or f.tex) for f in sheet.formulas])
        self.prev_button.setEnabled(row > 0)
        self.next_button.setEnabled(row < len(self.sheets) - 1)
        self.sig_stage_changed.emit(row)
