"""The app's per-user cache folder: what can always be computed again but is worth keeping between runs of the
app (a corpus's token ids, engine/text/token_cache.py; torch.compile's compiled training steps,
engine/training/acceleration.py). `$GPT_EXPLORER_CACHE` when set (the tests point it at a temporary folder), else
the platform's cache folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENV = "GPT_EXPLORER_CACHE"


def root() -> Path:
    """The cache folder: $GPT_EXPLORER_CACHE, else the platform's per-user cache folder."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "gpt-explorer"
