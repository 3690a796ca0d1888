"""Where training stands, and which actions each state allows: the one table the menus, the Training
pane's buttons and the builder's lock read (docs/design.md#the-training-pane).

A `str` enum, so the value crosses Qt signals and compares equal to its name ("running"). Qt-free, so
the table is tested without a window.
"""

from __future__ import annotations

from enum import Enum

# Actions that start from the builder's config, and so wait until it is valid (a paused run steps on and
# resumes with the config it has).
_NEED_VALID_CONFIG = frozenset({"train", "step"})


class TrainingState(str, Enum):
    IDLE = "idle"
    RUNNING = "running"
    PAUSING = "pausing"    # asked to pause; the step under way (an evaluation, say) finishes first
    PAUSED = "paused"
    STOPPED = "stopped"
    FINISHED = "finished"
    ERROR = "error"

    def allows(self, action: str, config_valid: bool = True) -> bool:
        """Whether `action` (train, pause, resume, pause_resume, step, stop, save, edit_config) may be
        taken now; `config_valid` says whether the builder's draft has no problems."""
        if self not in _ALLOWED[action]:
            return False
        return config_valid or action not in _NEED_VALID_CONFIG or self in _HELD

    @property
    def live(self) -> bool:
        """A trainer is alive (running or paused): it holds a model to sample from."""
        return self in (TrainingState.RUNNING, TrainingState.PAUSING, TrainingState.PAUSED)

    @property
    def text(self) -> str:
        return _TEXT[self]


_S = TrainingState
_AT_REST = frozenset({_S.IDLE, _S.STOPPED, _S.FINISHED, _S.ERROR})
_HELD = frozenset({_S.PAUSING, _S.PAUSED})  # a trainer alive and asked to wait: Train (F5) resumes it
_ALIVE = frozenset({_S.RUNNING}) | _HELD
_ALLOWED: dict[str, frozenset[TrainingState]] = {
    "train": _AT_REST | _HELD, "edit_config": _AT_REST,
    "pause": frozenset({_S.RUNNING}), "resume": _HELD,
    "pause_resume": _ALIVE, "stop": _ALIVE, "save": _ALIVE,
    "step": frozenset({_S.IDLE, _S.STOPPED, _S.PAUSED, _S.ERROR}),  # a finished run has no step left
}
_TEXT = {_S.IDLE: "ready", _S.RUNNING: "training…", _S.PAUSING: "pausing after the step under way…",
         _S.PAUSED: "paused", _S.STOPPED: "stopped",
         _S.FINISHED: "finished", _S.ERROR: "stopped (see the message above)"}
