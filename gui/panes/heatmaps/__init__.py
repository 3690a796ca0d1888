"""The Heatmaps pane (docs/design.md): the pane itself (pane.py) and its views and requests, one module each."""

from .pane import HeatmapsPane

__all__ = ["HeatmapsPane"]
