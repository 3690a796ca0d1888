"""Before Qt loads on Linux, the app checks the X11 libraries of Qt's xcb plugin and names the packages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gui import display_libraries as dl


@pytest.mark.parametrize("environ,platform,expected", [
    ({"DISPLAY": ":0"}, "linux", True),
    ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, "linux", False),
    ({"WAYLAND_DISPLAY": "wayland-0", "QT_QPA_PLATFORM": "xcb"}, "linux", True),
    ({"QT_QPA_PLATFORM": "offscreen"}, "linux", False),
    ({"QT_QPA_PLATFORM": "wayland;xcb"}, "linux", False),
    ({"DISPLAY": ":0"}, "darwin", False),
    ({}, "win32", False),
])
def test_only_a_linux_start_on_xcb_is_checked(environ, platform, expected):
    assert dl.uses_xcb(environ, platform) is expected


def test_the_missing_libraries_are_named_with_their_debian_and_fedora_packages():
    gone = {"libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"}
    missing = dl.missing_libraries(loads=lambda name: name not in gone)
    assert missing == ["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    hint = dl.install_hint(missing)
    assert "\n" not in hint
    assert "sudo apt install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1" in hint
    assert "sudo dnf install xcb-util-cursor xcb-util-wm xcb-util-keysyms" in hint
    # several libraries from one Fedora package name it once
    assert dl.install_hint(["libxcb-shm.so.0", "libxcb-xkb.so.1"]).count("libxcb'") == 1
    assert dl.missing_libraries(loads=lambda name: True) == []


def test_a_library_that_exists_loads_and_one_that_does_not_is_missing():
    assert dl._loads("libc.so.6") and not dl._loads("libno-such-library-gpt-explorer.so.0")


def test_the_app_refuses_to_start_in_one_line_with_exit_2(monkeypatch, capsys):
    import gui.app
    from gui.cli import main

    monkeypatch.setattr(dl, "uses_xcb", lambda: True)
    monkeypatch.setattr(dl, "missing_libraries", lambda: ["libxcb-icccm.so.4"])
    monkeypatch.setattr(gui.app, "run_app", lambda **_: pytest.fail("Qt's app started"))
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "apt install libxcb-icccm4" in err and "dnf install xcb-util-wm" in err


def test_the_readme_names_the_packages_beside_its_two_commands():
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    head = readme.split("## ", 1)[0]
    assert len(re.findall(r"^```sh$", head, re.M)) == 2
    for package in ("libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "xcb-util-wm", "xcb-util-keysyms"):
        assert package in head
