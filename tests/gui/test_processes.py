"""Helper processes are spawned one-worker pools that end when the app that started them ends."""

import os
import signal
import subprocess
import sys
import time

from gui.processes import helper_pool

APP = """
import os, sys
from gui.processes import helper_pool
pool = helper_pool()
print(pool.submit(os.getpid).result(), flush=True)
os.kill(os.getpid(), 9)  # the app dies without shutting its pool down
"""


def test_the_pool_runs_work_in_another_process():
    pool = helper_pool()
    try:
        assert pool.submit(os.getpid).result(timeout=60) != os.getpid()
    finally:
        pool.shutdown()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie waiting for init to reap it counts as gone
        return f.read().split(")")[-1].split()[0] != "Z"


def test_a_worker_exits_when_the_app_is_killed():
    proc = subprocess.run([sys.executable, "-c", APP], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    worker = int(proc.stdout.strip())
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker), f"worker {worker} outlived the app"


def _threads_and_niceness() -> tuple[int, int]:
    import torch

    return torch.get_num_threads(), os.nice(0)


def test_a_helper_takes_one_thread_at_a_lower_priority_than_the_app():
    from engine.training.thread_policy import HELPER_NICENESS

    pool = helper_pool()
    try:
        threads, niceness = pool.submit(_threads_and_niceness).result(timeout=60)
    finally:
        pool.shutdown()
    assert threads == 1 and niceness == min(os.nice(0) + HELPER_NICENESS, 19)  # 19: the lowest priority


def _torch_loaded() -> bool:
    import sys

    return "torch" in sys.modules


def test_starting_a_helper_loads_no_torch():
    """The formula process never needs torch: loading it there cost ~200 MB of the app's memory."""
    pool = helper_pool()
    try:
        assert pool.submit(_torch_loaded).result(timeout=60) is False
    finally:
        pool.shutdown()


def test_rendering_a_formula_loads_no_torch_in_the_formula_process(qtbot):
    """What the renderer sends the process must not import the Forms pane there (its package loads torch):
    the restructure into pane packages once did, and the formula process grew from ~100 to ~350 MB."""
    from gui.widgets.formula import FormulaRenderer, RenderKey

    renderer = FormulaRenderer()
    key = RenderKey("x^2", 200, 1.0, (0, 0, 0))
    try:
        with qtbot.waitSignal(renderer.sig_ready, timeout=60_000):
            renderer.request(key)
        assert renderer._process.submit(_torch_loaded).result(timeout=60) is False
    finally:
        renderer.shutdown()
