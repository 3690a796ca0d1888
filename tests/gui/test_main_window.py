"""The main window: docks and their remembered layout, menus, banner, title and status bar, and the real
app booted in a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication, QDockWidget

from gui import settings, theme
from gui.main_window import DEFAULT_SIZE
from gui.panes import pane_classes
from tests.child_work import CAP_S

from .conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


def settings_file() -> str:
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, settings.ORGANIZATION,
                     settings.APPLICATION).fileName()


def test_every_pane_is_a_named_dock_listed_in_the_view_menu_and_menus_have_the_helps_shortcuts(make_window):
    """And the theme switches between dark and light and is remembered. (One window for the three.)"""
    w = make_window()
    names = [cls.object_name for cls in pane_classes()]
    assert w.pane_names == names and {"pane_architecture", "pane_training"} <= set(names)
    view = next(a.menu() for a in w.menu_bar.actions() if a.text() == "&View")
    listed = [a.text() for a in view.actions()]
    for name in names:
        dock = w.findChild(QDockWidget, name)
        assert dock.windowTitle() in listed and dock.isVisible()
    a = w.actions
    shortcuts = {k: a[k].shortcut().toString() for k in ("train", "pause_resume", "step", "save", "export")}
    assert shortcuts == {"train": "F5", "pause_resume": "F6", "step": "F10", "save": "Ctrl+S", "export": "Ctrl+E"}

    # the theme switches between dark and light and is remembered
    app = QApplication.instance()
    try:
        w.actions["theme_light"].trigger()
        assert app.palette().window().color().lightness() > 200 and settings.theme() == "light"
        w.actions["theme_dark"].trigger()
        assert app.palette().window().color().lightness() < 80 and settings.theme() == "dark"
    finally:
        theme.apply_theme(app, "dark")


def test_a_closed_pane_reopens_from_the_view_menu_and_reset_layout_puts_every_pane_back(qtbot, make_window):
    """(One window for both.)"""
    w = make_window()
    dock = w.docks["pane_training"]
    dock.close()
    assert not dock.isVisible()
    dock.toggleViewAction().trigger()
    assert dock.isVisible()

    w.docks["pane_training"].close()
    w.tabifyDockWidget(w.docks["pane_architecture"], w.docks["pane_training"])
    w.actions["reset_layout"].trigger()
    assert all(d.isVisible() for d in w.docks.values())
    assert w.docks["pane_training"] not in w.tabifiedDockWidgets(w.docks["pane_architecture"])


def test_the_layout_survives_a_restart_and_one_saved_by_another_version_or_garbage_falls_back(qtbot, make_window):
    """The layout survives a restart; one saved by another version falls back to the default; a garbage
    settings file does not prevent start-up. (One chain of windows, each saving what the next opens: six
    windows before, four now.)"""
    w = make_window()
    assert not w.layout_restored  # first start: the default layout
    w.tabifyDockWidget(w.docks["pane_architecture"], w.docks["pane_training"])
    w.resize(w.width(), 700)
    w.close()
    again = make_window()
    assert again.layout_restored
    assert again.docks["pane_training"] in again.tabifiedDockWidgets(again.docks["pane_architecture"])
    # (only the height: the offscreen screen is narrower than the window, and restoring clamps widths)
    assert again.height() == 700 != DEFAULT_SIZE[1]

    # a layout saved by another version falls back to the default
    again.docks["pane_training"].close()
    again.close()
    QSettings(settings_file(), QSettings.Format.IniFormat).setValue("window/version", settings.STATE_VERSION - 1)
    other = make_window()
    assert not other.layout_restored and other.docks["pane_training"].isVisible()

    # a garbage settings file does not prevent start-up
    other.close()  # writes a real settings file
    path = settings_file()
    with open(path, "wb") as f:
        f.write(b"\x00\xff garbage [window]\nstate=@ByteArray(\x01\x02)\ngeometry=12\nversion=zz\n\x89PNG")
    settings.reopen()  # as a new start does: the app's one store opened on the file as it is now
    last = make_window()
    assert not last.layout_restored
    assert all(d.isVisible() for d in last.docks.values())


def test_a_restored_layout_keeps_its_closed_panes_closed_and_the_widths_of_the_others(qtbot, make_window):
    """As the app starts: the window shows first and its panes are built after, in a restored layout (and the
    window shows before its panes are built: checked on the same window)."""
    from gui.main_window import MainWindow

    w = make_window()
    closed = w.pane_names[2:]  # every pane of the third column: two columns fit the offscreen screen
    for name in closed:
        w.docks[name].close()
    qtbot.wait(50)  # their room is given back before the window can be narrower
    w.resize(790, 700)
    w.resizeDocks([w.docks["pane_architecture"]], [300], Qt.Orientation.Horizontal)
    qtbot.wait(100)
    before = w.docks["pane_architecture"].width()
    w.close()
    again = MainWindow(panes_after_show=True)
    qtbot.addWidget(again)
    # the window shows before its panes are built (one window for this and the restored layout)
    assert not again.docks and again.loading.text() == "Loading panes…"
    with qtbot.waitSignals([again.sig_first_painted, again.sig_panes_ready], order="strict", timeout=20_000):
        again.show()
    assert again.docks and not again.loading.isVisible()
    assert {"Architecture", "Training"} <= {a.text() for a in again.view_menu.actions()}
    assert again.layout_restored
    qtbot.wait(50)
    assert not any(again.docks[name].isVisible() for name in closed)
    assert again.width() == 790
    assert abs(again.docks["pane_architecture"].width() - before) <= 2


def test_a_layout_saved_on_a_larger_screen_is_not_restored_on_a_smaller_one(qtbot, make_window, monkeypatch):
    """Issue 40: a layout saved at 1600×1000 and reopened at 1280×720 came back cramped and clipped, its tabs
    elided, until View → Reset layout. It is restored only on a screen it fits, else the screen's default."""
    from PySide6.QtCore import QRect

    from gui.main_window import MainWindow

    screen = {"now": QRect(0, 0, 1600, 1000)}
    monkeypatch.setattr(MainWindow, "_available", lambda self: screen["now"])
    w = make_window()
    assert len(w._columns) == 3  # the wide screen's three columns
    w.resize(1480, 900)
    w.tabifyDockWidget(w.docks["pane_architecture"], w.docks["pane_training"])
    w.close()

    screen["now"] = QRect(0, 0, 1280, 720)
    small = make_window()
    assert not small.layout_restored and len(small._columns) == 2  # the laptop's default layout
    assert small.width() <= 1280 - 16 and small.height() <= 720 - 40
    assert small.docks["pane_training"] not in small.tabifiedDockWidgets(small.docks["pane_architecture"])
    small.close()

    screen["now"] = QRect(0, 0, 1600, 1000)  # saved on the laptop, it fits the larger screen
    assert make_window().layout_restored  # (its size: Qt clamps it to the real offscreen screen)


