"""The model of what is open, driven without Qt: one event replaces the open run, and nothing of the
previous run (its live weights above all) survives it."""

import dataclasses

from engine.configs.config import ExperimentConfig, ModelConfig
from engine.training.state import TrainingState
from engine.workspace import OpenRun, Workspace


def record(event) -> list:
    seen = []
    event.connect(lambda *args: seen.append(args))
    return seen


def test_replacing_the_run_takes_its_live_weights_with_it():
    ws = Workspace()
    first = OpenRun(ws.draft.config)
    ws.replace_run(first)
    first.publish(7, {"W": 1})
    assert ws.live.step == 7
    second = OpenRun(ws.draft.config.replace(model=dataclasses.replace(ws.model, n_layer=3)))
    replaced = record(ws.sig_run_replaced)
    published = record(ws.sig_weights_published)
    ws.replace_run(second)
    assert replaced == [(second,)] and ws.live is None
    first.publish(8, {"W": 2})  # a trainer still finishing the first run publishes into it, not the open one
    assert ws.live is None and published == []
    second.publish(1, {"W": 3})
    assert [p[0].step for p in published] == [1]


def test_each_opening_has_its_own_serial_even_of_the_same_run():
    cfg = ExperimentConfig()
    assert OpenRun(cfg).serial != OpenRun(cfg).serial


def test_the_model_is_the_open_runs_else_the_drafts():
    draft = ExperimentConfig(model=ModelConfig(d_model=32, n_head=2))
    ws = Workspace(draft)
    models = record(ws.sig_model_changed)
    run_cfg = draft.replace(model=dataclasses.replace(draft.model, vocab_size=40))
    ws.replace_run(OpenRun(run_cfg))
    assert ws.model == run_cfg.model and models == []  # said by the one event of the opening
    ws.set_draft(config=draft.replace(model=dataclasses.replace(draft.model, n_layer=3)))
    assert ws.model == run_cfg.model and models == []  # an edited draft does not replace the run's
    ws.replace_run(None)
    assert ws.model.n_layer == 3
    ws.set_draft(config=draft)
    assert models == [(draft.model,)]  # with no run open, the draft's model is the one shown


def test_opening_a_run_is_one_event_with_its_config_and_training_state():
    ws = Workspace()
    ws.set_draft(problems=["data.corpus: no such file"])
    events = [record(e) for e in (ws.sig_draft_changed, ws.sig_model_changed, ws.sig_training_changed,
                                  ws.sig_selection_changed, ws.sig_run_replaced)]
    run_cfg = ws.draft.config.replace(model=dataclasses.replace(ws.model, n_layer=3, vocab_size=50))
    opened = OpenRun(run_cfg)
    ws.replace_run(opened, config=run_cfg, training="stopped")
    assert [len(e) for e in events] == [0, 0, 0, 0, 1]
    assert (ws.open_run, ws.draft.config, ws.draft.problems, ws.training) == (opened, run_cfg, (), TrainingState.STOPPED)


def test_a_new_runs_folder_attaches_to_the_same_opening():
    ws = Workspace()
    pending = OpenRun(ws.draft.config)
    ws.replace_run(pending)
    attached, replaced = record(ws.sig_run_attached), record(ws.sig_run_replaced)
    folder = type("Run", (), {"path": "/tmp/run-x", "saved_steps": lambda self: [0, 5]})()
    resolved = ws.draft.config.replace(model=dataclasses.replace(ws.model, vocab_size=65))
    pending.attach(folder, resolved, "tok")
    assert attached == [(pending,)] and replaced == []
    assert ws.open_run is pending and pending.saved_steps() == [0, 5] and ws.model.vocab_size == 65


def test_the_selection_follows_the_run_where_its_model_allows():
    ws = Workspace(ExperimentConfig(model=ModelConfig(n_layer=4, n_head=4)))
    ws.select(weight="blocks.3.W_K", layer=3, head=3, step=250)
    small = ExperimentConfig(model=ModelConfig(n_layer=2, n_head=2, d_model=32))
    ws.replace_run(OpenRun(small))
    s = ws.selection
    assert (s.weight, s.layer, s.head, s.step) == (None, 1, 1, None)  # no blocks.3 in a 2-layer model
    ws.select(weight="blocks.1.W_Q")
    ws.replace_run(OpenRun(small))
    assert ws.selection.weight == "blocks.1.W_Q"


def test_a_selection_event_names_what_changed_and_nothing_fires_for_no_change():
    ws = Workspace()
    changes = record(ws.sig_selection_changed)
    ws.select(layer=1, step=4)
    ws.select(layer=1)
    assert len(changes) == 1 and changes[0][1] == {"layer", "step"}


def test_draft_problems_and_training_state():
    ws = Workspace()
    drafts, states = record(ws.sig_draft_changed), record(ws.sig_training_changed)
    ws.set_draft(problems=["model.n_head: must divide d_model"])
    ws.set_draft(problems=["model.n_head: must divide d_model"])
    ws.set_training("running")
    ws.set_training(TrainingState.RUNNING)
    assert len(drafts) == 1 and ws.draft.problems == ("model.n_head: must divide d_model",)
    assert states == [(TrainingState.RUNNING,)]
