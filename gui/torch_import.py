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
    """torch, and with it the `tokenizers` library a BPE vocabulary is built with (engine/text/bpe.py): the first
    BPE built in the app (Train on an imported GPT-2 or a BPE run, a small BPE run opened) imported it where it
    was built, and its module's initialisation held the interpreter lock 90 ms of CPU, 180-530 ms on a loaded
    machine, once the engine's other modules were loaded (7 ms in a bare interpreter); 3.7 MB. The window
    calls this while it shows "loading", so both load there."""
    global _ready
    if _ready:
        return
    with _lock:
        import torch  # noqa: F401

        import engine.text.bpe  # noqa: F401

        _ready = True
