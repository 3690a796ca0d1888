"""What a new user does in a row: train live, open another run, import a nanoGPT checkpoint, start a new
run. After each, every pane shows only the run now open (or its empty state), and no error is posted."""

from __future__ import annotations

import pytest

from engine.rundir.runs import Run
from engine.model.weight_layout import weight_names
from gui import run_menu
from gui.panes.training.head_timeline import HeadTimelinePanel

from .conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 60_000  # ms: generous for a shared machine
PANES = ("pane_heatmaps", "pane_forms", "pane_weight", "pane_training")


def see(qtbot, w, name: str) -> None:
    w.docks[name].raise_()
    pane = w.panes[name]
    qtbot.waitUntil(lambda: pane.seen() if hasattr(pane, "seen") else pane.isVisible(), timeout=WAIT)


def heatmaps_show_only(w, model) -> bool:
    """The attention on screen is of the open run's model (n_layer × n_head maps), or nothing is shown."""
    pane = w.panes["pane_heatmaps"]
    shown = pane.view.shown(w.session.workspace)
    if shown is None:
        return not pane.tabs.isVisible()
    return shown[1].maps.weights.shape[:2] == (model.n_layer, model.n_head)


def weight_pane_shows_only(w, model) -> bool:
    pane = w.panes["pane_weight"]
    items = [pane.weight_box.itemText(i) for i in range(pane.weight_box.count())]
    if not pane.tabs.isVisible():
        return True
    return set(items) <= set(weight_names(model)) and pane.weight_box.currentText() in items


def check_every_pane(qtbot, w, errors: list, expect_run: bool) -> None:
    model = w.session.model
    for name in PANES:
        see(qtbot, w, name)
    see(qtbot, w, "pane_heatmaps")
    if expect_run:  # the open run's attention arrives, and only it
        qtbot.waitUntil(lambda: w.panes["pane_heatmaps"].view.results.get("attention") is not None, timeout=WAIT)
    assert heatmaps_show_only(w, model)
    assert "do not fit" not in w.panes["pane_heatmaps"].status.text()
    see(qtbot, w, "pane_weight")
    if expect_run:
        qtbot.waitUntil(lambda: w.panes["pane_weight"].tabs.isVisible(), timeout=WAIT)
    assert weight_pane_shows_only(w, model)
    see(qtbot, w, "pane_forms")
    detail = w.panes["pane_forms"].terms.detail
    assert not detail.values_note.text().startswith("No value"), detail.values_note.text()
    training = w.panes["pane_training"]
    run = w.session.run
    logged = [r["step"] for r in run.metrics() if "train_loss" in r] if run is not None else []
    assert list(training.history.steps) == [s for s in logged if s in training.history.steps]
    if run is None:
        assert list(training.history.steps) == []
    if not training.history.steps:  # an empty plot keeps no range of the run shown before
        low, high = training.plot.loss.viewRange()[1]
        assert -0.1 < low and high < 1.1
    assert w.step_label.text() == ("" if run is None else
                                   f"step {run.latest_step():,} / {run.config.train.steps:,}")
    panel = w.findChild(HeadTimelinePanel)
    assert panel.timeline is None or expect_run
    assert errors == [], errors


def test_each_pane_shows_only_the_open_run_through_train_open_import_and_new(qtbot, make_window, tmp_path,
                                                                            children_in_thread):
    """The import runs on a thread (children_in_thread): what it opens is this test's point, not its process."""
    from tests.engine.cli.test_export_cli import tiny_run
    from tests.engine.importers.test_nanogpt import write_out_dir

    other = tiny_run(tmp_path / "other", n_layer=2, n_head=2)   # the window trains 1 layer × 2 heads
    write_out_dir(tmp_path / "nano", iter_num=4)
    w = make_window()
    w.resize(1600, 1000)
    errors: list = []
    w.session.sig_message_posted.connect(lambda level, text: level == "error" and errors.append(text))

    see(qtbot, w, "pane_heatmaps")
    w.session.request_training("train")
    qtbot.waitUntil(lambda: w.session.weights is not None and w.session.run is not None, timeout=WAIT)
    qtbot.waitUntil(lambda: w.panes["pane_heatmaps"].view.results.get("attention") is not None, timeout=WAIT)
    trained = w.session.run.path

    w.open_run(other.path)  # while training: the trainer stops, its run closes
    assert w.session.weights is None and w.session.run.path == other.path
    check_every_pane(qtbot, w, errors, expect_run=True)

    from .conftest import imported as finished

    imported = finished(qtbot, run_menu.import_nanogpt(w, tmp_path / "nano"))
    assert imported is not None and w.session.run.path == imported
    assert w.session.model.n_layer == 2 and w.session.model.d_model == 16
    check_every_pane(qtbot, w, errors, expect_run=True)

    w.new_run()
    assert w.session.run is None and w.session.open_run is None
    check_every_pane(qtbot, w, errors, expect_run=False)
    assert Run(trained).checkpoint_steps()  # the live run was left resumable
