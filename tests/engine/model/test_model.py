"""The GPT: masks keep the future (and, banded, the far past) out; explicit and fused attention agree."""

import itertools
import math

import pytest
import torch

from engine.model import masks, positional
from engine.configs.config import ModelConfig
from engine.model.gpt import GPT, weight_names, weight_shapes
from tests.fresh_imports import loaded_by


def model(**kw) -> GPT:
    torch.manual_seed(0)
    cfg = ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=24, n_ctx=12, vocab_size=13, **kw)
    return GPT(cfg).double().eval()


def test_causal_mask_hides_the_future():
    m = model(mask="causal")
    x = torch.randint(13, (2, 12))
    for t in range(11):
        y = x.clone()
        y[:, t + 1:] = (y[:, t + 1:] + 5) % 13
        a, _ = m(x)
        b, _ = m(y)
        assert torch.allclose(a[:, : t + 1], b[:, : t + 1], atol=1e-12)
        assert not torch.allclose(a[:, t + 1:], b[:, t + 1:])


@pytest.mark.parametrize("band", [1, 3])
def test_banded_mask_hides_what_is_further_back_than_the_band(band):
    # One layer: a token sees exactly itself and `band` earlier tokens (deeper stacks widen the field).
    torch.manual_seed(0)
    m = GPT(ModelConfig(n_layer=1, n_head=2, d_model=16, d_ff=24, n_ctx=12, vocab_size=13,
                        mask="banded", band=band)).double().eval()
    x = torch.randint(13, (2, 12))
    t = 9
    for s in range(12):
        y = x.clone()
        y[:, s] = (y[:, s] + 3) % 13
        changed = not torch.allclose(m(x)[0][:, t], m(y)[0][:, t], atol=1e-12)
        assert changed == (t - band <= s <= t), s


def test_mask_shapes():
    assert torch.equal(masks.allowed("causal", 4), torch.tril(torch.ones(4, 4, dtype=torch.bool)))
    band = masks.allowed("banded", 6, band=2)
    assert band.sum(dim=1).tolist() == [1, 2, 3, 3, 3, 3]
    add = masks.additive("causal", 3)
    assert add[0, 1] == float("-inf") and add[1, 0] == 0


@pytest.mark.parametrize("mask, norm, residual, tied, pos, act", list(itertools.product(
    ["causal", "banded", "none"], ["pre", "post", "none"], [True, False], [True, False],
    ["sinusoidal", "learned", "none"], ["relu", "gelu"])))
def test_explicit_and_fused_attention_agree(mask, norm, residual, tied, pos, act):
    m = model(mask=mask, band=3, norm=norm, residual=residual, tied=tied, pos_encoding=pos, activation=act)
    x = torch.randint(13, (3, 12))
    fused, _ = m(x)
    trace = []
    explicit, _ = m(x, trace=trace)
    assert torch.allclose(fused, explicit, atol=1e-12, rtol=0)
    assert len(trace) == 2 and trace[0].weights.shape == (3, 2, 12, 12)


@pytest.mark.parametrize("mask", ["causal", "banded", "none"])
@pytest.mark.parametrize("attn_bias", [False, True])
def test_training_on_the_fused_path_takes_the_explicit_paths_gradients(mask, attn_bias):
    """Training runs the fused attention (Q, K and V in one product, the causal mask as a flag); probes and the
    forms read the explicit one: the loss and every weight's gradient agree (float64)."""
    m = model(mask=mask, band=3, attn_bias=attn_bias).train()
    x, y = torch.randint(13, (3, 12)), torch.randint(13, (3, 12))
    grads = []
    for trace in (None, []):
        m.zero_grad()
        _, loss = m(x, y, trace=trace)
        loss.backward()
        grads.append((loss.detach(), {n: p.grad.clone() for n, p in m.named_parameters()}))
    (fused_loss, fused), (explicit_loss, explicit) = grads
    assert torch.allclose(fused_loss, explicit_loss, atol=1e-12, rtol=0)
    assert fused.keys() == explicit.keys()
    for name in fused:
        assert torch.allclose(fused[name], explicit[name], atol=1e-12, rtol=0), name


def test_trace_records_scores_mask_and_weights():
    m = model(mask="causal")
    x = torch.randint(13, (1, 5))
    layer = m.attention_trace(x)[0]
    assert torch.isinf(layer.masked[0, 0, 0, 1]) and layer.weights[0, 0, 0, 1] == 0
    assert torch.allclose(layer.weights.sum(-1), torch.ones(1, 2, 5, dtype=torch.float64))
    assert torch.allclose(layer.masked[0, 0, 3, :4], layer.scores[0, 0, 3, :4])


def test_sinusoidal_encoding_is_the_papers_formula():
    n, d = 30, 10
    p = positional.sinusoidal(n, d, torch.float64)
    for i in range(n):
        for j in range(d):
            want = math.sin(i / 10000 ** (j / d)) if j % 2 == 0 else math.cos(i / 10000 ** ((j - 1) / d))
            assert abs(p[i, j].item() - want) < 1e-12


def test_sinusoidal_shift_is_a_fixed_linear_map():
    p = positional.sinusoidal(40, 12, torch.float64)
    for k in (1, 7):
        assert torch.allclose(p[k:], p[:-k] @ positional.shift_operator(k, 12), atol=1e-12)


