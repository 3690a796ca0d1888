"""Head scores find planted heads, stay quiet on a random model, and decompose the loss and logits honestly."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from engine.analysis import heads
from engine.analysis.head_roles import roles_at
from engine.model.gpt import GPT
from engine.model.probes import head_summaries, induction_probe
from tests.engine.analysis import planted


def probes(batch: int = 4, seed: int = 0) -> heads.HeadProbes:
    x, y = planted.random_ids(batch, seed)
    return heads.HeadProbes(x, y, induction_probe(planted.V, planted.N, seed, batch))


def attention(model, ids) -> np.ndarray:
    """The model's attention weights on ids, (L, B, H, T, T) float64, from the whole trace."""
    return torch.stack([t.weights for t in model.attention_trace(torch.as_tensor(ids))]).double().numpy()


def labels(model) -> list[str]:
    return [r.label for r in roles_at(heads.head_scores(model, probes()).values)]


def test_a_planted_previous_token_head_is_labelled_so_and_nothing_else_is():
    s = heads.head_scores(planted.previous_token_only(), probes())
    assert s.values["previous_token"][0, 0] > 0.99
    assert labels(planted.previous_token_only()) == ["L0 H0 · previous-token"]


def test_a_planted_induction_circuit_is_labelled_previous_token_then_induction_and_copying():
    s = heads.head_scores(planted.induction_circuit(), probes())
    # 15/16: at the first query of the second half, key 0 also holds "previous token x_0" (position 0 has
    # only itself to attend to), so that one query splits its attention between keys 0 and 1
    assert s.values["induction"][1, 0] == pytest.approx(15 / 16, abs=1e-3) and s.values["induction"][0, 0] < 0.1
    assert s.values["copying"][1, 0] == pytest.approx(1.0)
    assert labels(planted.induction_circuit()) == ["L0 H0 · previous-token", "L1 H0 · induction", "L1 H0 · copying"]
    # the circuit predicts the second half of the probe: removing either of its heads costs loss there
    p = probes()
    s_ind = heads.head_scores(planted.induction_circuit(), dataclasses.replace(
        p, x=p.induction[:, :-1], y=p.induction[:, 1:]))
    assert s_ind.values["ablation"][0, 0] > 0.5 and s_ind.values["ablation"][1, 0] > 0.5
    assert s_ind.values["dla"][1, 0] > 1.0


def test_a_random_model_has_no_roles():
    torch.manual_seed(0)
    assert labels(GPT(planted.config()).eval()) == []
    torch.manual_seed(1)
    assert labels(GPT(dataclasses.replace(planted.config(), norm="pre", n_layer=3)).eval()) == []


def test_mean_ablating_a_head_whose_output_is_zero_changes_nothing():
    s = heads.head_scores(planted.induction_circuit(), probes())
    np.testing.assert_allclose(s.values["ablation"][:, 1], 0.0, atol=1e-6)
    np.testing.assert_array_equal(s.values["dla"][:, 1], 0.0)


def test_batched_ablation_equals_ablating_one_head_at_a_time_through_the_whole_model():
    torch.manual_seed(2)
    m = GPT(dataclasses.replace(planted.config(), norm="pre", n_layer=3)).double().eval()
    p = probes()
    got = heads.head_scores(m, p).values["ablation"]
    x, y = torch.as_tensor(p.x), torch.as_tensor(p.y)
    zs = []
    for b in m.blocks:
        b.z_edit = lambda z: zs.append(z) or z
    clean = m(x, y)[1].item()
    for layer, b in enumerate(m.blocks):
        for h in range(2):
            mean = zs[layer][:, h].mean(dim=(0, 1))
            b.z_edit = lambda z, h=h, mean=mean: torch.cat([z[:, :h], mean.expand_as(z[:, h:h + 1]), z[:, h + 1:]], 1)
            for other in m.blocks:
                other.z_edit = None if other is not b else other.z_edit
            assert got[layer, h] == pytest.approx(m(x, y)[1].item() - clean, abs=1e-12)
            b.z_edit = None


