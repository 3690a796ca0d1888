"""The heads × steps timeline: one row per attention head, one column per saved step, colour the score
chosen in a selector, so a head forming and the loss curve bending above it are seen at the same step.

`HeadTimelineView` renders an `engine.analysis.head_timeline.HeadTimeline` through the app's one heatmap
widget (one pyqtgraph image) and says which roles formed when; clicking a cell emits (layer, head, step).
`HeadTimelinePanel` keeps it filled for the session's open run while it is seen: it asks
`RunAnalysis.head_timeline()` through the one analysis process (gui/analysis.py; its per-step cache makes a
refresh cost only the new steps) when a run opens, when training comes to rest, and, while training, when new
snapshots are saved, at an interval of a few times what the last ask took (a timeline is costly: every score
of every head at each new step). Scores and roles are defined in engine/analysis/heads.py and head_roles.py.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from engine.analysis.head_export import KINDS
from engine.analysis.head_roles import ROLE_NAMES, THRESHOLDS
from engine.analysis import questions as q
from engine.analysis.heads import MEASURES, SCORES

from ...analysis import AnalysisJob
from ...screen_fit import PLOT_MIN
from ...widgets.heatmap import HeatmapWidget
from ...widgets.seen import SeenWidget

# While training saves snapshots the timeline is asked again when REFRESH_COST_FACTOR times what the last ask
# took has passed, and never sooner than SNAPSHOT_REFRESH_S: each ask scores every head at the new steps in the
# analysis process, which the heatmaps and weight panes share, so it takes at most about a third of that
# process's time. A fixed 30 s (before issue 28) showed the induction lesson's timeline once in its 47 s of
# training (seen under Xvfb): the heads formed unseen, then appeared all at once when training ended.
SNAPSHOT_REFRESH_S = 3.0
REFRESH_COST_FACTOR = 3.0
FORMED_MARK = "◆"  # beside a step at which a head took the chosen score's role

TITLES = {"previous_token": "previous-token", "induction": "induction (prefix matching)",
          "duplicate": "duplicate-token", "first_token": "attention to the first token", "distance":
          "mean distance attended", "entropy": "entropy (nats)", "copying": "copying (OV eigenvalues)",
          "ablation": "loss increase when mean-ablated", "dla": "direct logit attribution"}


class HeadTimelineView(SeenWidget):
    sig_cell_clicked = Signal(int, int, int)  # layer, head, step

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.timeline = None
        self.score = QComboBox()
        # its longest name ("induction (prefix matching)") must not set the panel's width: a narrow control
        # column has no room to spare
        self.score.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.score.setMinimumContentsLength(10)
        self.score.setObjectName("head_timeline_score")
        for i, name in enumerate(SCORES):
            self.score.addItem(TITLES[name], name)
            self.score.setItemData(i, f"{TITLES[name].capitalize()}: {MEASURES[name]}.", Qt.ItemDataRole.ToolTipRole)
        self.score.setCurrentIndex(SCORES.index("induction"))
        self.score.setToolTip("Which score colours the cells; a role's threshold is in the note below")
        self.heatmap = HeatmapWidget(self, title="heads × saved steps (click a cell)", aspect_locked=False)
        self.heatmap.hide()  # until there is a timeline: the note says how to get one
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
        # the room the chart will need, kept before it shows: a plot of PLOT_MIN under its title, with its
        # read-out, and two lines of the note (the roles); what the score measures is in the tooltips
        line = self.note.fontMetrics().lineSpacing()
        self.heatmap.setMinimumHeight(PLOT_MIN + 2 * line + 12)
        self.setMinimumHeight(self.score.sizeHint().height() + self.heatmap.minimumHeight() + 2 * line
                              + 2 * layout.spacing())
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
        self.heatmap.setVisible(self.timeline is not None)
        if self.timeline is None:
            return
        name, (L, H) = self.chosen(), self.timeline.values[SCORES[0]].shape[1:]
        roles = self.timeline.roles()
        formed = {r.formed for r in roles if r.score == name}  # the phase changes: marked on the step axis
        self.heatmap.set_matrix(self.matrix(), [f"L{i // H} H{i % H}" for i in range(L * H)],
                                [f"{s} {FORMED_MARK}" if s in formed else str(s) for s in self.timeline.steps],
                                KINDS.get(name, "probability"), title=TITLES[name], row_title="head",
                                col_title=f"step ({FORMED_MARK}: a head took this role)" if formed else "step",
                                pinned_cols=tuple(k for k, s in enumerate(self.timeline.steps) if s in formed))
        labels = [r.label for r in roles]
        rule = (f"{ROLE_NAMES[name]} when ≥ {THRESHOLDS[name]}" if name in THRESHOLDS else "no role for this score")
        derived = " The induction probe was derived from the run's seed (older run)." \
            if self.timeline.induction_derived else ""
        self.note.setText(("Roles: " + "; ".join(labels) if labels else "No head has a role yet.")
                          + f" ({rule}.){derived}")
        self.note.setToolTip(f"{TITLES[name].capitalize()}: {MEASURES[name]}.")

    def _on_cell_clicked(self, row: int, col: int) -> None:
        if self.timeline is None:
            return
        H = self.timeline.values[SCORES[0]].shape[2]
        self.sig_cell_clicked.emit(row // H, row % H, self.timeline.steps[col])


class HeadTimelinePanel(HeadTimelineView):
    """The view kept up to date for the session's open run while it is seen (computed in the analysis
    process; nothing is asked while it is hidden, and what was missed is asked when it is seen again)."""

    def __init__(self, session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self._job = AnalysisJob(self, follows=session)
        self._job.sig_done.connect(self._on_done)
        self._job.sig_failed.connect(lambda _tag, message: self.note.setText(message))
        self._stale = True          # the run changed since the last answer asked for
        self._last_ask = -1e9       # time.monotonic() of the last ask
        self._ask_cost = 0.0        # seconds the last answer took to come
        self._later = QTimer(self, singleShot=True)
        self._later.timeout.connect(self.refresh)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Score the steps saved since the last look (earlier ones are cached)")
        self.refresh_button.clicked.connect(self.refresh)
        self.top.addWidget(self.refresh_button)
        session.sig_run_opened.connect(self._on_run_opened)
        session.sig_training_state_changed.connect(self._on_training_state_changed)
        session.sig_step_reported.connect(self._on_step_reported)
        self.sig_cell_clicked.connect(session.show_head_at_step)
        self._on_run_opened(session.run)

    def refresh(self) -> None:
        """Ask for the open run's timeline now if seen; else remember to when seen."""
        self._later.stop()
        run = self.session.run
        if run is None:
            self.timeline, self._stale = None, False
            self._render()
            self.note.setText("Open or train a run: its heads are scored at every saved step.")
            return
        if not self.seen():
            self._stale = True
            return
        self._stale, self._last_ask = False, time.monotonic()
        if self.timeline is None:
            self.note.setText("Scoring heads at every saved step…")
        self._job.ask(q.HeadTimeline(str(run.path)), tag=str(run.path))

    def _on_done(self, tag: str, timeline) -> None:
        run = self.session.run
        if run is None or tag != str(run.path):  # an answer for a run since closed is dropped
            return
        if timeline.steps:
            self.set_timeline(timeline)
        if timeline.scoring is not None:  # a slice of the scoring (a large model): ask for the next
            self.note.setText(str(timeline.scoring))
            if self.seen():
                self._job.ask(q.HeadTimeline(str(run.path)), tag=str(run.path))
            else:
                self._stale = True
            return
        self._ask_cost = time.monotonic() - self._last_ask

    def _on_run_opened(self, _run) -> None:
        self.timeline = None
        self.refresh()

    def _on_training_state_changed(self, state: str) -> None:
        if state in ("paused", "stopped", "finished"):
            self.refresh()

    def _on_step_reported(self, report) -> None:
        if not report.snapshot or self.session.run is None:
            return
        if not self.seen():
            self._stale = True
            return
        interval = max(SNAPSHOT_REFRESH_S, REFRESH_COST_FACTOR * self._ask_cost)
        wait = interval - (time.monotonic() - self._last_ask)
        if wait <= 0:
            self.refresh()
        elif not self._later.isActive():
            self._later.start(int(wait * 1000) + 1)  # the newest steps then, not the ones of this moment

    def seen_changed(self, seen: bool) -> None:
        if seen and self._stale:
            self.refresh()
        elif not seen:
            self._stale = self._stale or self._later.isActive()
            self._later.stop()
