"""The Forms pane (docs/design.md#the-forms-pane): the pane itself (pane.py) and its parts, one module each."""

from .pane import FormsPane

__all__ = ["FormsPane"]
