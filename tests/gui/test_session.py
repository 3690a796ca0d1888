"""Session, the workspace's Qt face: one current model (the open run's when a run is open, the draft's
otherwise), and opening a run is one signal."""

import dataclasses
import json

from engine.configs.config import ExperimentConfig, ModelConfig
from engine.workspace import OpenRun
from gui.session import Session

SIGNALS = ("sig_config_changed", "sig_config_problems_changed", "sig_run_replaced", "sig_run_attached",
           "sig_browse_step_changed", "sig_training_state_changed", "sig_model_changed", "sig_weight_selected")


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
    session.replace_run(OpenRun(run_cfg))
    assert session.model == run_cfg.model
    session.set_config(draft.replace(model=dataclasses.replace(draft.model, n_layer=3)))
    assert session.model == run_cfg.model and seen == []  # an edited draft does not replace the run's
    session.replace_run(None)
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


def test_a_run_opened_as_the_app_opens_it_keeps_a_checked_runs_tokenizer_unread(tmp_path, monkeypatch):
    """`set_run` is the controller's way of showing a Run: its config in the builder, training stopped, and a run
    checked in a child (GPT-2's) shown without its tokenizer parsed here (~3 s of GPT-2's). It read
    `run.tokenizer`, which parses it."""
    from engine.rundir.runs import Run
    from engine.text import tokenizer

    tok = tokenizer.CharTokenizer.fit("to be or not ")
    cfg = ExperimentConfig(model=ModelConfig(d_model=32, n_head=2, vocab_size=tok.vocab_size))
    (tmp_path / "config.toml").write_text(cfg.to_toml(), encoding="utf-8")
    (tmp_path / "tokenizer.json").write_text(json.dumps(tok.to_dict()), encoding="utf-8")
    run = Run(tmp_path, checked=True)

    def not_here(*_args, **_kwargs):
        raise AssertionError("a tokenizer was parsed in the app's process")

    monkeypatch.setattr(tokenizer, "tokenizer_from_dict", not_here)
    session = Session()
    session.set_run(run)
    assert session.run is run and session.tokenizer is None and run.tokenizer_if_read is None
    assert session.config == run.config and session.training_state == "stopped"
