"""Helper processes for work that holds Python's interpreter lock too long to share it with the GUI thread
(the forms engine, mathtext). One function makes them, so every helper process behaves alike:

- spawned, never forked: the app has threads (Qt's, torch's), and a forked child inherits their locks;
- one worker each, on one torch thread at a lower priority (engine/training/thread_policy.py), so requests wait
  their turn instead of taking cores from training;
- a worker that outlives the app stops by itself: it watches its parent, and when the app is gone (a crash,
  a kill, a closed terminal) it exits within a second instead of lingering as an orphan.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor

PARENT_POLL_S = 0.5


def helper_pool() -> ProcessPoolExecutor:
    """A one-worker pool in a spawned process that exits when this process does."""
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=start_helper, initargs=(os.getpid(),))


def start_helper(parent_pid: int) -> None:
    """In the worker: one torch thread at a lower priority (training keeps its cores), and the parent watch."""
    from engine.training.thread_policy import for_helper

    for_helper()
    watch_parent(parent_pid)


def watch_parent(parent_pid: int) -> None:
    """In the worker: a daemon thread that ends the process once `parent_pid` is no longer its parent."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()
