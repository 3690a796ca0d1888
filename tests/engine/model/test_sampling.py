"""Sampling with a key/value cache (engine/model/gpt.py, `GPT.generate`): the same tokens as recomputing every
window, for every mask, positional encoding, norm and residual option, past the context too; the cache is used
where it holds and declined where it cannot (mask none)."""

import itertools

import pytest
import torch

from engine.configs.config import ModelConfig
from engine.model.gpt import GPT
from engine.model.sampling import NonFiniteLogits

N_CTX = 10


def model(dtype=torch.float64, **kw) -> GPT:
    torch.manual_seed(0)
    cfg = ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=24, n_ctx=N_CTX, vocab_size=13, **kw)
    m = GPT(cfg).to(dtype).eval()
    with torch.no_grad():  # weights large enough that the argmax depends on every part of the model
        for p in m.parameters():
            p.mul_(8.0)
    return m


def positions_computed(m: GPT, fn) -> list[int]:
    """How many positions each forward of `fn()` computed."""
    seen, residual = [], m.residual

    def counting(idx, *a, **kw):
        seen.append(idx.shape[1])
        return residual(idx, *a, **kw)

    m.residual = counting
    try:
        fn()
    finally:
        del m.residual
    return seen


@pytest.mark.parametrize("mask,pos,norm,residual", [
    *itertools.product(["causal", "banded"], ["learned", "sinusoidal", "none"], ["pre", "post", "none"], [True]),
    ("causal", "learned", "pre", False), ("banded", "none", "post", False), ("none", "learned", "pre", True)])
def test_tokens_with_the_cache_are_those_without(mask, pos, norm, residual):
    m = model(mask=mask, band=2, pos_encoding=pos, norm=norm, residual=residual, attn_bias=norm == "pre")
    prompt = torch.randint(13, (2, 4), generator=torch.Generator().manual_seed(1))
    for n in (1, 5, 16):  # within the context, and 10 tokens past it (the window slides)
        assert torch.equal(m.generate(prompt, n, temperature=0), m.generate(prompt, n, temperature=0, use_cache=False))
    drawn = [m.generate(prompt, 16, 1.0, generator=torch.Generator().manual_seed(4), use_cache=c) for c in (1, 0)]
    assert torch.equal(*drawn)
    assert len(set(drawn[0][0, 4:].tolist())) > 2, "a model that repeats a few tokens would not test much"


def test_greedy_tokens_agree_in_float32_too():
    m = model(torch.float32)
    prompt = torch.randint(13, (1, 3), generator=torch.Generator().manual_seed(2))
    assert torch.equal(m.generate(prompt, 20, temperature=0), m.generate(prompt, 20, temperature=0, use_cache=False))


def test_sampled_tokens_with_the_cache_are_those_without():
    m = model(mask="banded", band=3)
    prompt = torch.randint(13, (3, 2), generator=torch.Generator().manual_seed(3))
    draw = [m.generate(prompt, 14, temperature=0.9, top_k=6, generator=torch.Generator().manual_seed(4),
                       use_cache=c) for c in (True, False)]
    assert torch.equal(*draw)


def test_a_token_costs_one_position_while_the_cache_holds():
    m = model()
    prompt = torch.zeros(1, 4, dtype=torch.long)
    # the 7th token is drawn after 4 + 6 = N_CTX tokens: the context is full, and every one was computed once
    assert positions_computed(m, lambda: m.generate(prompt, 7, temperature=0)) == [4, 1, 1, 1, 1, 1, 1]
    # past the context every token recomputes its window: the positions of the tokens in it all move
    assert positions_computed(m, lambda: m.generate(prompt, 9, temperature=0)) == [4, 1, 1, 1, 1, 1, 1, N_CTX, N_CTX]


def test_without_a_causal_mask_the_cache_is_declined():
    # every token attends to the newest one, so the keys and values of the earlier ones change at each token
    m = model(mask="none")
    assert positions_computed(m, lambda: m.generate(torch.zeros(1, 2, dtype=torch.long), 3, temperature=0)) \
        == [2, 3, 4]


def test_logits_that_overflow_are_refused():
    m = model()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(1e200)
    for temperature in (0.0, 1.0):
        with pytest.raises(NonFiniteLogits):
            m.generate(torch.zeros(1, 2, dtype=torch.long), 3, temperature)
