"""What the app remembers between sessions: window geometry and dock layout, theme, runs folder, the
last folders a file dialog visited, the resolution of exported figures, and per run what its panes were
showing (the heatmap prompt, the Forms source) (QSettings, INI format, per user).

`save_window_state` is undone by `restore_geometry` (before the window shows) and `restore_layout` (once
its docks exist), as napari and Spyder do. The saved layout carries a version and the list of panes it was
made with; a layout from another version, another set of panes, or
one Qt cannot read is dropped and the window keeps its default layout. So is a layout made for a larger
screen than the one the window opens on (`fits_screen`): a layout saved at 1600×1000 and restored at 1280×720
had its panes cramped and clipped and its tabs elided ("Heatma…") until View → Reset layout. Nothing read here may stop the app
from starting: every read falls back to a default.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, QSize, QStandardPaths
from PySide6.QtWidgets import QMainWindow

ORGANIZATION = "gpt-explorer"
APPLICATION = "gpt-explorer"
# Bump when the default layout or the meaning of the saved state changes.
STATE_VERSION = 5  # 5: the window's and the screen's sizes are saved with the layout (fits_screen)
THEMES = ("dark", "light")


_store: QSettings | None = None


def qsettings() -> QSettings:
    """The app's settings store, one for the app: Qt writes what changed to the INI a turn later, once for all
    the values set in that turn. A QSettings made per call wrote the whole INI as each was destroyed, on the
    GUI thread (10-46 ms when the disk was busy; issue 37). GUI thread only (a QSettings is not thread-safe)."""
    global _store
    if _store is None:
        _store = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION)
    return _store


def reopen() -> None:
    """Write what is pending and let the next `qsettings` open the store where IniFormat's user path points
    now (tests point it at a temporary folder)."""
    global _store
    if _store is not None:
        _store.sync()
    _store = None


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


def _size_text(size: QSize) -> str:
    return f"{size.width()}x{size.height()}"


def _read_size(key: str) -> QSize | None:
    try:
        w, h = (int(v) for v in _read(key, "", str).split("x"))
    except ValueError:
        return None
    return QSize(w, h) if w > 0 and h > 0 else None


def save_window_state(window: QMainWindow, panes: list[str], screen: QSize) -> None:
    """The window's geometry and dock layout, with its size (frame included) and the available size of the
    screen it was on (`screen`), which decide whether it may be restored on another screen."""
    s = qsettings()
    s.setValue("window/version", STATE_VERSION)
    s.setValue("window/panes", ",".join(panes))
    s.setValue("window/frame", _size_text(window.frameGeometry().size()))
    s.setValue("window/screen", _size_text(screen))
    s.setValue("window/geometry", window.saveGeometry())
    s.setValue("window/state", window.saveState(STATE_VERSION))
    s.sync()


def fits_screen(screen: QSize) -> bool:
    """Whether the saved layout may be restored on a screen whose available size is `screen`: it was saved on
    a screen of that size, or its window, frame included, fits this one (an empty `screen`: unknown, yes)."""
    saved_screen, frame = _read_size("window/screen"), _read_size("window/frame")
    if screen.isEmpty() or saved_screen == screen:
        return True
    return frame is not None and frame.width() <= screen.width() and frame.height() <= screen.height()


def restore_geometry(window: QMainWindow, screen: QSize) -> bool:
    """The window's size and place, before it is shown; False when there is none usable on this screen."""
    geometry = _read("window/geometry", b"", bytes)
    if _read("window/version", -1, int) != STATE_VERSION or not geometry or not fits_screen(screen):
        return False
    return bool(window.restoreGeometry(QByteArray(geometry)))


def restore_layout(window: QMainWindow, panes: list[str], screen: QSize) -> bool:
    """The docks' layout, once they exist; False (the default layout kept) when it was saved by another
    version, with other panes or for a larger screen, or Qt cannot read it."""
    if _read("window/version", -1, int) != STATE_VERSION or _read("window/panes", "", str) != ",".join(panes) \
            or not fits_screen(screen):
        return False
    state = _read("window/state", b"", bytes)
    return bool(state) and bool(window.restoreState(QByteArray(state), STATE_VERSION))


def clear_window_state() -> None:
    s = qsettings()
    for key in ("window/version", "window/panes", "window/geometry", "window/state", "window/frame",
                "window/screen"):
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


def show_welcome() -> bool:
    """Whether the welcome opens at start (until its box is unticked)."""
    return _read("first_run/welcome", "true", str) != "false"


def set_show_welcome(on: bool) -> None:
    qsettings().setValue("first_run/welcome", "true" if on else "false")


def saved_config() -> str:
    """The builder's config (TOML) when the app was last closed; "" when none."""
    return _read("builder/config", "", str)


def set_saved_config(text: str) -> None:
    qsettings().setValue("builder/config", text)
