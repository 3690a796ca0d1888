"""The GPT as a network of definitions is the torch model: same parameters and shapes, same logits and
loss on a batch, for every architectural option (docs/design.md#one-description-three-uses)."""

import itertools

import pytest
import torch

from engine.configs.config import ConfigError, ModelConfig
from engine.forms import gpt
from engine.forms.printing import text
from engine.model.gpt import GPT, weight_names

from .helpers import gpt_case, small_config

OPTIONS = list(itertools.product(["pre", "post", "none"], [True, False], ["gelu", "relu"], [False, True],
                                 ["cross_entropy", "squared_error"], ["learned", "sinusoidal", "none"]))


@pytest.mark.parametrize("norm, residual, activation, tied, loss, pos", OPTIONS[::5] + OPTIONS[1::7])
def test_the_words_compute_the_torch_model(norm, residual, activation, tied, loss, pos):
    cfg = small_config(norm=norm, residual=residual, activation=activation, tied=tied, loss=loss, pos_encoding=pos,
                       mask="banded", band=2)
    net, f, bound, ref, (w, x, y) = gpt_case(cfg)
    model = GPT(cfg).double().eval()
    model.load_state_dict(w)
    with torch.no_grad():
        logits, loss_value = model(x, y)
    assert torch.allclose(bound.values["Z"], logits, rtol=1e-13, atol=1e-13)
    # the error E is −∂L/∂logits, so <E, dZ> is −dL
    z = logits.detach().clone().requires_grad_(True)
    model.loss(z, y).backward()
    assert torch.allclose(bound.values["E"], -z.grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("tied, pos, norm", [(False, "learned", "pre"), (True, "sinusoidal", "post"),
                                             (True, "none", "none")])
def test_parameters_are_the_models_state_dict_keys_and_shapes(tied, pos, norm):
    cfg = small_config(tied=tied, pos_encoding=pos, norm=norm)
    net = gpt.network(cfg)
    model = GPT(cfg)
    assert {p.name: p.shape for p in net.params} == {k: tuple(v.shape) for k, v in model.named_parameters()}
    assert [p.name for p in net.params] == weight_names(cfg)


def test_heads_are_column_blocks_of_wq_and_row_blocks_of_wo():
    net = gpt.network(small_config(n_head=2, d_model=8))
    wq = net.param("blocks.0.W_Q")
    wo = net.param("blocks.0.W_O")
    assert [s.name for s in wq.symbols] == ["blocks.0.W_Q.h0", "blocks.0.W_Q.h1"]
    assert [s.block for s in wq.symbols] == [(1, 0, 4), (1, 4, 8)]
    assert [s.block for s in wo.symbols] == [(0, 0, 4), (0, 4, 8)]
    assert wq.text == "WQ_0" and wq.symbols[1].text == "WQ_{0,1}"


def test_the_definitions_read_as_the_model_docstring():
    net = gpt.network(small_config(n_head=1, n_layer=1, tied=True, norm="pre", pos_encoding="learned"))
    eq = {a.text: text(w) for a, w in net.equations()}
    assert eq["X_0"] == "O W_E + J W_P"
    assert eq["Z_0"] == "d_k^{-1/2} A_0 WQ_0 WK_0^t A_0^t"
    assert eq["H_0"] == "X_0 + S_0 A_0 WV_0 WO_0"
    assert eq["X_1"] == "H_0 + R_0 Wout_0 + C bout_0"
    assert eq["Z"] == "F W_E^t + C b_U"
    assert eq["E"] == "N^{-1} (T - P)"


def test_an_impossible_config_is_refused_with_its_reason():
    with pytest.raises(ConfigError, match="heads"):
        gpt.network(ModelConfig(n_head=3, d_model=8))


def test_binding_needs_every_weight():
    cfg = small_config()
    net = gpt.network(cfg)
    w = {k: v for k, v in GPT(cfg).state_dict().items() if k != "W_E"}
    with pytest.raises(KeyError, match="W_E"):
        gpt.bind(net, w, torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))


def test_the_derivation_is_cached_per_architecture():
    assert gpt.derive(small_config()) is gpt.derive(small_config())
    assert gpt.derive(small_config()) is not gpt.derive(small_config(norm="post"))


def test_every_term_is_found_by_its_id_even_with_a_heads_comma():
    """IDs of multi-head models hold labels such as A_1@Z_{1,0}#0: the comma inside braces is not a
    separator between labels."""
    from engine.forms import derive

    f = derive(ModelConfig(n_layer=2, n_head=2, d_model=8, d_ff=16, n_ctx=8, vocab_size=5))
    terms = f.terms("blocks.0.W_V", limit=None)
    assert any("{1,0}" in t.id for t in terms)
    for t in terms:
        assert f.term(t.id) is not None and f.term(t.id).index == t.index


@pytest.mark.parametrize("norm, heads", [("pre", 1), ("post", 2), ("none", 2)])
def test_the_words_compute_gpt2s_parts(norm, heads):
    cfg = small_config(norm=norm, n_head=heads, attn_bias=True, activation="gelu_tanh", ln_eps=0.3)
    net, f, bound, ref, (w, x, y) = gpt_case(cfg)
    model = GPT(cfg).double().eval()
    model.load_state_dict(w)
    with torch.no_grad():
        logits, _ = model(x, y)
    assert torch.allclose(bound.values["Z"], logits, rtol=1e-13, atol=1e-13)
    assert {p.name: p.shape for p in net.params} == {k: tuple(v.shape) for k, v in model.named_parameters()}


def test_attention_biases_make_named_queries_keys_and_values():
    """A head with biases reads Q = A W_Q + C b_Q (K, V alike): forward sums stay inside a named value, so
    a term is still one path, and a bias of head h is its columns of b_Q."""
    net = gpt.network(small_config(n_head=2, n_layer=1, attn_bias=True, norm="pre"))
    eq = {a.text: text(w) for a, w in net.equations()}
    assert eq["Q_{0,1}"] == "A_0 WQ_{0,1} + C bQ_{0,1}"
    assert eq["Z_{0,1}"] == "d_k^{-1/2} Q_{0,1} K_{0,1}^t"
    assert eq["H_0"] == "X_0 + S_{0,0} V_{0,0} WO_{0,0} + S_{0,1} V_{0,1} WO_{0,1} + C bO_0"
    assert [s.block for s in net.param("blocks.0.b_V").symbols] == [(1, 0, 4), (1, 4, 8)]


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_attention_biases_add_weights_not_routes(norm):
    """Every weight both models share has the same routes and route classes with biases as without."""
    from engine.forms import derive

    plain, biased = (derive(small_config(norm=norm, attn_bias=b)) for b in (False, True))
    for p in plain.net.params:
        assert biased.count(p.name) == plain.count(p.name), p.name
    classes = lambda f: sorted((t.weight, t.route_class) for t in f.iter_terms() if t.weight == "W_E")  # noqa: E731
    assert classes(biased) == classes(plain)
