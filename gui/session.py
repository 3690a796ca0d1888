"""The Qt face of the app's one model of what is open (engine/workspace): every pane is handed this object,
reads the state through it and hears its changes as Qt signals. The state itself lives in the Qt-free
`Workspace` (`self.workspace`); this class holds none of its own except the requests panes make of each
other, which are actions, not state (train, sample, open a run, export a file, show a message).

Opening, importing or starting a run replaces the open run as ONE event (`sig_run_replaced`): the run, the
builder's config, the model, the selection and the training state change together and no other signal is
emitted for them, so a pane reads all of it afresh in that one handler; the live weights belong to the run they
came from, so none survive it. The window's asker hears the workspace first and has made every view forget the
previous run before any pane hears the event. `sig_run_attached` says a new run's trainer made its folder. Everything carried by a signal is an owned
copy (numpy arrays, CPU tensors cloned between training steps), never a view of tensors the trainer changes.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from engine.configs.config import ExperimentConfig, ModelConfig
from engine.workspace import OpenRun, Workspace

from .asker import Asker


class Session(QObject):
    # the state's events (derived from the Workspace's)
    sig_config_changed = Signal(object)     # ExperimentConfig: the builder's draft changed
    sig_config_problems_changed = Signal(object)  # list[engine.configs.config.Problem] of the builder's draft
    sig_run_replaced = Signal(object)       # engine.workspace.OpenRun, or None: another run is open now, with its
    #                                         config, model, selection and training state (nothing else is said)
    sig_run_attached = Signal(object)       # engine.rundir.runs.Run: the open run's trainer made its folder
    sig_weights_ready = Signal(int, object)  # step, {name: CPU tensor} the open run's trainer published
    sig_weight_selected = Signal(str)       # a weight name (state-dict key, e.g. "blocks.0.W_K")
    sig_browse_step_changed = Signal(object)  # the saved step the timelines browse (None: newest), changed by one
    sig_training_state_changed = Signal(str)  # engine.training.state.TrainingState's value
    sig_model_changed = Signal(object)      # ModelConfig: the current model (see `model`) changed
    sig_step_reported = Signal(object)      # engine.training.trainer.StepReport of the open run's trainer
    sig_weights_wanted_changed = Signal(int)  # steps between weight copies panes ask for; 0 = none
    sig_runs_compared = Signal(object)      # list[Path] of the runs ticked in the browser, overlaid as curves
    # requests panes make (acts, answered by the controller or the window)
    sig_training_requested = Signal(str)    # train | pause | resume | step | stop | save: the controller acts
    sig_sample_requested = Signal(object)   # engine.model.sampling.SampleRequest, answered by sig_sample_ready
    sig_sample_ready = Signal(object, str)  # the request and the generated text
    sig_export_requested = Signal(object)   # gui.exports.ExportRequest, served by the app's one export queue
    sig_message_posted = Signal(str, str)   # level (error | warning | info), text: the window's banner
    sig_status_posted = Signal(str)         # what is under way, in the status bar ("" when it is done)
    sig_open_run_requested = Signal(str)    # a pane asks for a run folder to be opened; the window opens it
    sig_head_at_step = Signal(int, int, int)  # layer, head, saved step: show that head's attention there

    def __init__(self, config: ExperimentConfig | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.workspace = Workspace(config)
        # first to hear the workspace: another run opened is forgotten by every view before any pane hears it
        self.asker = Asker(self.workspace, self)
        self.step: int = 0          # newest step the open run's trainer reported
        self._weights_wanted: dict[str, int] = {}
        self.compared_runs: list = []  # Paths of the runs ticked in the run browser
        self._bind()

    def _bind(self) -> None:
        w = self.workspace
        w.sig_draft_changed.connect(self._on_draft_changed)
        w.sig_run_replaced.connect(self._on_run_replaced)
        w.sig_run_attached.connect(lambda open_run: self.sig_run_attached.emit(open_run.run))
        w.sig_weights_published.connect(lambda live: self.sig_weights_ready.emit(live.step, live.weights))
        w.sig_selection_changed.connect(self._on_selection_changed)
        w.sig_training_changed.connect(lambda state: self.sig_training_state_changed.emit(state.value))
        w.sig_model_changed.connect(self.sig_model_changed.emit)
        self._draft = w.draft

    # ---- the state, read from the workspace ----------------------------------------------------

    @property
    def config(self) -> ExperimentConfig:
        return self.workspace.draft.config

    @property
    def config_problems(self) -> list:
        return list(self.workspace.draft.problems)

    @property
    def open_run(self) -> OpenRun | None:
        return self.workspace.open_run

    @property
    def run(self):
        """engine.rundir.runs.Run of the open run's folder (None: no run, or a new one without its folder yet)."""
        return None if self.open_run is None else self.open_run.run

    @property
    def tokenizer(self):
        return None if self.open_run is None else self.open_run.tokenizer

    @property
    def weights(self) -> dict | None:
        live = self.workspace.live
        return None if live is None else live.weights

    @property
    def weights_step(self) -> int:
        live = self.workspace.live
        return -1 if live is None else live.step

    @property
    def model(self) -> ModelConfig:
        return self.workspace.model

    @property
    def selected_weight(self) -> str | None:
        return self.workspace.selection.weight

    @property
    def browse_step(self) -> int | None:
        return self.workspace.selection.step

    @property
    def training_state(self) -> str:
        return self.workspace.training.value

    # ---- changes ---------------------------------------------------------------------------------

    def set_config(self, config: ExperimentConfig) -> None:
        self.workspace.set_draft(config=config)

    def set_config_problems(self, problems: list) -> None:
        """The builder's draft and what is wrong with it; only a valid draft becomes `config`."""
        self.workspace.set_draft(problems=problems)

    def replace_run(self, open_run: OpenRun | None, config: ExperimentConfig | None = None,
                    training: str | None = None) -> None:
        """Show `open_run` (None: no run) with the builder at `config` and training at `training` when given,
        as one event."""
        self.step = 0
        self.workspace.replace_run(open_run, config, training)

    def set_run(self, run) -> None:
        """Show an opened engine.rundir.runs.Run (None: no run), as the window's controller opens one: one event,
        with the run's config in the builder and training stopped (Train resumes it) or finished (Train starts a
        new run with its config). Its tokenizer goes with it only if it was read already: a run checked in a child
        (`Run(path, checked=True)`, GPT-2's) has it read only where something asks for it, not here."""
        if run is None:
            self.replace_run(None, training="idle")
            return
        steps = run.checkpoint_steps()
        finished = bool(steps) and steps[-1] >= run.config.train.steps
        self.replace_run(OpenRun(run.config, run.tokenizer_if_read, run), config=run.config,
                         training="finished" if finished else "stopped")

    def report_step(self, report) -> None:
        self.step = report.step
        if self.open_run is not None and (report.snapshot or report.checkpoint or report.event is not None):
            self.open_run.steps_changed()  # before the panes hear of it: they list the steps it saved
        self.sig_step_reported.emit(report)

    def publish_weights(self, step: int, weights: dict) -> None:
        """Weights of the open run at `step`, from its trainer."""
        if self.open_run is not None:
            self.open_run.publish(step, weights)

    def select_weight(self, name: str) -> None:
        self.workspace.select(weight=name)
        self.sig_weight_selected.emit(name)  # also when unchanged: a click brings the Weight pane forward

    def set_browse_step(self, step: int | None) -> None:
        """Move the shared timeline to a saved step of the open run (None: follow the newest weights); the
        Heatmaps and Weight panes both follow it and either may move it."""
        self.workspace.select(step=step)

    def set_training_state(self, state: str) -> None:
        self.workspace.set_training(state)

    def _on_draft_changed(self, draft) -> None:
        was, self._draft = self._draft, draft
        if draft.config != was.config:
            self.sig_config_changed.emit(draft.config)
        if draft.problems != was.problems:
            self.sig_config_problems_changed.emit(list(draft.problems))

    def _on_run_replaced(self, open_run: OpenRun | None) -> None:
        self._draft = self.workspace.draft  # a config that came with the run is no edit to announce later
        self.sig_run_replaced.emit(open_run)

    def _on_selection_changed(self, selection, changed: frozenset) -> None:
        if "step" in changed:
            self.sig_browse_step_changed.emit(selection.step)

    # ---- requests panes make of each other -------------------------------------------------------

    def request_training(self, action: str) -> None:
        """Ask whoever runs training (the main window's controller) to train, pause, resume, step, stop
        or save a checkpoint; panes never hold the worker themselves."""
        self.sig_training_requested.emit(action)

    def compare_runs(self, paths: list) -> None:
        self.compared_runs = list(paths)
        self.sig_runs_compared.emit(self.compared_runs)

    def request_open_run(self, path) -> None:
        self.sig_open_run_requested.emit(str(path))

    def request_sample(self, request) -> None:
        self.sig_sample_requested.emit(request)

    def request_export(self, request) -> None:
        """Write a file off the GUI thread, with progress, Cancel and a message (gui.exports.Exports)."""
        self.sig_export_requested.emit(request)

    def post_message(self, text: str, level: str = "error") -> None:
        """Show a message in the window's banner (a user's mistake or a stopped run, never a traceback)."""
        self.sig_message_posted.emit(level, text)

    def post_status(self, text: str) -> None:
        """Say in the status bar what is under way until it is done (`text` ""): a line that comes and goes
        with work in progress, where the banner's row would resize every pane as it shows and again as it fades."""
        self.sig_status_posted.emit(text)

    def show_head_at_step(self, layer: int, head: int, step: int) -> None:
        """Ask the Heatmaps pane to show one head's attention at a saved step (the head timeline's click)."""
        self.workspace.select(layer=layer, head=head)
        self.sig_head_at_step.emit(layer, head, step)

    def want_weights(self, who: str, every: int) -> None:
        """Pane `who` wants a weights copy every `every` steps while training (0 withdraws the wish).
        The worker copies at the smallest interval anyone asked for; copies cost time, so ask only
        while visible."""
        if every > 0:
            self._weights_wanted[who] = int(every)
        else:
            self._weights_wanted.pop(who, None)
        self.sig_weights_wanted_changed.emit(self.weights_every)

    @property
    def weights_every(self) -> int:
        return min(self._weights_wanted.values(), default=0)
