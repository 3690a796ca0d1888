"""`Workspace`: the one model of what is open — the builder's draft, the open run, the selection and where
training stands — with an event for each kind of change.

Opening, importing or starting a run is `replace_run`, ONE event (`sig_run_replaced`): the open run, the draft
the builder shows, the selection (its browsed step back to the newest) and where training stands change together,
and no draft, model or training event is emitted for what changed with it, so a view reads everything afresh in
that one handler and never sees a new model beside the previous run. Views never keep their own copy of which run
they show; they read it here when they need it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from ..configs.config import ExperimentConfig, ModelConfig
from ..training.state import TrainingState
from .events import Event
from .open_run import LiveWeights, OpenRun


@dataclass(frozen=True)
class Draft:
    """The builder's config and what is wrong with it; Train waits until `problems` is empty."""

    config: ExperimentConfig = field(default_factory=ExperimentConfig)
    problems: tuple = ()


@dataclass(frozen=True)
class Selection:
    """What the user has chosen to look at, app-wide: a weight (state-dict key, e.g. "blocks.0.W_K"),
    a head, and the saved step the shared timeline browses (None: the newest weights)."""

    weight: str | None = None
    layer: int = 0
    head: int = 0
    step: int | None = None


class Workspace:
    def __init__(self, config: ExperimentConfig | None = None):
        self.draft = Draft(config or ExperimentConfig())
        self.open_run: OpenRun | None = None
        self.selection = Selection()
        self.training = TrainingState.IDLE
        self.sig_draft_changed = Event()       # (Draft)
        self.sig_run_replaced = Event()        # (OpenRun | None): another run is open now, with all that came with it
        self.sig_run_attached = Event()        # (OpenRun): the open run's trainer made its folder
        self.sig_weights_published = Event()   # (LiveWeights) of the open run
        self.sig_selection_changed = Event()   # (Selection, frozenset of the field names that changed)
        self.sig_training_changed = Event()    # (TrainingState)
        self.sig_model_changed = Event()       # (ModelConfig): `model` is another model now (a draft edited)

    # ---- what views read ---------------------------------------------------------------------

    @property
    def model(self) -> ModelConfig:
        """The one model every view shows: the open run's when a run is open, the draft's otherwise."""
        return (self.open_run.config if self.open_run is not None else self.draft.config).model

    @property
    def live(self) -> LiveWeights | None:
        """The newest weights the open run's trainer published, if it did."""
        return None if self.open_run is None else self.open_run.live

    # ---- changes -----------------------------------------------------------------------------

    def set_draft(self, config: ExperimentConfig | None = None, problems=None) -> None:
        draft = Draft(self.draft.config if config is None else config,
                      self.draft.problems if problems is None else tuple(problems))
        if draft != self.draft:
            was = self.model
            self.draft = draft
            self.sig_draft_changed.emit(draft)
            self._model_maybe_changed(was)

    def replace_run(self, open_run: OpenRun | None, config: ExperimentConfig | None = None,
                    training: TrainingState | str | None = None) -> None:
        """Show `open_run` (None: no run) instead of whatever was open, with the builder's draft set to `config`
        (its problems cleared: the builder checks it again) and training at `training` when given, as one
        event."""
        old = self.open_run
        if old is not None:
            old.sig_published.disconnect(self.sig_weights_published.emit)
            old.sig_attached.disconnect(self._on_attached)
        self.open_run = open_run
        if open_run is not None:
            open_run.sig_published.connect(self.sig_weights_published.emit)
            open_run.sig_attached.connect(self._on_attached)
        if config is not None:
            self.draft = Draft(config)
        if training is not None:
            self.training = TrainingState(training)
        self.selection = self._fitted(self.selection)
        self.sig_run_replaced.emit(open_run)

    def _on_attached(self) -> None:
        was = self.model
        self.sig_run_attached.emit(self.open_run)
        self._model_maybe_changed(was)

    def select(self, **changes) -> None:
        """Change the selection (weight=, layer=, head=, step=); one event names every field changed."""
        new = replace(self.selection, **changes)
        changed = frozenset(f.name for f in fields(Selection)
                            if getattr(new, f.name) != getattr(self.selection, f.name))
        if changed:
            self.selection = new
            self.sig_selection_changed.emit(new, changed)

    def set_training(self, state: TrainingState | str) -> None:
        state = TrainingState(state)
        if state != self.training:
            if self.open_run is not None:
                self.open_run.steps_changed()  # training coming to rest writes a checkpoint first
            self.training = state
            self.sig_training_changed.emit(state)

    def _fitted(self, selection: Selection) -> Selection:
        """The selection carried to another run: its newest step, the same weight and head where the
        run's model has them."""
        from ..model.weight_layout import weight_names

        m = self.model
        weight = selection.weight if selection.weight in weight_names(m) else None
        return Selection(weight, min(selection.layer, m.n_layer - 1), min(selection.head, m.n_head - 1), None)

    def _model_maybe_changed(self, was: ModelConfig) -> None:
        if self.model != was:
            self.sig_model_changed.emit(self.model)
