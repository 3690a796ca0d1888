"""AnalysisJob: questions are answered in the one analysis process (not the GUI's), a job answers the newest
question waiting (older waiting ones are dropped), the scheduler sends a view on screen first, failures come
back as one line, and the process ends with the app (the pool's own test, tests/gui/test_processes.py, kills
an app and watches its worker go)."""

import os

from engine.analysis import questions as q
from gui import analysis
from gui.analysis import AnalysisJob

from .analysis_state import Echo, Pid, Slow, Total

from ..engine.coefficients.test_coefficients import tiny_run

WAIT = 60_000


def test_a_job_runs_in_the_analysis_process_and_answers_the_newest_request(qtbot):
    job = AnalysisJob()
    answers = []
    job.sig_done.connect(lambda tag, result: answers.append((tag, result)))
    with qtbot.waitSignal(job.sig_done, timeout=WAIT):
        job.ask(Pid())
    assert answers[0][1] != os.getpid()
    answers.clear()
    job.ask(Echo(1, wait_s=0.5))
    job.ask(Echo(2))   # waits, then is replaced by
    job.ask(Echo(3))   # the newest
    qtbot.waitUntil(lambda: not job.busy and len(answers) == 2, timeout=WAIT)
    assert [result for _, result in answers] == [1, 3] and answers[1][0] == Echo(3)


def test_the_scheduler_sends_a_question_of_a_view_on_screen_first(qtbot):
    from PySide6.QtWidgets import QWidget

    shown, hidden = QWidget(), QWidget()
    qtbot.addWidget(shown)
    shown.show()
    jobs = {"busy": AnalysisJob(), "hidden": AnalysisJob(hidden), "shown": AnalysisJob(shown)}
    order = []
    for name, job in jobs.items():
        job.sig_done.connect(lambda _tag, _result, name=name: order.append(name))
    jobs["busy"].ask(Echo(0, wait_s=1.0))  # holds the process while the others are asked
    qtbot.waitUntil(lambda: analysis.scheduler._out, timeout=WAIT)
    jobs["hidden"].ask(Echo(1))
    jobs["shown"].ask(Echo(2))
    qtbot.waitUntil(lambda: len(order) == 3, timeout=WAIT)
    assert order == ["busy", "shown", "hidden"]


def test_a_question_that_reads_every_saved_step_waits_for_what_is_on_screen(qtbot):
    from PySide6.QtWidgets import QWidget

    shown, hidden = QWidget(), QWidget()
    qtbot.addWidget(shown)
    shown.show()
    slow, quick = AnalysisJob(shown), AnalysisJob(hidden)
    order = []
    slow.sig_done.connect(lambda *_: order.append("every step"))
    quick.sig_done.connect(lambda *_: order.append("one step"))
    slow.ask(Slow(1))    # asked first, by a view on screen,
    quick.ask(Echo(2))   # in the same turn of the event loop: the question of one step goes first
    qtbot.waitUntil(lambda: len(order) == 2, timeout=WAIT)
    assert order == ["one step", "every step"]


def test_a_users_mistake_comes_back_as_one_line(qtbot, tmp_path):
    job = AnalysisJob()
    with qtbot.waitSignal(job.sig_failed, timeout=WAIT) as failed:
        job.ask(q.Attention(str(tmp_path / "nothing"), 0, "To be"), tag="missing")
    assert failed.args[0] == "missing" and "\n" not in failed.args[1]


def test_the_process_answers_from_the_runs_analysis(qtbot, tmp_path):
    run = tiny_run(tmp_path / "run")
    job = AnalysisJob()
    with qtbot.waitSignal(job.sig_done, timeout=WAIT) as done:
        job.ask(q.Positional(str(run.path), 4, 2))
    assert done.args[1].step == 4 and done.args[1].shift == 2


def test_shutdown_ends_the_process_and_the_next_request_starts_one(qtbot):
    first = analysis.executor()
    analysis.shutdown()
    job = AnalysisJob()
    with qtbot.waitSignal(job.sig_done, timeout=WAIT):
        job.ask(Pid())
    assert analysis.executor() is not first


APP = """
import os
from gui import analysis
print(analysis.executor().submit(os.getpid).result(), flush=True)
os.kill(os.getpid(), 9)  # the app dies without shutting its analysis process down
"""


def test_the_analysis_process_exits_when_the_app_is_killed():
    import signal
    import subprocess
    import sys
    import time

    from .test_processes import _alive

    proc = subprocess.run([sys.executable, "-c", APP], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == -signal.SIGKILL
    worker = int(proc.stdout.strip())
    for _ in range(100):  # the worker polls its parent every 0.5 s
        if not _alive(worker):
            break
        time.sleep(0.1)
    assert not _alive(worker), f"analysis process {worker} outlived the app"


def test_published_weights_reach_the_process_again_after_it_restarts(qtbot):
    import torch

    from engine.analysis.live import Published

    w = {"a": torch.arange(6.0), "b": torch.ones(2, 2)}
    job, answers = AnalysisJob(), []
    job.sig_done.connect(lambda tag, result: answers.append(result))
    for _ in range(2):  # the second request names a copy the process holds
        with qtbot.waitSignal(job.sig_done, timeout=WAIT):
            job.ask(Total(Published(w)))
    analysis.shutdown()
    with qtbot.waitSignal(job.sig_done, timeout=WAIT):
        job.ask(Total(Published(w)))
    assert answers == [19.0, 19.0, 19.0]


def test_a_head_timeline_scored_in_slices_lets_a_question_on_screen_through_between_them(qtbot, tmp_path):
    """GPT-2 small's head timeline held the process for minutes: it is asked a slice at a time
    (questions.HeadTimeline, background), and what a view on screen asks meanwhile goes before the next slice."""
    from PySide6.QtWidgets import QWidget

    run = tiny_run(tmp_path / "run")
    shown = QWidget()
    qtbot.addWidget(shown)
    shown.show()
    timeline, other = AnalysisJob(shown), AnalysisJob(shown)
    events = []

    def on_slice(_tag, answer):
        events.append("slice" if answer.scoring is not None else "done")
        if answer.scoring is not None:
            if events.count("slice") == 1:
                other.ask(q.Positional(str(run.path), 4, 1))
            timeline.ask(q.HeadTimeline(str(run.path), slice_s=0.0))

    timeline.sig_done.connect(on_slice)
    other.sig_done.connect(lambda *_: events.append("on screen"))
    timeline.ask(q.HeadTimeline(str(run.path), slice_s=0.0))
    qtbot.waitUntil(lambda: "done" in events, timeout=WAIT)
    assert events[:3] == ["slice", "on screen", "slice"] and events.count("slice") >= 2
