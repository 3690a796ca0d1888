"""A coefficient read in tokens (engine/analysis/tokens.py, docs/readings.md): each reading against the product
it claims to be, computed independently in float64 on engine.model.gpt.GPT (finite differences of its mean
logits, its own activations, and a per-position perturbation differentiated by autograd), the route classes
against the forms engine's, and every export by value."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from engine.analysis import tokens as tk
from engine.analysis.tokens_export import COLUMNS, export_tokens, reading_figure, rows
from engine.forms import Snapshot, verify
from engine.model import gpt as gpt_module
from engine.model.gpt import GPT
from engine.text.tokenizer import CharTokenizer
from tests.engine.forms.helpers import small_config

NANO = small_config(norm="pre", activation="gelu", tied=True, pos_encoding="learned", vocab_size=9)
GPT2 = small_config(norm="pre", activation="gelu_tanh", attn_bias=True, vocab_size=9)
POST = small_config(norm="post", activation="relu", vocab_size=9)
TOKENIZER = CharTokenizer(list("ab c\nxyz!"))
TOL = 1e-10


def setting(cfg, seed=0):
    """(weights at s, weights at p, x, y, the model at s)."""
    w = verify.random_gpt_weights(cfg, seed)
    before = {k: v - 0.05 * torch.randn(v.shape, generator=torch.Generator().manual_seed(seed + 9), dtype=v.dtype)
              for k, v in w.items()}
    x, y = verify.random_probe(cfg, batch=2, length=6, seed=seed + 2)
    model = GPT(cfg).double().eval()
    model.load_state_dict(w)
    return w, before, x, y, model


def reading(cfg, name, seed=0, split=True):
    w, before, x, y, _ = setting(cfg, seed)
    return tk.token_reading(cfg, TOKENIZER, w, before, x, y, name, 5, 4, split)


def coefficient(model, x, y, name):
    params = dict(model.named_parameters())
    return -torch.autograd.grad(model(x, y)[1], params[name])[0].detach()


def centred(v):
    v = np.asarray(v, dtype=np.float64)
    return v - v.mean()


def close(a, b):
    scale = max(np.abs(b).max(), 1e-300)
    assert np.abs(np.asarray(a) - np.asarray(b)).max() <= TOL * scale, np.abs(np.asarray(a) - np.asarray(b)).max()


@pytest.mark.parametrize("cfg, name", [(NANO, "W_U" if not NANO.tied else "b_U"), (GPT2, "W_U"), (GPT2, "b_U"),
                                       (GPT2, "ln_f.g"), (GPT2, "ln_f.b"), (POST, "W_U")])
def test_the_unembeddings_push_is_the_change_of_the_models_mean_logits(cfg, name):
    # these weights reach the logits by their direct path alone: central differences of the model itself
    w, before, x, y, model = setting(cfg)
    G = coefficient(model, x, y, name)
    h = 1e-3

    def mean_logits(delta):
        m = GPT(cfg).double().eval()
        m.load_state_dict({**w, name: w[name] + delta})
        with torch.no_grad():
            return m(x)[0].mean((0, 1)).numpy()

    fd = (mean_logits(h * G) - mean_logits(-h * G)) / (2 * h)
    r = tk.token_reading(cfg, TOKENIZER, w, before, x, y, name, 5, 4)
    close(r.push[tk.WHOLE], centred(fd))
    dW = (w[name] - before[name]).double()
    close(r.push[tk.UPDATE], centred((mean_logits(h * dW) - mean_logits(-h * dW)) / (2 * h)))


def test_a_writer_is_read_through_the_final_gain_and_the_unembedding(monkeypatch):
    # x̄ G diag(g_f) W_U with x̄ the MLP's mean activation, read off the model's own forward pass
    w, before, x, y, model = setting(GPT2)
    seen = []
    real = gpt_module.activation
    monkeypatch.setattr(gpt_module, "activation", lambda kind, u: seen.append(real(kind, u)) or seen[-1])
    G = coefficient(model, x, y, "blocks.1.W_out")
    xbar = seen[1].detach().reshape(-1, GPT2.d_ff).mean(0)
    readout = w["ln_f.g"][:, None] * w["W_U"]
    r = tk.token_reading(GPT2, TOKENIZER, w, before, x, y, "blocks.1.W_out", 5, 4)
    close(r.push[tk.WHOLE], centred((xbar @ G @ readout).numpy()))
    assert r.role == "writer" and [label for label, _, _ in r.rows][0].startswith("neuron ")


def test_a_tied_embedding_is_read_as_embedding_and_as_the_unembedding():
    w, before, x, y, model = setting(NANO)
    G = coefficient(model, x, y, "W_E")
    with torch.no_grad():
        Fbar = model.ln_f(model.residual(x)).reshape(-1, NANO.d_model).mean(0)
    freq = torch.bincount(x.reshape(-1), minlength=NANO.vocab_size).double() / x.numel()
    want = freq @ G @ (w["ln_f.g"][:, None] * w["W_E"].t()) + G @ Fbar
    r = tk.token_reading(NANO, TOKENIZER, w, before, x, y, "W_E", 5, 4)
    close(r.push[tk.WHOLE], centred(want.numpy()))
    # the rows ("after a, toward b", the whole table for a small vocabulary) read the embedding's part of G alone
    with torch.no_grad():
        F_ = model.ln_f(model.residual(x)).reshape(-1, NANO.d_model)
        P = torch.softmax(F_ @ w["W_E"].t() + w["b_U"], -1)
        dZ = (torch.nn.functional.one_hot(y.reshape(-1), NANO.vocab_size) - P) / x.numel()
    embedding = G - dZ.t() @ F_  # less the unembedding's part, δZᵀ F
    table = (embedding @ (w["ln_f.g"][:, None] * w["W_E"].t())).numpy()
    close(r.table, table - table.mean(1, keepdims=True))


def per_position(monkeypatch, cfg, w, x, y, name, M):
    """⟨G_t, M⟩ at every probe position t: the loss differentiated by a per-position step along M taken only
    where the weight is applied at t (engine.model.gpt's own forward, patched), so independent of numpy_gpt."""
    model = GPT(cfg).double().eval()
    model.load_state_dict(w)
    eps = torch.zeros(x.shape, dtype=torch.float64, requires_grad=True)
    layer, which = int(name.split(".")[1]), name.split(".", 2)[2]
    block = model.blocks[layer]
    if which in ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V"):
        real, d, seen = gpt_module.affine, cfg.d_model, []

        def affine(a, w, b=None):  # the blocks' x [W_Q W_K W_V] products come in block order
            out = real(a, w, b)
            if tuple(w.shape) == (d, 3 * d):
                seen.append(None)
                if len(seen) == layer + 1:
                    part = torch.zeros_like(out)
                    off = "QKV".index(which[-1]) * d
                    part[..., off:off + d] = eps[..., None] * (a @ M if which.startswith("W") else M)
                    out = out + part
            return out

        monkeypatch.setattr(gpt_module, "affine", affine)
    elif which == "W_in":
        def mlp(a):
            u = a @ block.W_in + block.b_in + eps[..., None] * (a @ M)
            return gpt_module.activation(cfg.activation, u) @ block.W_out + block.b_out

        block.mlp = mlp
    else:  # a pre-LN block's first layer norm's gain
        ln = block.ln1
        ln.forward = lambda a: F.layer_norm(a, (cfg.d_model,), ln.g, ln.b, ln.eps) + eps[..., None] * (
            F.layer_norm(a, (cfg.d_model,), None, None, ln.eps) * M)
    return -torch.autograd.grad(model(x, y)[1], eps)[0].reshape(-1).numpy()


@pytest.mark.parametrize("name", ["blocks.0.W_Q", "blocks.1.b_K", "blocks.1.b_V", "blocks.0.W_in",
                                  "blocks.1.ln1.g"])
def test_a_readers_imprints_are_its_positions_parts_of_g(monkeypatch, name):
    w, before, x, y, model = setting(GPT2)
    G = coefficient(model, x, y, name)
    r = tk.token_reading(GPT2, TOKENIZER, w, before, x, y, name, 5, 4)
    assert r.role == "reader"
    g2 = float((G * G).sum())
    if g2 < 1e-20:  # b_K: identically zero, nothing to share
        return
    close(r.imprints[tk.WHOLE], per_position(monkeypatch, GPT2, w, x, y, name, G) / g2)
    assert r.imprints[tk.WHOLE].sum() == pytest.approx(1.0, abs=1e-12)
    dW = (w[name] - before[name]).double()
    along = float((G * dW).sum())
    close(r.imprints[tk.UPDATE], per_position(monkeypatch, GPT2, w, x, y, name, dW) / along)
    # by token: the positions holding each token added up
    np.testing.assert_allclose(r.by_token(), np.bincount(x.reshape(-1), weights=r.imprints[tk.WHOLE],
                                                         minlength=GPT2.vocab_size))


def test_each_classs_imprints_add_up_to_its_part_of_g_by_the_forms_engine():
    w, before, x, y, model = setting(NANO, seed=3)
    name = "blocks.0.W_K"
    classes = Snapshot(NANO, w, x, y, torch.float64).classes(name)[name]
    G = sum(classes.values())
    r = tk.token_reading(NANO, TOKENIZER, w, before, x, y, name, 5, 4)
    assert set(r.parts) == {tk.WHOLE, tk.UPDATE, *classes}
    for c, Gc in classes.items():
        assert r.imprints[c].sum() == pytest.approx(float((Gc * G).sum() / (G * G).sum()), abs=1e-12)
        assert r.norms[c] == pytest.approx(float(Gc.norm()), rel=1e-10)
    whole = tk.token_reading(NANO, TOKENIZER, w, before, x, y, name, 5, 4, split=False)
    assert whole.parts == (tk.WHOLE, tk.UPDATE)
    close(whole.imprints[tk.WHOLE], r.imprints[tk.WHOLE])


def test_a_writers_classes_push_adds_up_to_the_whole():
    r = reading(NANO, "blocks.1.W_O")
    assert r.role == "writer"
    W = r.by_token(tk.WHOLE)
    assert W is not None and r.ranks[tk.WHOLE].toward[0][1] == pytest.approx(W.max())


def test_positions_read_with_their_context():
    r = reading(GPT2, "blocks.0.W_Q")
    assert len(r.contexts) == len(r.positions) == 12
    assert r.contexts[0].startswith("[") and "→" in r.contexts[0] and r.contexts[3].count("[") == 1


@pytest.fixture(scope="module")
def two_readings():
    return [reading(GPT2, "blocks.0.W_in", seed=s) for s in (1, 2)]


def test_csv_rows_are_the_readings_ranked_tokens_by_value(tmp_path, two_readings):
    a, b = two_readings
    b = tk.TokenReading(**{**b.__dict__, "step": 6, "prev_step": 5})
    path = export_tokens(tmp_path / "t.csv", [a, b], 6)
    with open(path, encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert tuple(table[0]) == COLUMNS
    body = table[1:]
    assert len(body) == len(rows([a, b]))
    for r in (a, b):
        mine = [row for row in body if int(row[0]) == r.step]
        for part in r.parts:
            for direction, items in (("toward", r.ranks[part].toward), ("away", r.ranks[part].away)):
                got = [row for row in mine if row[2] == part and row[3] == direction]
                assert [(int(row[5]), row[6], float(row[7])) for row in got] == \
                    [(t, r.names[t], v) for t, v in items]


def test_npy_and_figure_hold_the_readings_numbers(tmp_path, two_readings):
    r = two_readings[0]
    np.testing.assert_array_equal(np.load(export_tokens(tmp_path / "t.npy", [r], 5)),
                                  r.imprints[tk.WHOLE].reshape(2, 6))
    w = reading(GPT2, "blocks.0.W_out")
    np.testing.assert_array_equal(np.load(export_tokens(tmp_path / "w.npy", [w], 5)), w.push[tk.WHOLE])
    fig = reading_figure(r)
    ax = fig.axes[0]  # G's bars: toward, then away
    bars = [p.get_width() for p in ax.patches]
    rk = r.ranks[tk.WHOLE]
    assert bars == [v for _, v in rk.toward[:8]] + [v for _, v in reversed(rk.away[:8])]
    assert export_tokens(tmp_path / "t.png", [r], 5).read_bytes()[:4] == b"\x89PNG"


@pytest.fixture(scope="module")
def run_path(tmp_path_factory):
    from tests.engine.coefficients.test_coefficients import tiny_run

    return tiny_run(tmp_path_factory.mktemp("tokens") / "run").path


def test_the_question_and_the_command_line_give_the_runs_readings(run_path, tmp_path, capsys):
    from engine.analysis import door
    from engine.analysis import questions as q
    from engine.analysis.run_analysis import RunAnalysis
    from engine.cli import main

    from tests.engine.analysis.test_live import cross
    from engine.analysis.live import Mirror

    a = RunAnalysis(run_path)
    steps = a.saved_steps()
    got = door.answer(q.Tokens(q.Saved(str(run_path), steps[1]), "blocks.1.W_O", split=True))
    want = a.tokens("blocks.1.W_O", steps[1])
    assert got.prev_step == steps[0] and got.ranks == want.ranks
    assert q.Tokens(q.Saved(str(run_path), steps[1]), "blocks.1.W_O").lane == q.NOW  # the split: LONG
    # a copy training published at a step is read like a saved one, its update from the saved step before it
    held = cross(Mirror(), a.run.load_weights(steps[2]))
    live = door.answer(q.Tokens(q.Live(a.config.model, held, steps[2], run=str(run_path)), "blocks.1.W_O", True))
    assert live.prev_step == steps[1] and live.ranks == a.tokens("blocks.1.W_O", steps[2]).ranks
    timeline = door.answer(q.TokenTimeline(str(run_path), "blocks.1.W_O"))
    assert [r.step for r in timeline] == steps and timeline[1].ranks == want.ranks
    first = a.tokens("blocks.1.W_O", steps[0])
    assert first.prev_step is None and tk.UPDATE not in first.parts and tk.UPDATE not in first.push
    assert main(["export", "--run", str(run_path), "--what", "tokens", "--weight", "blocks.0.W_V",
                 "--out", str(tmp_path / "t.csv")]) == 0
    with open(tmp_path / "t.csv", encoding="utf-8") as f:
        body = list(csv.reader(f))[1:]
    assert sorted({int(row[0]) for row in body}) == steps  # every saved step, each by value
    assert body == [[str(v) if not isinstance(v, float) else repr(v) for v in row]
                    for row in rows(a.token_timeline("blocks.0.W_V"))]
    assert main(["export", "--run", str(run_path), "--what", "tokens", "--weight", "blocks.0.W_V", "--step",
                 str(steps[2]), "--out", str(tmp_path / "one.csv")]) == 0
    with open(tmp_path / "one.csv", encoding="utf-8") as f:
        assert {int(row[0]) for row in list(csv.reader(f))[1:]} == {steps[2]}
    capsys.readouterr()
    for argv, message in ((["--weight", "W_Q"], "no weight 'W_Q'"), ([], "--weight is required"),
                          (["--weight", "W_E", "--step", "1"], "no weights saved at step 1")):
        assert main(["export", "--run", str(run_path), "--what", "tokens", *argv,
                     "--out", str(tmp_path / "x.csv")]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err


def test_a_bpe_models_pieces_are_named_as_the_text_they_stand_for_with_visible_spaces(tmp_path):
    from engine.model.probes import visible_tokens
    from engine.text.bpe import BPETokenizer

    text = "the king and the queen, the king's men; " * 30
    bpe = BPETokenizer.fit(text, 300)
    cfg = small_config(norm="pre", activation="gelu_tanh", attn_bias=True, vocab_size=bpe.vocab_size)
    w, before, _, _, _ = setting(cfg)
    ids = np.asarray(bpe.encode(text[:80]))
    x, y = torch.as_tensor(ids[:12].reshape(2, 6)), torch.as_tensor(ids[1:13].reshape(2, 6))
    writer = tk.token_reading(cfg, bpe, w, before, x, y, "blocks.1.W_out", 5, 4, split=False)
    named = [i for part in writer.ranks.values() for i, _ in part.toward + part.away]
    assert named and all(writer.names[i] == visible_tokens(bpe, [i])[0] for i in named)
    reader = tk.token_reading(cfg, bpe, w, before, x, y, "blocks.0.W_Q", 5, 4, split=False)
    assert reader.positions == visible_tokens(bpe, x.reshape(-1).tolist())
    assert any(p.startswith("␣") for p in reader.positions)
    assert not any(" " in p or "Ġ" in p for p in reader.positions)
    export_tokens(tmp_path / "t.csv", [writer], 5)
    with open(tmp_path / "t.csv", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert {r["token"] for r in table} == {writer.names[i] for i in named}
