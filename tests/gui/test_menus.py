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


def test_save_checkpoint_writes_one_and_says_where_and_new_run_stops_training_and_forgets_the_run(qtbot,
                                                                                                 make_window):
    """(One window and one run trained a little for both: each built and trained its own.)"""
    w = make_window()
    assert not w.actions["save"].isEnabled()
    train_a_little(qtbot, w)
    w.actions["save"].trigger()
    qtbot.waitUntil(lambda: w.banner.text.startswith("Checkpoint saved:"), timeout=WAIT)
    step = w.session.step
    assert (w.controller.run_dir / "checkpoints" / f"step-{step:06d}").is_dir()

    # New run stops training (paused here, as train_a_little leaves it) and forgets the run
    assert w.session.training_state == "paused"
    old = w.controller.run_dir
    w.actions["new_run"].trigger()
    assert w.windowTitle() == "GPT Explorer — new run" and w.session.run is None
    assert w.session.training_state == "idle" and not w.controller.alive
    assert w.panes["pane_training"].history.steps == []
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=WAIT) as first:
        w.actions["train"].trigger()
    assert first.args[0].step == 1 and w.controller.run_dir != old


def test_cancelling_open_run_changes_nothing_and_open_run_from_the_menu_shows_it(qtbot, make_window, monkeypatch):
    """(One window for both.)"""
    w = make_window()
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: None)
    w.actions["open_run"].trigger()
    assert w.windowTitle() == "GPT Explorer — new run" and not w.banner.isVisible()

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


def test_opening_another_run_while_training_asks_first(qtbot, make_window, tmp_path, monkeypatch,
                                                        stop_training_when_asked):
    """Issue 40: opening another run while one trained stopped the training without a word (nothing was lost,
    but nothing was asked either). Now the window asks; No leaves training going."""
    from tests.engine.cli.test_export_cli import tiny_run

    other = tiny_run(tmp_path / "other")
    w = make_window()
    w.session.request_training("train")
    qtbot.waitUntil(lambda: w.session.step >= 2, timeout=WAIT)
    monkeypatch.setattr(dialogs, "ask_stop_training", lambda _parent, doing: stop_training_when_asked.append(doing)
                        and False)
    assert not w.open_run(other.path) and not w.new_run()
    assert stop_training_when_asked == ["open other", "start a new run"]
    assert w.session.training_state == "running" and w.controller.run_dir != other.path
    monkeypatch.setattr(dialogs, "ask_stop_training", lambda _parent, doing: True)
    assert w.open_run(other.path)
    assert w.session.run.path == other.path and not w.controller.alive
    assert not w.open_run(tmp_path / "not-a-run")  # refused in the banner, not opened
