"""One term in the forms pane: its ID and route, its word as the expansion writes it, its coefficient G as
rendered mathematics with the number of operators on its path, and — when a run's weights are at hand —
G's value at the current step as a small heatmap, its norm, and its share of the weight's total. The row is
shown at once; the formulas come from the symbolic process (engine/forms/questions.py's TermDetail), the values
from the analysis process."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from engine.analysis.terms import TermValues
from engine.forms.questions import TermFormulas, TermRow

from ...widgets.formula import FormulaView
from ...widgets.heatmap import HeatmapWidget


def _caption(text: str) -> QLabel:
    label = QLabel(text)
    label.setStyleSheet("font-weight: bold;")
    return label


class TermDetail(QScrollArea):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.term: TermRow | None = None
        self.values_term: str | None = None   # the term whose values are shown
        body = QWidget()
        self.title = QLabel()
        self.title.setObjectName("term_title")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.title.setWordWrap(True)
        self.title.setStyleSheet("font-family: monospace; font-weight: bold;")
        self.meta = QLabel()
        self.meta.setObjectName("term_meta")
        self.meta.setWordWrap(True)
        self.word = FormulaView()
        self.word.setObjectName("term_word")
        self.G = FormulaView()
        self.G.setObjectName("term_G")
        self.values_caption = _caption("Value at the current step")
        self.heatmap = HeatmapWidget()
        self.heatmap.setMinimumHeight(180)
        self.numbers = QLabel()
        self.numbers.setObjectName("term_numbers")
        self.numbers.setWordWrap(True)
        self.numbers.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.values_note = QLabel()
        self.values_note.setObjectName("term_values_note")
        self.values_note.setWordWrap(True)
        values = QWidget()
        grid = QGridLayout(values)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.heatmap, 0, 0)
        grid.addWidget(self.numbers, 0, 1, Qt.AlignmentFlag.AlignTop)
        grid.setColumnStretch(0, 2)
        grid.setColumnStretch(1, 1)
        self.values = values
        col = QVBoxLayout(body)
        col.addWidget(self.title)
        col.addWidget(self.meta)
        self.captions = [_caption("Term (the word expandmm writes for this route)"),
                         _caption("Coefficient G, read as trace(G dW)")]
        col.addWidget(self.captions[0])
        col.addWidget(self.word)
        col.addWidget(self.captions[1])
        col.addWidget(self.G)
        col.addWidget(self.values_caption)
        col.addWidget(self.values_note)
        col.addWidget(values)
        col.addStretch(1)
        self.setWidget(body)
        self.clear()

    def clear(self) -> None:
        self.term = None
        self.title.setText("No term chosen")
        self.meta.setText("Choose a weight, then one of its terms.")
        self.word.set_formula("")
        self.G.set_formula("")
        self.word.setText("")
        self.G.setText("")
        for c in self.captions:
            c.hide()
        self.show_values(None, "")

    def show_term(self, term: TermRow, total: int) -> None:
        """The row at once (of `total` terms in the form); its formulas follow with show_formulas."""
        self.term = term
        for c in self.captions:
            c.show()
        self.title.setText(term.id)
        self.meta.setText(f"weight {term.weight} · route class {term.route_class} · {term.operators} "
                          f"on its path (one shift each) · term {term.index} of {total:,} in Leibniz order")
        for view in (self.word, self.G):
            view.set_formula("")
            view.setText("…")

    def show_formulas(self, formulas: TermFormulas) -> None:
        if self.term is not None and formulas.row.id == self.term.id:
            self.word.set_formula(*formulas.word)
            self.G.set_formula(*formulas.G)

    def show_values(self, values: TermValues | None, message: str) -> None:
        """The term's numbers, or a sentence saying why there are none (no run open, still computing…)."""
        has = values is not None and self.term is not None and values.term_id == self.term.id
        self.values_term = values.term_id if has else None
        self.values.setVisible(has)
        self.values_note.setText("" if has else message)
        self.values_note.setVisible(not has and bool(message))
        self.values_caption.setVisible(has or bool(message))
        if not has:
            return
        m = values.matrix
        self.heatmap.set_matrix(m, kind="signed", title=f"G of this term, step {values.step}")
        self.numbers.setText(
            f"step {values.step}\n‖G‖ = {values.norm:.4g}\n‖G of {values.weight}‖ = {values.total_norm:.4g}\n"
            f"share of the weight's total: {values.share:+.1%}\n(<G, total> / ‖total‖²: the shares of all "
            "terms of a weight add up to 100%)")
