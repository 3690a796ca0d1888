"""Issue 37: nothing of a closed run is ever drawn. A run is open with every pane seen, a long question about it is
held in the analysis process and a light one is on its way; another run of another shape (more layers, heads and
a wider model) is opened. At once no view model that follows the open run holds anything of the first; the long
question's work stops; the light answer that arrives late is dropped; and once the second run's answers come,
every pane draws the second run's shapes. The same when the run that replaces it is a fork of it written by the
Runs pane (same shapes: what is drawn next must be the fork's), and a Hugging Face GPT-2 folder imported through
File → Open Hugging Face model (a tiny one, opened as GPT-2 small's is: checked in a child, its tokenizer never read
in the app's process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.model.weight_layout import weight_names, weight_shapes
from engine.views.head_timeline import HeadTimelineView
from engine.views.heatmaps import HeatmapsView
from engine.views.next_tokens import NextTokensView
from engine.views.readings import CurvatureView, TokensView
from engine.views.term_values import TermValuesView
from engine.views.weight import CoefficientView
from engine.views.weight_tabs import DistributionsView, GeometryView, InteractionView, RoutesView
from gui.panes.training.head_timeline import HeadTimelinePanel

from gui import run_menu
from tests.engine.importers.test_hugging_face import hf_model, pretrained, tokenizer  # noqa: F401  (fixtures)

from .analysis_state import Gated, Held
from .conftest import QT_NOISE, imported, tiny_config
from .test_open_run_sequence import see

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]
WAIT = 60_000
PANES = ("pane_heatmaps", "pane_weight", "pane_training", "pane_forms")

# what each view model that follows the open run holds of it: every such view is named here (a new one too)
HELD = {HeatmapsView: ("results", "live"), CoefficientView: ("table", "records", "formulas", "largest"),
        GeometryView: ("answers",), DistributionsView: ("answers",), RoutesView: ("answers",),
        InteractionView: ("pairs", "routes", "maps"), HeadTimelineView: ("timeline",),
        NextTokensView: ("result", "asked_for", "live"), TokensView: ("reading", "timeline"),
        CurvatureView: ("result", "series"), TermValuesView: ("values", "asked_for", "live")}


@pytest.fixture(scope="module")
def two_shapes(tmp_path_factory):
    """A 1-layer, 2-head, d_model 16 run, and a 2-layer, 4-head, d_model 32 one (only read here)."""
    from tests.engine.cli.test_export_cli import tiny_run

    root = tmp_path_factory.mktemp("shapes")
    return tiny_run(root / "small", n_layer=1, n_head=2), tiny_run(root / "wide", n_layer=2, n_head=4, d_model=32,
                                                                    d_ff=64)


def holds_nothing(view) -> bool:
    return all(not getattr(view, name) for name in HELD[type(view)]) and not view.failures and view.progress is None


def drawn(qtbot, w, path) -> None:
    """Every pane seen, until the Heatmaps pane draws `path`'s attention and the Weight pane its page and formula."""
    for name in PANES:
        see(qtbot, w, name)
    heatmaps, weight = w.panes["pane_heatmaps"], w.panes["pane_weight"]
    see(qtbot, w, "pane_heatmaps")
    qtbot.waitUntil(lambda: (heatmaps.view.shown(w.session.workspace) or [None])[0] is not None
                    and heatmaps.view.shown(w.session.workspace)[0].source.run == str(path), timeout=WAIT)
    see(qtbot, w, "pane_weight")
    qtbot.waitUntil(lambda: weight.page.drawn is not None and weight.tabs.isVisible(), timeout=WAIT)
    model = w.session.model
    assert weight.page.drawn.W.shape == weight_shapes(model)[weight.page.drawn.weight]
    assert weight.G_map.matrix().shape == weight.page.drawn.W.shape
    qtbot.waitUntil(lambda: not weight.formula.pixmap().isNull(), timeout=WAIT)  # its formula typeset


def replaced_while_held(qtbot, w, gates: Path, replace) -> None:
    """A long question about the open run held in the analysis process and a light one on its way, `replace()`
    opens another run; then nothing of the first is held or drawn, the long work stops and the light answer,
    which comes late, is dropped."""
    asker, late = w.session.asker, []
    held, light = str(gates / "held"), str(gates / "light")
    asker.ask(Held(held), late.append)   # long work about the run open now
    asker.ask(Gated(light), late.append)  # light, and answered even though it is cancelled
    qtbot.waitUntil(lambda: Path(held + ".started").exists() and Path(light + ".started").exists(), timeout=WAIT)
    first = w.session.workspace.open_run

    replace()
    assert w.session.workspace.open_run is not first
    following = [v for v in asker._views if v.follows_open_run]
    assert {type(v) for v in following} <= set(HELD), "name what a new view holds in HELD"
    assert all(holds_nothing(v) for v in following), [type(v).__name__ for v in following if not holds_nothing(v)]
    # and the Weight pane draws none of it while the next run's answers are on their way
    weight = w.panes["pane_weight"]
    page = weight.page
    assert page.drawn is None and page.formula.pixmap().isNull() and page.formula.text() == ""
    assert weight.G_map.matrix().shape == (1, 1) and page.parts.groups["term"].text(0) == "terms"
    assert Held(held) not in asker.out() and Gated(light) not in asker.out()

    # the held work stops at its next report; the light answer comes late and is dropped
    Path(light).touch()
    qtbot.waitUntil(lambda: not any(isinstance(o.question, (Held, Gated)) for o in asker._out.values()),
                    timeout=WAIT)
    assert Path(light + ".finished").exists() and not Path(held + ".finished").exists() and late == []
    Path(held).touch()


