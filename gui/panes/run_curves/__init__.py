"""The Run curves pane: the ticked runs' curves overlaid, smoothed and exported."""

from .pane import RunCurvesPane

__all__ = ["RunCurvesPane"]
