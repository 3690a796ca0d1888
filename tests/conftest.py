"""Shared test setup: Qt runs offscreen, set before anything can load it."""

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Each xdist worker imports every test module to collect it, and pytest rewrites each one's asserts (about 4.7 s of
# CPU a worker). With PYTHONDONTWRITEBYTECODE set (this environment and CI's) nothing was cached, so both workers
# rewrote all ~170 modules. Allowed to write, the first worker to reach a module leaves its rewritten code in
# tests/**/__pycache__ for the other: on a fresh clone the two workers rewrote 103 + 107 modules (6.4 s) instead of
# 167 + 167 (9.5 s, load 9). The modules of engine/ and gui/ imported after this line are cached too, and the child
# processes read them (they keep PYTHONDONTWRITEBYTECODE and never write). Python and pytest check each cached file
# against its source's size and time, and write it atomically.
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
