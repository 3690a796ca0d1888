"""The Training pane (docs/design.md#the-training-pane): loss curves, the next-token view and the head timeline."""

from .pane import TrainingPane

__all__ = ["TrainingPane"]
