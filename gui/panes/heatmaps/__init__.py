"""The Heatmaps pane (docs/design.md#the-heatmaps-pane): the pane, its views and requests, a module each."""

from .pane import HeatmapsPane

__all__ = ["HeatmapsPane"]
