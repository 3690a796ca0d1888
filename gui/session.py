"""The app-wide state every pane binds to: the config being built, the open run, training progress, the
newest weights and the selected weight. One object, created by the main window and handed to each pane's
``__init__``; panes talk to each other only through it (napari's viewer model, glue's hub).

Everything carried by a signal is an owned copy (numpy arrays, CPU tensors cloned between training
steps), never a view of tensors the trainer is still changing.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from engine.config import ExperimentConfig, ModelConfig


class Session(QObject):
    sig_config_changed = Signal(object)     # ExperimentConfig, whenever the builder's config changes
    sig_run_opened = Signal(object)         # engine.runs.Run, or None when a new unsaved run starts
    sig_step_reported = Signal(object)      # engine.trainer.StepReport
    sig_weights_ready = Signal(int, object)  # step, {name: CPU tensor} copied between training steps
    sig_weight_selected = Signal(str)       # a weight name (state-dict key, e.g. "blocks.0.W_K")
    sig_training_state_changed = Signal(str)  # idle | running | paused | stopped | finished | error
    sig_tokenizer_changed = Signal(object)  # engine.data tokenizer of the current run
    # Added for the main window and the builder (issue 4):
    sig_config_problems_changed = Signal(object)  # list[engine.config.Problem] of the builder's draft
    sig_training_requested = Signal(str)    # train | pause | resume | step | stop | save: the controller acts
    sig_sample_requested = Signal(object)   # gui.worker.SampleRequest, answered by sig_sample_ready
    sig_sample_ready = Signal(object, str)  # the request and the generated text
    sig_message_posted = Signal(str, str)   # level (error | warning | info), text: the window's banner
    sig_weights_wanted_changed = Signal(int)  # steps between weight copies panes ask for; 0 = none
    # Added for the run browser (issue 15):
    sig_runs_compared = Signal(object)      # list[Path] of the runs ticked in the browser, overlaid as curves
    sig_open_run_requested = Signal(str)    # a pane asks for a run folder to be opened; the window opens it
    sig_head_at_step = Signal(int, int, int)  # layer, head, saved step: show that head's attention there
    sig_model_changed = Signal(object)      # ModelConfig: the current model (see `model`) changed
    sig_browse_step_changed = Signal(object)  # the saved step the Heatmaps and Weight panes show; None: newest

    def __init__(self, config: ExperimentConfig | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.config: ExperimentConfig = config or ExperimentConfig()
        self.run = None             # engine.runs.Run of the open run, if any
        self.tokenizer = None       # tokenizer of the current run / training
        self.step: int = 0          # newest step reported or browsed
        self.weights: dict | None = None  # newest weights copy ({name: tensor}), with self.weights_step
        self.weights_step: int = -1
        self.selected_weight: str | None = None
        self.training_state: str = "idle"
        self.config_problems: list = []  # what is wrong with the builder's draft; Train waits for []
        self._weights_wanted: dict[str, int] = {}
        self.compared_runs: list = []  # Paths of the runs ticked in the run browser
        self.browse_step: int | None = None  # the one timeline the Heatmaps and Weight panes share

    @property
    def model(self) -> ModelConfig:
        """The one current model every pane shows: the open run's resolved config when a run is open,
        the builder's draft otherwise."""
        return (self.run.config if self.run is not None else self.config).model

    def set_config(self, config: ExperimentConfig) -> None:
        if config != self.config:
            was = self.model
            self.config = config
            self.sig_config_changed.emit(config)
            self._model_maybe_changed(was)

    def set_run(self, run) -> None:
        was = self.model
        self.run = run
        self.set_browse_step(None)  # a newly opened run is shown at its newest step
        self.sig_run_opened.emit(run)
        self._model_maybe_changed(was)

    def _model_maybe_changed(self, was: ModelConfig) -> None:
        if self.model != was:
            self.sig_model_changed.emit(self.model)

    def set_tokenizer(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.sig_tokenizer_changed.emit(tokenizer)

    def report_step(self, report) -> None:
        self.step = report.step
        self.sig_step_reported.emit(report)

    def publish_weights(self, step: int, weights: dict) -> None:
        self.weights, self.weights_step = weights, step
        self.sig_weights_ready.emit(step, weights)

    def select_weight(self, name: str) -> None:
        self.selected_weight = name
        self.sig_weight_selected.emit(name)

    def set_training_state(self, state: str) -> None:
        if state != self.training_state:
            self.training_state = state
            self.sig_training_state_changed.emit(state)

    # --- added for the main window and the builder (issue 4) ---

    def set_config_problems(self, problems: list) -> None:
        """The builder's draft and what is wrong with it; only a valid draft becomes `config`."""
        if list(problems) != self.config_problems:
            self.config_problems = list(problems)
            self.sig_config_problems_changed.emit(self.config_problems)

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

    def post_message(self, text: str, level: str = "error") -> None:
        """Show a message in the window's banner (a user's mistake or a stopped run, never a traceback)."""
        self.sig_message_posted.emit(level, text)

    def show_head_at_step(self, layer: int, head: int, step: int) -> None:
        """Ask the Heatmaps pane to show one head's attention at a saved step (the head timeline's click)."""
        self.sig_head_at_step.emit(layer, head, step)

    def set_browse_step(self, step: int | None) -> None:
        """Move the shared timeline to a saved step of the open run (None: follow the newest weights); the
        Heatmaps and Weight panes both follow it and either may move it."""
        if step != self.browse_step:
            self.browse_step = step
            self.sig_browse_step_changed.emit(step)

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