def test_nothing_of_a_closed_run_is_drawn_and_its_work_stops(qtbot, make_window, two_shapes, tmp_path):
    small, wide = two_shapes
    w = make_window()
    w.resize(1600, 1000)
    errors: list = []
    w.session.sig_message_posted.connect(lambda level, text: level == "error" and errors.append(text))
    w.open_run(small.path)
    drawn(qtbot, w, small.path)
    replaced_while_held(qtbot, w, tmp_path, lambda: w.open_run(wide.path))

    model = wide.config.model
    heatmaps, weight = w.panes["pane_heatmaps"], w.panes["pane_weight"]
    drawn(qtbot, w, wide.path)
    assert heatmaps.view.shown(w.session.workspace)[1].maps.weights.shape[:2] == (model.n_layer, model.n_head)
    items = {weight.weight_box.itemText(i) for i in range(weight.weight_box.count())}
    assert weight.page.drawn.weight in weight_names(model) and items <= set(weight_names(model))
    panel = w.findChild(HeadTimelinePanel)
    assert panel.timeline is None or panel.timeline.values["induction"].shape[1:] == (model.n_layer, model.n_head)
    assert errors == [], errors


def test_nothing_of_a_run_is_drawn_after_its_fork_or_an_import_opens(
        qtbot, make_window, pretrained, corpus_file, small_text, tmp_path, monkeypatch):  # noqa: F811
    """The run open is forked by the Runs pane while a long question about it is held; then, with a long question
    about the fork held, a Hugging Face GPT-2 folder (2 layers, 4 heads) is imported. The fork is written on a
    thread (its process, which imports torch, is not this test's point); the import and the check of the run it
    opens keep theirs, as the app's process must never parse the tokenizer."""
    from engine.child_job import ChildJob
    from engine.configs.config import parse_setting
    from engine.rundir.runs import Run
    from engine.training.trainer import Trainer
    from gui import settings

    parent = settings.runs_root() / "parent"
    list(Trainer(tiny_config(corpus_file, steps=4, eval_every=2, checkpoint_every=4, snapshot_every=2), parent,
                 text=small_text).steps())
    w = make_window()
    w.resize(1600, 1000)
    errors: list = []
    w.session.sig_message_posted.connect(lambda level, text: level == "error" and errors.append(text))
    w.open_run(parent)
    drawn(qtbot, w, parent)

    runs = w.panes["pane_runs"]  # the fork's form, answered: another learning rate, from step 0
    monkeypatch.setattr(runs, "ask_fork", lambda run: (parse_setting("train.lr=0.002", run.config), 0))
    forks: list = []

    def fork() -> None:
        with qtbot.waitSignal(runs.sig_forked, timeout=WAIT):
            forks.append(runs.fork(parent))
    (tmp_path / "fork").mkdir()
    monkeypatch.setattr(ChildJob, "in_thread", True)
    replaced_while_held(qtbot, w, tmp_path / "fork", fork)
    monkeypatch.setattr(ChildJob, "in_thread", False)
    child = forks[0]
    assert w.controller.run_dir == child and Run(child).config.train.lr == 0.002
    drawn(qtbot, w, child)  # the fork's own answers, not its parent's

    # as GPT-2's import opens: its tokenizer file counts as large, so the run is checked in a child first and the
    # app never parses the tokenizer (gui/controller.py); what the panes draw of it is read in the analysis process
    from engine.text import tokenizer as tokenizer_module
    from gui import controller as controller_module

    def not_here(*_args, **_kwargs):
        raise AssertionError("a tokenizer was parsed in the app's process")

    monkeypatch.setattr(controller_module, "CHECK_APART_BYTES", 0)
    monkeypatch.setattr(tokenizer_module, "tokenizer_from_dict", not_here)
    imports: list = []

    def import_hf() -> None:
        with qtbot.waitSignal(w.controller.sig_run_shown, timeout=WAIT):
            imports.append(imported(qtbot, run_menu.import_hf(w, pretrained)))
    (tmp_path / "import").mkdir()
    replaced_while_held(qtbot, w, tmp_path / "import", import_hf)
    assert imports[0] is not None and w.controller.run_dir == imports[0] and w.session.tokenizer is None
    drawn(qtbot, w, imports[0])
    model = w.session.model
    assert (model.n_layer, model.n_head) == (2, 4)
    assert w.panes["pane_heatmaps"].view.shown(w.session.workspace)[1].maps.weights.shape[:2] == (2, 4)
    assert errors == [], errors
