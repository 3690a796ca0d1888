"""The app's log: one rotating file in the user's data folder (`<data>/logs/gpt-explorer.log`, three old
files of 1 MB kept), where the app writes the versions it started with and every error it did not expect
(gui/crash.py), so a user can send it and a developer can read what happened after the window is gone.

Python's `logging` under the name "gpt_explorer"; `start_log` attaches the file once per process. Tests
pass a folder of their own.
"""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

LOGGER = "gpt_explorer"
FILE_NAME = "gpt-explorer.log"
MAX_BYTES = 1_000_000
BACKUPS = 3

log = logging.getLogger(LOGGER)


def log_path(folder: Path | None = None) -> Path:
    """Where the log is written: `folder`, else the user's data folder's logs/."""
    if folder is None:
        from .settings import data_folder

        folder = data_folder() / "logs"
    return Path(folder) / FILE_NAME


def start_log(folder: Path | None = None) -> Path | None:
    """Attach the rotating file to the app's logger (once; again with another folder moves it) and return its
    path; None when the folder cannot be written (the app runs on without a log, never stops for one)."""
    path = log_path(folder)
    for handler in list(log.handlers):
        if isinstance(handler, RotatingFileHandler):
            if Path(handler.baseFilename) == path.resolve():
                return path
            log.removeHandler(handler)
            handler.close()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False  # the terminal, when there is one, gets Python's own report (gui/crash.py)
    return path


def current_log() -> Path | None:
    """The file the log is written to now, or None before start_log (or when it could not start)."""
    for handler in log.handlers:
        if isinstance(handler, RotatingFileHandler):
            return Path(handler.baseFilename)
    return None
