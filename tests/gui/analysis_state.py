"""Run in the GUI tests' shared analysis process between tests (Qt-free, as everything that process runs)."""

import importlib


def forget_everything() -> None:
    """The service's state as a freshly started process has it: no RunAnalysis kept, no live model, no
    curves read (the held published copies stay, in step with the GUI's mirror of them)."""
    from engine.analysis import service

    importlib.reload(service)
