"""The app as a desktop application (issue 40): two entry points (a console script for the command line, a
gui script for the window), a window icon, and a Linux desktop entry installed for the user."""

from __future__ import annotations

import configparser
import fnmatch
import tomllib
from pathlib import Path

import pytest

from gui import desktop_entry

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_declares_a_console_script_and_a_gui_script_and_ships_the_icon():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"]["gpt-explorer"] == "gui.cli:main"
    assert project["project"]["gui-scripts"][desktop_entry.GUI_SCRIPT] == "gui.cli:main_window"
    shipped = project["tool"]["setuptools"]["package-data"]["resources"]
    resources = ROOT / "resources"
    files = [p.relative_to(resources).as_posix() for p in resources.rglob("*") if p.is_file()]
    for pattern in shipped:  # a declared pattern that matches nothing ships nothing
        assert any(fnmatch.fnmatch(f, pattern) for f in files), pattern
    assert any(fnmatch.fnmatch("icons/gpt-explorer.svg", p) for p in shipped)


def test_the_gui_entry_point_launches_the_window_with_the_gui_commands_options(monkeypatch):
    from gui import cli

    seen = []
    monkeypatch.setattr(cli, "_launch", lambda args: seen.append(args.run) or 0)
    assert cli.main_window(["--run", "some/run"]) == 0 and seen == ["some/run"]


def test_the_window_has_the_apps_icon(make_window):
    from PySide6.QtWidgets import QApplication

    w = make_window()
    icon = w.windowIcon()
    assert not icon.isNull()
    image = icon.pixmap(64, 64).toImage()
    assert image.width() == 64 and image.pixelColor(32, 32).alpha() > 0  # drawn, not an empty pixmap
    assert QApplication.instance().desktopFileName() == desktop_entry.APP_ID


def test_the_desktop_entry_starts_the_window_script_with_its_icon(tmp_path):
    command = [str(tmp_path / "my venv" / "bin" / desktop_entry.GUI_SCRIPT)]
    entry, icon = desktop_entry.install(tmp_path / "share", command)
    assert entry == tmp_path / "share/applications/gpt-explorer.desktop"
    assert icon.read_bytes() == desktop_entry.icon_path().read_bytes() and icon.suffix == ".svg"
    parsed = configparser.ConfigParser(interpolation=None)
    parsed.optionxform = str
    parsed.read(entry, encoding="utf-8")
    e = parsed["Desktop Entry"]
    assert e["Type"] == "Application" and e["Name"] == "GPT Explorer" and e["Terminal"] == "false"
    assert e["Icon"] == desktop_entry.APP_ID and e["StartupWMClass"] == desktop_entry.APP_ID
    assert e["Exec"] == f'"{command[0]}"'  # quoted: the path has a space
    assert e["Categories"].endswith(";")


def test_the_launcher_is_the_gui_script_beside_the_interpreter_else_python_m_gui(tmp_path, monkeypatch):
    import sys

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert desktop_entry.launcher_command() == [str(tmp_path / "python"), "-m", "gui"]
    (tmp_path / desktop_entry.GUI_SCRIPT).write_text("#!/bin/sh\n")
    assert desktop_entry.launcher_command() == [str(tmp_path / desktop_entry.GUI_SCRIPT)]


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="desktop entries are Linux's")
def test_help_adds_the_app_to_the_applications_menu(make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    w = make_window()
    w.actions["desktop_entry"].trigger()
    assert (tmp_path / "data/applications/gpt-explorer.desktop").is_file()
    assert (tmp_path / "data/icons/hicolor/scalable/apps/gpt-explorer.svg").is_file()
    assert w.banner.level == "info" and "applications menu" in w.banner.text
