"""The heads × steps timeline: one row per attention head, one column per saved step, colour the score
chosen in a selector, so a head forming and the loss curve bending beside it are seen at the same step.

`HeadTimelineView` renders an `engine.analysis.head_timeline.HeadTimeline` through the app's one heatmap
widget (one pyqtgraph image) and says which roles formed when; clicking a cell emits (layer, head, step).
`HeadTimelinePanel` keeps it filled for the session's open run: `head_timeline` runs off the GUI thread
(its per-step cache makes a refresh cost only the new steps) when a run opens and when training comes to
rest. Scores and roles are defined in engine/analysis/heads.py and head_roles.py.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from engine.analysis.head_export import KINDS
from engine.analysis.head_roles import ROLE_NAMES, THRESHOLDS
from engine.analysis.heads import SCORES

from ..jobs import LatestJob
from .heatmap import HeatmapWidget

TITLES = {"previous_token": "previous-token", "induction": "induction (prefix matching)",
          "duplicate": "duplicate-token", "first_token": "attention to the first token", "distance":
          "mean distance attended", "entropy": "entropy (nats)", "copying": "copying (OV eigenvalues)",
          "ablation": "loss increase when mean-ablated", "dla": "direct logit attribution"}


class HeadTimelineView(QWidget):
    sig_cell_clicked = Signal(int, int, int)  # layer, head, step

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.timeline = None
        self.score = QComboBox()
        self.score.setObjectName("head_timeline_score")
        for name in SCORES:
            self.score.addItem(TITLES[name], name)
        self.score.setCurrentIndex(SCORES.index("induction"))
        self.score.setToolTip("Which score colours the cells; a role's threshold is in the note below")
        self.heatmap = HeatmapWidget(self, title="heads × saved steps (click a cell)", aspect_locked=False)
        self.note = QLabel("")
        self.note.setWordWrap(True)
        self.note.setObjectName("head_timeline_note")
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(QLabel("Score:"))
        top.addWidget(self.score, 1)
        self.top = top
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.heatmap, 1)
        layout.addWidget(self.note)
        self.score.currentIndexChanged.connect(self._render)
        self.heatmap.sig_cell_clicked.connect(self._on_cell_clicked)

    def chosen(self) -> str:
        return self.score.currentData()

    def set_timeline(self, timeline) -> None:
        self.timeline = timeline
        self._render()

    def matrix(self):
        """(heads, steps) of the chosen score: row l·H + h is layer l, head h."""
        a = self.timeline.values[self.chosen()]
        return a.reshape(a.shape[0], -1).T

    def _render(self) -> None:
        if self.timeline is None:
            return
        name, (L, H) = self.chosen(), self.timeline.values[SCORES[0]].shape[1:]
        self.heatmap.set_matrix(self.matrix(), [f"L{i // H} H{i % H}" for i in range(L * H)],
                                [str(s) for s in self.timeline.steps], KINDS.get(name, "probability"),
                                title=TITLES[name], row_title="head", col_title="step")
        labels = [r.label for r in self.timeline.roles()]
        rule = (f"{ROLE_NAMES[name]} when ≥ {THRESHOLDS[name]}" if name in THRESHOLDS else "no role for this score")
        derived = " The induction probe was derived from the run's seed (older run)." \
            if self.timeline.induction_derived else ""
        self.note.setText(("Roles: " + "; ".join(labels) if labels else "No head has a role yet.")
                          + f" ({rule}.){derived}")

    def _on_cell_clicked(self, row: int, col: int) -> None:
        if self.timeline is None:
            return
        H = self.timeline.values[SCORES[0]].shape[2]
        self.sig_cell_clicked.emit(row // H, row % H, self.timeline.steps[col])


class HeadTimelinePanel(HeadTimelineView):
    """The view kept up to date for the session's open run (computed off the GUI thread)."""

    def __init__(self, session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self._job = LatestJob(self)
        self._job.sig_done.connect(lambda _tag, tl: self.set_timeline(tl))
        self._job.sig_failed.connect(lambda _tag, message: self.note.setText(message))
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Score the steps saved since the last look (earlier ones are cached)")
        self.refresh_button.clicked.connect(self.refresh)
        self.top.addWidget(self.refresh_button)
        session.sig_run_opened.connect(lambda _run: self.refresh())
        session.sig_training_state_changed.connect(self._on_training_state_changed)
        self.sig_cell_clicked.connect(session.show_head_at_step)
        self.refresh()

    def refresh(self) -> None:
        from engine.analysis.head_timeline import head_timeline

        run = self.session.run
        if run is None:
            self.timeline = None
            self.note.setText("Open or train a run: its heads are scored at every saved step.")
            return
        self.note.setText("Scoring heads at every saved step…")
        self._job.submit(str(run.path), head_timeline, run.path)

    def _on_training_state_changed(self, state: str) -> None:
        if state in ("paused", "stopped", "finished"):
            self.refresh()