def test_losses():
    m = model(loss="squared_error")
    x, y = torch.randint(13, (2, 12)), torch.randint(13, (2, 12))
    logits, loss = m(x, y)
    onehot = torch.nn.functional.one_hot(y, 13).double()
    assert torch.allclose(loss, 0.5 * ((onehot - logits) ** 2).sum() / 24)
    m = model()
    logits, loss = m(x, y)
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(logits.view(-1, 13), y.view(-1)))


def test_tied_unembedding_is_the_embedding_transpose():
    m = model(tied=True)
    assert not hasattr(m, "W_U") or "W_U" not in dict(m.named_parameters())
    assert m.unembedding().data_ptr() == m.W_E.data_ptr()


def test_generate_extends_and_respects_context():
    m = model()
    out = m.generate(torch.zeros(1, 3, dtype=torch.long), 20, temperature=0.8, top_k=5,
                     generator=torch.Generator().manual_seed(0))
    assert out.shape == (1, 23) and int(out.max()) < 13
    greedy = m.generate(torch.zeros(1, 3, dtype=torch.long), 4, temperature=0)
    assert torch.equal(greedy, m.generate(torch.zeros(1, 3, dtype=torch.long), 4, temperature=0))


def test_too_long_input_is_refused():
    with pytest.raises(ValueError, match="context"):
        model()(torch.zeros(1, 13, dtype=torch.long))


@pytest.mark.parametrize("norm,tied,pos,attn_bias", list(itertools.product(
    ["pre", "post", "none"], [False, True], ["learned", "sinusoidal", "none"], [False, True])))
def test_weight_shapes_are_the_models_state_dict(norm, tied, pos, attn_bias):
    cfg = ModelConfig(vocab_size=11, n_ctx=6, d_model=8, n_head=2, n_layer=2, d_ff=12, norm=norm, tied=tied,
                      pos_encoding=pos, attn_bias=attn_bias)
    built = {name: tuple(t.shape) for name, t in GPT(cfg).state_dict().items()}
    assert weight_shapes(cfg) == built  # same names and shapes; the layout's order is the forward pass's
    assert weight_names(cfg) == list(weight_shapes(cfg))


def test_gpt2_parts_are_the_equations_written_out():
    """Attention biases, GELU's tanh form and the layer norm's ε, against GPT-2's equations in plain torch:
    q = x W_Q + b_Q (k, v alike), o = concat_h(softmax(q_h k_hᵗ/√d_k + M) v_h) W_O + b_O, and
    gelu_new(u) = ½u(1 + tanh(√(2/π)(u + 0.044715 u³)))."""
    torch.manual_seed(1)
    cfg = ModelConfig(n_layer=1, n_head=2, d_model=8, d_ff=12, n_ctx=5, vocab_size=7, attn_bias=True,
                      activation="gelu_tanh", ln_eps=0.3, pos_encoding="learned")
    m = GPT(cfg).double().eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    w = dict(m.named_parameters())
    b = "blocks.0."

    def ln(x, key):
        mu, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
        return (x - mu) / torch.sqrt(var + 0.3) * w[key + ".g"] + w[key + ".b"]

    x_ids = torch.randint(7, (2, 5))
    x = w["W_E"][x_ids] + w["W_P"][:5]
    a = ln(x, b + "ln1")
    q, k, v = (a @ w[b + "W_" + s] + w[b + "b_" + s] for s in "QKV")
    heads = []
    for h in range(2):
        cols = slice(4 * h, 4 * h + 4)
        s = q[..., cols] @ k[..., cols].transpose(-1, -2) / 2 + masks.additive("causal", 5).double()
        heads.append(torch.softmax(s, -1) @ v[..., cols])
    x = x + torch.cat(heads, -1) @ w[b + "W_O"] + w[b + "b_O"]
    u = ln(x, b + "ln2") @ w[b + "W_in"] + w[b + "b_in"]
    g = 0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3)))
    x = x + g @ w[b + "W_out"] + w[b + "b_out"]
    want = ln(x, "ln_f") @ w["W_U"] + w["b_U"]
    with torch.no_grad():
        assert torch.allclose(m(x_ids)[0], want, atol=1e-12)
        assert torch.allclose(m(x_ids, trace=[])[0], want, atol=1e-12)


def test_shapes_alone_import_no_compiler(tmp_path):
    """Learning a config's weight shapes (a model on the meta device, as every run check does) neither draws
    values there nor computes the masks there: both import torch's compiler stack and sympy (~120 MB in the
    analysis process, which otherwise needs neither)."""
    code = ("import torch\n"
            "from engine.configs.config import ModelConfig\n"
            "from engine.rundir.integrity import expected_shapes\n"
            "for kw in ({}, {'pos_encoding': 'sinusoidal', 'mask': 'banded', 'band': 3}):\n"
            "    shapes = expected_shapes(ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=24, n_ctx=12,\n"
            "                                         vocab_size=13, **kw))\n"
            "assert shapes['W_E'] == (13, 16), shapes\n")
    assert loaded_by(code, ("torch._dynamo", "sympy"), tmp_path) == []


def test_meta_model_keeps_its_fixed_buffers_on_the_cpu():
    cfg = ModelConfig(n_layer=1, n_head=2, d_model=8, d_ff=8, n_ctx=6, vocab_size=5, pos_encoding="sinusoidal")
    with torch.device("meta"):
        shaped = GPT(cfg)
    assert shaped.W_E.is_meta
    assert torch.equal(shaped.W_P, positional.sinusoidal(6, 8))
    assert torch.equal(shaped.mask_ok, masks.allowed("causal", 6))
