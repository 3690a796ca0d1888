"""The Weight pane (docs/design.md): the pane (pane.py), its pages and exports, one module each."""

from .pane import WeightPane

__all__ = ["WeightPane"]
