"""Memory freed inside a process handed back to the system (glibc's malloc_trim), at most every so often.

glibc keeps what freed objects, arrays and tensors leave in its heap for reuse, so a process's resident set grows
to its busiest moment's and stays there. `HeapTrim` gives it back, from the analysis process after its answers
(engine/analysis/door.py). Measured training nanogpt-cpu with every pane seen (`python benchmarks/ui_latency.py
--preset nanogpt-cpu`, docs/figures.md): the analysis process held ~24 MB less. In the app's training thread it
saved ~10 MB, and a trim of up to 40 ms every 2 s could take up to 2 % of training's time (an estimate, not
measured), so the app does not trim. A trim takes 1–40 ms of the calling thread, never the GUI's; where the C
library is not glibc there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import time


class HeapTrim:
    """Call it as often as convenient: it trims when `every_s` seconds have passed since it last did."""

    def __init__(self, every_s: float = 2.0):
        self.every_s, self._at = every_s, time.monotonic()

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self._at < self.every_s or _malloc_trim() is None:
            return
        self._at = now
        _malloc_trim()(0)


@functools.cache
def _malloc_trim():
    """glibc's malloc_trim, or None elsewhere (macOS, Windows, a C library without it)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
