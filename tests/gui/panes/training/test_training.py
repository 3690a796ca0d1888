"""The Training pane and the worker behind it, driven through the buttons a user presses."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.figures.export import FigureOptions
from engine.rundir.runs import Run
from gui.widgets import dialogs

from ...conftest import QT_NOISE, tiny_config

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 20_000  # ms; generous for a shared machine, a passing test takes a fraction


def pane(window):
    return window.panes["pane_training"]


def generate_tab(window):
    """The Training pane with its Generate tab chosen, as a user clicks it (the heads chart is in front)."""
    p = pane(window)
    p.lower_tabs.setCurrentIndex(next(i for i in range(p.lower_tabs.count()) if p.lower_tabs.tabText(i) == "Generate"))
    return p


def click(qtbot, window, act: str) -> None:
    button = pane(window).buttons[act]
    assert button.isEnabled(), f"{act} is disabled"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def wait_state(qtbot, window, state: str) -> None:
    qtbot.waitUntil(lambda: window.session.training_state == state, timeout=WAIT)


def test_train_reports_steps_evaluations_and_the_time_left_and_the_curves_export(qtbot, make_window, corpus_file,
                                                                                 tmp_path, monkeypatch):
    """Three tests that each built a window and trained in it, as one (issue 42: a window and a trainer fewer
    twice): step reports and the loss curve growing, evaluation samples logged and the curves exported, and the
    time left shown while training and not once stopped (steps 100,000: it never ends by itself here)."""
    w = make_window(tiny_config(corpus_file, steps=100_000, eval_every=10))
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=WAIT) as first:
        click(qtbot, w, "train")
    assert first.args[0].step >= 1
    curve = pane(w).plot.train_curve
    qtbot.waitUntil(lambda: curve.getData()[0] is not None and len(curve.getData()[0]) >= 20, timeout=WAIT)
    n = len(curve.getData()[0])
    qtbot.waitUntil(lambda: len(curve.getData()[0]) > n, timeout=WAIT)
    assert pane(w).progress.value() > 0
    assert pane(w).stats["tokens_per_s"].text() != "—"
    assert w.windowTitle() == f"GPT Explorer — {w.controller.run_dir.name}"
    assert str(w.controller.run_dir) in w.run_label.text()
    qtbot.waitUntil(lambda: w.step_label.text().startswith("step "), timeout=WAIT)
    updates = pane(w).update_ratios  # each step's ‖ΔW‖ / ‖W‖, drawn when its tab is chosen
    pane(w).lower_tabs.setCurrentWidget(updates)
    qtbot.waitUntil(lambda: updates.heatmap.labels()[0][:2] == ["W_E", "blocks.0.W_Q"], timeout=WAIT)
    assert updates.heatmap.isVisible() and -6 < float(updates.heatmap.matrix()[0, 0]) < 0

    # evaluation samples are logged and the curves export
    qtbot.waitUntil(lambda: "── step 10 ──" in pane(w).logged.toPlainText(), timeout=WAIT)
    qtbot.waitUntil(lambda: len(pane(w).history.val) >= 1, timeout=WAIT)
    out = tmp_path / "loss.csv"
    monkeypatch.setattr(dialogs, "ask_export", lambda *a, **k: (out, FigureOptions()))
    w.actions["export"].trigger()
    qtbot.waitUntil(out.exists, timeout=WAIT)
    assert out.read_text().splitlines()[0] == "step,train_loss,val_loss"

    # no time left is shown once training is stopped
    qtbot.waitUntil(lambda: pane(w).eta.text().endswith(" left"), timeout=WAIT)
    w.session.request_training("stop")
    wait_state(qtbot, w, "stopped")
    assert pane(w).eta.text() == ""


def test_pause_says_so_at_once_stops_the_steps_and_resume_and_train_restart_them(qtbot, make_window, corpus_file):
    """Two tests that each built a window and trained in it, as one (issue 42)."""
    # evaluations of many batches: a pause asked during one waits for it, and the pane must say so at once
    w = make_window(tiny_config(corpus_file, eval_every=5, eval_batches=200))
    click(qtbot, w, "train")
    qtbot.waitUntil(lambda: w.session.step >= 3, timeout=WAIT)
    click(qtbot, w, "pause")
    assert w.session.training_state in ("pausing", "paused")  # no event loop turn in between: at once
    assert pane(w).state_label.text() != "training…"
    wait_state(qtbot, w, "paused")
    paused_at = w.session.step
    with qtbot.assertNotEmitted(w.session.sig_step_reported, wait=400):
        pass
    assert w.session.step == paused_at
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=WAIT) as report:
        click(qtbot, w, "resume")
    assert report.args[0].step == paused_at + 1
    wait_state(qtbot, w, "running")

    # Train (F5) resumes a paused run too
    click(qtbot, w, "pause")
    wait_state(qtbot, w, "paused")
    paused_at = w.session.step
    assert w.actions["train"].isEnabled()
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=WAIT) as report:
        w.actions["train"].trigger()  # F5
    assert report.args[0].step == paused_at + 1
    wait_state(qtbot, w, "running")
    click(qtbot, w, "pause")
    w.actions["train"].trigger()  # F5 at once, pausing or paused: training goes on
    wait_state(qtbot, w, "running")
    n = w.session.step
    qtbot.waitUntil(lambda: w.session.step > n + 2, timeout=WAIT)


def test_step_advances_exactly_one_and_generate_continues_the_prompt_with_its_next_token_bars(qtbot, make_window):
    """Three tests that each built a window and took a step in it, as one (issue 42): Step, then Generate's
    continuation of a prompt, then the next-token probabilities with temperature and top-k."""
    import numpy as np

    w = make_window()
    p = generate_tab(w)
    assert not p.generate.isEnabled()  # no model yet
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=WAIT) as first:
        click(qtbot, w, "step")  # from idle: builds the trainer, trains one step, rests
    assert first.args[0].step == 1
    wait_state(qtbot, w, "paused")
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=WAIT) as second:
        click(qtbot, w, "step")
    assert second.args[0].step == 2
    with qtbot.assertNotEmitted(w.session.sig_step_reported, wait=400):
        pass
    assert w.session.step == 2 and pane(w).history.steps == [1, 2]

    # Generate writes a continuation of the prompt
    p.prompt.setText("the ")
    p.length.setValue(12)
    qtbot.mouseClick(p.generate, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.output.toPlainText().startswith("the ") and len(p.output.toPlainText()) > 4,
                    timeout=WAIT)
    assert p.generate.isEnabled()

    # and shows the next token's probabilities, with temperature and top-k
    view = p.next_tokens
    qtbot.waitUntil(lambda: view.result is not None, timeout=WAIT)
    text = p.output.toPlainText()
    assert view.result.position == len(text) - 1 and len(view.result.tokens) == len(text)  # char tokens
    assert 0 < view.result.model.sum() <= 1 and len(view.result.candidates) >= 2
    bars = view.sampled_bars.opts["width"]
    np.testing.assert_allclose(bars, view.result.sampled)
    p.temperature.setValue(0.0)  # greedy: all the mass on the most likely token
    qtbot.waitUntil(lambda: view.result.temperature == 0.0, timeout=WAIT)
    assert view.result.sampled.max() == 1.0 and view.result.sampled[0] == 1.0
    p.top_k.setValue(2)
    p.temperature.setValue(1.0)
    qtbot.waitUntil(lambda: view.result.top_k == 2 and view.result.temperature == 1.0, timeout=WAIT)
    assert (view.result.sampled > 0).sum() == 2 and view.result.sampled.sum() == pytest.approx(1.0)
    cursor = p.output.textCursor()
    cursor.setPosition(2)  # after "th": the bars follow token 1, 'h'
    p.output.setTextCursor(cursor)
    qtbot.waitUntil(lambda: view.result.position == 1, timeout=WAIT)
    assert view.context.text() == "th"


def test_stop_and_close_leave_a_run_that_reopens_generates_and_continues_and_closing_while_training_too(
        qtbot, make_window):
    """Three tests that each trained a run, closed its window and opened the run in another, as one (issue 42):
    stopped then closed, Generate on the reopened run, and closed while training (the reopened run, trained on)."""
    w = make_window()
    click(qtbot, w, "train")
    qtbot.waitUntil(lambda: w.session.step >= 5, timeout=WAIT)
    click(qtbot, w, "stop")
    wait_state(qtbot, w, "stopped")
    stopped_at, run_dir = w.session.step, w.controller.run_dir
    w.close()
    assert Run(run_dir).checkpoint_steps()[-1] == stopped_at

    again = make_window(run_dir=run_dir)
    assert again.windowTitle() == f"GPT Explorer — {run_dir.name}"
    assert pane(again).history.last_step == stopped_at  # the history, from metrics.jsonl
    assert pane(again).update_ratios.history.last_step == stopped_at  # and the update sizes, from updates.jsonl
    assert again.session.training_state == "stopped" and pane(again).stats["train_loss"].text() != "—"

    # Generate on the opened run continues the prompt from its checkpoint. Not training: the request goes to
    # the analysis process (questions.Sample), not to a worker.
    p = generate_tab(again)
    qtbot.waitUntil(p.generate.isEnabled, timeout=WAIT)
    assert not again.controller.alive
    p.prompt.setText("the ")
    p.length.setValue(12)
    qtbot.mouseClick(p.generate, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: p.output.toPlainText().startswith("the ") and len(p.output.toPlainText()) > 4,
                    timeout=WAIT)
    assert not again.controller.alive and p.generate.isEnabled()

    with qtbot.waitSignal(again.session.sig_step_reported, timeout=WAIT) as report:
        click(qtbot, again, "train")
    assert report.args[0].step == stopped_at + 1
    assert again.controller.run_dir == run_dir

    # closing while training stops the worker and leaves a resumable run
    qtbot.waitUntil(lambda: again.session.step >= stopped_at + 5, timeout=WAIT)
    worker = again.controller.worker
    again.close()
    assert worker.isFinished()
    saved = Run(run_dir).checkpoint_steps()[-1]
    assert saved >= stopped_at + 5
    third = make_window(run_dir=run_dir)
    with qtbot.waitSignal(third.session.sig_step_reported, timeout=WAIT) as report:
        third.session.request_training("train")
    assert report.args[0].step == saved + 1


def test_a_non_finite_loss_stops_training_with_a_banner_not_a_traceback(qtbot, make_window, corpus_file,
                                                                        monkeypatch):
    from engine.model.gpt import GPT

    real, calls = GPT.loss, []

    def diverging(self, logits, targets):  # an lr of 1e30 is refused up front now: the loss breaks by itself
        calls.append(1)
        return real(self, logits, targets) * (float("nan") if len(calls) > 3 else 1.0)
    monkeypatch.setattr(GPT, "loss", diverging)
    w = make_window(tiny_config(corpus_file))
    click(qtbot, w, "train")
    wait_state(qtbot, w, "error")
    assert w.banner.isVisible() and w.banner.level == "error"
    assert "not finite" in w.banner.text and "learning rate" in w.banner.text
    assert pane(w).buttons["train"].isEnabled()


def test_train_on_a_bpe_corpus_reads_and_tokenises_it_in_a_child_process(qtbot, make_window, corpus_file,
                                                                         monkeypatch):
    """Where the work ran: with fitting and encoding a corpus made to fail in the app's process, the builder
    still learns the BPE's vocabulary and Train still trains, each tokenised by a child process that is not
    this one (the token cache the builder's child filled is emptied before Train); the trainer then reads the
    cache that Train's child filled."""
    import dataclasses
    import os
    import shutil

    from engine.text import encoded, token_cache
    from engine.text.bpe import BPETokenizer

    def not_here(*_args, **_kwargs):
        raise AssertionError("the corpus was tokenised in the app's process")

    monkeypatch.setattr(encoded, "fit_tokenizer", not_here)
    monkeypatch.setattr(BPETokenizer, "encode_corpus", not_here)
    cfg = tiny_config(corpus_file)
    cfg = cfg.replace(data=dataclasses.replace(cfg.data, tokenizer="bpe", max_vocab=300))
    w = make_window(cfg)
    builder = w.panes["pane_architecture"]
    qtbot.waitUntil(lambda: builder.inspection is not None and builder.inspection.vocab_size is not None,
                    timeout=3 * WAIT)
    shutil.rmtree(token_cache.root(), ignore_errors=True)
    messages = []
    w.session.sig_message_posted.connect(lambda level, text: messages.append(text))
    with qtbot.waitSignal(w.session.sig_step_reported, timeout=3 * WAIT) as first:
        click(qtbot, w, "train")
    assert first.args[0].step >= 1 and w.session.config.model.vocab_size == builder.inspection.vocab_size
    assert w.controller.worker.preparation_pid not in (None, os.getpid())
    assert any(text.startswith("Reading and tokenising the corpus") for text in messages)


def test_the_generate_tab_gives_the_text_room_and_says_what_to_do(qtbot, make_window, tmp_path):
    """Issue 40: the generated text was a ~110 px column beside the bars, and the caption kept saying
    "Generate, or open a run…" with a run open."""
    from tests.engine.cli.test_export_cli import tiny_run

    w = make_window()
    w.resize(1600, 1000)
    p = generate_tab(w)
    note = p.next_tokens.note
    assert note.text().startswith("Train, or open a run")  # nothing to generate with yet
    w.open_run(tiny_run(tmp_path / "run").path)
    assert note.text().startswith("Press Generate")
    qtbot.waitUntil(lambda: p.output.width() > 0 and p.next_tokens.width() > 0)
    split = p.output.parentWidget()
    assert p.output.width() >= 0.55 * (split.width() - split.handleWidth())
