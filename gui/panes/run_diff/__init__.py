"""The Run diff pane: B − A of two runs' attention, coefficient or weight at one step."""

from .pane import RunDiffPane

__all__ = ["RunDiffPane"]
