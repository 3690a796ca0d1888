"""The Heatmaps pane (docs/design.md): the pane itself (pane.py) and its tabs, one module each; what it asks is
its view model's (engine/views/heatmaps.py), asked by the window's asker."""

from .pane import HeatmapsPane

__all__ = ["HeatmapsPane"]
