"""The heads × steps timeline: one row per attention head, one column per saved step, colour the score
chosen in a selector, so a head forming and the loss curve bending above it are seen at the same step.

`HeadTimelineChart` renders an `engine.analysis.head_timeline.HeadTimeline` through the app's one heatmap
widget (one pyqtgraph image) and says which roles formed when; clicking a cell emits (layer, head, step).
`HeadTimelinePanel` shows its view model (engine/views/head_timeline.py), which the app's asker keeps filled
for the open run while the panel is seen: the timeline is scored in the analysis process's long lane a slice at
a time (its per-step cache makes a refresh cost only the new steps), with its progress and the time left shown
below. The panel raises the view's `look` when training comes to rest and, while training, when new snapshots
are saved, at an interval of a few times what the last look took (a timeline is costly: every score of every
head at each new step). Scores and roles are defined in engine/analysis/heads.py and head_roles.py.
"""

from __future__ import annotations

import time

import numpy as np

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from engine.analysis.head_export import KINDS
from engine.analysis.head_roles import ATTENTION_ROLES, ROLE_NAMES, THRESHOLDS, role_rows
from engine.analysis.heads import MEASURES, SCORES
from engine.views.head_timeline import HeadTimelineView

from ...binding import bind
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
ROLES = "roles"  # the view of every head that took an attention role, each row in its own role's score
ROLES_TITLE = "roles, as they formed"
# what an induction head is and how it is scored, in one plain sentence under the chart (issue 40: alone, a
# student saw "a loss going down and purple squares")
INDUCTION_SENTENCE = ("An induction head completes repeats: after … A B … A it attends from the second A to the "
                      "B, and its score is that attention on random tokens said twice.")

TITLES = {"previous_token": "previous-token", "induction": "induction (prefix matching)",
          "duplicate": "duplicate-token", "first_token": "attention to the first token", "distance":
          "mean distance attended", "entropy": "entropy (nats)", "copying": "copying (OV eigenvalues)",
          "ablation": "loss increase when mean-ablated", "dla": "direct logit attribution"}