def test_a_pane_on_a_tab_behind_another_is_not_seen_and_computes_nothing(qtbot, make_window, corpus_file):
    from .conftest import tiny_config

    w = make_window(tiny_config(corpus_file, snapshot_every=5, steps=30))
    heat, weight = w.panes["pane_heatmaps"], w.panes["pane_weight"]
    w.docks["pane_heatmaps"].raise_()
    assert weight.isVisible()  # what Qt says of a dock tabbed behind another: why panes ask seen()
    qtbot.waitUntil(lambda: heat.seen() and not weight.seen())
    assert w.session.weights_every == heat.view.refresh_every
    w.actions["train"].trigger()
    qtbot.waitUntil(lambda: w.session.training_state == "finished", timeout=30_000)
    assert weight.view.table is None  # unseen, it opened no run and computed no coefficient

    w.docks["pane_weight"].raise_()
    qtbot.waitUntil(lambda: weight.seen() and not heat.seen())
    assert w.session.weights_every == 0  # the Heatmaps pane withdrew its wish for weight copies
    qtbot.waitUntil(lambda: weight.view.table is not None, timeout=30_000)


def test_a_bad_run_directory_is_a_banner_and_a_new_run(qtbot, make_window, tmp_path):
    w = make_window(run_dir=tmp_path / "no-such-run")
    assert w.banner.isVisible() and w.banner.level == "error"
    assert "Cannot open the run" in w.banner.text and "no-such-run" in w.banner.text
    assert w.windowTitle() == "GPT Explorer — new run"
    qtbot.mouseClick(w.banner._close, Qt.MouseButton.LeftButton)
    assert not w.banner.isVisible()


def test_a_run_with_an_absurd_config_is_a_banner_before_anything_is_allocated(qtbot, make_window, tmp_path):
    from engine.configs.config import ExperimentConfig

    run_dir = tmp_path / "absurd"
    run_dir.mkdir()
    (run_dir / "config.toml").write_text(ExperimentConfig().to_toml().replace("n_ctx = 64", "n_ctx = 100000000"))
    w = make_window(run_dir=run_dir)
    assert w.banner.isVisible() and w.banner.level == "error"
    assert "Cannot open the run" in w.banner.text and "n_ctx" in w.banner.text


