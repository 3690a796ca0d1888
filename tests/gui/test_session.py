"""Session, the workspace's Qt face: one current model (the open run's when a run is open, the draft's
otherwise), and opening a run is one signal."""

import dataclasses

from engine.configs.config import ExperimentConfig, ModelConfig
from engine.workspace import OpenRun
from gui.session import Session

SIGNALS = ("sig_config_changed", "sig_config_problems_changed", "sig_run_replaced", "sig_run_attached",
           "sig_browse_step_changed", "sig_training_state_changed", "sig_model_changed", "sig_weight_selected")


class _Run:
    def __init__(self, config):
        self.config = config


def heard(session) -> list:
    got = []
    for name in SIGNALS:
        getattr(session, name).connect(lambda *args, name=name: got.append(name))
    return got


def test_the_current_model_is_the_runs_when_one_is_open_else_the_drafts():
    draft = ExperimentConfig(model=ModelConfig(d_model=32, n_head=2))
    session = Session(draft)
    seen = []
    session.sig_model_changed.connect(seen.append)
    assert session.model == draft.model
    run_cfg = draft.replace(model=dataclasses.replace(draft.model, vocab_size=40))
    session.set_run(_Run(run_cfg))
    assert session.model == run_cfg.model
    session.set_config(draft.replace(model=dataclasses.replace(draft.model, n_layer=3)))
    assert session.model == run_cfg.model and seen == []  # an edited draft does not replace the run's
    session.set_run(None)
    assert session.model.n_layer == 3


def test_opening_a_run_is_one_signal():
    draft = ExperimentConfig(model=ModelConfig(d_model=32, n_head=2))
    session = Session(draft)
    session.workspace.select(step=4)
    got = heard(session)
    run_cfg = draft.replace(model=dataclasses.replace(draft.model, n_layer=3, vocab_size=40))
    session.replace_run(OpenRun(run_cfg), config=run_cfg, training="stopped")
    assert got == ["sig_run_replaced"]
    assert (session.config, session.model, session.browse_step, session.training_state) == \
        (run_cfg, run_cfg.model, None, "stopped")
