"""Probes: attention read from the explicit path, masks as NaN, head summaries, positional encodings."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from engine.model import probes
from engine.configs.config import ModelConfig
from engine.text.tokenizer import CharTokenizer
from engine.errors import UserError
from engine.model.gpt import GPT

TOK = CharTokenizer.fit("First Citizen:\nBefore we proceed any further, hear me speak.")


def model(**kw) -> GPT:
    torch.manual_seed(0)
    cfg = dict(n_layer=2, n_head=3, d_model=24, d_ff=32, n_ctx=16, vocab_size=TOK.vocab_size)
    return GPT(ModelConfig(**{**cfg, **kw})).double().eval()


@pytest.mark.parametrize("mask", ["causal", "banded", "none"])
def test_attention_equals_the_models_explicit_attention(mask):
    m = model(mask=mask, band=3)
    ids = probes.prompt_ids(TOK, "Before we proceed", 16)
    maps = probes.attention_maps(m, ids, probes.visible_tokens(TOK, ids))
    trace = m.attention_trace(torch.as_tensor(ids)[None])
    assert maps.weights.shape == (2, 3, 16, 16)
    ok = maps.mask
    for layer, t in enumerate(trace):
        want = t.weights[0].numpy()
        np.testing.assert_array_equal(maps.weights[layer][:, ok], want[:, ok])
        np.testing.assert_array_equal(maps.scores[layer], t.scores[0].numpy())
        np.testing.assert_array_equal(maps.masked[layer][:, ok], t.masked[0].numpy()[:, ok])
    assert np.isnan(maps.weights[..., ~ok]).all() and np.isnan(maps.masked[..., ~ok]).all()
    assert not np.isinf(maps.masked).any()
    np.testing.assert_allclose(np.nansum(maps.weights, axis=-1), 1.0, atol=1e-12)


def test_prompt_is_cut_to_the_context_and_whitespace_is_visible():
    ids = probes.prompt_ids(TOK, "First Citizen:\nBefore we proceed any further", 16)
    assert len(ids) == 16
    assert probes.visible_tokens(TOK, ids[:7]) == ("F", "i", "r", "s", "t", "␣", "C")
    assert probes.visible_tokens(TOK, TOK.encode(":\n")) == (":", "↵")
    with pytest.raises(UserError):
        probes.prompt_ids(TOK, "", 16)


@pytest.mark.parametrize("band", [1, 2, 5])
def test_banded_mask_allows_exactly_band_plus_one_keys_per_full_row(band):
    shown = probes.mask_matrix("banded", 12, band)
    counts = np.isfinite(shown).sum(axis=1)
    assert (counts[band:] == band + 1).all()
    assert counts[:band].tolist() == list(range(1, band + 1))
    assert np.isfinite(shown[5, 5 - band: 6]).all()


def test_causal_mask_is_lower_triangular_with_nan_above():
    shown = probes.mask_matrix("causal", 5)
    np.testing.assert_array_equal(np.isfinite(shown), np.tril(np.ones((5, 5), bool)))
    assert not np.isinf(shown).any()


def test_head_summaries_of_known_patterns():
    T = 6
    ok = np.tril(np.ones((T, T), bool))
    uniform = np.where(ok, ok / ok.sum(axis=1, keepdims=True), np.nan)
    first = np.where(ok, np.eye(T)[[0] * T], np.nan)  # every query attends to token 0
    diagonal = np.where(ok, np.eye(T), np.nan)
    ent, dist = probes.head_summaries(np.stack([uniform, first, diagonal]))
    assert ent[0] == pytest.approx(np.mean([math.log(i + 1) for i in range(T)]))
    assert dist[0] == pytest.approx(np.mean([i / 2 for i in range(T)]))
    assert ent[1] == pytest.approx(0) and dist[1] == pytest.approx(np.mean(range(T)))
    assert ent[2] == pytest.approx(0) and dist[2] == pytest.approx(0)


def test_other_masks_use_the_same_weights():
    m = model(mask="causal")
    ids = probes.prompt_ids(TOK, "Before we proceed", 16)
    maps = probes.attention_maps(m, ids)
    got = probes.attention_under_masks(m, ids, {"in force": ("causal", 8), "none": ("none", 8),
                                                "banded": ("banded", 2)})
    np.testing.assert_array_equal(got["in force"], maps.weights)
    got = {name: w[0, 1] for name, w in got.items()}
    scores = maps.scores[0, 1]  # layer 0 sees the same input under any mask: re-mask its scores
    for name, kind, band in [("none", "none", 8), ("banded", "banded", 2)]:
        ok = probes.mask_matrix(kind, 16, band) == 1
        e = np.exp(np.where(ok, scores - scores.max(axis=1, keepdims=True), -np.inf))
        np.testing.assert_allclose(np.nan_to_num(got[name]), e / e.sum(axis=1, keepdims=True), atol=1e-12)
    assert not np.allclose(np.nan_to_num(got["none"]), np.nan_to_num(maps.weights[0, 1]))


def test_a_remasked_model_shares_the_weights_and_computes_as_a_model_built_with_that_mask():
    m, ids = model(mask="causal"), probes.prompt_ids(TOK, "Before we proceed", 16)
    other = probes.with_mask(m, "banded", 3)
    assert all(a.data_ptr() == b.data_ptr() for a, b in zip(m.parameters(), other.parameters()))
    assert other.mask_ok.dtype == torch.bool and other.mask_add.dtype == torch.float64
    built = GPT(dataclasses.replace(m.cfg, mask="banded", band=3)).double()
    built.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(probes.attention_maps(other, ids).weights,
                                  probes.attention_maps(built.eval(), ids).weights)


def test_remasked_models_are_reused_with_new_weights():
    m, ids, kept = model(mask="causal"), probes.prompt_ids(TOK, "Before we", 16), {}
    first = probes.attention_under_masks(m, ids, {"none": ("none", 8)}, kept)["none"]
    built = kept["none", 8]
    with torch.no_grad():
        m.blocks[0].W_Q.mul_(3.0)
    second = probes.attention_under_masks(m, ids, {"none": ("none", 8)}, kept)["none"]
    assert kept["none", 8] is built and not np.allclose(first, second)
    np.testing.assert_array_equal(second, probes.attention_maps(probes.with_mask(m, "none", 8), ids).weights)


def test_sinusoidal_encoding_equals_the_formula():
    m = model(pos_encoding="sinusoidal")
    P = probes.positional_matrix(m)
    d = 24
    for i in (0, 1, 7, 15):
        for j in range(d):
            want = math.sin(i / 10000 ** (j / d)) if j % 2 == 0 else math.cos(i / 10000 ** ((j - 1) / d))
            assert P[i, j] == pytest.approx(want, abs=1e-6)
    np.testing.assert_allclose(probes.similarity(P), P @ P.T)
    assert probes.similarity(P)[3, 3] == pytest.approx(d / 2, abs=1e-5)  # sin² + cos² per pair


def test_learned_encoding_is_the_parameter():
    m = model(pos_encoding="learned")
    np.testing.assert_array_equal(probes.positional_matrix(m), m.W_P.detach().numpy())


@pytest.mark.parametrize("k", [1, 3, 10])
def test_shift_map_moves_sinusoidal_positions_and_not_others(k):
    P = probes.positional_matrix(model(pos_encoding="sinusoidal"))
    M = probes.shift_map(k, 24)
    err = probes.shift_error(P, M, k)
    assert err.shape == (16 - k,) and err.max() < 1e-5
    learned = probes.positional_matrix(model(pos_encoding="learned"))
    assert probes.shift_error(learned, M, k).max() > 1e-3
    with pytest.raises(UserError):
        probes.shift_error(P, M, 16)


def test_the_induction_probe_repeats_random_tokens_and_depends_only_on_its_seed():
    a = probes.induction_probe(65, 17, seed=3, batch=2)
    assert a.shape == (2, 16) and a.dtype == np.int64 and (a[:, :8] == a[:, 8:]).all()
    assert (a == probes.induction_probe(65, 17, seed=3, batch=2)).all()
    assert not (a == probes.induction_probe(65, 17, seed=4, batch=2)).all()
    small = probes.induction_probe(3, 16, seed=3, batch=2)  # fewer tokens than a half: drawn with replacement
    assert small.max() < 3 and (small[:, :8] == small[:, 8:]).all()


def test_the_induction_probe_draws_the_corpus_tokens_distinct_where_enough_of_them_occur():
    counts = np.zeros(65)
    counts[10:40] = np.arange(1, 31)  # 30 tokens occur in the corpus, the rest never
    a = probes.induction_probe(65, 40, seed=3, batch=3, counts=counts)  # a half of 20 ≤ 30: distinct
    assert (a[:, :20] == a[:, 20:]).all() and ((a >= 10) & (a < 40)).all()
    assert all(len(set(row[:20])) == 20 for row in a)
    b = probes.induction_probe(65, 64, seed=3, batch=3, counts=counts)  # a half of 32 > 30: with replacement
    assert ((b >= 10) & (b < 40)).all() and any(len(set(row[:32])) < 32 for row in b)
    assert (a == probes.induction_probe(65, 40, seed=3, batch=3, counts=counts)).all()
