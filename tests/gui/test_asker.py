"""The app's one asker (gui/asker.py) and its analysis process (gui/analysis.py, engine/service_process.py): what a
view needs is answered in the process, a light question while a long one is held, a question no view needs any
more is cancelled there and its work stops, an answer about a run no longer open is dropped, a long answer
reports its progress with the time left, acts are answered once, and the process restarts after it stopped and
ends with the app."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.analysis import questions as q
from engine.views.view import View
from engine.workspace import OpenRun, Workspace
from gui import analysis
from gui.asker import Asker

from .analysis_state import Echo, Held, Pid, Total

WAIT = 60_000


@dataclass(eq=False)
class Wants(View):
    """A view that needs `questions` until it holds their answers."""

    questions: tuple = ()
    answers: tuple = ()   # (question, answer), in the order they came

    def needs(self, workspace) -> list:
        return [q for q in self.questions if self.answer(q) is None]

    def take(self, question, answer) -> None:
        self.answers = (*self.answers, (question, answer))

    def forget(self) -> None:
        self.answers = ()
        super().forget()

    def answer(self, question):
        return next((a for got, a in self.answers if got == question), None)


@pytest.fixture
def asker(qtbot):
    workspace = Workspace()
    workspace.replace_run(OpenRun(workspace.draft.config))
    asker = Asker(workspace)
    yield asker
    asker.close()
    qtbot.waitUntil(lambda: not asker._out, timeout=WAIT)  # what it left in the shared process has stopped


def watched(asker, *questions) -> Wants:
    view = Wants(questions=tuple(questions))
    asker.watch(view)
    return view


def test_a_view_is_answered_in_the_analysis_process(qtbot, asker):
    view = watched(asker, Pid())
    qtbot.waitUntil(lambda: bool(view.answers), timeout=WAIT)
    assert view.answer(Pid()) not in (None, os.getpid())


def test_a_light_question_is_answered_while_a_long_one_is_held(qtbot, asker, tmp_path):
    gate = str(tmp_path / "gate")
    long = watched(asker, Held(gate))
    qtbot.waitUntil(lambda: Path(gate + ".started").exists(), timeout=WAIT)
    light = watched(asker, Echo("listed"))
    qtbot.waitUntil(lambda: bool(light.answers), timeout=WAIT)
    assert light.answer(Echo("listed")) == "listed" and not long.answers and Held(gate) in asker.out()
    Path(gate).touch()
    qtbot.waitUntil(lambda: bool(long.answers), timeout=WAIT)


def test_a_long_answer_reports_how_far_it_is_and_the_time_left(qtbot, asker, tmp_path):
    gate = str(tmp_path / "gate")
    view = watched(asker, Held(gate))
    qtbot.waitUntil(lambda: view.progress is not None and view.progress.left_s is not None, timeout=WAIT)
    assert view.progress.total == 10**6 and view.progress.unit == "ticks" and "left" in str(view.progress)
    Path(gate).touch()


def test_a_question_no_view_needs_any_more_is_cancelled_and_its_work_stops(qtbot, asker, tmp_path):
    gate = str(tmp_path / "gate")
    view = watched(asker, Held(gate))
    qtbot.waitUntil(lambda: view.progress is not None, timeout=WAIT)
    view.questions = (Echo("moved on"),)
    qtbot.waitUntil(lambda: asker.idle and bool(view.answers), timeout=WAIT)  # the cancel was heard back: it stopped
    Path(gate).touch()
    assert Path(gate + ".started").exists() and not Path(gate + ".finished").exists()
    assert [question for question, _ in view.answers] == [Echo("moved on")]


def test_an_answer_about_a_run_no_longer_open_is_dropped(qtbot, asker):
    slow = Echo("of the first run", wait_s=0.5)  # no progress reports: it is answered although cancelled
    view = watched(asker, slow)
    qtbot.waitUntil(lambda: slow in asker.out(), timeout=WAIT)
    asker.workspace.replace_run(OpenRun(asker.workspace.draft.config))
    view.questions = ()
    qtbot.waitUntil(lambda: asker.idle, timeout=WAIT)
    assert view.answers == ()


def test_opening_another_run_makes_the_views_forget_and_cancels_their_long_work(qtbot, asker, tmp_path):
    gate = str(tmp_path / "gate")
    view = watched(asker, Echo("first"))
    qtbot.waitUntil(lambda: bool(view.answers), timeout=WAIT)
    view.questions = (Held(gate),)
    qtbot.waitUntil(lambda: view.progress is not None, timeout=WAIT)
    view.questions = ()  # the view needs nothing of the next run
    asker.workspace.replace_run(OpenRun(asker.workspace.draft.config))
    assert view.answers == () and view.progress is None
    qtbot.waitUntil(lambda: asker.idle, timeout=WAIT)
    Path(gate).touch()
    assert not Path(gate + ".finished").exists()


def test_a_hidden_view_is_asked_when_it_is_seen(qtbot, asker):
    view = Wants(questions=(Echo("seen"),))
    view.seen = False
    asker.watch(view)
    qtbot.wait(50)
    assert asker.idle and not view.answers
    view.seen = True
    qtbot.waitUntil(lambda: bool(view.answers), timeout=WAIT)


def test_a_failure_is_one_line_and_is_not_asked_again(qtbot, asker, tmp_path):
    missing = q.Attention(q.Saved(str(tmp_path / "nothing"), 0), "To be")
    view = watched(asker, missing)
    qtbot.waitUntil(lambda: bool(view.failures), timeout=WAIT)
    assert "\n" not in view.failures[missing]
    qtbot.wait(50)
    assert asker.idle  # not asked again


def test_an_act_is_answered_once_and_one_about_a_closed_run_is_dropped(qtbot, asker):
    got = []
    asker.ask(Echo("act"), got.append)
    qtbot.waitUntil(lambda: got == ["act"], timeout=WAIT)
    asker.ask(Echo("too late", wait_s=0.3), got.append)
    asker.workspace.replace_run(None)
    qtbot.waitUntil(lambda: asker.idle, timeout=WAIT)
    assert got == ["act"]


def test_the_process_restarts_after_it_was_shut_down_and_published_weights_reach_it_again(qtbot, asker):
    """One shutdown for both: each restart spawns a Python that imports torch (~1.3 s of CPU), and the process
    the GUI tests share is started again after it."""
    import torch

    from engine.analysis.live import Published

    w = {"a": torch.arange(6.0), "b": torch.ones(2, 2)}
    answers = [analysis.ask_and_wait(Total(Published(w)), timeout=60) for _ in range(2)]  # the second: a key
    view = watched(asker, Pid())
    qtbot.waitUntil(lambda: bool(view.answers), timeout=WAIT)
    first = view.answer(Pid())
    analysis.shutdown()
    view.forget()
    qtbot.waitUntil(lambda: bool(view.answers), timeout=WAIT)
    assert view.answer(Pid()) != first
    answers.append(analysis.ask_and_wait(Total(Published(w)), timeout=60))  # sent whole again, to the new process
    assert answers == [19.0, 19.0, 19.0]


def test_a_head_timeline_scored_in_slices_lets_a_light_question_through(qtbot, asker, tmp_path):
    """GPT-2 small's head timeline held the process for minutes: it is scored in the long lane a slice at a
    time, and a light question asked meanwhile is answered at once."""
    from ..engine.coefficients.test_coefficients import tiny_run

    run = tiny_run(tmp_path / "run")
    timeline = watched(asker, q.HeadTimeline(str(run.path), slice_s=0.0))
    qtbot.waitUntil(lambda: bool(timeline.answers or timeline.failures), timeout=WAIT)
    light = watched(asker, q.Positional(q.Saved(str(run.path), 4), 1))
    qtbot.waitUntil(lambda: bool(light.answers), timeout=WAIT)
    assert light.answers[0][1].step == 4 and not timeline.failures


APP = """
import os
from gui import analysis
from tests.gui.analysis_state import Pid
print(analysis.ask_and_wait(Pid(), timeout=120), flush=True)
os.kill(os.getpid(), 9)  # the app dies without shutting its analysis process down
"""


def test_the_analysis_process_exits_when_the_app_is_killed():
    import signal
    import subprocess
    import sys
    import time

    from tests.child_work import CAP_S, alive as _alive

    proc = subprocess.run([sys.executable, "-c", APP], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    worker = int(proc.stdout.strip())
    deadline = time.monotonic() + CAP_S  # the worker polls its parent every 0.5 s: a cap, never the assertion
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker), f"analysis process {worker} outlived the app"
