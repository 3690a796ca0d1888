"""The Weight pane's view models without Qt: what each needs of the open run at the workspace's weight and step,
in order, and that an answer held is not asked again."""

from types import SimpleNamespace

from engine.analysis import questions as q
from engine.configs.config import ExperimentConfig, ModelConfig
from engine.model.weight_layout import weight_names
from engine.views.weight import CoefficientView, shown_step, shown_weight
from engine.views.weight_tabs import InteractionView, RoutesView
from engine.workspace import OpenRun, Workspace

STEPS = [0, 2, 4]


def workspace() -> Workspace:
    cfg = ExperimentConfig(model=ModelConfig(n_layer=1, n_head=2, d_model=8, d_ff=16, n_ctx=8, vocab_size=11))
    ws = Workspace(cfg)
    run = SimpleNamespace(path="runs/a", saved_steps=lambda: list(STEPS))
    ws.replace_run(OpenRun(cfg, run=run))
    return ws


def test_the_weight_and_step_shown_are_the_selections():
    ws = workspace()
    names = weight_names(ws.model)
    assert shown_weight(ws) == names[1] and shown_step(ws) == 4  # nothing chosen: the first block's, the newest
    ws.select(weight="blocks.0.W_Q.h1", step=2)  # a head's block opens its matrix
    assert (shown_weight(ws), shown_step(ws)) == ("blocks.0.W_Q", 2)


def test_the_coefficient_page_needs_its_table_then_the_step_shown_first():
    ws = workspace()
    view = CoefficientView()
    assert view.needs(ws) == [q.CoefficientTable("runs/a")]
    view.take(q.CoefficientTable("runs/a"), (ws.model, weight_names(ws.model)))
    ws.select(weight="blocks.0.W_K", step=2)
    needs = view.needs(ws)
    assert needs[0] == q.CoefficientAt("runs/a", "blocks.0.W_K", 2, True, False, None)
    assert q.CoefficientFormula(ws.model, "blocks.0.W_K", "total", None) in needs
    assert [n.step for n in needs if isinstance(n, q.CoefficientAt) and not n.full] == [0, 4]  # the charts'
    assert view.failure(ws) is None
    view.failed(needs[0], "a snapshot is corrupt")  # the step shown's: the page says it
    view.failed(q.CoefficientAt("runs/a", "blocks.0.W_K", 4, True, False, None), "another step's")
    assert view.failure(ws) == "a snapshot is corrupt"
    view.forget()
    assert view.table is None and view.needs(ws) == [q.CoefficientTable("runs/a")]


def test_the_routes_are_one_question_for_the_weight_or_the_whole_model():
    ws = workspace()
    names = weight_names(ws.model)
    view = RoutesView()
    assert view.needs(ws) == [q.RouteShares("runs/a", names[1])]
    view.whole = True
    assert view.needs(ws) == [q.RouteShares("runs/a", None)]
    summed = SimpleNamespace(steps=[2, 4], weight=None)
    view.take(q.RouteShares("runs/a", None), summed)
    assert view.shown(ws) is summed and view.needs(ws) == []


def test_the_interaction_needs_the_pair_at_the_step_shown_then_every_later_map():
    ws = workspace()
    view = InteractionView(other="blocks.0.W_V")
    ws.select(weight="blocks.0.W_Q", step=4)
    needs = view.needs(ws)
    assert needs[:2] == [q.Interaction("runs/a", "blocks.0.W_Q", "blocks.0.W_V", 4),
                         q.InteractionRoutes("runs/a", "blocks.0.W_Q", "blocks.0.W_V", 4)]
    assert needs[2:] == [q.InteractionMap("runs/a", 4), q.InteractionMap("runs/a", 2)]
    view.take(needs[2], SimpleNamespace(step=4))
    assert q.InteractionMap("runs/a", 4) not in view.needs(ws)
    view.forget()
    assert view.maps == {} and view.pairs == {}
