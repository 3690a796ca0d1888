"""The layer and head a Heatmaps tab draws: the workspace's selection, read through the pane's `chosen()` each
time the tab draws and never kept (docs/design.md, "The view models")."""

from __future__ import annotations

from collections.abc import Callable


class ChosenHead:
    """For a tab that sets `self.chosen`, a () -> (layer, head) its pane hands it."""

    chosen: Callable[[], tuple[int, int]]

    @property
    def layer(self) -> int:
        return self.chosen()[0]

    @property
    def head(self) -> int:
        return self.chosen()[1]
