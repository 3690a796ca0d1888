"""The app's analysis process: an engine/service_process.py helper whose state is engine/analysis/door.py's
`Door` (what the process keeps between questions), answering the questions of engine/analysis/questions.py in their lanes (`now`, `long`: a thread each).

`process()` is the app's one (started on the first question, again after it stopped); the window's asker
(gui/asker.py) is the one object that asks it, and hears parts, progress reports, answers and failures on the
process's reader thread, from where it moves them to the GUI thread. Nothing here waits on the GUI thread:
questions are pickled and written by a writer thread, answers read and unpickled by a reader thread. Weights
training published cross to the process once (engine/analysis/live.py's Mirror, one per process started), in the
order they are sent.

Work in another process, not a thread: the forms engine and the probes are mostly Python, and on a thread they
held the interpreter lock long enough to stall the GUI's paints (measured: 50–180 ms).
"""

from __future__ import annotations

import atexit
import threading

from engine.analysis.door import door, serve_answer
from engine.analysis.live import Mirror
from engine.errors import UserError
from engine.service_process import CANCELLED, STOPPED, ServiceProcess

_process: ServiceProcess | None = None
_process_lock = threading.Lock()


def _mirror():
    """For each analysis process started: its own record of the published weights it holds."""
    return Mirror().outgoing


def in_this_process() -> ServiceProcess:
    """An analysis "process" answering on threads of this one (tests that patch what it computes)."""
    return ServiceProcess(door, name="analysis", answer=serve_answer, outgoing=_mirror, in_thread=True)


def process() -> ServiceProcess:
    """The app's analysis process (started on its first question, again after it stopped)."""
    global _process
    with _process_lock:
        if _process is None:
            _process = ServiceProcess(door, name="analysis", answer=serve_answer, outgoing=_mirror)
        return _process


def shutdown(wait: float = 2.0) -> None:
    """End the analysis process, killed after `wait` seconds (the app calls it on exit with none; a killed app's
    process ends by itself: its pipe reads end-of-file)."""
    global _process
    with _process_lock:
        proc, _process = _process, None
    if proc is not None:
        proc.close(wait)


atexit.register(shutdown)


def ask_and_wait(question, timeout: float | None = None):
    """The answer, waited for on the calling thread: only for work already off the GUI thread (a test's setup,
    an export on its own thread), never from the GUI thread. A failure is a UserError with its line."""
    done = threading.Event()
    got: list = []

    def reply(_number: int, kind: str, payload) -> None:
        if kind in ("done", "failed"):
            got.append((kind, payload))
            done.set()

    process().ask(question, reply)
    if not done.wait(timeout):
        raise TimeoutError(f"no answer to {type(question).__name__} in {timeout} s")
    kind, payload = got[0]
    if kind == "done":
        return payload
    raise UserError(payload)


__all__ = ["CANCELLED", "STOPPED", "ask_and_wait", "in_this_process", "process", "shutdown"]
