"""How many threads training takes, and how they wait: a policy that fits a machine shared with other work.

Two facts measured for issue 28 on a 2-core machine decide it:

- torch's CPU kernels run on OpenMP (GNU libgomp in the Linux wheels), whose idle threads spin-wait for the
  next parallel region. Beside other busy processes a spinning thread burns the time slice its partner needs,
  and every tiny operation waits for the slowest: two threads fell to 0.03x of one thread's tokens/s. With
  OMP_WAIT_POLICY=PASSIVE (and KMP_BLOCKTIME=0 for Intel's OpenMP) an idle thread sleeps at once instead.
  libgomp reads these when it loads, that is when torch is first imported, so `prepare_openmp` runs from
  `engine/__init__.py`, before any module of ours imports torch: the command line, the app, the tests and the
  app's spawned helper processes (which inherit the environment) all get it. A variable the user set, or a
  GOMP_SPINCOUNT, is left alone.
- A thread is worth having only on a core no one else is using. `choose_threads` counts the cores other
  processes keep busy (the runnable tasks of /proc/loadavg besides this one, else the 1-minute load average)
  and trains on the rest, at least one; `ThreadPolicy` asks again every RECHECK_S seconds of training, so a
  load that comes or goes is followed within seconds.

Only torch_threads = 0 ("every core", the default) is adaptive; a count the user sets is kept as it is.
The price: torch's kernels sum in a different order on another thread count, so an adaptive run repeats to
the bit only where the load let it choose the same counts at the same steps (1 against 2 threads: weights
apart by up to 7e-3 after 30 steps of induction-lesson). A run that must repeat exactly sets torch_threads.
Helper processes (`for_helper`) take one thread at a lower priority, so they never take training's cores.
"""

from __future__ import annotations

import os
import statistics
import time

OPENMP_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
RECHECK_S = 2.0      # seconds of training between two decisions
SAMPLES = 5          # /proc/loadavg readings per decision (its runnable count is an instant, so noisy)
HELPER_NICENESS = 5  # helper processes yield the CPU to training when both want it


def prepare_openmp(environ: dict | None = None) -> None:
    """Set OpenMP's passive waiting unless the environment already says how OpenMP should wait."""
    env = os.environ if environ is None else environ
    if not any(k in env for k in (*OPENMP_ENV, "GOMP_SPINCOUNT")):
        env.update(OPENMP_ENV)


def usable_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def busy_elsewhere(read=None) -> float:
    """About how many cores other processes are keeping busy now.

    Linux's /proc/loadavg counts the tasks runnable at this instant (4th field, "running/total"), this
    reading thread among them; idle OpenMP threads sleep under the passive policy, so they are not counted.
    The median of SAMPLES readings 2 ms apart smooths a single instant. Elsewhere the 1-minute load average.
    """
    read = read or _read_loadavg
    runnable = []
    for k in range(SAMPLES):
        text = read()
        if text is None:
            return max(os.getloadavg()[0] - 1.0, 0.0) if hasattr(os, "getloadavg") else 0.0
        runnable.append(int(text.split()[3].split("/")[0]))
        if k + 1 < SAMPLES:
            time.sleep(0.002)
    return max(statistics.median(runnable) - 1.0, 0.0)


def choose_threads(requested: int, cores: int | None = None, busy: float | None = None) -> int:
    """The thread count to train on: `requested` when the user set one (> 0), else the cores left free by
    other processes, at least one."""
    if requested > 0:
        return requested
    cores = usable_cores() if cores is None else cores
    busy = busy_elsewhere() if busy is None else busy
    return max(1, min(cores, round(cores - busy)))


class ThreadPolicy:
    """Sets torch's thread count for training and revises it every RECHECK_S seconds (adaptive only when
    `requested` is 0). `threads` is the count in force."""

    def __init__(self, requested: int, clock=time.monotonic, decide=choose_threads):
        self.requested, self._clock, self._decide = requested, clock, decide
        self.threads = self._apply(decide(requested))
        self._next = clock() + RECHECK_S

    def tick(self) -> int:
        """Call between steps: re-decides when its time has come. Returns the count in force."""
        if self.requested <= 0 and self._clock() >= self._next:
            self.threads = self._apply(self._decide(self.requested))
            self._next = self._clock() + RECHECK_S
        return self.threads

    @staticmethod
    def _apply(n: int) -> int:
        import torch

        if torch.get_num_threads() != n:
            torch.set_num_threads(n)
        return n


def for_helper() -> None:
    """In a helper process: one torch thread and a lower priority than training's."""
    import torch

    torch.set_num_threads(1)
    try:
        os.nice(HELPER_NICENESS)
    except (AttributeError, OSError):  # Windows has no nice; a sandbox may refuse it
        pass


def _read_loadavg() -> str | None:
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return f.read()
    except OSError:
        return None
