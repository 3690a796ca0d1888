"""The runs the app remembers: the recently opened ones (File → Recent runs, and the run reopened at start)
and the folders the run browser lists besides the runs folder. Stored with the app's other settings
(gui/settings.py's QSettings); a garbage value reads as empty, and a remembered run that is gone is skipped.
"""

from __future__ import annotations

from pathlib import Path

from engine.rundir.listing import is_run

from . import settings

MAX_RECENT = 10


def _paths(key: str) -> list[Path]:
    try:
        value = settings.qsettings().value(key, [])
    except Exception:  # noqa: BLE001 — a corrupt store must not stop start-up
        return []
    value = [value] if isinstance(value, str) else value
    return [Path(v) for v in value if isinstance(v, str) and v] if isinstance(value, list) else []


def _store(key: str, paths: list[Path]) -> None:
    settings.qsettings().setValue(key, [str(p) for p in paths])


def recent_runs() -> list[Path]:
    """Recently opened runs that still exist, newest first."""
    return [p for p in _paths("runs/recent") if is_run(p)]


def add_recent_run(path: str | Path) -> None:
    path = Path(path).resolve()
    _store("runs/recent", ([path] + [p for p in _paths("runs/recent") if p != path])[:MAX_RECENT])


def run_to_reopen() -> str | None:
    """The run open when the app was last used, if it is still a run."""
    runs = recent_runs()
    return str(runs[0]) if runs else None


def browsed_folders() -> list[Path]:
    """The runs folder, then the folders the user added to the browser."""
    root = settings.runs_root()
    return [root] + [p for p in _paths("runs/folders") if p != root]


def add_browsed_folder(path: str | Path) -> None:
    path = Path(path).resolve()
    extra = [p for p in _paths("runs/folders") if p != path]
    _store("runs/folders", extra + [path])


def remove_browsed_folder(path: str | Path) -> None:
    _store("runs/folders", [p for p in _paths("runs/folders") if p != Path(path)])
