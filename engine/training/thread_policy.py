"""How training's threads wait, and the helper processes' share: a policy that fits a machine shared with other
work (issue 28).

torch's CPU kernels run on OpenMP (GNU libgomp in the Linux wheels), whose idle threads spin-wait for the next
parallel region: libgomp spins 300,000 times before it sleeps. Beside other busy processes a spinning thread
burns the time slice its partner needs, and every tiny operation waits for the slowest: two threads fell to
0.03x of one thread's tokens/s. Sleeping at once (OMP_WAIT_POLICY=PASSIVE, the first version of this policy)
cures that but costs a quiet machine dearly, since every one of a step's many small parallel regions then
wakes a sleeping thread. A short spin does both: GOMP_SPINCOUNT=1000 (and KMP_BLOCKTIME=0 for Intel's OpenMP,
not measured here). Measured with benchmarks/busy_machine.py on 2 cores, nanogpt-cpu, 2026-11-24, 4 rounds,
medians: under two busy processes per core, spin 1000 trained at ~3,700 tokens/s, passive ~4,000, one thread
~3,800 and the default spin ~1,000; quiet, spin 1000 at 16,700, the default spin 18,600, passive 11,400
(passive was 0.60x of the default quiet, spin 1000 is 0.9x). libgomp reads these when it loads, that is when
torch is first imported, so `prepare_openmp` runs from `engine/__init__.py`, before any module of ours
imports torch: the command line, the app, the tests and the app's spawned helper processes (which inherit the
environment) all get it. A variable the user set (OMP_WAIT_POLICY, GOMP_SPINCOUNT, KMP_BLOCKTIME) is left
alone.

The thread count stays every core (`engine.training.device.set_threads`). Under the passive policy, on 2 cores
under two busy processes per core, every core trained 2.4x as fast as one thread (2,737 against 1,137 tokens/s;
spinning on both: 101; a second run: 1.29x and 1.62x of one thread, spinning 0.04-0.06x), because the scheduler
shares the cores per thread, so a second thread that sleeps while it waits only adds to training's share. With
the short spin, 3 rounds: under that load every core trained at 0.84x of one thread (rounds 0.70-0.90), quiet at
1.34x; one thread would give up a quarter of a quiet machine's speed to gain a sixth under load. Choosing fewer
threads as the load rises (a first version counted the cores other processes kept busy and re-decided every 2 s)
trained at 0.31x of every core, and would have made the default thread count, and so the run's bits, depend on
the load.
Helper processes (`for_helper`) take one thread at a lower priority, so they never take training's cores.
"""

from __future__ import annotations

import os

OPENMP_ENV = {"GOMP_SPINCOUNT": "1000", "KMP_BLOCKTIME": "0"}  # spin briefly, then sleep (see above)
HELPER_NICENESS = 5  # helper processes yield the CPU to training when both want it


def prepare_openmp(environ: dict | None = None) -> None:
    """Set OpenMP's short spin unless the environment already says how OpenMP should wait."""
    env = os.environ if environ is None else environ
    if not any(k in env for k in (*OPENMP_ENV, "OMP_WAIT_POLICY")):
        env.update(OPENMP_ENV)


def usable_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one). No torch here: the configs'
    limits (engine/configs/limits.py) ask it too."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def for_helper() -> None:
    """In a helper process: one thread for torch, if it ever loads torch, and a lower priority than training's.
    Torch is not imported here: the symbolic process never needs it, and importing it there cost ~200 MB
    (measured with benchmarks/ui_latency.py: the helpers' 564 MB became 777 MB)."""
    # read when torch (or NumPy's OpenBLAS) loads, if it does
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        os.nice(HELPER_NICENESS)
    except (AttributeError, OSError):  # Windows has no nice; a sandbox may refuse it
        pass
