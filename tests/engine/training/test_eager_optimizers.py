"""torch's optimizers without its compiler wrappers (engine/training/eager_optimizers.py): the same weights to the
bit as torch's own classes, state dicts that pass between the two, and training that imports no compiler."""

from __future__ import annotations

import pytest
import torch

from engine.configs.config import TrainConfig
from engine.training.optimizers import make_optimizer
from tests.engine.training.test_optimizers import gradients, model
from tests.fresh_imports import loaded_by

TORCH = {"adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}


@pytest.mark.parametrize("name", sorted(TORCH))
def test_steps_equal_torch_optimizers_to_the_bit_and_their_states_pass_between_them(name):
    t = TrainConfig(optimizer=name, lr=3e-2, weight_decay=0.1, momentum=0.9)
    ours, ref = model(), model()
    opt = make_optimizer(ours, t)
    assert type(opt) is not TORCH[name] and isinstance(opt, TORCH[name])
    ref_opt = TORCH[name]([dict(g, params=[dict(ref.named_parameters())[n] for n in names])
                           for g, names in zip(opt.param_groups, group_names(ours, opt))],
                          **{k: v for k, v in opt.defaults.items() if k in ("lr", "betas", "eps", "momentum", "fused")})
    for step in range(4):
        if step == 2:  # each takes the other's state and goes on as if it had made it
            mine, theirs = opt.state_dict(), ref_opt.state_dict()
            opt.load_state_dict(theirs)
            ref_opt.load_state_dict(mine)
        for m, o in ((ours, opt), (ref, ref_opt)):
            gradients(m, step)
            o.step()
            o.zero_grad()
    for (n, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        assert torch.equal(p, q), n
        assert p.grad is None


def group_names(m, opt) -> list[list[str]]:
    names = {id(p): n for n, p in m.named_parameters()}
    return [[names[id(p)] for p in g["params"]] for g in opt.param_groups]


def test_training_with_each_optimizer_imports_no_compiler(tmp_path):
    """torch's wrappers import torch._dynamo (and sympy with it, 71 MB) on an optimizer's first use."""
    code = ("from engine.training.trainer import Trainer\n"
            "from tests.engine.training.test_trainer import small_config\n"
            "for name in ('adamw', 'sgd', 'muon'):\n"
            "    trainer = Trainer(small_config(optimizer=name, steps=3, checkpoint_every=2), 'run-' + name,\n"
            "                      text='to be or not to be, ' * 200)\n"
            "    for _ in trainer.steps(): pass\n")
    assert loaded_by(code, ("torch._dynamo", "sympy"), tmp_path) == []


def test_a_run_saved_before_adamw_was_fused_resumes_unfused_so_it_repeats_to_the_bit():
    """The fused AdamW rounds a few last bits otherwise than torch's loop; a state saved by the loop says so
    (fused None) and the optimizer it is loaded into keeps stepping that way."""
    t = TrainConfig(optimizer="adamw")
    old = make_optimizer(model(), t)
    for g in old.param_groups:
        g["fused"] = None  # as a checkpoint written before this change holds it
    resumed = make_optimizer(model(), t)
    assert all(g["fused"] for g in resumed.param_groups)
    resumed.load_state_dict(old.state_dict())
    assert all(g["fused"] is None for g in resumed.param_groups)
