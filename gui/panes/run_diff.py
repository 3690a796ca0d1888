"""Two paired runs at the same step: the difference B − A of their attention maps on one prompt, every
layer and head, or of one weight. A and B are the first two runs ticked in the run browser (a run and its
fork, typically: engine/fork.py), swappable; the numbers are engine/run_diff.py's.

Computed on the GUI thread when the choice changes and the pane is seen: two small models' forward on one
prompt. (Issue 12 moves panes' questions to a run behind RunAnalysis, off the GUI thread; this pane should
follow it there.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from engine.errors import UserError
from engine.fork import fork_record
from engine.run_diff import attention_diff, common_steps, weight_diff
from engine.runs import Run

from ..session import Session
from ..widgets.heatmap import HeatmapWidget
from ..widgets.heatmap_grid import HeatmapGrid
from ..widgets.seen import SeenWidget

ATTENTION = "attention"


@dataclass
class DiffView:
    """The pair, the step and what is compared (ATTENTION or a weight's name)."""

    pair: list[Path] = field(default_factory=list)
    step: int | None = None
    what: str = ATTENTION


class RunDiffPane(SeenWidget):
    title = "Run diff"
    object_name = "pane_run_diff"

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.view = DiffView()
        self._stale = True
        self._build()
        self._connect()

    def _build(self) -> None:
        self.pair_label = QLabel("Tick two runs in the Runs pane (a run and its fork) to compare them.", self)
        self.pair_label.setObjectName("diff_pair")
        self.pair_label.setWordWrap(True)
        self.swap = QPushButton("Swap A and B", self)
        self.step_box = QComboBox(self)
        self.step_box.setObjectName("diff_step")
        self.what_box = QComboBox(self)
        self.what_box.setObjectName("diff_what")
        self.grid = HeatmapGrid(self, title="attention B − A")
        self.matrix = HeatmapWidget(self, title="weight B − A")
        self.matrix.hide()
        row = QHBoxLayout()
        row.addWidget(QLabel("step", self))
        row.addWidget(self.step_box)
        row.addWidget(QLabel("compare", self))
        row.addWidget(self.what_box, 1)
        row.addWidget(self.swap)
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        col.addWidget(self.pair_label)
        col.addLayout(row)
        col.addWidget(self.grid, 1)
        col.addWidget(self.matrix, 1)

    def _connect(self) -> None:
        self.session.sig_runs_compared.connect(self._on_runs_compared)
        self.swap.clicked.connect(self._on_swap_clicked)
        self.step_box.activated.connect(self._on_choice_changed)
        self.what_box.activated.connect(self._on_choice_changed)

    # ---- handlers --------------------------------------------------------------------------

    def _on_runs_compared(self, paths) -> None:
        pair = [Path(p) for p in paths][:2]
        record = fork_record(pair[0]) if len(pair) == 2 else None
        if record and Path(record.get("parent", "")) == pair[1].resolve():
            pair.reverse()  # the parent is A, its fork B
        if pair != self.view.pair and list(reversed(pair)) != self.view.pair:
            self.view.pair = pair
            self._fill_choices()
        self._refresh()

    def _on_swap_clicked(self) -> None:
        self.view.pair.reverse()
        self._refresh(force=True)

    def _on_choice_changed(self, _index: int) -> None:
        self.view.step = self.step_box.currentData()
        self.view.what = self.what_box.currentText()
        self._refresh(force=True)

    def seen_changed(self, seen: bool) -> None:
        if seen and self._stale:
            self._refresh()

    # ---- showing ---------------------------------------------------------------------------

    def _fill_choices(self) -> None:
        self.step_box.clear()
        self.what_box.clear()
        if len(self.view.pair) < 2:
            return
        try:
            a, b = (Run(p) for p in self.view.pair)
            steps = common_steps(a, b)
            names = list(a.load_weights(steps[0])) if steps else []
        except UserError as e:
            self.session.post_message(f"Cannot compare the runs: {e}", "warning")
            return
        for s in steps:
            self.step_box.addItem(f"{s:,}", s)
        self.step_box.setCurrentIndex(len(steps) - 1)
        self.what_box.addItems([ATTENTION] + [n for n in names if n.split(".")[-1].startswith("W_")])
        self.view.step = steps[-1] if steps else None
        self.view.what = ATTENTION

    def _refresh(self, force: bool = False) -> None:
        if len(self.view.pair) < 2 or self.view.step is None:
            self.pair_label.setText("Tick two runs in the Runs pane (a run and its fork) to compare them.")
            return
        a, b = (p.name for p in self.view.pair)
        self.pair_label.setText(f"A = {a}, B = {b}: B − A at step {self.view.step:,}")
        if not (self.seen() or force):
            self._stale = True
            return
        try:
            self._show()
        except UserError as e:
            self.session.post_message(f"Cannot compare the runs: {e}", "warning")
        self._stale = False

    def _show(self) -> None:
        a, b = self.view.pair
        attention = self.view.what == ATTENTION
        self.grid.setVisible(attention)
        self.matrix.setVisible(not attention)
        if attention:
            d = attention_diff(a, b, self.view.step)
            self.grid.set_stack(d.diff, d.tokens, d.tokens, kind="signed",
                                title=f"attention B − A · step {self.view.step:,}")
        else:
            wa, wb = weight_diff(a, b, self.view.step, self.view.what)
            diff = wb - wa
            self.matrix.set_matrix(diff if diff.ndim == 2 else diff[None, :], kind="signed",
                                   title=f"{self.view.what} B − A · step {self.view.step:,}")
