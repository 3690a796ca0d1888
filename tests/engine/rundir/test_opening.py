"""Opening a run without copying (issue 38): the model holds the weights file's own tensors, built without
drawing an initialisation; a run created whole writes its weights once; the checks that remain are cheap and
still refuse what they refused."""

from __future__ import annotations

import os

import pytest
import torch

from engine.configs.config import ModelConfig
from engine.model.gpt import GPT
from engine.rundir import integrity
from engine.rundir.create import create_run
from engine.rundir.listing import disk_size
from engine.rundir.runs import Run
from engine.training.trainer import Trainer
from tests.engine.training.test_trainer import small_config


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from engine.text.corpus import shakespeare_text

    run_dir = tmp_path_factory.mktemp("opening") / "run"
    list(Trainer(small_config(steps=10, checkpoint_every=10, eval_every=10), run_dir,
                 text=shakespeare_text()[:40_000]).steps())
    return run_dir


def test_a_model_from_weights_holds_those_tensors_and_draws_nothing():
    cfg = ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=24, n_ctx=8, vocab_size=11, attn_bias=True)
    weights = GPT(cfg).state_dict()
    before = torch.get_rng_state()
    model = GPT.from_weights(cfg, weights)
    assert torch.equal(torch.get_rng_state(), before)
    assert all(p.data_ptr() == weights[name].data_ptr() for name, p in model.named_parameters())
    assert not model.training and all(p.requires_grad for p in model.parameters())
    with pytest.raises(RuntimeError, match="size mismatch"):
        GPT.from_weights(cfg, {**weights, "W_E": torch.zeros(12, 16)})


def test_opening_a_run_maps_its_file_instead_of_copying_it(trained):
    before = torch.get_rng_state()
    model = Run(trained).build_model(10)
    assert torch.equal(torch.get_rng_state(), before)  # no initialisation drawn, for the model or its check
    again = Run(trained).load_weights(10)
    assert torch.equal(model.W_E.detach(), again["W_E"])
    if os.name != "nt":  # a private map of the file: writing to the model leaves the file as it was
        with torch.no_grad():
            model.W_E.add_(1.0)
        assert torch.equal(Run(trained).load_weights(10)["W_E"], again["W_E"])


def test_a_run_created_whole_writes_its_weights_once(trained, tmp_path):
    parent = Run(trained)
    child = create_run(tmp_path / "made", parent.config, parent.tokenizer, parent.probe(), parent.load_weights(10),
                       step=10)
    snapshot = child / "snapshots" / "step-000010.safetensors"
    checkpoint = child / "checkpoints" / "step-000010" / "model.safetensors"
    assert os.path.samefile(snapshot, checkpoint)
    assert integrity.verify_sidecar(snapshot)  # its checksum is the checkpoint's, and it matches
    run = Run(child)
    assert torch.equal(run.load_weights(10)["W_E"], run.load_checkpoint(10)[0]["W_E"])
    files = sum(p.stat().st_size for p in child.rglob("*") if p.is_file())
    assert disk_size(child) == files - snapshot.stat().st_size  # the file's second name counts once


def test_finiteness_is_tested_exactly_even_where_a_sum_overflows():
    big = torch.full((4,), 3e38)
    assert integrity.non_finite({"a": big, "b": torch.ones(3)}) == []
    for bad in (float("inf"), float("-inf"), float("nan")):
        assert integrity.non_finite({"a": big, "b": torch.tensor([1.0, bad])}) == ["b"]


def test_a_run_is_checked_without_torch(trained, tmp_path):
    """The app opens a large run with every check in a child process (gui/controller.py): torch's import was
    most of that child's time, and checking a run's files needs none of it."""
    from tests.fresh_imports import loaded_by

    code = f"from engine.rundir.runs import check_run\nassert check_run({str(trained)!r}) == []"
    assert loaded_by(code, ("torch",), tmp_path) == []
