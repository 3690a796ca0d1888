"""The app as a desktop application: its icon, and a Linux desktop entry (the freedesktop.org Desktop Entry
Specification) that Help → Add to applications menu installs for the user, so the app starts from the
desktop's menu with its icon and without a terminal.

The entry and the icon go under the user's data home ($XDG_DATA_HOME, else ~/.local/share): applications/
gpt-explorer.desktop and icons/hicolor/scalable/apps/gpt-explorer.svg. Its Exec line is the window's own
launcher (the `gpt-explorer-gui` script that pip installs beside this interpreter), else this interpreter
running `-m gui`. Qt-free, so it is tested as plain files.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import resources
from engine.safe_io import write_whole

APP_ID = "gpt-explorer"          # the entry's file name, the icon's name and the window's class
GUI_SCRIPT = "gpt-explorer-gui"  # pyproject.toml's gui-scripts entry
ICON = Path(resources.__file__).parent / "icons" / f"{APP_ID}.svg"


def icon_path() -> Path:
    return ICON


def launcher_command() -> list[str]:
    """How the desktop starts the window: the gui script beside this interpreter, else `python -m gui`."""
    folder = Path(sys.executable).parent
    for name in (GUI_SCRIPT, GUI_SCRIPT + ".exe"):
        if (folder / name).is_file():
            return [str(folder / name)]
    return [sys.executable, "-m", "gui"]


def _exec_quote(arg: str) -> str:
    """An Exec argument as the specification quotes it: in double quotes when it has a reserved character,
    with ", `, $ and \\ escaped by a backslash."""
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`%'):
        return arg
    return '"' + "".join("\\" + c if c in '"`$\\' else c for c in arg).replace("%", "%%") + '"'


def entry_text(command: list[str], icon: str = APP_ID) -> str:
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.5",
        "Name=GPT Explorer",
        "GenericName=Transformer explorer",
        "Comment=Build a small GPT, train it live and watch its attention form",
        "Exec=" + " ".join(_exec_quote(a) for a in command),
        f"Icon={icon}",
        "Terminal=false",
        "Categories=Education;Science;ArtificialIntelligence;",
        "Keywords=GPT;transformer;attention;neural network;machine learning;",
        f"StartupWMClass={APP_ID}",
        "StartupNotify=true",
        ""])


def data_home() -> Path:
    value = os.environ.get("XDG_DATA_HOME", "")
    return Path(value) if value and Path(value).is_absolute() else Path.home() / ".local" / "share"


def install(home: Path | None = None, command: list[str] | None = None) -> list[Path]:
    """Write the desktop entry and its icon under `home` (the user's data home); returns the two paths."""
    home = home or data_home()
    icon = home / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg"
    entry = home / "applications" / f"{APP_ID}.desktop"
    for path, data in ((icon, ICON.read_bytes()),
                       (entry, entry_text(command or launcher_command()).encode("utf-8"))):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, lambda tmp, data=data: tmp.write_bytes(data))
    return [entry, icon]


def describe_command(command: list[str]) -> str:
    return shlex.join(command)
