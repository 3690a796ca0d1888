"""Run in the GUI tests' shared analysis process between tests (Qt-free, as everything that process runs)."""

import importlib


def forget_everything() -> None:
    """The service's state as a freshly started process has it: no RunAnalysis kept, no live copy. Its live
    copies are keyed by the GUI-side id() of a weights dict, which a later test may reuse."""
    from engine.analysis import service

    importlib.reload(service)
