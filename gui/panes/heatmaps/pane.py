"""The Heatmaps pane (docs/design.md): attention, masks and positional encodings for a prompt, live while
training and for any saved step of a run.

Before any run is open it shows the builder's draft at initialisation, the weights the first step of
training starts from (engine/analysis/draft.py), so the pane is never an empty space beside the builder.

The pane draws its view model (engine/views/heatmaps.py), which says what it needs and holds what it was
answered; the app's asker (gui/asker.py) asks the analysis process. Its controls are bound to the view model
(the tab, the prompt, β, k, the diff's other step) and to the workspace's selection (the layer, the head and the
shared timeline's step, which the Weight pane moves too) by gui/binding.py. While it is seen (visible, on its
dock's chosen tab) it asks the training worker for a weights copy every N steps (`Session.want_weights`), and
hands the view the newest copy at most MAX_REFRESH_HZ times a second; choosing a layer or head re-slices what
is there. The GUI thread only hands finished arrays to the views.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QSpinBox, QTabWidget, QVBoxLayout, QWidget

from engine.errors import UserError
from engine.views.heatmaps import DEFAULT_PROMPT, TABS, HeatmapsView

from ... import settings
from ...binding import bind, listen
from ...session import Session
from ...widgets.attention_lines import AttentionLinesWidget
from ...widgets.heatmap import EXPORT_FILTERS, HeatmapWidget
from ...widgets.seen import SeenWidget
from ...widgets.timeline import Timeline
from .attention import AttentionView
from .diff import DiffView
from .masks import MasksView
from .positional import PositionalView

__all__ = ["DEFAULT_PROMPT", "HeatmapsPane", "TABS"]

# While training runs, however small N is, the attention grid refreshes at most MAX_REFRESH_HZ times a
# second and everything else (the chosen head's views, the table, the masks and positional tabs) at most
# DETAIL_HZ: CPU spent here is taken from training, and a small model's training loop is Python that waits
# for every bit of Python the GUI runs. Measured on 2 cores (benchmarks/ui_latency.py, tiny at ~40 steps a
# second): the GUI thread busy 11.5% of the time with the grid at 12 Hz and details at 2, 8.9% at 4 and 1.
MAX_REFRESH_HZ = 4
DETAIL_HZ = 1


class HeatmapsPane(SeenWidget):
    title = "Heatmaps"
    object_name = "pane_heatmaps"

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.view = HeatmapsView()
        self.view.seen = False
        self._drawn = None   # the (question, answer) drawn on the current tab
        self._last_live_step: int | None = None
        self._last_live_time = self._last_detail_time = 0.0
        self._deferred = QTimer(self, singleShot=True)
        self._deferred.timeout.connect(self._hand_live)
        self._build()
        self._connect()
        self._on_run_replaced(session.open_run)

    # ---- layout ----------------------------------------------------------------------------

    def _build(self) -> None:
        self.prompt = QLineEdit()
        self.prompt.setToolTip("The text whose attention is shown (cut to the context length); Enter applies")
        self.timeline = Timeline()
        self.timeline.play_button.setToolTip("Play the heatmaps over training (Space)")
        self.timeline.follow_box.setToolTip("Show the weights training just published, or the run's last "
                                            "saved step")
        self.refresh_every = QSpinBox()
        self.refresh_every.setRange(1, 10_000)
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
        chosen = self._chosen_head
        self.attention, self.masks, self.positional = AttentionView(chosen), MasksView(chosen), PositionalView()
        self.diff = DiffView(chosen)
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
        s, v, ws = self.session, self.view, self.session.workspace
        self._fit_to_model()
        bind(self.prompt, v, "prompt")
        bind(self.refresh_every, v, "refresh_every")
        bind(self.tabs, v, "tab", values=TABS)
        bind(self.masks.band, v, "band")
        bind(self.positional.shift, v, "shift")
        bind(self.diff.other, v, "other")
        bind(self.layer, ws, "layer")      # the selection's, shared with every pane that shows a head
        bind(self.head, ws, "head")
        bind(self.timeline, ws, "step")    # the one timeline the Weight pane shares
        v.changed.connect(self._on_view_changed)
        listen(self, ws.sig_selection_changed, self._on_selection_changed)
        s.sig_weights_ready.connect(self._on_weights_ready)
        s.sig_run_replaced.connect(self._on_run_replaced)
        s.sig_run_attached.connect(self._on_run_attached)
        s.sig_model_changed.connect(lambda _model: self._fit_to_model())
        s.sig_config_changed.connect(lambda _cfg: self._draw())
        s.sig_config_problems_changed.connect(lambda _problems: self._draw())
        s.sig_training_state_changed.connect(self._on_training_state_changed)
        s.sig_head_at_step.connect(self.show_head_at_step)
        s.sig_step_reported.connect(self._on_step_reported)
        self.attention.sig_head_chosen.connect(lambda layer, head: ws.select(layer=layer, head=head))
        s.asker.watch(v, self)

    # ---- drawing ---------------------------------------------------------------------------

    def _on_view_changed(self, name: str) -> None:
        if name == "refresh_every":
            if self.seen():
                self.session.want_weights(self.object_name, self.view.refresh_every)
        elif name == "prompt":
            run = self.session.run
            if run is not None:  # remembered with the run, for the next time it is opened
                settings.set_run_value(run.path, "heatmaps/prompt", self.view.prompt)
        if name in ("results", "tab", "failures", "live", "prompt", "band", "shift", "other"):
            self._draw()

    def _draw(self) -> None:
        """Show the current tab's answer (the views keep the chosen layer and head), or say why there is none."""
        v, ws = self.view, self.session.workspace
        shown, question = v.shown(ws), v.question(ws)
        failure = v.failures.get(question) if question is not None else None
        if shown is None:  # hidden before the status line shows, which moved and resized every view in them first
            self.tabs.setVisible(False)
        if failure is not None:
            self._say(f"<span style='color:#e8590c'>{failure}</span>")
        else:
            self._say(self._note(*shown) if shown is not None else self._why_nothing())
        self.tabs.setVisible(shown is not None)
        if shown is None or shown is self._drawn:
            return
        self._drawn = shown
        result = shown[1]
        if v.tab == "attention":
            now = time.monotonic()
            details = not self._running() or now - self._last_detail_time >= 1 / DETAIL_HZ
            self._last_detail_time = now if details else self._last_detail_time
            self.attention.show_result(result, details)
        else:
            self.views[v.tab].show_result(result)

    def _why_nothing(self) -> str:
        v, ws = self.view, self.session.workspace
        if v.tab == "diff" and (v.source(ws, saved=True) is None or v.other is None):
            return "The head diff compares two saved steps of a run: open or train one."
        if v.question(ws) is None:
            fix = " (the draft's problems are listed in the Architecture pane)" if ws.draft.problems else ""
            return f"Press Train or Step, or open a run, to see attention, masks and positions{fix}."
        source = v.source(ws, saved=v.tab == "diff")
        return f"Computing the {v.tab} at step {source.step}…"

    def _note(self, question, result) -> str:
        note = getattr(result, "note", "")  # a prompt cut to what its attention may take, else nothing
        if type(getattr(question, "source", None)).__name__ == "Draft":
            cfg = self.session.config
            note = (f"The draft “{cfg.name}” before any training: its weights at initialisation (seed "
                    f"{cfg.train.seed}), step 0 of the run Train starts. Press Train to watch them change. "
                    f"{note}").strip()
        return note

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def _running(self) -> bool:
        return self.session.training_state == "running"

    def _run_folder(self) -> str:
        return str(self.session.run.path) if self.session.run is not None else ""

    def export_caption(self) -> str:
        run, shown = self.session.run, self.view.shown(self.session.workspace)
        result = shown[1] if shown is not None else None
        step = getattr(result, "step", None)
        other = f" − step {result.other_step}" if hasattr(result, "other_step") else ""
        draft = self.session.open_run is None
        parts = (f"run {run.path.name}" if run is not None else f"draft {self.session.config.name}" if draft else "",
                 "" if step is None else "at initialisation" if draft else f"step {step}{other}",
                 f"prompt “{self.view.prompt}”" if self.view.tab != "positional" else "")
        return " · ".join(p for p in parts if p)

    def export_job(self):
        """File → Export…: the main view of the current tab (filters, suggested name, fn(path) -> Path)."""
        tab = self.view.tab
        view = {"attention": self.attention.stack.currentWidget(), "masks": self.masks.attention[0],
                "positional": self.positional.matrix, "diff": self.diff.map}[tab]
        if self.view.shown(self.session.workspace) is None:
            return None
        return EXPORT_FILTERS, f"{tab}.png", view.export_job()

    # ---- handlers --------------------------------------------------------------------------

    def _on_run_replaced(self, open_run) -> None:
        """Another run is open (its view forgot the previous one): its prompt, its steps, its model's heads."""
        run = None if open_run is None else open_run.run
        prompt = self.view.prompt
        if run is not None:
            try:
                prompt = run.probe().prompt or prompt
            except UserError:  # a missing probe.json keeps the current prompt; the run lists it in warnings
                pass
            prompt = settings.run_value(run.path, "heatmaps/prompt") or prompt
        self._last_live_step, self._drawn = None, None
        self.view.prompt = prompt
        self._fit_to_model()
        self._list_steps()
        self._draw()

    def _on_run_attached(self, run) -> None:
        """The run Train started has its folder: the prompt shown stays (issue 40: it changed silently to the
        run's probe prompt) and is remembered with the run, so the run opened again shows the same."""
        self._list_steps()
        if run is not None:
            settings.set_run_value(run.path, "heatmaps/prompt", self.view.prompt)

    def _fit_to_model(self) -> None:
        model = self.session.model
        self.layer.setMaximum(model.n_layer - 1)
        self.head.setMaximum(model.n_head - 1)
        self.masks.set_context(model.n_ctx)

    def _chosen_head(self) -> tuple[int, int]:
        """The layer and head the tabs show: the workspace's selection, read each time they draw (another run's
        model fits it without a selection event, so a copy set by those events stayed on a head it lacks)."""
        selection = self.session.workspace.selection
        return selection.layer, selection.head

    def _on_selection_changed(self, selection, changed: frozenset) -> None:
        if changed & {"layer", "head"}:
            for view in (self.attention, self.masks, self.diff):
                view.show_chosen()
        if "step" in changed and selection.step is None:
            self._hand_live()  # following again: the newest published weights, if training published any

    def _on_weights_ready(self, step: int, _weights) -> None:
        """Hand the view the newest copy, at most every `refresh_every` steps and MAX_REFRESH_HZ (DETAIL_HZ off
        the attention tab) times a second while training runs."""
        if not self.seen() or self.session.browse_step is not None:
            return
        last, now = self._last_live_step, time.monotonic()
        if self._running() and last is not None and 0 <= step - last:
            if step - last < self.view.refresh_every:
                return
            hz = MAX_REFRESH_HZ if self.view.tab == "attention" else DETAIL_HZ
            wait = 1 / hz - (now - self._last_live_time)
            if wait > 0:  # too soon: show the newest weights when the time comes, not the next step's
                if not self._deferred.isActive():
                    self._deferred.start(int(wait * 1000) + 1)
                return
        self._hand_live()

    def _hand_live(self) -> None:
        live = self.session.workspace.live
        if not self.seen() or self.session.browse_step is not None or live is None:
            return
        self._last_live_step, self._last_live_time = live.step, time.monotonic()
        self.view.live = live

    def _on_training_state_changed(self, state: str) -> None:
        self._list_steps()
        if state != "running":
            self._hand_live()  # training came to rest: show exactly the weights it rests on

    def _list_steps(self) -> None:
        """The run's saved steps onto the timeline (a directory listing; a live run keeps adding them)."""
        run = self.session.open_run
        steps = run.saved_steps() if run is not None else []
        self.timeline.set_steps(steps)
        self.diff.set_steps(steps)
        self.view.other = self.diff.other_step()

    def _on_step_reported(self, report) -> None:
        if (report.snapshot or report.checkpoint) and self.seen():
            self._list_steps()

    def show_head_at_step(self, layer: int, head: int, step: int) -> None:
        """Browse the saved `step` with (layer, head) chosen: the head timeline's click (the Weight pane's
        timeline moves there too), on the Attention tab: the head's attention is what the click asks for,
        whichever tab was last open."""
        self._list_steps()
        self.view.tab = "attention"
        self.session.workspace.select(layer=layer, head=head, step=step)

    # ---- ask for weights only while someone can see them -------------------------------------

    def seen_changed(self, seen: bool) -> None:
        self.session.want_weights(self.object_name, self.view.refresh_every if seen else 0)
        self.view.seen = seen
        if seen:
            self._list_steps()
            self._hand_live()
