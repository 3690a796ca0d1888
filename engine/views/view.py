"""`View`: what every view model is — a pane's own choices, the answers it holds, and the questions it needs now.

A view model (one per view, in engine/views/, napari's `_LayerSlicer` and glue's state objects) holds:
- its own choices as fields (a tab, a prompt, β, a chart's options), evented (engine/views/state.py), bound to
  its widgets by gui/binding.py;
- what it was answered (a timeline, a listing), set by `take`, and why not (`failures`), each an event too;
- `needs(workspace)`: the questions it needs now, most wanted first, computed from the workspace (the open run,
  the selection, the newest published weights) and its own fields alone. It reads the open run and the selection
  there every time and keeps no copy of them.

The app's one asker (gui/asker.py) watches every view model: whenever the workspace or a view changes it asks
what the views on screen (`seen`) need and is not out yet, cancels what no view needs any more, hands each
answer to the views that asked (`take`), each failure to `failed` and each report of a long answer to
`progressed`. When another run is opened it drops every answer still to come about the previous run (its one
rule for staleness: an answer is delivered only while the run it was asked about is open) and calls `forget` on
the views that `follows_open_run`, so no view holds anything of the previous run. A view never asks itself.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..progress import Progress
from .state import State


class View(State):
    follows_open_run: ClassVar[bool] = True  # its answers are about the open run (False: the runs listing)
    while_hidden: ClassVar[bool] = False     # its needs are asked even while it is not seen (light ones that
    #                                          other panes act on: the runs listing, asked when it changes)

    seen: bool = True   # on screen: only a seen view's needs are asked (its pane sets this)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.failures: dict = {}             # question -> one line: not asked again until forgotten
        self.progress: Progress | None = None  # of the long answer on its way, while one is

    def needs(self, workspace) -> list:
        """The questions this view needs now, the most wanted first (a pure function of the workspace and the
        view's fields; the asker skips those out already, and those that failed)."""
        return []

    def missing(self, workspace) -> list:
        """What it needs and has not failed: what the asker asks (empty: it holds all it needs)."""
        return [q for q in self.needs(workspace) if q not in self.failures]

    def take(self, question, answer: Any) -> None:
        """Keep an answer (of the open run: the asker dropped any other)."""

    def failed(self, question, message: str) -> None:
        self.failures = {**self.failures, question: message}
        self.progress = None

    def progressed(self, question, progress: Progress) -> None:
        self.progress = progress

    def forget(self) -> None:
        """Drop every answer held (another run is open); subclasses drop theirs and call this."""
        self.failures = {}
        self.progress = None
