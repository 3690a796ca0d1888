"""What the app remembers between sessions: window geometry and dock layout, theme, runs folder, the
last folders a file dialog visited, the resolution of exported figures, and per run what its panes were
showing (the heatmap prompt, the Forms source) (QSettings, INI format, per user).

`save_window_state` is undone by `restore_geometry` (before the window shows) and `restore_layout` (once
its docks exist), as napari and Spyder do. The saved layout carries a version and the list of panes it was
made with; a layout from another version, another set of panes, or
one Qt cannot read is dropped and the window keeps its default layout. Nothing read here may stop the app
from starting: every read falls back to a default.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, QStandardPaths
from PySide6.QtWidgets import QMainWindow

ORGANIZATION = "gpt-explorer"
APPLICATION = "gpt-explorer"
# Bump when the default layout or the meaning of the saved state changes.
STATE_VERSION = 4  # 4: a small screen's control column and view area; the run browser's panes with the views
THEMES = ("dark", "light")


def qsettings() -> QSettings:
    """The app's settings store (tests point IniFormat's user path at a temporary folder)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION)


def _read(key: str, default, kind: type):
    """A value of the expected type, or the default when it is missing or garbage."""
    try:
        value = qsettings().value(key, default)
    except Exception:  # noqa: BLE001 — a corrupt store must not stop start-up
        return default
    if kind is bytes:
        return bytes(value.data()) if isinstance(value, QByteArray) else default
    if kind is str:
        return value if isinstance(value, str) else default
    try:
        return kind(value)
    except (TypeError, ValueError):
        return default


def save_window_state(window: QMainWindow, panes: list[str]) -> None:
    s = qsettings()
    s.setValue("window/version", STATE_VERSION)
    s.setValue("window/panes", ",".join(panes))
    s.setValue("window/geometry", window.saveGeometry())
    s.setValue("window/state", window.saveState(STATE_VERSION))
    s.sync()


def restore_geometry(window: QMainWindow) -> bool:
    """The window's size and place, before it is shown; False when there is none usable."""
    geometry = _read("window/geometry", b"", bytes)
    if _read("window/version", -1, int) != STATE_VERSION or not geometry:
        return False
    return bool(window.restoreGeometry(QByteArray(geometry)))


def restore_layout(window: QMainWindow, panes: list[str]) -> bool:
    """The docks' layout, once they exist; False (the default layout kept) when it was saved by another
    version or with other panes, or Qt cannot read it."""
    if _read("window/version", -1, int) != STATE_VERSION or _read("window/panes", "", str) != ",".join(panes):
        return False
    state = _read("window/state", b"", bytes)
    return bool(state) and bool(window.restoreState(QByteArray(state), STATE_VERSION))


def clear_window_state() -> None:
    s = qsettings()
    for key in ("window/version", "window/panes", "window/geometry", "window/state"):
        s.remove(key)


def theme() -> str:
    name = _read("view/theme", "dark", str)
    return name if name in THEMES else "dark"


def set_theme(name: str) -> None:
    qsettings().setValue("view/theme", name)


def data_folder() -> Path:
    """The user's data folder for the app (~/.local/share/gpt-explorer on Linux): runs, the log, the sample."""
    return Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation))


def runs_root() -> Path:
    """Where new runs are created: the setting, else the user's data folder."""
    default = data_folder() / "runs"
    value = _read("runs/root", "", str)
    return Path(value) if value else default


def set_runs_root(path: Path | str) -> None:
    qsettings().setValue("runs/root", str(path))


def last_folder(kind: str) -> str:
    return _read(f"dialogs/{kind}", "", str)


def set_last_folder(kind: str, folder: Path | str) -> None:
    qsettings().setValue(f"dialogs/{kind}", str(folder))


def export_dpi() -> int:
    """The resolution last chosen for an exported figure."""
    return _read("export/dpi", 150, int)


def set_export_dpi(dpi: int) -> None:
    qsettings().setValue("export/dpi", int(dpi))


def _run_key(run_dir: Path | str, key: str) -> str:
    digest = hashlib.sha1(str(Path(run_dir).resolve()).encode("utf-8")).hexdigest()[:16]
    return f"runs/{digest}/{key}"


def run_value(run_dir: Path | str, key: str) -> str:
    """What the user chose in a pane for one run (a heatmap prompt, the Forms source); "" when nothing."""
    return _read(_run_key(run_dir, key), "", str)


def set_run_value(run_dir: Path | str, key: str, value: str) -> None:
    qsettings().setValue(_run_key(run_dir, key), value)


def saved_config() -> str:
    """The builder's config (TOML) when the app was last closed; "" when none."""
    return _read("builder/config", "", str)


def set_saved_config(text: str) -> None:
    qsettings().setValue("builder/config", text)
