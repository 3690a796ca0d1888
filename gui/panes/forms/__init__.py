"""The Forms pane (DESIGN §1.5): the pane itself (pane.py) and its parts, one module each."""

from .pane import FormsPane

__all__ = ["FormsPane"]
