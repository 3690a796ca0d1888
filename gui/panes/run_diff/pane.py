"""Two paired runs at the same step: the difference B − A of their attention maps on one prompt, every
layer and head, or of one weight's coefficient G (or the weight itself). A and B are the first two runs
ticked in the run browser (a run and its fork, typically: engine/rundir/fork.py), swappable.

The numbers are engine/analysis/pair.py's, from each run's RunAnalysis, asked in the app's analysis process
(gui/analysis.py; the questions PairChoices, PairAttention and PairWeight of engine/analysis/questions.py)
when the choice changes and the pane is seen: the pair's steps and weights (and which of the two is the other's fork) by one job, the difference shown by
another, so the GUI thread never waits nor reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from engine.analysis import questions as q
from engine.analysis.pair import ATTENTION, COEFFICIENT, WEIGHT, PairChoices, PairDiff

from ...jobs import AnalysisJob
from ...session import Session
from ...widgets.heatmap import HeatmapWidget
from ...widgets.heatmap_grid import HeatmapGrid
from ...widgets.seen import SeenWidget

PARTS = {COEFFICIENT: "coefficient G", WEIGHT: "weight W"}
HINT = "Tick two runs in the Runs pane (a run and its fork) to compare them."


@dataclass
class DiffView:
    """The pair, the step and what is compared (ATTENTION or a weight's name, its G or W)."""

    pair: list[Path] = field(default_factory=list)
    step: int | None = None
    what: str = ATTENTION
    part: str = COEFFICIENT

    def key(self) -> tuple:
        return tuple(self.pair), self.step, self.what, self.part


class RunDiffPane(SeenWidget):
    title = "Run diff"
    object_name = "pane_run_diff"

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.view = DiffView()
        self.shown: PairDiff | None = None  # the difference on screen (tests read it)
        self._shown_key: tuple | None = None
        self._noise: str | None = None  # the pair's engine.training.determinism.comparison_note
        self._choices = AnalysisJob(self)
        self._job = AnalysisJob(self)
        self._build()
        self._connect()

    def _build(self) -> None:
        self.pair_label = QLabel(HINT, self)
        self.pair_label.setObjectName("diff_pair")
        self.pair_label.setWordWrap(True)
        self.swap = QPushButton("Swap A and B", self)
        self.step_box = QComboBox(self)
        self.step_box.setObjectName("diff_step")
        self.what_box = QComboBox(self)
        self.what_box.setObjectName("diff_what")
        self.part_box = QComboBox(self)
        self.part_box.setObjectName("diff_part")
        for part, label in PARTS.items():
            self.part_box.addItem(label, part)
        self.part_box.setToolTip("The weight's coefficient G (what the loss asks of it) or the weight")
        self.grid = HeatmapGrid(self, title="attention B − A")
        self.matrix = HeatmapWidget(self, title="weight B − A")
        self.grid.hide()  # until there is a difference to show: the hint says how to get one
        self.matrix.hide()
        # two rows, so the pane fits a side dock (one row needed 490 px)
        rows = (QHBoxLayout(), QHBoxLayout())
        for row, label, box, stretch in ((0, "step", self.step_box, 0), (0, "compare", self.what_box, 1),
                                         (1, "of", self.part_box, 1)):
            rows[row].addWidget(QLabel(label, self))
            rows[row].addWidget(box, stretch)
        rows[1].addWidget(self.swap)
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        col.addWidget(self.pair_label)
        for row in rows:
            col.addLayout(row)
        col.addWidget(self.grid, 1)
        col.addWidget(self.matrix, 1)
        col.addStretch(0)  # holds the rows at the top while neither map shows

    def _connect(self) -> None:
        self.session.sig_runs_compared.connect(self._on_runs_compared)
        self.swap.clicked.connect(self._on_swap_clicked)
        for box in (self.step_box, self.what_box, self.part_box):
            box.activated.connect(self._on_choice_changed)
        self._choices.sig_done.connect(self._on_choices)
        self._job.sig_done.connect(self._on_diff)
        for job in (self._choices, self._job):
            job.sig_failed.connect(self._on_failed)

    # ---- handlers --------------------------------------------------------------------------

    def _on_runs_compared(self, paths) -> None:
        pair = [Path(p) for p in paths][:2]
        if pair != self.view.pair and list(reversed(pair)) != self.view.pair:
            self.view.pair, self.view.step = pair, None
            self.step_box.clear()
            self.what_box.clear()
            if len(pair) == 2:
                self._choices.ask(q.PairChoices(str(pair[0]), str(pair[1])), tag=tuple(pair))
        self._refresh()

    def _on_choices(self, pair: tuple, got: PairChoices) -> None:
        if list(pair) != self.view.pair and list(reversed(pair)) != self.view.pair:
            return  # another pair was ticked meanwhile; its choices are coming
        self.view.pair = [pair[1], pair[0]] if got.parent_second else list(pair)  # a fork's parent is A
        for s in got.steps:
            self.step_box.addItem(f"{s:,}", s)
        self.step_box.setCurrentIndex(len(got.steps) - 1)
        self.what_box.addItems([ATTENTION] + [n for n in got.weights if n.split(".")[-1].startswith("W_")])
        self.view.step = got.steps[-1] if got.steps else None
        self.view.what = ATTENTION
        self._noise = got.noise
        self._refresh()

    def _on_swap_clicked(self) -> None:
        self.view.pair.reverse()
        self._refresh(force=True)

    def _on_choice_changed(self, _index: int) -> None:
        self.view.step = self.step_box.currentData()
        self.view.what = self.what_box.currentText()
        self.view.part = self.part_box.currentData()
        self._refresh(force=True)

    def seen_changed(self, seen: bool) -> None:
        if seen:
            self._refresh()

    # ---- showing ---------------------------------------------------------------------------

    def _refresh(self, force: bool = False) -> None:
        """Ask for the difference chosen, unless it is on screen already or nobody sees the pane."""
        self.part_box.setEnabled(self.view.what != ATTENTION)
        if len(self.view.pair) < 2 or self.view.step is None:
            self.pair_label.setText(HINT)
            self.grid.hide()  # an earlier pair's difference is not this one's
            self.matrix.hide()
            self._shown_key = None
            return
        a, b = self.view.pair
        self.pair_label.setText(f"A = {a.name}, B = {b.name}: B − A at step {self.view.step:,}"
                                + (f"\n{self._noise}" if self._noise else ""))
        key = self.view.key()
        if key == self._shown_key or not (self.seen() or force):
            return
        if self.view.what == ATTENTION:
            question = q.PairAttention(str(a), str(b), self.view.step)
        else:
            question = q.PairWeight(str(a), str(b), self.view.step, self.view.what, self.view.part)
        self._job.ask(question, tag=key)

    def _on_failed(self, _tag, message: str) -> None:
        """Why this pair cannot be compared, said here: it is no warning for the panes that overlay any runs."""
        self.grid.hide()
        self.matrix.hide()
        self._shown_key = None
        self.pair_label.setText(f"<span style='color:#e8590c'>Cannot compare these runs: {message}</span>")

    def _on_diff(self, key: tuple, d: PairDiff) -> None:
        if key != self.view.key():
            return  # the newer choice's answer is coming
        self.shown, self._shown_key = d, key
        attention = d.what == ATTENTION
        self.grid.setVisible(attention)
        self.matrix.setVisible(not attention)
        if attention:
            self.grid.set_stack(d.diff, d.tokens, d.tokens, kind="signed",
                                title=f"attention B − A · step {d.step:,}")
        else:
            part, name = d.what
            diff = d.diff
            self.matrix.set_matrix(diff if diff.ndim == 2 else diff[None, :], kind="signed",
                                   title=f"{PARTS[part]} of {name}: B − A · step {d.step:,}")
