"""Shared test setup: Qt runs offscreen, set before anything can load it."""

import importlib
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Each xdist worker imports every test module to collect it, and pytest rewrites each one's asserts (about 5 s of CPU
# a worker). With PYTHONDONTWRITEBYTECODE set (this environment and CI's) nothing was cached, so both workers
# rewrote all ~170 modules. Allowed to write, a worker leaves a module's rewritten code in tests/**/__pycache__ for
# the other; the second worker imports the test modules in the reverse order first (pytest_collection below), so the
# two meet in the middle instead of rewriting the same modules side by side. The modules of engine/ and gui/
# imported after this line are cached too, and the child processes read them (they keep PYTHONDONTWRITEBYTECODE and
# never write). Python and pytest check each cached file against its source's size and time, write it atomically.
sys.dont_write_bytecode = False

# OpenMP's short spin (engine/training/thread_policy.py) is read once, when torch loads: `engine` sets it, and a
# test module that imports torch before anything of ours would get libgomp's long spin. Under load that made
# every small torch operation wait for a spinning thread: the mixed forms' checks of one bias slice took 35 s
# with torch imported first, 10 s with engine first (load 14 on 2 cores).
import engine  # noqa: E402,F401


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _token_cache(tmp_path_factory):
    """The token cache (engine/text/token_cache.py) in a folder of the session's, never the user's."""
    os.environ["GPT_EXPLORER_CACHE"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture
def children_in_thread(monkeypatch):
    """The work the app does in a child process of its own (engine/child_job.py: a fork, an export, a corpus made
    ready; engine/importers/process.py: an import) done on a thread of the test's process instead, for a test whose
    point is not the process: a spawned child that needs torch imports it, ~1.3 s of CPU (the suite's census of its
    children), several times what a test's small fork or import does. Such work cannot be cancelled; the tests of
    a cancel, and those that check the work ran elsewhere, keep their process."""
    from engine.child_job import ChildJob
    from engine.importers.process import ImportProcess

    monkeypatch.setattr(ChildJob, "in_thread", True)
    monkeypatch.setattr(ImportProcess, "in_thread", True)


def pytest_collection(session):
    """On xdist worker k of n (k > 0), import the test modules to be collected starting k/n of the way through
    their list (and round to its start) before pytest collects them in its own order, so that each worker rewrites
    about a share of them and finds the rest in __pycache__ (see sys.dont_write_bytecode above). A fresh clone,
    `-n 2 -k nomatch` over the whole suite: 167 + 167 modules rewritten, 10.4-10.9 s of CPU per worker to the end of
    collection; side by side with writing allowed, 112-130 each and 10.0-10.3 s; with this, 81-87 each and
    7.9-8.2 s (load 7-9). What fails to import here is left for pytest's own import to report; the modules are the
    same either way."""
    worker, workers = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")
    k, n = int(worker.removeprefix("gw") or 0), int(workers)
    if k == 0 or n < 2:
        return None
    root = Path(__file__).resolve().parent.parent
    files = []
    for arg in session.config.args:
        path = Path(arg.split("::")[0])
        path = path if path.is_absolute() else Path(session.config.invocation_params.dir) / path
        files += sorted(path.rglob("test_*.py")) if path.is_dir() else [path]
    start = len(files) * k // n
    for path in files[start:] + files[:start]:
        try:
            importlib.import_module(".".join(path.resolve().relative_to(root).with_suffix("").parts))
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001  (an import error, a module-level skip: pytest's import says it)
            pass
    return None


def pytest_collection_finish(session):
    """What collection loaded (torch, sympy, matplotlib, pyqtgraph, Qt's bindings, every test module: a few hundred
    thousand objects) lives as long as the worker: out of the cyclic collector's full passes, which otherwise walk
    all of it again each time a test's allocations set one off (measured in tests/engine/forms with gc.callbacks:
    full passes were 11.2 of 38.9 s of CPU, 6.1 of 31.7 s after this). The app does the same once its window is
    built (gui/main_window.py)."""
    import gc

    gc.collect()
    gc.freeze()
