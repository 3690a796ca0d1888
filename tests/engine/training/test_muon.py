"""StackedMuon is torch.optim.Muon, bit for bit, with its Newton–Schulz iterations stacked by shape."""

import torch

from engine.training.muon import StackedMuon


NANOGPT_CPU = [(128, 128)] * 4 + [(128, 512), (512, 128)]  # one block of the nanogpt-cpu model
SMALL = [(16, 16), (16, 16), (16, 48), (48, 16), (16, 48), (8, 24)]  # squares, wide, tall, a lone shape


def _matrices(seed: int, shapes=SMALL) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(*s, generator=g)) for s in shapes]


def _train(opt_class, steps: int, shapes=SMALL, **kwargs) -> list[torch.Tensor]:
    params = _matrices(0, shapes)
    opt = opt_class(params, lr=0.03, weight_decay=0.1, momentum=0.95, **kwargs)
    g = torch.Generator().manual_seed(1)
    for step in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g)
        opt.param_groups[0]["momentum"] = 0.85 + 0.01 * step  # a schedule moves it, as ours does
        opt.step()
    return [p.detach().clone() for p in params]


def test_stacked_muon_equals_torch_muon_bit_for_bit_on_the_nanogpt_cpu_shapes():
    ours, theirs = _train(StackedMuon, 6, NANOGPT_CPU), _train(torch.optim.Muon, 6, NANOGPT_CPU)
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)


def test_stacked_muon_equals_torch_muon_to_bfloat16_rounding_on_any_shape():
    # a batched product of tiny bfloat16 matrices may take another kernel than the single one: the last bit differs
    for kwargs in ({}, {"nesterov": False}, {"adjust_lr_fn": "match_rms_adamw"}):
        ours, theirs = _train(StackedMuon, 6, **kwargs), _train(torch.optim.Muon, 6, **kwargs)
        for a, b in zip(ours, theirs):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-3, msg=str(kwargs))
        assert any(not torch.equal(a, b) for a, b in zip(ours, _train(StackedMuon, 5, **kwargs)))  # it moved


def test_stacked_muon_state_is_torch_muon_state():
    params = _matrices(2)
    ours = StackedMuon(params, lr=0.02)
    for p in params:
        p.grad = torch.ones_like(p)
    ours.step()
    theirs = torch.optim.Muon(_matrices(2), lr=0.02)
    theirs.load_state_dict(ours.state_dict())  # a checkpoint written by one resumes under the other
    assert set(theirs.state_dict()["state"]) == set(range(len(params)))
