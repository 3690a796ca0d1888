"""The run browser and the overlaid curves, on temporary run folders made by a few training steps: the
list, ticking runs to overlay them, rename, delete, reveal, recent runs, drops and the nanoGPT import."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest

from engine.rundir.runs import Run
from engine.figures.smoothing import ema
from engine.training.trainer import Trainer
from gui import recent, settings
from tests.child_work import sendable

from ...conftest import tiny_config

WAIT = 60_000  # the analysis process's first start imports torch


def listed(qtbot, runs, act=None, *args):
    """`act(*args)` (default: the pane's refresh), then wait until the pane has listed the runs again and
    has no listing left to come (one asked earlier, by its folder watch, may answer first)."""
    answers = []
    runs.sig_listed.connect(answers.append)
    try:
        got = (act or runs.refresh)(*args)
        qtbot.waitUntil(lambda: bool(answers) and not runs.listing, timeout=WAIT)
    finally:
        runs.sig_listed.disconnect(answers.append)
    return got


def in_front(qtbot, make_window, name: str):
    """(window, its Runs pane, pane `name`) with `name` brought to the front and the runs listed."""
    w = make_window()
    runs = w.panes["pane_runs"]
    w.docks[name].raise_()
    listed(qtbot, runs)
    return w, runs, w.panes[name]


@pytest.fixture(scope="module")
def three_runs_once(tmp_path_factory, small_text):
    """A folder with corpus.txt and runs/{a,b,c} (three_runs), trained once for the module's tests: trained
    again for each test that uses them, they were 7 s of the file's 47 (quiet machine)."""
    from engine.configs.config import parse_setting
    from engine.rundir.fork import fork_run

    top = tmp_path_factory.mktemp("three-runs")
    corpus, root = top / "corpus.txt", top / "runs"
    corpus.write_text(small_text, encoding="utf-8")
    for name, steps in (("a", 6), ("b", 9)):
        list(Trainer(tiny_config(corpus, steps=steps, eval_every=3), root / name, text=small_text).steps())
    cfg = parse_setting("train.lr=0.003", Run(root / "a").config)
    list(fork_run(root / "a", root / "c", cfg, 0, text=small_text).steps())
    return top


@pytest.fixture
def three_runs(three_runs_once, corpus_file):
    """Runs a (6 steps), b (9 steps) and c (a fork of a with the learning rate changed) in the runs folder,
    copies of three_runs_once's with the paths they name (the corpus, c's parent) moved with them."""
    import shutil

    root = settings.runs_root()
    assert root == corpus_file.parent / "runs"
    shutil.copytree(three_runs_once / "runs", root, dirs_exist_ok=True)
    for named in [*root.glob("*/config.toml"), root / "c" / "fork.json"]:
        text = named.read_text(encoding="utf-8")
        assert str(three_runs_once.resolve()) in text, named
        named.write_text(text.replace(str(three_runs_once.resolve()), str(corpus_file.parent.resolve())),
                         encoding="utf-8")
    assert Run(root / "c").config.data.corpus == str(corpus_file)
    return root


def test_ticked_runs_are_overlaid_with_a_legend_naming_each_and_export_their_figure_and_data(qtbot, make_window,
                                                                                           three_runs, tmp_path):
    """Two tests that each built a window and ticked runs in it, as one (issue 42)."""
    w = make_window()
    runs, curves = w.panes["pane_runs"], w.panes["pane_run_curves"]
    assert curves.export_job() is None
    listed(qtbot, runs)
    assert sorted(it.text(0) for it in runs.items()) == ["a", "b", "c"]
    assert runs.item_for(three_runs / "b").text(3) == "9 / 9"
    assert curves.legend_names() == [] and curves.hint.isVisibleTo(curves)
    runs.set_checked(three_runs / "a")
    runs.set_checked(three_runs / "c")
    assert sorted(w.session.compared_runs) == [three_runs / "a", three_runs / "c"]
    qtbot.waitUntil(lambda: sorted(curves.legend_names()) == ["a", "c"], timeout=WAIT)  # read in the analysis process
    runs.set_checked(three_runs / "a", False)
    assert curves.legend_names() == ["c"]  # an unticked run goes at once
    train = curves.line(three_runs / "c", "train_loss")
    raw = curves.curves[three_runs / "c"].columns["train_loss"]
    assert np.allclose(train.yData, ema(raw, curves.view.smoothing))
    curves.smooth_slider.setValue(0)
    qtbot.waitUntil(lambda: np.array_equal(train.yData, raw))
    curves.axis_box.setCurrentIndex(curves.axis_box.findData("tokens"))
    assert np.array_equal(train.xData, np.arange(1, 7) * 4 * 16)  # batch 4 × context 16
    val = curves.line(three_runs / "c", "val_loss")
    assert list(val.xData) == [3 * 64, 6 * 64]

    # the overlay exports its figure and data
    runs.set_checked(three_runs / "c", False)
    for name in ("a", "b"):
        runs.set_checked(three_runs / name)
    qtbot.waitUntil(lambda: sorted(curves.legend_names()) == ["a", "b"], timeout=WAIT)
    _filters, suggested, fn = curves.export_job()
    assert sendable(fn)
    fn(tmp_path / "runs.csv")
    rows = list(csv.DictReader(open(tmp_path / "runs.csv", encoding="utf-8")))
    assert sorted({r["run"] for r in rows}) == ["a", "b"] and len(rows) == 6 + 9
    fn(tmp_path / "runs.svg")
    assert (tmp_path / "runs.svg").stat().st_size > 0


def test_a_dragged_slider_redraws_once_per_frame_and_a_long_curve_is_drawn_a_pixel_at_a_time(qtbot, make_window,
                                                                                            three_runs):
    """Two tests that each built a window and moved the smoothing of the curves in front, as one (issue 42): a
    drag redraws once a frame on the curves held, then run a alone, given a long log, is drawn a pixel at a time
    and keeps its ranges as its smoothing changes."""
    from engine.analysis.questions import RunCurvesOf
    from engine.figures.run_curves import RunCurves

    w = make_window()
    runs, curves = w.panes["pane_runs"], w.panes["pane_run_curves"]
    listed(qtbot, runs)
    for name in ("a", "b"):
        runs.set_checked(three_runs / name)
    qtbot.waitUntil(lambda: len(curves.legend_names()) == 2, timeout=WAIT)
    w.docks["pane_run_curves"].raise_()  # a slider is dragged on a pane in sight: its plots built (first_sight)
    qtbot.waitUntil(lambda: curves.grid.built and len(curves._items) == 2)
    items = {p: dict(pairs) for p, pairs in curves._items.items()}
    legend = curves.legend_names()
    qtbot.wait(50)  # no redraw left pending from ticking
    before = curves.redraws
    for value in range(10, 60, 5):  # ten moves of a drag, faster than a frame
        curves.smooth_slider.setValue(value)
    assert curves.redraws == before  # nothing drawn while the moves arrive
    qtbot.waitUntil(lambda: curves.redraws > before)
    qtbot.wait(50)
    assert curves.redraws == before + 1 and curves.view.smoothing == 0.55
    train = curves.line(three_runs / "b", "train_loss")
    assert np.allclose(train.yData, ema(curves.curves[three_runs / "b"].columns["train_loss"], 0.55))
    assert curves._items == items and curves.legend_names() == legend  # the same curves, their data set anew
    curves.smooth_slider.setValue(0)
    qtbot.waitUntil(lambda: curves.redraws == before + 2)
    assert curves._items == items and items[three_runs / "b"]["train_loss"][0].opacity() == 0  # unpainted
    for value in range(1, 21):  # a drag lasting longer than a frame draws while it goes, not once it stops
        curves.smooth_slider.setValue(value)
        qtbot.wait(5)
    assert curves.redraws > before + 2

    # a long curve is drawn a pixel at a time and smoothing keeps the ranges
    runs.set_checked(three_runs / "b", False)
    assert curves.legend_names() == ["a"]
    noisy = 3 + np.random.default_rng(0).normal(0, 0.5, 40_000)

    def logged(n):  # a long run's log of n steps, given to the pane as the analysis process would
        steps = np.arange(1.0, n + 1)
        cols = {"step": steps, "tokens": steps * 64, "wall_s": steps / 10, "train_loss": noisy[:n],
                "val_loss": np.full(n, np.nan), "lr": np.full(n, 1e-3), "tokens_per_s": noisy[:n] * 1000,
                "train_bpc": noisy[:n] / np.log(2), "val_bpc": np.full(n, np.nan)}
        view, key = curves.view, str(three_runs / "a")
        answer = {key: (view._stamps[key], RunCurves("a", three_runs / "a", cols))}
        view.take(RunCurvesOf(view.paths, {}, view.read), answer)

    n = 20_000
    logged(n)
    plot = curves.plots["train_loss"]
    qtbot.waitUntil(lambda: plot.vb.viewRange()[0][1] >= n)
    ranges = plot.vb.viewRange()
    line = curves.line(three_runs / "a", "train_loss")
    shown_x, _ = line.getData()
    assert len(shown_x) <= 2 * plot.vb.width() + 4  # a low and a high point per pixel, not 20,000
    for smoothing in (0.9, 0.0):  # at 0 the raw curve is not painted, yet still fits the view
        before = curves.redraws
        curves.smooth_slider.setValue(round(smoothing * 100))
        qtbot.waitUntil(lambda: curves.redraws > before)
        qtbot.wait(50)  # painted
        assert np.allclose(line.yData, ema(noisy[:n], smoothing)) and plot.vb.viewRange() == ranges
    logged(2 * n)  # the log grew: the raw curve, unpainted at smoothing 0, widens the view
    qtbot.waitUntil(lambda: plot.vb.viewRange()[0][1] >= 2 * n)


def test_the_folders_watched_come_with_the_listing_and_a_run_trained_elsewhere_appears_in_the_seen_list(
        qtbot, make_window, three_runs, monkeypatch, corpus_file, small_text):
    """Two tests that each built a window and watched the runs folder, as one (issue 42): the folders watched
    come with the listing, not from the GUI thread, and runs written by another process appear as they are."""
    (three_runs / "e").mkdir()  # not a run yet: watched until it is one
    w = make_window()
    runs = w.panes["pane_runs"]
    scanned, scandir = [], os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": scanned.append(str(path)) or scandir(path))
    listed(qtbot, runs)
    assert sorted(runs.folder_watch.watched()) == [str(three_runs), str(three_runs / "e")]
    assert not [p for p in scanned if p.startswith(str(three_runs))]  # listed in the analysis process

    # a run trained elsewhere appears in the seen list
    w.docks["pane_runs"].raise_()
    qtbot.waitUntil(runs.seen)
    listed(qtbot, runs)
    assert runs.item_for(three_runs / "d") is None
    list(Trainer(tiny_config(corpus_file, steps=3), three_runs / "d", text=small_text).steps())  # as a terminal's
    qtbot.waitUntil(lambda: runs.item_for(three_runs / "d") is not None)
    (three_runs / "f").mkdir()  # a folder that becomes a run a moment later is watched until it is one
    qtbot.waitUntil(lambda: str(three_runs / "f") in runs.folder_watch.watched())
    list(Trainer(tiny_config(corpus_file, steps=3), three_runs / "f", text=small_text).steps())
    qtbot.waitUntil(lambda: runs.item_for(three_runs / "f") is not None)
    assert str(three_runs / "f") not in runs.folder_watch.watched()  # a run writes its folder every step


def test_opened_runs_are_recent_and_the_last_one_reopens_and_drops_open_a_run_and_set_the_config_or_corpus(
        make_window, three_runs, tmp_path, small_text):
    """Two tests that each built a window to open runs in it, as one (issue 42)."""
    from gui import drops

    w = make_window()
    w.open_run(three_runs / "b")
    w.open_run(three_runs / "a")
    assert recent.recent_runs()[:2] == [(three_runs / "a").resolve(), (three_runs / "b").resolve()]
    assert recent.run_to_reopen() == str((three_runs / "a").resolve())
    w.recent_menu.aboutToShow.emit()
    names = [a.text() for a in w.recent_menu.actions()]
    assert names[:2] == ["a", "b"]
    w.recent_menu.actions()[1].trigger()
    assert w.controller.run_dir == (three_runs / "b").resolve()

    # drops open a run and set the config or the corpus
    drops.drop(w, [three_runs / "a"])
    assert w.controller.run_dir == three_runs / "a"
    cfg = tiny_config("shakespeare", steps=77)
    (tmp_path / "exp.toml").write_text(cfg.to_toml(), encoding="utf-8")
    w.new_run()
    drops.drop(w, [tmp_path / "exp.toml"])
    assert w.session.config.train.steps == 77
    (tmp_path / "my.txt").write_text(small_text[:5000], encoding="utf-8")
    drops.drop(w, [tmp_path / "my.txt"])
    assert w.session.config.data.corpus == str((tmp_path / "my.txt").resolve())
    (tmp_path / "bin.dat").write_bytes(b"\x00\x01" * 100)
    drops.drop(w, [tmp_path / "bin.dat"])
    assert "binary" in w.banner.text and w.session.config.data.corpus.endswith("my.txt")
    assert drops.kind_of(tmp_path) is None


def test_file_import_turns_a_nanogpt_out_dir_into_an_open_run(qtbot, make_window, tmp_path, monkeypatch,
                                                               children_in_thread):
    """The checkpoint has bias=True (GPT-2's attention biases); a refusal is the banner's one line. The imports
    run on a thread (children_in_thread; the import's process is test_hf_open's and test_closed_run's point): a
    process was ~1.8 s of CPU each. An empty folder's refusal and an import of a second checkpoint took the same
    paths as these two (tests/engine/importers/test_nanogpt.py covers what the importer refuses and both biases)."""
    from gui import run_menu
    from gui.widgets import dialogs
    from tests.engine.importers.test_nanogpt import ARGS, write_out_dir
    from tests.gui.conftest import imported

    write_out_dir(tmp_path / "out", args=dict(ARGS, bias=True))
    w = make_window()
    monkeypatch.setattr(dialogs, "ask_path", lambda *a, **k: tmp_path / "out")
    w.actions["import_nanogpt"].trigger()
    run_dir = imported(qtbot, w)
    assert run_dir == w.controller.run_dir and w.session.run.path == run_dir
    assert run_dir is not None and run_dir.parent == settings.runs_root() and Run(run_dir).latest_step() == 250
    assert Run(run_dir).config.model.attn_bias
    assert w.panes["pane_training"].progress.value() == 250  # no metrics log: the step it was imported at
    write_out_dir(tmp_path / "bad", args=dict(n_layer=1, n_head=1, n_embd=4, block_size=4, bias=False,
                                              vocab_size=61, dropout=2.0))
    assert imported(qtbot, run_menu.import_nanogpt(w, tmp_path / "bad")) is None
    assert "Cannot import bad: " in w.banner.text and "dropout" in w.banner.text
    assert w.controller.run_dir == run_dir  # a refused import leaves the open run open


def test_fork_writes_a_paired_run_beside_its_parent_and_opens_it_and_a_cancelled_one_leaves_nothing(
        qtbot, make_window, three_runs, monkeypatch):
    """Two tests that each built a window and forked b in it, as one (issue 42)."""
    w = make_window()
    runs = w.panes["pane_runs"]
    listed(qtbot, runs)
    from engine.configs.config import parse_setting

    relu = lambda parent: (parse_setting("model.activation=relu", parent.config), 0)  # noqa: E731
    monkeypatch.setattr(runs, "ask_fork", relu)
    with qtbot.waitSignal(runs.sig_forked, timeout=WAIT) as forked:
        child = runs.fork(three_runs / "b")
        assert runs.work is not None and runs.work.job.pid != os.getpid()  # written by a child process
        assert runs.work_label.text().startswith("Forking b into") and runs.work_cancel.isVisibleTo(runs)
    listed(qtbot, runs)
    assert forked.args == [child] and child.parent == three_runs and w.controller.run_dir == child
    assert Run(child).config.model.activation == "relu" and runs.item_for(child) is not None
    assert not runs.work_label.isVisibleTo(runs)
    monkeypatch.setattr(runs, "ask_fork", lambda parent: (parse_setting("train.seed=3", parent.config), 0))
    assert runs.fork(three_runs / "b") is None and runs.work is None  # refused by the configs, before any child
    assert "Cannot fork b" in w.banner.text and "seed" in w.banner.text
    assert sorted(p.name for p in three_runs.iterdir()) == sorted(["a", "b", "c", child.name])  # nothing left

    # a cancelled fork leaves nothing
    monkeypatch.setattr(runs, "ask_fork", lambda parent: (parse_setting("train.lr=0.002", parent.config), 0))
    before = sorted(p.name for p in three_runs.iterdir())
    runs.fork(three_runs / "b")
    runs.work_cancel.click()  # at once: the child is ended wherever it was
    assert runs.work is None and "cancelled" in w.banner.text
    assert sorted(p.name for p in three_runs.iterdir()) == before


def type_into(qtbot, editor, text: str) -> None:
    editor.lineEdit().selectAll() if hasattr(editor, "lineEdit") else editor.selectAll()
    qtbot.keyClicks(editor.lineEdit() if hasattr(editor, "lineEdit") else editor, text)


def test_the_fork_form_offers_every_field_a_fork_may_change_and_refuses_the_rest(qtbot, three_runs):
    from gui.panes.runs.fork_form import ForkDialog

    parent = Run(three_runs / "b")
    box = ForkDialog(parent.config, [0, *parent.checkpoint_steps()[1:]])
    qtbot.addWidget(box)
    train, model = box.forms["train"], box.forms["model"]
    fork = box.buttons.buttons()[0]
    assert "data" not in box.forms and not train.editors["seed"].isEnabled()
    assert not fork.isEnabled()  # nothing changed yet
    type_into(qtbot, train.editors["lr"], "0.003")
    assert box.cfg.train.lr == 0.003 and fork.isEnabled()
    type_into(qtbot, model.editors["d_model"], "48")  # the weights' shapes: refused beside the field
    assert "shapes of the weights" in model.problem_labels["d_model"].text() and not fork.isEnabled()
    type_into(qtbot, model.editors["d_model"], str(parent.config.model.d_model))
    model.editors["activation"].setCurrentIndex(model.editors["activation"].findData("relu"))
    model.editors["activation"].activated.emit(model.editors["activation"].currentIndex())
    assert box.cfg.model.activation == "relu" and fork.isEnabled()
    box.step.setCurrentIndex(box.step.count() - 1)
    cfg, step = box.chosen()
    assert step == parent.checkpoint_steps()[-1] and cfg.train.lr == 0.003
    assert cfg.train.seed == parent.config.train.seed


def test_runs_not_trained_to_the_bit_are_named_the_diff_pane_shows_b_minus_a_and_runs_not_comparable_say_so(
        qtbot, make_window, three_runs, corpus_file, small_text):
    """Three tests that each built a window with Run diff in front and ticked pairs of runs, as one (issue 42): c
    says it was not trained to the bit, a and c's difference is read from their analyses, and a run of other
    shapes cannot be compared with a."""
    import dataclasses
    import json

    from engine.analysis.run_analysis import RunAnalysis

    (three_runs / "c" / "determinism.json").write_text(json.dumps(
        {"sessions": [{"step": 0, "device": "cuda", "deterministic": False}]}), encoding="utf-8")
    w, runs, diff = in_front(qtbot, make_window, "pane_run_diff")
    curves = w.panes["pane_run_curves"]
    assert not diff.grid.isVisibleTo(diff) and not diff.matrix.isVisibleTo(diff)  # no empty map before a pair
    runs.set_checked(three_runs / "a")
    runs.set_checked(three_runs / "b")
    qtbot.waitUntil(lambda: diff.shown is not None and len(curves.legend_names()) == 2, timeout=WAIT)
    assert "noise" not in diff.pair_label.text() and not curves.noise.isVisibleTo(curves)
    runs.set_checked(three_runs / "b", False)
    runs.set_checked(three_runs / "c")
    qtbot.waitUntil(lambda: diff.shown is not None and diff.shown.names == ("a", "c"), timeout=WAIT)
    qtbot.waitUntil(lambda: sorted(curves.legend_names()) == ["a", "c"], timeout=WAIT)
    note = "c trained on cuda without deterministic kernels from step 0"
    assert note in diff.pair_label.text() and "run-to-run noise" in diff.pair_label.text()
    assert curves.noise.isVisibleTo(curves) and note in curves.noise.text()

    # the difference of a and c, b minus a: c is a's fork, so a is A
    qtbot.waitUntil(lambda: diff.shown is not None, timeout=WAIT)
    assert diff.grid.isVisibleTo(diff)
    assert [Path(p).name for p in diff.view.pair] == ["a", "c"] and diff.view.step == 6  # c is a's fork: a is A
    assert [diff.step_box.itemData(i) for i in range(diff.step_box.count())] == [0, 3, 6]  # 3: best val
    a, c = RunAnalysis(three_runs / "a"), RunAnalysis(three_runs / "c")
    want = c.attention(6).maps.weights - a.attention(6).maps.weights
    stack = diff.grid.stack()
    np.testing.assert_allclose(stack[np.isfinite(stack)], want[np.isfinite(want)].astype(np.float32), atol=1e-6)
    assert np.isfinite(stack).sum() == np.isfinite(want).sum() > 0 and not diff.part_box.isEnabled()

    def choose(box, index):
        box.setCurrentIndex(index)
        box.activated.emit(index)

    choose(diff.step_box, 0)
    qtbot.waitUntil(lambda: diff.shown.step == 0, timeout=WAIT)
    assert np.nanmax(np.abs(diff.grid.stack())) == 0  # a fork starts from its parent's weights
    choose(diff.what_box, diff.what_box.findText("blocks.0.W_Q"))
    choose(diff.step_box, 2)
    qtbot.waitUntil(lambda: diff.shown.what == ("G", "blocks.0.W_Q") and diff.shown.step == 6, timeout=WAIT)
    assert diff.matrix.isVisibleTo(diff) and not diff.grid.isVisibleTo(diff) and diff.part_box.isEnabled()
    ga, gc = (r.coefficients.record("blocks.0.W_Q", 6).G for r in (a, c))
    np.testing.assert_allclose(diff.matrix.matrix(), (gc.astype(np.float64) - ga).astype(np.float32), atol=1e-6)
    assert np.abs(diff.matrix.matrix()).max() > 0
    choose(diff.part_box, diff.part_box.findData("W"))
    qtbot.waitUntil(lambda: diff.shown.what == ("W", "blocks.0.W_Q"), timeout=WAIT)
    wa, wc = (r.weights(6)["blocks.0.W_Q"].double().numpy() for r in (a, c))
    np.testing.assert_allclose(diff.matrix.matrix(), (wc - wa).astype(np.float32))
    diff.swap.click()
    qtbot.waitUntil(lambda: diff.shown.names == ("c", "a"), timeout=WAIT)
    np.testing.assert_allclose(diff.matrix.matrix(), (wa - wc).astype(np.float32))
    runs.set_checked(three_runs / "a", False)  # one run ticked: the difference shown is no longer the pair's
    qtbot.waitUntil(lambda: not diff.matrix.isVisibleTo(diff), timeout=WAIT)
    assert not diff.grid.isVisibleTo(diff) and diff.pair_label.text().startswith("Tick two runs")

    # runs that cannot be compared are said so in Run diff alone: Run curves overlays any runs, and why a pair
    # has no B − A belongs in Run diff, not in a window banner
    runs.set_checked(three_runs / "c", False)
    cfg = tiny_config(corpus_file, steps=3, eval_every=3)
    wide = cfg.replace(model=dataclasses.replace(cfg.model, d_model=32))
    list(Trainer(wide, three_runs / "wide", text=small_text).steps())
    messages = []
    w.session.sig_message_posted.connect(lambda level, text: messages.append(text))
    listed(qtbot, runs)
    runs.set_checked(three_runs / "a")
    runs.set_checked(three_runs / "wide")
    qtbot.waitUntil(lambda: "Cannot compare" in diff.pair_label.text(), timeout=WAIT)
    assert "different shapes" in diff.pair_label.text() and messages == []
    assert not diff.grid.isVisibleTo(diff) and not diff.matrix.isVisibleTo(diff)


def test_the_curves_are_read_in_the_analysis_process_never_on_the_gui_thread(qtbot, make_window, three_runs,
                                                                              monkeypatch):
    import json

    from engine.figures import run_curves

    def refuse(*args, **kwargs):
        raise AssertionError("a run's log was read in the GUI process")

    monkeypatch.setattr(run_curves, "load_curves", refuse)
    monkeypatch.setattr(run_curves, "read_jsonl", refuse)
    w = make_window()
    runs, curves = w.panes["pane_runs"], w.panes["pane_run_curves"]
    w.docks["pane_run_curves"].raise_()
    listed(qtbot, runs)
    for name in ("a", "b", "c"):
        runs.set_checked(three_runs / name)
    qtbot.waitUntil(lambda: sorted(curves.legend_names()) == ["a", "b", "c"], timeout=WAIT)
    assert len(curves.line(three_runs / "b", "train_loss").yData) == 9
    runs.set_checked(three_runs / "b", False)
    runs.set_checked(three_runs / "b")  # ticked again: the process sends what it read before
    qtbot.waitUntil(lambda: sorted(curves.legend_names()) == ["a", "b", "c"], timeout=WAIT)
    with open(three_runs / "c" / "metrics.jsonl", "a", encoding="utf-8") as f:  # c logs a step, as if training
        f.write(json.dumps({"step": 7, "train_loss": 1.25, "lr": 1e-3, "wall_s": 9.0}) + "\n")
    line = curves.line(three_runs / "c", "train_loss")
    qtbot.waitUntil(lambda: len(line.yData) == 7, timeout=WAIT)  # the pane's slow timer asked again
    assert curves.curves[three_runs / "c"].columns["train_loss"][-1] == 1.25


def test_every_act_and_column_of_the_browser_is_in_sight_and_rename_delete_and_reveal_act_on_the_selected_run(
        qtbot, make_window, monkeypatch, three_runs):
    """Two tests that each built a window over three_runs to act in the browser, as one (issue 42). Issue 26,
    item 10: at 1600×1000 three columns fitted, and Add folder and Refresh hid under a faint »."""
    import shutil

    from PySide6.QtCore import QRect
    from PySide6.QtGui import QDesktopServices

    from gui.main_window import MainWindow
    from gui.panes.runs.pane import COLUMNS, NAME_LEAST

    monkeypatch.setattr(MainWindow, "_available", lambda self: QRect(0, 0, 1600, 1000))
    shutil.copytree(three_runs / "a", three_runs / "tiny-wide-heads-run-20261125-101500")
    w, runs, _ = in_front(qtbot, make_window, "pane_runs")

    def in_sight() -> list[QRect]:
        rects = [b.geometry() for b in runs.buttons.values()]
        assert all(b.isVisible() for b in runs.buttons.values())
        assert all(runs.rect().contains(r) for r in rects)
        assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:])
        return rects

    in_sight()
    assert runs.button_row.lines() == 1
    tree = runs.tree
    assert sum(tree.columnWidth(i) for i in range(len(COLUMNS))) <= tree.viewport().width()  # no column scrolled off
    assert tree.columnWidth(0) >= NAME_LEAST

    # rename, delete and reveal act on the selected run
    listed(qtbot, runs)
    monkeypatch.setattr(runs, "ask_name", lambda current: "renamed")
    listed(qtbot, runs, runs.rename, three_runs / "b")
    assert (three_runs / "renamed").is_dir() and runs.item_for(three_runs / "renamed") is not None
    monkeypatch.setattr(runs, "confirm", lambda question: False)
    runs.delete(three_runs / "renamed")
    assert (three_runs / "renamed").is_dir()
    monkeypatch.setattr(runs, "confirm", lambda question: True)
    with qtbot.waitSignal(runs.sig_deleted, timeout=WAIT):
        runs.delete(three_runs / "renamed")
        assert runs.work is not None and runs.work.job.pid != os.getpid()  # deleted by a child process
    listed(qtbot, runs)
    assert not (three_runs / "renamed").exists() and runs.item_for(three_runs / "renamed") is None
    w.open_run(three_runs / "a")
    runs.delete(three_runs / "a")  # the open run is refused, not deleted
    assert (three_runs / "a").is_dir() and "open run" in w.banner.text
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()))
    runs.tree.setCurrentItem(runs.item_for(three_runs / "c"))
    runs.buttons["reveal"].click()
    assert opened == [str(three_runs / "c")]
    runs.tree.setCurrentItem(runs.item_for(three_runs / "a"))
    runs.acts["reveal"].trigger()  # as from the tool bar's » menu, in a dock too narrow for every button
    assert opened[-1] == str(three_runs / "a")
    runs.tree.setCurrentItem(runs.item_for(three_runs / "c"))
    runs.buttons["open"].click()
    assert w.controller.run_dir == three_runs / "c"

    # every act still in sight in a narrow floating browser
    dock = w.docks["pane_runs"]
    dock.setFloating(True)
    dock.resize(300, 500)  # narrower than the row of buttons: they wrap, none hides
    qtbot.waitUntil(lambda: runs.button_row.lines() >= 2)
    in_sight()
