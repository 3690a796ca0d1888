"""The Runs pane: the run browser, the folders it watches and the fork form."""

from .pane import RunsPane

__all__ = ["RunsPane"]
