"""The Weight pane (docs/design.md#the-weight-pane): the pane, its feeder, views and exports, a module each."""

from .pane import WeightPane

__all__ = ["WeightPane"]
