"""A newcomer's way in (issue 40): the welcome's four actions, the sample run trained in the background, and
the guided tour from its first stop to its end, driven as a user would."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gui import settings
from gui.first_run import first_run as first_run_module
from gui.first_run.sample import SampleRun, is_finished
from gui.first_run.tour_steps import STEPS
from gui.widgets import dialogs

from .conftest import QT_NOISE, tiny_config

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 180_000  # the sample trains in a process of its own, which imports torch first: generous on a loaded machine


@pytest.fixture
def small_sample(monkeypatch, corpus_file):
    """The sample is the tiny config for 30 steps (the app's is the induction lesson's 800)."""
    config = tiny_config(corpus_file, steps=30, snapshot_every=10, checkpoint_every=10, eval_every=10)
    monkeypatch.setattr(first_run_module, "sample_config", lambda: config)
    return config


@pytest.fixture(scope="module")
def sample_once(tmp_path_factory, small_text):
    """small_sample's run, trained once here as the sample's process trains it (seeded: the same run): training
    it in that process is the first test's point, and it was ~2 s of CPU in each test that needs only the run."""
    from engine.training.trainer import Trainer

    top = tmp_path_factory.mktemp("sample")
    (top / "corpus.txt").write_text(small_text, encoding="utf-8")
    cfg = tiny_config(top / "corpus.txt", steps=30, snapshot_every=10, checkpoint_every=10, eval_every=10)
    list(Trainer(cfg, top / "sample", text=small_text).steps())
    return top / "sample"


@pytest.fixture
def trained_sample(small_sample, sample_once):
    """The sample trained before this test: a copy of sample_once where the app keeps it."""
    import shutil

    path = settings.runs_root() / "sample"
    shutil.copytree(sample_once, path)
    assert is_finished(path)
    return path


def click(qtbot, button) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_the_welcomes_four_actions_and_the_tour_to_its_end(qtbot, make_window, small_sample, monkeypatch):
    w = make_window()
    fr = w.first_run
    w.actions["welcome"].trigger()
    welcome = fr.welcome
    assert welcome.isVisible() and set(welcome.buttons) == {"lesson", "sample", "gpt2", "tour"}
    assert fr.sample.training  # trained in the background while the welcome is read

    # 1. the sample run: asked for before it is trained, it opens once it is
    click(qtbot, welcome.buttons["sample"])
    assert "opens when done" in welcome.notes["sample"].text()
    qtbot.waitUntil(lambda: w.session.run is not None, timeout=WAIT)
    assert w.session.run.path == fr.sample.path and is_finished(fr.sample.path)
    assert not welcome.isVisible()

    # 2. the tour, from its first stop to its end, each stop's pane in sight
    w.actions["welcome"].trigger()
    click(qtbot, welcome.buttons["tour"])
    tour = fr.tour
    assert tour.running and not welcome.isVisible()
    seen = []
    while tour.running:
        step = tour.step
        qtbot.waitUntil(lambda: tour.spot.isEmpty() == (not step.pane))
        if step.pane:
            dock = w.docks[step.pane]
            assert dock.isVisible() and not dock.visibleRegion().isEmpty(), step.title
            assert tour.spot.contains(tour.target().mapTo(w, tour.target().rect().center()))
        assert tour.bubble.text.text() == step.text and tour.bubble.isVisible()
        assert tour.rect().contains(tour.bubble.geometry())  # the bubble is inside the window
        seen.append(step.title)
        click(qtbot, tour.bubble.next)
    assert seen == [s.title for s in STEPS] and not tour.isVisible()

    # 3. a GPT-2 folder: File → Open Hugging Face model's own question
    asked = []
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: asked.append(a[1:3]) and None)
    w.actions["welcome"].trigger()
    click(qtbot, welcome.buttons["gpt2"])
    assert asked == [("folder", "Open Hugging Face model")]

    # 4. watch heads form: the induction lesson trains from its first step, the heads chart in sight
    w.actions["welcome"].trigger()
    click(qtbot, welcome.buttons["lesson"])
    assert w.session.config.name == first_run_module.LESSON_PRESET
    qtbot.waitUntil(lambda: w.session.training_state == "running", timeout=60_000)
    qtbot.waitUntil(lambda: w.controller.run_dir is not None, timeout=60_000)
    assert w.controller.run_dir != fr.sample.path  # a new run, not the sample continued
    training = w.panes["pane_training"]
    assert training.lower_tabs.currentWidget() is training.head_timeline
    w.session.request_training("stop")
    qtbot.waitUntil(lambda: w.session.training_state in ("stopped", "finished"), timeout=60_000)