def test_direct_logit_attributions_and_the_direct_path_add_up_to_the_centred_target_logit():
    """Pre-LN with the MLPs zeroed: the final layer norm is linear once its σ is fixed, so the heads' shares,
    the embedding's and the biases' sum to the logit of the target minus the mean logit."""
    torch.manual_seed(3)
    m = GPT(dataclasses.replace(planted.config(), norm="pre")).double().eval()
    with torch.no_grad():
        for b in m.blocks:
            b.W_in.zero_(), b.W_out.zero_()
    p = probes()
    dla = heads.head_scores(m, p).values["dla"]
    x, y = torch.as_tensor(p.x), torch.as_tensor(p.y)
    final_in = []
    m.ln_f.register_forward_hook(lambda mod, a, o: final_in.append(a[0]))
    logits = m(x)[0]
    centred = (logits - logits.mean(-1, keepdim=True)).gather(-1, y[..., None]).mean().item()
    U_y = (m.W_U - m.W_U.mean(1, keepdim=True)).t()[y]
    sigma = final_in[0].var(-1, unbiased=False, keepdim=True).add(1e-5).sqrt()
    e = m.W_E[x] + m.W_P[: x.shape[1]]
    embed = ((e - e.mean(-1, keepdim=True)) * m.ln_f.g / sigma * U_y).sum(-1).mean().item()
    bias = (m.ln_f.b * U_y).sum(-1).mean().item() + (m.b_U - m.b_U.mean())[y].mean().item()
    assert dla.sum() + embed + bias == pytest.approx(centred, abs=1e-10)


def test_scores_leave_the_model_as_they_found_it():
    m = planted.induction_circuit().train()
    heads.head_scores(m, probes())
    assert m.training and all(b.z_edit is None for b in m.blocks)
    assert not m.blocks[0]._forward_pre_hooks


def char_probes(seed: int = 0) -> heads.HeadProbes:
    """A character model's probes: fewer tokens than half a context, drawn by skewed corpus counts (one token
    never occurs), so each half repeats tokens."""
    v, n = planted.CHAR
    x, y = planted.random_ids(4, seed, v, n)
    counts = np.arange(v, dtype=np.float64) ** 2  # token 0 never occurs in this "corpus"
    return heads.HeadProbes(x, y, induction_probe(v, n, seed, 4, counts))


def test_a_planted_induction_circuit_over_a_character_vocabulary_is_found_though_its_probe_repeats_tokens():
    p = char_probes()
    half = p.induction.shape[1] // 2
    assert all(len(set(row[:half])) < half for row in p.induction)  # the first half repeats tokens
    s = heads.head_scores(planted.induction_circuit(*planted.CHAR), p)
    # the previous-token head's key i − 1 follows a copy of token i where t_{i−2} = t_i, by chance in a small
    # vocabulary: about Σ p² of the queries (0.11 here), far below the role's threshold
    assert s.values["induction"][1, 0] > 0.9 and s.values["induction"][0, 0] < 0.2
    assert s.values["previous_token"][0, 0] > 0.99
    # the head spreads its attention over every earlier match: the single key i − n + 1 holds only part of it
    w = attention(planted.induction_circuit(*planted.CHAR), p.induction)[1, :, 0]  # (B, 2n, 2n)
    i = np.arange(half, 2 * half)
    assert w[:, i, i - half + 1].mean() < 0.75
    labels = [r.label for r in roles_at(s.values)]
    assert labels == ["L0 H0 · previous-token", "L1 H0 · induction", "L1 H0 · copying"]
    torch.manual_seed(4)
    random = GPT(planted.config(2, *planted.CHAR)).eval()
    assert roles_at(heads.head_scores(random, p).values) == []


def test_where_the_probe_holds_each_token_once_the_scores_are_the_single_keys_of_olsson_et_al():
    torch.manual_seed(5)
    m = GPT(dataclasses.replace(planted.config(), norm="pre")).eval()
    p = probes()
    got = heads.head_scores(m, p).values
    w = attention(m, p.induction)  # (L, B, H, 2n, 2n)
    n = p.induction.shape[1] // 2
    i = np.arange(n, 2 * n)
    np.testing.assert_allclose(got["induction"], w[..., i, i - n + 1].mean(axis=(1, 3)), atol=1e-12)
    np.testing.assert_allclose(got["duplicate"], w[..., i, i - n].mean(axis=(1, 3)), atol=1e-12)


