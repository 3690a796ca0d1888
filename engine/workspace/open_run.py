"""`OpenRun`: the run the app shows, and everything that belongs to it — its identity, resolved config,
tokenizer, run directory (once one exists) and, while it trains, the newest weights training published.

Because the live weights are the run's own, opening another run cannot leave them behind: the next run is a
new `OpenRun`, and a trainer that still publishes into the one it was started for publishes into an object
no view holds any more. `serial` tells two openings apart even of the same folder; every question a view
asks about the open run carries it, so an answer about a run no longer open is recognised and dropped.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from .events import Event

_serials = itertools.count(1)


@dataclass(frozen=True)
class LiveWeights:
    step: int
    weights: dict  # {name: CPU tensor}, an owned copy taken between training steps


class OpenRun:
    """One opening of a run. `run` is the engine.rundir.runs.Run of its folder, None while a new run's trainer
    has not made the folder yet."""

    def __init__(self, config, tokenizer=None, run=None):
        self.serial: int = next(_serials)
        self.config = config        # ExperimentConfig, resolved (vocab_size from the corpus) once known
        self.tokenizer = tokenizer
        self.run = run
        self.live: LiveWeights | None = None
        self._steps: list[int] | None = None  # saved_steps' listing, until something says it changed
        self.sig_published = Event()   # (LiveWeights) training published newer weights of this run
        self.sig_attached = Event()    # () the trainer made this run's folder (a new run's first moments)

    @property
    def path(self) -> Path | None:
        return None if self.run is None else Path(self.run.path)

    @property
    def model(self):
        return self.config.model

    def attach(self, run, config, tokenizer) -> None:
        """The folder the trainer made for this run, with the config and tokenizer it resolved."""
        self.run, self.config, self.tokenizer = run, config, tokenizer
        self._steps = None
        self.sig_attached.emit()

    def publish(self, step: int, weights: dict) -> None:
        self.live = LiveWeights(step, weights)
        self.sig_published.emit(self.live)

    def saved_steps(self) -> list[int]:
        """Steps whose weights are on disk, ascending. The folder is listed once and the listing kept until
        `steps_changed` says training saved or thinned weights: views ask this on every drawing, on the GUI
        thread, and a listing there is file system work (issue 37)."""
        if self.run is None:
            return []
        if self._steps is None:
            self._steps = self.run.saved_steps()
        return list(self._steps)

    def steps_changed(self) -> None:
        """Training wrote (or thinned) weights of this run: the next `saved_steps` lists the folder again."""
        self._steps = None

    def __repr__(self) -> str:
        return f"OpenRun(#{self.serial}, {self.path or 'no folder yet'})"