class HeadTimelineChart(SeenWidget):
    sig_cell_clicked = Signal(int, int, int)  # layer, head, step
    sig_roles_changed = Signal(list)          # the attention roles formed (head_roles.Role), for the loss curve

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.timeline = None
        self.score = QComboBox()
        # its longest name ("induction (prefix matching)") must not set the panel's width: a narrow control
        # column has no room to spare
        self.score.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.score.setMinimumContentsLength(10)
        self.score.setObjectName("head_timeline_score")
        self.score.addItem(ROLES_TITLE, ROLES)
        self.score.setItemData(0, "Every head that took a role of attention (previous-token, induction, "
                               "duplicate-token, first-token), in the order they formed, each in the score of "
                               "its role; a role no head has taken yet shows its best head, marked ?",
                               Qt.ItemDataRole.ToolTipRole)
        for i, name in enumerate(SCORES, start=1):
            self.score.addItem(TITLES[name], name)
            self.score.setItemData(i, f"{TITLES[name].capitalize()}: {MEASURES[name]}.", Qt.ItemDataRole.ToolTipRole)
        self.score.setCurrentIndex(0)  # both heads of the lesson in one chart, without choosing a score
        self.score.setToolTip("Which score colours the cells; a role's threshold is in the note below")
        self.heatmap = HeatmapWidget(self, title="heads × saved steps (click a cell)", aspect_locked=False)
        self.heatmap.hide()  # until there is a timeline: the note says how to get one
        self.note = QLabel("")
        self.note.setWordWrap(True)
        self.note.setObjectName("head_timeline_note")
        self.lesson = QLabel(INDUCTION_SENTENCE)
        self.lesson.setWordWrap(True)
        self.lesson.setObjectName("head_timeline_lesson")
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
        layout.addWidget(self.lesson)
        # the room the chart will need, kept before it shows: a plot of PLOT_MIN under its title, with its
        # read-out; the note and the sentence below take the lines their text needs at the width given
        # (two lines reserved cut the roles of the lesson's four heads); what a score measures is in tooltips
        line = self.note.fontMetrics().lineSpacing()
        self.heatmap.setMinimumHeight(PLOT_MIN + 2 * line + 12)
        self.score.currentIndexChanged.connect(self._render)
        self.heatmap.sig_cell_clicked.connect(self._on_cell_clicked)

    def resizeEvent(self, event) -> None:  # Qt's name
        super().resizeEvent(event)
        self._fit_height()

    def _fit_height(self) -> None:
        """At least the chart's room and every line of the note and the sentence at this width: given two
        lines, the roles of the lesson's four heads were drawn over the chart."""
        width = max(self.width(), 100)
        need = (self.score.sizeHint().height() + self.heatmap.minimumHeight() + self.note.heightForWidth(width)
                + self.lesson.heightForWidth(width) + 3 * self.layout().spacing())
        if self.minimumHeight() != need:
            self.setMinimumHeight(need)

    def chosen(self) -> str:
        return self.score.currentData()

    def set_timeline(self, timeline) -> None:
        self.timeline = timeline
        self._render()

    def rows(self) -> list[tuple[int, int, str]]:
        """The chart's rows: (layer, head, score) — every head in the chosen score, or in the roles view the
        heads that took a role, each in its role's score (engine.analysis.head_roles.role_rows)."""
        name, (L, H) = self.chosen(), self.timeline.values[SCORES[0]].shape[1:]
        if name == ROLES:
            return [(r.layer, r.head, r.score) for r in role_rows(self.timeline.steps, self.timeline.values)]
        return [(layer, head, name) for layer in range(L) for head in range(H)]

    def matrix(self):
        """(rows, steps): row k is rows()[k]'s score over the saved steps."""
        return np.array([self.timeline.values[score][:, layer, head] for layer, head, score in self.rows()])

    def _render(self) -> None:
        self.heatmap.setVisible(self.timeline is not None)
        if self.timeline is None:
            self.heatmap.set_marks([])
            self.sig_roles_changed.emit([])
            return
        name, steps = self.chosen(), self.timeline.steps
        roles = self.timeline.roles()
        rows = self.rows()
        if name == ROLES:
            by_row = role_rows(steps, self.timeline.values)
            labels = [r.label for r in by_row]
            formed = [(k, r) for k, r in enumerate(by_row) if r.formed is not None]
        else:
            labels = [f"L{layer} H{head}" for layer, head, _ in rows]
            index = {(layer, head): k for k, (layer, head, _) in enumerate(rows)}
            formed = [(index[(r.layer, r.head)], r) for r in roles if r.score == name and r.formed is not None]
        # a head's formation is marked on its own cell (row: the head, column: the step): it names its head
        # and covers no label, where a ◆ beside the step's label named no head and overprinted the axis
        marks = [(k, steps.index(r.formed), f"L{r.layer} H{r.head} took the {ROLE_NAMES[r.score]} role at step "
                                            f"{r.formed}") for k, r in formed]
        self.heatmap.set_matrix(self.matrix(), labels, [str(s) for s in steps],
                                KINDS.get(name, "probability"), title=ROLES_TITLE if name == ROLES else TITLES[name],
                                row_title="" if name == ROLES else "head",
                                col_title="step (◆: a head took its role)" if formed else "step",
                                pinned_cols=tuple(sorted({c for _, c, _ in marks})))
        self.heatmap.set_marks(marks)
        self.sig_roles_changed.emit([r for r in roles if r.score in ATTENTION_ROLES and r.formed is not None])
        derived = " The induction probe was derived from the run's seed (older run)." \
            if self.timeline.induction_derived else ""
        if name == ROLES:  # the chart names the roles of attention; the note what else formed, and the rule
            others = [r.label for r in roles if r.score not in ATTENTION_ROLES]
            rule = "A role: its score stays ≥ " + ", ".join(f"{THRESHOLDS[n]} ({ROLE_NAMES[n]})"
                                                            for n in ATTENTION_ROLES)
            self.note.setText((f"Also: {'; '.join(others)}. " if others else "") + rule + "." + derived)
        else:
            found = [r.label for r in roles]
            rule = f"{ROLE_NAMES[name]} when ≥ {THRESHOLDS[name]}" if name in THRESHOLDS else "no role for this score"
            method = f" {self.timeline.ablation}." if name == "ablation" and self.timeline.ablation else ""
            self.note.setText(("Roles: " + "; ".join(found) if found else "No head has a role yet.")
                              + f" ({rule}.){method}{derived}")
        self.note.setToolTip(ROLES_TITLE if name == ROLES else f"{TITLES[name].capitalize()}: {MEASURES[name]}.")
        self._fit_height()

    def _on_cell_clicked(self, row: int, col: int) -> None:
        if self.timeline is None:
            return
        layer, head, _ = self.rows()[row]
        self.sig_cell_clicked.emit(layer, head, self.timeline.steps[col])