def test_scoring_in_pieces_of_one_head_gives_each_heads_own_mean_ablation(monkeypatch):
    """A large model's scoring leaves the analysis process between pieces (heads.HeadScoring): with pieces of
    one head each, every head's ablation is still the loss of a whole forward with that head mean-ablated."""
    model, p = planted.induction_circuit(), probes()
    monkeypatch.setattr(heads, "PIECE_TOKEN_LAYERS", 1)
    scoring = heads.HeadScoring(model, p)
    L, H = model.cfg.n_layer, model.cfg.n_head
    assert scoring.parts == heads.HeadScoring.BASE + L * H and not scoring.finished
    while not scoring.finished:
        scoring.advance()
    got = scoring.result()
    x, y = torch.as_tensor(p.x), torch.as_tensor(p.y)
    with torch.no_grad():
        zs = []
        for block in model.blocks:
            block.z_edit = lambda z, zs=zs: zs.append(z) or z
        _, base = model(x, y)
        for layer, block in enumerate(model.blocks):
            block.z_edit = None
        for layer in range(L):
            for h in range(H):
                mean = zs[layer][:, h].mean(dim=(0, 1))

                def edit(z, h=h, mean=mean):
                    z = z.clone()
                    z[:, h] = mean
                    return z

                model.blocks[layer].z_edit = edit
                _, loss = model(x, y)
                model.blocks[layer].z_edit = None
                assert got.values["ablation"][layer, h] == pytest.approx(loss.item() - base.item(), abs=1e-6)
    whole = heads.head_scores(model, p)
    for name in heads.SCORES:
        np.testing.assert_allclose(got.values[name], whole.values[name], rtol=1e-9, atol=1e-12)


def test_scores_reduced_a_layer_and_a_sequence_at_a_time_equal_those_of_the_whole_trace(monkeypatch):
    torch.manual_seed(6)
    m = GPT(dataclasses.replace(planted.config(), norm="pre", n_layer=3)).eval()
    p = probes()
    got = heads.head_scores(m, p)
    w = attention(m, p.x)  # (L, B, H, T, T)
    rows = np.arange(1, w.shape[-1])
    entropy, distance = head_summaries(w)
    np.testing.assert_allclose(got.values["previous_token"], w[..., rows, rows - 1].mean(axis=(1, 3)), atol=1e-12)
    np.testing.assert_allclose(got.values["first_token"], w[..., rows, 0].mean(axis=(1, 3)), atol=1e-12)
    np.testing.assert_allclose(got.values["entropy"], entropy.mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(got.values["distance"], distance.mean(axis=1), atol=1e-12)
    assert got.loss == pytest.approx(m(torch.as_tensor(p.x), torch.as_tensor(p.y))[1].item(), abs=1e-6)
    # the logits read out one sequence at a time give the same losses
    monkeypatch.setattr(heads, "LOGIT_ELEMENTS", 1)
    one = heads.head_scores(m, p)
    assert one.loss == pytest.approx(got.loss, abs=1e-6)
    np.testing.assert_allclose(one.values["ablation"], got.values["ablation"], atol=1e-6)


def test_a_large_models_ablations_run_exactly_on_the_probes_first_positions(monkeypatch):
    # what EXACT_ABLATION_BE allows GPT-2 small (540 of 1024 positions), made to bite on a small model
    monkeypatch.setattr(heads, "EXACT_ABLATION_BE", 0.6)
    torch.manual_seed(3)
    for mask in ("causal", "none"):  # without a causal mask the first positions read the later ones
        m = GPT(dataclasses.replace(planted.config(), norm="pre", n_layer=3, mask=mask)).double().eval()
        p = probes()
        positions = heads.ablation_positions(m.cfg, planted.N)
        assert 2 < positions < planted.N and heads.ablation_cost(m.cfg, positions, planted.N) <= 0.6
        got = heads.head_scores(m, p)
        assert got.ablation_positions == positions
        monkeypatch.setattr(heads, "EXACT_ABLATION_BE", 1e9)
        cut = heads.head_scores(m, dataclasses.replace(p, x=p.x[:, :positions], y=p.y[:, :positions]))
        monkeypatch.setattr(heads, "EXACT_ABLATION_BE", 0.6)
        np.testing.assert_allclose(got.values["ablation"], cut.values["ablation"], atol=1e-12)
        assert got.loss != cut.loss  # every other score is the whole probe's
        assert "first" in heads.ablation_note(positions, planted.N) and "first" not in heads.ablation_note(16, 16)


def test_ablation_cost_follows_the_model():
    from engine.configs.config import ModelConfig

    gpt2 = ModelConfig(n_layer=12, n_head=12, d_model=768, d_ff=3072, n_ctx=1024, vocab_size=50257)
    assert 31 < heads.ablation_cost(gpt2, 1024, 1024) < 33  # 936 block passes and 144 readouts of the probe
    assert heads.ablation_positions(gpt2, 1024) == 540
    assert heads.ablation_positions(planted.config(), planted.N) == planted.N  # a small model: all of them
