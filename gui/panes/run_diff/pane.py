"""Two paired runs at the same step: the difference B − A of their attention maps on one prompt, every
layer and head, or of one weight's coefficient G (or the weight itself). A and B are the first two runs
ticked in the run browser (a run and its fork, typically: engine/rundir/fork.py), swappable.

The pane draws its view model (engine/views/run_diff.py: the pair, the step, what is compared, and the answers).
The numbers are engine/analysis/pair.py's, from each run's RunAnalysis, asked in the app's analysis process by
the window's asker (gui/asker.py; the questions PairChoices, PairAttention and PairWeight of
engine/analysis/questions.py) while the pane is seen: the pair's steps and weights (and which of the two is the
other's fork), then the difference chosen, so the GUI thread never waits nor reads a file.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from engine.analysis.pair import ATTENTION, COEFFICIENT, WEIGHT
from engine.views.run_diff import RunDiffView

from ...binding import bind
from ...session import Session
from ...widgets.heatmap import HeatmapWidget
from ...widgets.heatmap_grid import HeatmapGrid
from ...widgets.seen import SeenWidget

PARTS = {COEFFICIENT: "coefficient G", WEIGHT: "weight W"}
HINT = "Tick two runs in the Runs pane (a run and its fork) to compare them."


class RunDiffPane(SeenWidget):
    title = "Run diff"
    object_name = "pane_run_diff"

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.view = RunDiffView()
        self.view.seen = False  # until the pane is on screen
        self._drawn = None  # the PairDiff on screen
        self._build()
        self._connect()

    @property
    def shown(self):
        """The difference on screen (engine.analysis.pair.PairDiff; None while none is)."""
        return self._drawn

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
        v = self.view
        self.session.sig_runs_compared.connect(v.tick)
        self.swap.clicked.connect(v.swap)
        bind(self.step_box, v, "step")
        bind(self.what_box, v, "what")
        bind(self.part_box, v, "part")
        v.changed.connect(self._on_view_changed)
        self.session.asker.watch(v, self)

    def seen_changed(self, seen: bool) -> None:
        self.view.seen = seen

    # ---- showing ---------------------------------------------------------------------------

    def _on_view_changed(self, name: str) -> None:
        if name == "choices":
            self._fill_choices()
        self._show()

    def _fill_choices(self) -> None:
        """The steps and weights the pair can be compared on (set without echo: the view holds the choice)."""
        got = self.view.choices
        for box in (self.step_box, self.what_box):
            was = box.blockSignals(True)
            box.clear()
            box.blockSignals(was)
        if got is None:
            return
        for box, items in ((self.step_box, [(f"{s:,}", s) for s in got.steps]),
                           (self.what_box, [(w, w) for w in [ATTENTION] + [n for n in got.weights
                                                                            if n.split(".")[-1].startswith("W_")]])):
            was = box.blockSignals(True)
            for text, data in items:
                box.addItem(text, data)
            box.blockSignals(was)
        self.step_box.setCurrentIndex(self.step_box.findData(self.view.step))
        self.what_box.setCurrentIndex(self.what_box.findData(self.view.what))

    def _show(self) -> None:
        """The pair and the difference chosen, once it is answered; why not, when it failed."""
        v = self.view
        self.part_box.setEnabled(v.what != ATTENTION)
        failure = v.failure()
        if failure is not None:  # said here: it is no warning for the panes that overlay any runs
            self._hide_maps()
            self.pair_label.setText(f"<span style='color:#e8590c'>Cannot compare these runs: {failure}</span>")
            return
        if len(v.pair) < 2 or v.step is None:
            self.pair_label.setText(HINT)
            self._hide_maps()  # an earlier pair's difference is not this one's
            return
        a, b = (Path(p) for p in v.pair)
        noise = v.choices.noise if v.choices is not None else None
        self.pair_label.setText(f"A = {a.name}, B = {b.name}: B − A at step {v.step:,}"
                                + (f"\n{noise}" if noise else ""))
        if v.diff is not None and v.diff is not self._drawn:  # the one answered last, until the next comes
            self._draw(v.diff)

    def _hide_maps(self) -> None:
        self.grid.hide()
        self.matrix.hide()
        self._drawn = None

    def _draw(self, d) -> None:
        self._drawn = d
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