def test_the_real_app_boots_and_a_terminate_closes_its_window_and_saves(tmp_path):
    """The app as a user starts it, in a subprocess: it shows, builds its panes, logs the session's versions,
    and kill (or Ctrl+C in the terminal) closes the window as its close button does, with no traceback.
    (One boot for both: each was a Python importing torch and Qt, ~3 s of CPU.)"""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", GPT_EXPLORER_REPORT_SHOWN="1", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    env.pop("GPT_EXPLORER_QUIT_AFTER_MS", None)
    app = subprocess.Popen([sys.executable, "-m", "gui.cli", "gui"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert app.stdout.readline().startswith("shown ")
        assert app.stdout.readline().startswith("ready ")  # the panes are built
        app.send_signal(signal.SIGTERM)
        _, err = app.communicate(timeout=CAP_S)
    finally:
        app.kill()
    assert app.returncode == 0, err
    assert "SIGTERM: closing the window" in err and "Traceback" not in err
    assert (tmp_path / "config" / settings.ORGANIZATION / f"{settings.APPLICATION}.ini").is_file()
    # the session's versions went to the log in the user's data folder (gui/log.py)
    logged = (tmp_path / "data" / settings.APPLICATION / "logs" / "gpt-explorer.log").read_text()
    assert "started" in logged and "torch: " in logged and "Qt: PySide6" in logged


EXIT_WITH_A_QUEUE = """
import multiprocessing
import sys
import gui.app, gui.main_window
print("torch" in sys.modules, flush=True)  # what importing the window loaded
from gui.app import exit_now
queue = multiprocessing.get_context("spawn").Queue()  # as a child job or an import holds one
queue.put(1)
queue.get()
print("quitting", flush=True)
exit_now(3)
"""


def test_the_windows_frame_needs_no_torch_and_quitting_without_the_teardown_still_runs_the_exit_handlers():
    """The window shows its frame before it builds the panes; torch (~0.7 s of a start on a quiet machine)
    loads after that, when the panes are built: a fresh interpreter importing the window must not load it.
    The app ends with os._exit once its window has closed (issue 40: the teardown was 3.4 s of a quit), but
    the exit handlers run: without them multiprocessing's resource tracker printed 'leaked semaphore objects'
    in the terminal at every quit after an import or a child job. (One fresh interpreter for both.)"""
    done = subprocess.run([sys.executable, "-c", EXIT_WITH_A_QUEUE], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.stdout.splitlines()[:1] == ["False"], done.stderr  # no torch
    assert done.returncode == 3 and done.stdout.splitlines()[1:] == ["quitting"]
    assert "leaked" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_first_layout_on_screen_is_the_final_one(qtbot, monkeypatch):
    """Issue 26, item 10: seconds after the window appeared the whole window reflowed: its docks jumped from
    Qt's first guess to the default widths, and the builder's count lost a line when the corpus's vocabulary
    replaced the preset's (65 → 80) and moved the diagram. A newcomer's start: fresh settings, the default
    preset and the bundled corpus, panes built after the window shows."""
    import threading

    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QWidget

    from gui.app import make_application
    from gui.main_window import MainWindow
    from gui.panes.architecture import pane as builder

    monkeypatch.setattr(MainWindow, "_available", lambda self: QRect(0, 0, 1280, 720))
    # the corpus is read once the window is on screen, as at a first start (a test before this one may have
    # left it in the process's cache, which would answer before the panes show)
    on_screen, inspect = threading.Event(), builder._inspect
    monkeypatch.setattr(builder, "_inspect", lambda cfg, run_dir: on_screen.wait(60) and inspect(cfg, run_dir))
    make_application()
    w = MainWindow(panes_after_show=True)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: bool(w.docks) and w.updatesEnabled(), timeout=20_000)  # painted from here on

    def layout() -> dict[str, tuple]:
        out = {}
        for name, dock in w.docks.items():
            out[name] = (dock.geometry().getRect(), dock.visibleRegion().isEmpty())
            if not dock.visibleRegion().isEmpty():
                for i, widget in enumerate(w.panes[name].findChildren(QWidget)):
                    if widget.isVisible():
                        out[f"{name}/{i}/{widget.objectName()}"] = widget.geometry().getRect()
        return out

    first, vocab = layout(), w.session.config.model.vocab_size
    count = w.panes["pane_architecture"].params
    before = count.text()
    assert "reading the corpus" in before  # the count is shown before the corpus is read
    on_screen.set()
    qtbot.waitUntil(lambda: "reading the corpus" not in count.text(), timeout=60_000)
    qtbot.wait(100)
    assert w.session.config.model.vocab_size != vocab  # the vocabulary did change under the window...
    assert layout() == first  # ...and nothing moved
    after = count.text()

    def height(text: str, width: int) -> int:
        count.setText(text)
        return max(count.minimumHeight(), count.heightForWidth(width))

    least = w.panes["pane_architecture"].minimumSizeHint().width() - 20  # the label in the narrowest pane
    for width in range(least, 1001, 10):  # in a dock of any width, as here
        assert height(before, width) == height(after, width), width


def test_what_lives_once_the_panes_are_built_is_out_of_the_collectors_full_passes(qtbot, make_window):
    """A full pass over the ~230,000 objects alive after start held the interpreter lock ~110 ms on the GUI
    thread; the window freezes them once its panes are built (gc.freeze)."""
    import gc

    gc.unfreeze()  # an earlier window in this process froze its own
    w = make_window()
    qtbot.waitUntil(lambda: bool(w.panes), timeout=30_000)
    qtbot.waitUntil(lambda: gc.get_freeze_count() > 0, timeout=30_000)
    assert gc.get_freeze_count() > 50_000 and "torch" in __import__("sys").modules
