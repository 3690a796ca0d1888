"""The Weight pane (DESIGN §1.6): the pane itself (pane.py), its feeder, views and exports, one module each."""

from .pane import WeightPane

__all__ = ["WeightPane"]
