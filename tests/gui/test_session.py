"""Session's one current model: the open run's resolved config when a run is open, the draft otherwise,
announced once per change."""

import dataclasses

from engine.configs.config import ExperimentConfig, ModelConfig
from gui.session import Session


class _Run:
    def __init__(self, config):
        self.config = config


def test_the_current_model_is_the_runs_when_one_is_open_else_the_drafts():
    draft = ExperimentConfig(model=ModelConfig(d_model=32, n_head=2))
    session = Session(draft)
    seen = []
    session.sig_model_changed.connect(seen.append)
    assert session.model == draft.model
    run_cfg = draft.replace(model=dataclasses.replace(draft.model, vocab_size=40))
    session.set_run(_Run(run_cfg))
    assert session.model == run_cfg.model and seen == [run_cfg.model]
    session.set_config(draft.replace(model=dataclasses.replace(draft.model, n_layer=3)))
    assert session.model == run_cfg.model and len(seen) == 1  # an edited draft does not replace the run's
    session.set_run(None)
    assert session.model.n_layer == 3 and len(seen) == 2
