"""Importing torch once in the GUI process, whichever thread asks first: the training worker, a pane's job
on Qt's thread pool, or the GUI thread itself.

Call `ensure_torch()` before importing torch (or an engine module that does) off the GUI thread: two threads
importing torch at the same moment break its operator registry (seen here: "RuntimeError: operator
prims::isfinite does not exist").
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_ready = False


def ensure_torch() -> None:
    global _ready
    if _ready:
        return
    with _lock:
        import torch  # noqa: F401

        _ready = True
