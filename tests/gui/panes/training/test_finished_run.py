"""Train on a finished run asks (issue 16, item 9): continue it for more steps in the same run directory, or
start a new run; cancelling starts nothing."""

from __future__ import annotations

import pytest

from gui.widgets import dialogs

from ...conftest import QT_NOISE, tiny_config

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 60_000


@pytest.fixture
def finished(qtbot, make_window, corpus_file):
    w = make_window(tiny_config(corpus_file, steps=20, checkpoint_every=10, snapshot_every=10, eval_every=10))
    w.actions["train"].trigger()
    qtbot.waitUntil(lambda: w.session.training_state == "finished", timeout=WAIT)
    return w


def answer(monkeypatch, reply):
    asked = []

    def ask(parent, trained, more):
        asked.append((trained, more))
        return reply

    monkeypatch.setattr(dialogs, "ask_finished_run", ask)
    return asked


def test_continue_trains_the_same_run_for_the_steps_asked_new_run_another_and_cancel_nothing(qtbot, finished,
                                                                                             monkeypatch):
    """Two tests that each trained a run to its end first, as one (issue 42: a window and a training fewer)."""
    w = finished
    run_dir = w.controller.run_dir
    asked = answer(monkeypatch, ("continue", 10))
    w.actions["train"].trigger()
    assert asked == [(20, 10)]
    qtbot.waitUntil(lambda: w.session.training_state == "finished", timeout=WAIT)
    assert w.controller.run_dir == run_dir
    assert w.session.config.train.steps == 30 and w.session.run.checkpoint_steps()[-1] == 30

    # cancel starts nothing; a new run starts another directory
    answer(monkeypatch, None)
    w.actions["train"].trigger()
    assert w.session.training_state == "finished" and not w.controller.alive
    answer(monkeypatch, ("new", 0))
    w.actions["train"].trigger()
    qtbot.waitUntil(lambda: w.session.training_state == "finished" and w.controller.run_dir != run_dir,
                    timeout=WAIT)


@pytest.mark.parametrize("button,expected", [("Continue", ("continue", 7)), ("New run", ("new", 0)),
                                             ("Cancel", None)])
def test_the_question_offers_continue_with_a_step_count_new_run_and_cancel(qtbot, monkeypatch, button,
                                                                          expected):
    from PySide6.QtWidgets import QDialog, QPushButton, QSpinBox

    def answer(box):
        box.findChild(QSpinBox).setValue(7)
        next(b for b in box.findChildren(QPushButton) if b.text().replace("&", "") == button).click()
        return box.result()

    monkeypatch.setattr(QDialog, "exec", answer)
    assert dialogs.ask_finished_run(None, 20, 10) == expected
