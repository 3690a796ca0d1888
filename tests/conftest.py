"""Shared test setup: Qt runs offscreen, set before anything can load it."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

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