class HeadTimelinePanel(HeadTimelineChart):
    """The chart of the open run's timeline, from its view model (nothing is asked while it is hidden, and what
    was missed is asked when it is seen again)."""

    def __init__(self, session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.view = HeadTimelineView(score=self.chosen())
        self.view.seen = False
        self._last_look = time.monotonic()  # of the last look asked (the first: the view's own, now)
        self._look_cost = 0.0       # seconds the last whole answer took to come
        self._later = QTimer(self, singleShot=True)
        self._later.timeout.connect(self.refresh)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Score the steps saved since the last look (earlier ones are cached)")
        self.refresh_button.clicked.connect(self.refresh)
        self.top.addWidget(self.refresh_button)
        bind(self.score, self.view, "score")
        self.view.changed.connect(self._on_view_changed)
        session.sig_run_replaced.connect(self._on_run_replaced)
        session.sig_training_state_changed.connect(self._on_training_state_changed)
        session.sig_step_reported.connect(self._on_step_reported)
        self.sig_cell_clicked.connect(session.show_head_at_step)
        session.asker.watch(self.view, self)
        self._say()

    def refresh(self) -> None:
        """Score the steps saved since the last look (asked while seen)."""
        self._later.stop()
        self._last_look = time.monotonic()
        self.view.look_again()

    def _on_view_changed(self, name: str) -> None:
        if name == "timeline":
            timeline = self.view.timeline
            if timeline is None or timeline.steps or self.timeline is None:
                self.set_timeline(timeline if timeline is None or timeline.steps else None)
            if timeline is not None and timeline.scoring is None and self.view.looked == self.view.look:
                self._look_cost = time.monotonic() - self._last_look
        if name in ("timeline", "progress", "failures", "look"):
            self._say()

    def _say(self) -> None:
        """The note under the chart: the roles when whole, else how far the scoring is and the time left."""
        v = self.view
        if self.session.run is None:
            self.note.setText("Open or train a run: its heads are scored at every saved step.")
        elif v.failures:
            self.note.setText(next(iter(v.failures.values())))
        elif v.timeline is not None and v.timeline.scoring is None:
            self._render()
        else:
            what = str(v.timeline.scoring) if v.timeline is not None else "Scoring heads at every saved step…"
            self.note.setText(what + (f" ({v.progress})" if v.progress is not None else ""))

    def _render(self) -> None:
        super()._render()
        if self.timeline is not None and self.view.timeline is not None and self.view.timeline.scoring is not None:
            self._say()  # the roles so far would read as final: what is left is said instead

    def _on_run_replaced(self, _open_run) -> None:
        self._last_look = time.monotonic()  # the view forgot the previous run's timeline: a look at this one
        self._say()

    def _on_training_state_changed(self, state: str) -> None:
        if state in ("paused", "stopped", "finished"):
            self.refresh()

    def _on_step_reported(self, report) -> None:
        if not report.snapshot or self.session.run is None:
            return
        if not self.seen():
            self.view.look_again()  # asked when seen
            return
        interval = max(SNAPSHOT_REFRESH_S, REFRESH_COST_FACTOR * self._look_cost)
        wait = interval - (time.monotonic() - self._last_look)
        if wait <= 0:
            self.refresh()
        elif not self._later.isActive():
            self._later.start(int(wait * 1000) + 1)  # the newest steps then, not the ones of this moment

    def seen_changed(self, seen: bool) -> None:
        self.view.seen = seen
        if not seen and self._later.isActive():
            self._later.stop()
            self.view.look_again()  # asked when seen again
