"""The Architecture pane (docs/design.md#the-architecture-pane): the builder's form and its block diagram."""

from .pane import ArchitecturePane

__all__ = ["ArchitecturePane"]