def test_the_welcome_shows_at_start_until_unticked_and_the_tour_moves_by_its_keys_and_loads_the_sample(
        qtbot, make_window, trained_sample):
    """Two tests that each built a window over the trained sample, as one (issue 42): the welcome's box, then
    the tour from the keyboard, which opens the sample when nothing is open."""
    assert settings.show_welcome()
    w = make_window()
    w.first_run.show_welcome()
    box = w.first_run.welcome.show_at_start
    assert box.isChecked()
    box.click()
    assert not settings.show_welcome()
    w.first_run.welcome.close()
    w.first_run.shutdown()

    sample = w.first_run.sample
    sample.ensure()
    assert sample.path == trained_sample and sample.ready() and not sample.training  # trained before: opens at once
    assert w.session.run is None
    w.actions["tour"].trigger()
    tour = w.first_run.tour
    assert w.session.run is not None and w.session.run.path == sample.path
    qtbot.keyClick(tour, Qt.Key.Key_Right)
    qtbot.keyClick(tour, Qt.Key.Key_Right)
    assert tour.index == 2 and tour.target() is w.panes["pane_training"].head_timeline
    qtbot.keyClick(tour, Qt.Key.Key_Left)
    assert tour.index == 1 and tour.target() is w.docks["pane_training"]
    with qtbot.waitSignal(tour.sig_ended):
        qtbot.keyClick(tour, Qt.Key.Key_Escape)
    assert not tour.running and not tour.isVisible()


def test_a_sample_that_cannot_be_trained_says_why(qtbot, tmp_path, corpus_file):
    import dataclasses

    cfg = tiny_config(corpus_file, steps=10)
    bad = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, corpus=str(tmp_path / "missing.txt")))
    sample = SampleRun(tmp_path / "sample", bad)
    with qtbot.waitSignal(sample.sig_failed, timeout=WAIT) as failed:
        sample.ensure()
    assert "missing.txt" in failed.args[0] and not sample.training



def test_the_samples_process_stops_as_sigterm_does_when_the_app_is_gone(tmp_path):
    """Killed or crashed, the app stops nothing of its own: the sample's process (BOOT) sees its parent gone and
    stops itself as SIGTERM stops training (with a checkpoint), instead of training on alone. Here a stand-in app
    starts it and exits at once, and the stand-in training says which signal stopped it."""
    import subprocess
    import sys
    import time

    from gui.first_run.sample import BOOT

    said = tmp_path / "said"
    child = ("import os, signal, sys, time, gui.cli\n"  # the stand-in training's SIGTERM handler, set first
             f"signal.signal(signal.SIGTERM, lambda n, f: (open({str(said)!r}, 'w').write(signal.Signals(n).name),"
             " os._exit(0)))\n"
             "gui.cli.main = lambda argv: time.sleep(600)\n" + BOOT)
    app = f"import os, subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {child!r}, str(os.getpid())])\n"
    subprocess.run([sys.executable, "-c", app], check=True, timeout=120)
    for _ in range(1200):  # the child's parent is gone now; it looks twice a second (a generous cap, not the test)
        if said.exists() and said.read_text():
            break
        time.sleep(0.1)
    assert said.read_text() == "SIGTERM"
