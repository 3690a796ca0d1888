"""File and Training menus and their shortcuts, used the way a user does."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gui.widgets import dialogs

from .conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 20_000


def train_a_little(qtbot, w, steps: int = 3) -> None:
    w.session.request_training("train")
    qtbot.waitUntil(lambda: w.session.step >= steps, timeout=WAIT)
    w.session.request_training("pause")
    qtbot.waitUntil(lambda: w.session.training_state == "paused", timeout=WAIT)


def test_f5_trains_and_f6_pauses_and_resumes(qtbot, make_window):
    w = make_window()
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=WAIT)
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=WAIT):
        qtbot.keyClick(w, Qt.Key.Key_F5)
    qtbot.keyClick(w, Qt.Key.Key_F6)
    qtbot.waitUntil(lambda: w.session.training_state == "paused", timeout=WAIT)
    assert w.actions["pause_resume"].text() == "&Resume"
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=WAIT):
        qtbot.keyClick(w, Qt.Key.Key_F6)


def test_save_checkpoint_writes_one_and_says_where(qtbot, make_window):
    w = make_window()
    assert not w.actions["save"].isEnabled()
    train_a_little(qtbot, w)
    w.actions["save"].trigger()
    qtbot.waitUntil(lambda: w.banner.text.startswith("Checkpoint saved:"), timeout=WAIT)
    step = w.session.step
    assert (w.controller.run_dir / "checkpoints" / f"step-{step:06d}").is_dir()


def test_new_run_stops_training_and_forgets_the_run(qtbot, make_window):
    w = make_window()
    train_a_little(qtbot, w)
    old = w.controller.run_dir
    w.actions["new_run"].trigger()
    assert w.windowTitle() == "GPT Explorer — new run" and w.session.run is None
    assert w.session.training_state == "idle" and not w.controller.alive
    assert w.panes["pane_training"].history.steps == []
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=WAIT) as first:
        w.actions["train"].trigger()
    assert first.args[0].step == 1 and w.controller.run_dir != old


def test_open_run_from_the_menu_shows_it(qtbot, make_window, monkeypatch):
    w = make_window()
    train_a_little(qtbot, w, steps=4)
    w.session.request_training("stop")
    qtbot.waitUntil(lambda: w.session.training_state == "stopped", timeout=WAIT)
    run_dir, step = w.controller.run_dir, w.session.step
    w.actions["new_run"].trigger()
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: run_dir)
    w.actions["open_run"].trigger()
    assert w.windowTitle() == f"GPT Explorer — {run_dir.name}"
    assert w.panes["pane_training"].history.last_step == step
    assert w.step_label.text() == f"step {step:,} / {w.session.config.train.steps:,}"


def test_cancelling_open_run_changes_nothing(qtbot, make_window, monkeypatch):
    w = make_window()
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: None)
    w.actions["open_run"].trigger()
    assert w.windowTitle() == "GPT Explorer — new run" and not w.banner.isVisible()
