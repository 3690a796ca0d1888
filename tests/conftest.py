"""Shared test setup: Qt runs offscreen, set before anything can load it."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _token_cache(tmp_path_factory):
    """The token cache (engine/text/token_cache.py) in a folder of the session's, never the user's."""
    os.environ["GPT_EXPLORER_CACHE"] = str(tmp_path_factory.mktemp("cache"))
