"""The Heatmaps pane (docs/design.md): attention, masks and positional encodings for a prompt, live while
training and for any saved step of a run.

Before any run is open it shows the builder's draft at initialisation, the weights the first step of
training starts from (engine/analysis/draft.py), so the pane is never an empty space beside the builder.

The pane binds to the Session in `_connect` and keeps its view state in `HeatmapsState`. Its timeline scrubs
and plays over the run's saved steps and is the Weight pane's too: the step browsed is `Session.browse_step`
(None: the newest weights), which either pane moves and both follow. While it is
seen (visible, on its dock's chosen tab) it asks the training worker for a weights copy every N steps
(`Session.want_weights`); each copy, or a browsed step of the run, becomes a `Request` that
the analysis process answers (gui.analysis.AnalysisJob: one at a time, only the newest waiting, so
training never waits for the pane), at most MAX_REFRESH_HZ times a second. The GUI thread only hands
finished arrays to the views. Choosing a layer or head re-slices what is there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QLineEdit, QSpinBox, QTabWidget, QVBoxLayout,
                               QWidget)

from engine.analysis.draft import draft_of
from engine.errors import UserError

from ... import settings
from ...jobs import AnalysisJob
from ...session import Session
from ...widgets.attention_lines import AttentionLinesWidget
from ...widgets.heatmap import EXPORT_FILTERS, HeatmapWidget
from ...widgets.seen import SeenWidget
from ...widgets.timeline import Timeline
from .attention import AttentionView
from .diff import DiffView
from .masks import MasksView
from .positional import PositionalView
from .requests import TABS, Request, Source

DEFAULT_PROMPT = "Before we proceed any further, hear me speak."
# While training runs, however small N is, the attention grid refreshes at most MAX_REFRESH_HZ times a
# second and everything else (the chosen head's views, the table, the masks and positional tabs) at most
# DETAIL_HZ: CPU spent here is taken from training, and a small model's training loop is Python that waits
# for every bit of Python the GUI runs. Measured on 2 cores (benchmarks/ui_latency.py, tiny at ~40 steps a
# second): the GUI thread busy 11.5% of the time with the grid at 12 Hz and details at 2, 8.9% at 4 and 1.
MAX_REFRESH_HZ = 4
DETAIL_HZ = 1


@dataclass
class HeatmapsState:
    prompt: str = DEFAULT_PROMPT
    layer: int = 0
    head: int = 0
    step: int | None = None   # a saved step of the run being browsed; None follows the newest weights
    refresh_every: int = 10   # steps between refreshes while training
    band: int = 4             # β on the masks tab
    shift: int = 1            # k on the positional tab
    tab: str = "attention"


class HeatmapsPane(SeenWidget):
    title = "Heatmaps"
    object_name = "pane_heatmaps"

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.state = HeatmapsState()
        self._job = AnalysisJob(self, follows=session)
        self._results: dict[str, tuple[tuple, object]] = {}  # tab -> (request key, result)
        self._asked: tuple | None = None                       # key of the newest request submitted
        self._last_live_step: int | None = None
        self._draft = None  # engine.analysis.draft.draft_of the builder's draft, while it is what is shown
        self._last_live_time = self._last_detail_time = 0.0
        self._deferred = QTimer(self, singleShot=True)
        self._deferred.timeout.connect(self._refresh_live)
        self._build()
        self._connect()
        self._on_run_opened(session.run)

    # ---- layout ----------------------------------------------------------------------------

    def _build(self) -> None:
        self.prompt = QLineEdit(self.state.prompt)
        self.prompt.setToolTip("The text whose attention is shown (cut to the context length); Enter applies")
        self.timeline = Timeline()
        self.timeline.play_button.setToolTip("Play the heatmaps over training (Space)")
        self.timeline.follow_box.setToolTip("Show the weights training just published, or the run's last "
                                            "saved step")
        self.refresh_every = QSpinBox()
        self.refresh_every.setRange(1, 10_000)
        self.refresh_every.setValue(self.state.refresh_every)
        self.refresh_every.setSuffix(" steps")
        self.refresh_every.setToolTip(f"While training, recompute the heatmaps every N steps (the grid at most "
                                      f"{MAX_REFRESH_HZ} times a second, the rest once a second)")
        self.layer = QSpinBox()
        self.head = QSpinBox()
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.status.hide()
        prompt_row = QHBoxLayout()
        prompt_row.setContentsMargins(0, 0, 0, 0)
        prompt_row.addWidget(QLabel("Prompt:"))
        prompt_row.addWidget(self.prompt, 1)
        controls = QHBoxLayout()
        controls.setContentsMargins(0, 0, 0, 0)
        for widget in (QLabel("Refresh every"), self.refresh_every,
                       QLabel("Layer:"), self.layer, QLabel("Head:"), self.head):
            controls.addWidget(widget)
        controls.addStretch(1)
        self.attention, self.masks, self.positional = AttentionView(), MasksView(), PositionalView()
        self.diff = DiffView()
        self.views = dict(zip(TABS, (self.attention, self.masks, self.positional, self.diff)))
        for view in (v for tab in self.views.values() for v in tab.findChildren(HeatmapWidget)
                     + tab.findChildren(AttentionLinesWidget)):
            # every exported figure names run, step and prompt, and is first offered the run's folder
            view.set_caption_source(self.export_caption, self._run_folder)
        self.tabs = QTabWidget()
        for view, label in zip(self.views.values(), ("Attention", "Masks", "Positional encodings", "Head diff")):
            self.tabs.addTab(view, label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(prompt_row)
        layout.addLayout(controls)
        layout.addWidget(self.timeline)
        layout.addWidget(self.status)
        layout.addWidget(self.tabs, 1)
        layout.addStretch(0)  # takes the room only while the tabs are hidden: the rows stay on top
        self.tabs.hide()  # until there is something to show; the status line says how to get there

    def _connect(self) -> None:
        s = self.session
        s.sig_weights_ready.connect(self._on_weights_ready)
        s.sig_run_opened.connect(self._on_run_opened)
        s.sig_model_changed.connect(self._on_model_changed)
        s.sig_config_changed.connect(self._on_draft_changed)
        s.sig_config_problems_changed.connect(self._on_draft_changed)
        s.sig_training_state_changed.connect(self._on_training_state_changed)
        s.sig_head_at_step.connect(self.show_head_at_step)
        self._job.sig_done.connect(self._on_result)
        self._job.sig_failed.connect(self._on_failed)
        self.prompt.editingFinished.connect(self._on_prompt_edited)
        self.timeline.sig_step_changed.connect(self._on_step_shown)
        self.timeline.sig_step_chosen.connect(s.set_browse_step)
        # ticking "follow newest" at the newest saved step moves nothing, yet means the live weights
        self.timeline.sig_follow_changed.connect(lambda _on: self._on_step_shown(self.timeline.step()))
        s.sig_browse_step_changed.connect(self.timeline.show)
        s.sig_step_reported.connect(self._on_step_reported)
        self.refresh_every.valueChanged.connect(self._on_refresh_every_changed)
        self.layer.valueChanged.connect(self._on_head_chosen)
        self.head.valueChanged.connect(self._on_head_chosen)
        self.attention.sig_head_chosen.connect(self._choose_head)
        self.masks.sig_band_changed.connect(self._on_band_changed)
        self.positional.sig_shift_changed.connect(self._on_shift_changed)
        self.diff.sig_other_changed.connect(lambda _step: self.seen() and self.refresh())
        self.tabs.currentChanged.connect(self._on_tab_changed)

    # ---- what to show ----------------------------------------------------------------------

    def source(self, saved: bool = False) -> Source | None:
        """The newest published weights (unless `saved`), or a saved step of the open run, or with no run
        open the builder's draft at initialisation (unless `saved`, or while it has problems); None when
        there are none."""
        s = self.session
        if self.state.step is None and s.weights is not None and not saved:
            return Source(s.weights_step, s.model, weights=s.weights)
        if s.open_run is None:
            return None if saved or s.config_problems else Source(0, s.model, draft=draft_of(s.config))
        if s.run is None:
            return None
        steps = s.run.saved_steps()
        step = self.state.step if self.state.step is not None else (steps[-1] if steps else None)
        return None if step is None else Source(step, s.model, run=s.run)

    def refresh(self) -> None:
        """Ask for the current tab's view of the current weights unless it is shown or already asked."""
        st = self.state
        source = self.source(saved=st.tab == "diff")
        tokenizer = self.session.tokenizer or getattr(self.session.run, "tokenizer", None)
        if st.tab == "diff" and (source is None or self.diff.other_step() is None):
            self._say("The head diff compares two saved steps of a run: open or train one.")
            return
        if source is None or (tokenizer is None and source.draft is None):
            fix = " (the draft's problems are listed in the Architecture pane)" if self.session.config_problems else ""
            self._say(f"Press Train or Step, or open a run, to see attention, masks and positions{fix}.")
            return
        self._draft = source.draft
        request = Request(st.tab, source, tokenizer, st.prompt, st.band, st.shift, self.diff.other_step())
        shown = self._results.get(st.tab, (None, None))[0]
        if request.key in (shown, self._asked):
            return
        self._asked = request.key
        if st.tab not in self._results:  # what was said before (no run yet) no longer holds
            self._say(f"Computing the {st.tab} at step {source.step}…")
        self._job.ask(request.question(), tag=request.key)

    def _run_folder(self) -> str:
        return str(self.session.run.path) if self.session.run is not None else ""

    def export_caption(self) -> str:
        run, result = self.session.run, self._results.get(self.state.tab, (None, None))[1]
        step = getattr(result, "step", None)
        other = f" − step {result.other_step}" if hasattr(result, "other_step") else ""
        draft = self.session.open_run is None
        parts = (f"run {run.path.name}" if run is not None else f"draft {self.session.config.name}" if draft else "",
                 "" if step is None else "at initialisation" if draft else f"step {step}{other}",
                 f"prompt “{self.state.prompt}”" if self.state.tab != "positional" else "")
        return " · ".join(p for p in parts if p)

    def export_job(self):
        """File → Export…: the main view of the current tab (filters, suggested name, fn(path) -> Path)."""
        view = {"attention": self.attention.stack.currentWidget(), "masks": self.masks.attention[0],
                "positional": self.positional.matrix, "diff": self.diff.map}[self.state.tab]
        if self.state.tab not in self._results:
            return None
        return EXPORT_FILTERS, f"{self.state.tab}.png", view.export_job()

    # ---- handlers --------------------------------------------------------------------------

    def _on_weights_ready(self, step: int, _weights) -> None:
        if not self.seen() or self.state.step is not None:
            return
        last, now = self._last_live_step, time.monotonic()
        if self._running() and last is not None and 0 <= step - last:
            if step - last < self.state.refresh_every:
                return
            hz = MAX_REFRESH_HZ if self.state.tab == "attention" else DETAIL_HZ
            wait = 1 / hz - (now - self._last_live_time)
            if wait > 0:  # too soon: show the newest weights when the time comes, not the next step's
                if not self._deferred.isActive():
                    self._deferred.start(int(wait * 1000) + 1)
                return
        self._refresh_live()

    def _refresh_live(self) -> None:
        if not self.seen() or self.state.step is not None:
            return
        self._last_live_step, self._last_live_time = self.session.weights_step, time.monotonic()
        self.refresh()

    def _on_result(self, key: tuple, result) -> None:
        tab, (kind, _, what) = key[0], key[1]  # Request.key, Source.key
        if kind == "draft" and what != self._draft:
            return  # of a draft edited since (a run opened instead drops it before it comes: the job follows)
        self._results[tab] = (key, result)
        if key == self._asked:
            self._asked = None
        note = getattr(result, "note", "")  # a prompt cut to what its attention may take, else nothing
        if kind == "draft":
            note = (f"The draft “{self.session.config.name}” before any training: its weights at "
                    f"initialisation (seed {self.session.config.train.seed}), step 0 of the run Train starts. "
                    f"Press Train to watch them change. {note}").strip()
        self._say(note)
        self.tabs.show()
        if tab != self.state.tab:
            return
        if tab == "attention":
            now = time.monotonic()
            details = not self._running() or now - self._last_detail_time >= 1 / DETAIL_HZ
            self._last_detail_time = now if details else self._last_detail_time
            self.attention.show_result(result, details)  # the views keep the chosen layer and head
            return
        self.views[tab].show_result(result)

    def _running(self) -> bool:
        return self.session.training_state == "running"

    def _on_failed(self, key: tuple, message: str) -> None:
        if key == self._asked:
            self._asked = None
        self._say(f"<span style='color:#e8590c'>{message}</span>")

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def _on_run_opened(self, run) -> None:
        """Another run is open (or the new one has its folder now): nothing shown stays, nothing asked
        of the previous one arrives (the job follows the session)."""
        self._results.clear()
        self._asked = None
        self.tabs.hide()
        self._last_live_step = None
        if run is not None:
            try:
                self.state.prompt = run.probe().prompt or self.state.prompt
            except UserError:  # a missing probe.json keeps the current prompt; the run lists it in warnings
                pass
            self.state.prompt = settings.run_value(run.path, "heatmaps/prompt") or self.state.prompt
            self.prompt.setText(self.state.prompt)
        self._list_steps()
        self._on_model_changed(self.session.model)
        if self.seen():
            self.refresh()

    def _on_draft_changed(self, _value) -> None:
        """The builder's draft changed, shown while no run is open: what is shown of the previous draft goes
        unless only what does not decide the weights changed (a learning rate, the name)."""
        s = self.session
        if s.open_run is not None:
            return
        draft = None if s.config_problems else draft_of(s.config)
        if draft != self._draft:
            self._draft = draft
            self._results.clear()
            self._asked = None
            self.tabs.hide()
            if self.seen():
                self.refresh()

    def _on_model_changed(self, model) -> None:
        self.layer.setMaximum(model.n_layer - 1)
        self.head.setMaximum(model.n_head - 1)
        self.masks.set_context(model.n_ctx)

    def _on_training_state_changed(self, state: str) -> None:
        self._list_steps()
        if state != "running" and self.seen():
            self.refresh()  # training came to rest: show exactly the weights it rests on

    def _list_steps(self) -> None:
        """The run's saved steps onto the timeline (a directory listing; a live run keeps adding them)."""
        run = self.session.run
        steps = run.saved_steps() if run is not None else []
        self.timeline.set_steps(steps)
        self.diff.set_steps(steps)

    def _on_step_reported(self, report) -> None:
        if (report.snapshot or report.checkpoint) and self.seen():
            self._list_steps()

    def show_head_at_step(self, layer: int, head: int, step: int) -> None:
        """Browse the saved `step` with (layer, head) chosen: the head timeline's click (the Weight pane's
        timeline moves there too), on the Attention tab: the head's attention is what the click asks for,
        whichever tab was last open."""
        self._list_steps()
        self.tabs.setCurrentWidget(self.attention)
        self._choose_head(layer, head)
        self.session.set_browse_step(step)

    def _on_step_shown(self, step: int) -> None:
        """The timeline moved (scrubbed, played, told by the Weight pane): following it is showing the
        newest weights; each move asks the analysis process, whose job keeps only the newest request."""
        self.state.step = None if self.timeline.following else step
        if self.state.step is None and self._running() and self.session.weights is not None:
            return  # following live weights: they refresh at their own rate (_on_weights_ready)
        if self.seen():  # the Weight pane may play the shared timeline while this pane is hidden
            self.refresh()

    def _on_prompt_edited(self) -> None:
        text = self.prompt.text()
        if text != self.state.prompt:
            self.state.prompt = text
            if self.session.run is not None:  # remembered with the run, for the next time it is opened
                settings.set_run_value(self.session.run.path, "heatmaps/prompt", text)
            self.refresh()

    def _on_refresh_every_changed(self, every: int) -> None:
        self.state.refresh_every = every
        if self.seen():
            self.session.want_weights(self.object_name, every)

    def _choose_head(self, layer: int, head: int) -> None:
        self.layer.setValue(layer)
        self.head.setValue(head)

    def _on_head_chosen(self, _value: int) -> None:
        self.state.layer, self.state.head = self.layer.value(), self.head.value()
        self.attention.select(self.state.layer, self.state.head)
        self.masks.select(self.state.layer, self.state.head)
        self.diff.select(self.state.layer, self.state.head)

    def _on_band_changed(self, band: int) -> None:
        self.state.band = band
        self.refresh()

    def _on_shift_changed(self, shift: int) -> None:
        self.state.shift = shift
        self.refresh()

    def _on_tab_changed(self, index: int) -> None:
        self.state.tab = TABS[index]
        if self.state.tab in self._results:
            self._on_result(*self._results[self.state.tab])
        self.refresh()

    # ---- ask for weights only while someone can see them -------------------------------------

    def seen_changed(self, seen: bool) -> None:
        self.session.want_weights(self.object_name, self.state.refresh_every if seen else 0)
        if seen:
            self._list_steps()
            self.refresh()
