"""The second-order view's numbers (engine/analysis/interaction.py, docs/second-order.md): the Hessian-vector
product against finite differences of the coefficient, predictions summed over A against −HΔ, the loss
accounting's error order, and RunAnalysis's methods on a small trained run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.analysis import interaction as ia
from engine.analysis.run_analysis import RunAnalysis
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.text.corpus import shakespeare_text
from engine.errors import UserError
from engine.model.gpt import GPT
from engine.training.trainer import Trainer
from engine.model.weight_layout import weight_names

CONFIGS = {
    "pre-LN, GELU, tied": ModelConfig(n_layer=2, n_head=2, d_model=8, d_ff=16, n_ctx=8, vocab_size=11,
                                      tied=True, pos_encoding="learned"),
    "no LN, squared error": ModelConfig(n_layer=2, n_head=1, d_model=6, d_ff=12, n_ctx=8, vocab_size=9, norm="none",
                                        loss="squared_error", residual=False),
}


def setting(cfg: ModelConfig, seed: int = 0):
    """(ProbeLoss, weights, a random update of every weight) for a random model and batch."""
    torch.manual_seed(seed)
    weights = {k: v.double() for k, v in GPT(cfg).state_dict().items()}
    x = torch.randint(0, cfg.vocab_size, (3, cfg.n_ctx))
    y = torch.randint(0, cfg.vocab_size, (3, cfg.n_ctx))
    delta = {k: 0.05 * torch.randn_like(v) * (v.std() if v.numel() > 1 and v.std() > 0 else 1.0)
             for k, v in weights.items()}
    return ia.ProbeLoss(cfg, x, y), weights, delta


def coefficient(loss, weights, name):
    names = loss.names(weights)
    return -ia.gradient(loss, ia.leaves(weights, names))[1][name].detach()


@pytest.mark.parametrize("label", list(CONFIGS))
def test_hessian_vector_product_equals_central_differences_of_the_coefficient(label):
    loss, weights, delta = setting(CONFIGS[label])
    names = loss.names(weights)
    params = ia.leaves(weights, names)
    _, grads = ia.gradient(loss, params, create_graph=True)
    for A, B in (("blocks.0.W_Q", "blocks.1.W_K"), ("blocks.1.W_V", "blocks.0.W_in"), ("blocks.0.W_K", "blocks.0.W_K")):
        column = ia.hessian_columns(params, grads, {A: delta[A]})[A][B]
        eps = 1e-4 * float(weights[A].norm()) / float(delta[A].norm())
        up = dict(weights, **{A: weights[A] + eps * delta[A]})
        down = dict(weights, **{A: weights[A] - eps * delta[A]})
        fd = -(coefficient(loss, up, B) - coefficient(loss, down, B)) / (2 * eps)  # ∇_B E moves by H_BA ΔA
        assert float((column - fd).norm() / fd.norm()) <= 1e-6, (A, B)


def test_predictions_summed_over_every_weight_equal_minus_h_delta():
    loss, weights, delta = setting(CONFIGS["pre-LN, GELU, tied"])
    names = loss.names(weights)
    params = ia.leaves(weights, names)
    _, grads = ia.gradient(loss, params, create_graph=True)
    columns = ia.hessian_columns(params, grads, {A: delta[A] for A in names})
    whole = torch.autograd.grad(list(grads.values()), list(params.values()),
                                grad_outputs=[delta[n] for n in names], retain_graph=True)  # HΔ in one product
    for B, h in zip(names, whole):
        summed = sum(columns[A][B] for A in names)
        assert float((summed - h).norm()) <= 1e-12 * float(h.norm()), B


@pytest.mark.parametrize("label", list(CONFIGS))
def test_second_order_loss_prediction_error_shrinks_eightfold_when_the_step_is_halved(label):
    loss, weights, delta = setting(CONFIGS[label], seed=1)
    errors = {}
    for t in (0.08, 0.04, 0.02):
        m = ia.interaction_map(loss, weights, {k: t * v for k, v in delta.items()}, 1, 0)
        errors[t] = abs(m.change - m.predicted_change)
    for big, small in ((0.08, 0.04), (0.04, 0.02)):
        assert 6.0 <= errors[big] / errors[small] <= 10.0  # a third-order remainder


def test_map_is_symmetric_and_its_rows_account_for_the_real_move():
    loss, weights, delta = setting(CONFIGS["pre-LN, GELU, tied"], seed=2)
    small = {k: 0.002 * v for k, v in delta.items()}
    m = ia.interaction_map(loss, weights, small, 5, 3)
    assert m.names == weight_names(CONFIGS["pre-LN, GELU, tied"]) and m.shares.shape == (len(m.names),) * 2
    np.testing.assert_allclose(m.shares, m.shares.T, rtol=1e-9, atol=1e-15)
    assert np.nanmax(m.residual) < 0.05  # a small step: −HΔ is ΔG to first order in Δ
    np.testing.assert_allclose(np.nansum(m.explained, axis=1), 1.0, atol=0.05)
    p = ia.pair_interaction(loss, weights, small, "blocks.1.W_K", "blocks.0.W_Q", 5, 3)
    i, j = m.names.index("blocks.1.W_K"), m.names.index("blocks.0.W_Q")
    assert p.share == pytest.approx(m.shares[i, j], rel=1e-12)
    assert np.linalg.norm(p.predicted) / np.linalg.norm(p.real) == pytest.approx(m.ratios[i, j], rel=1e-12)
    assert np.linalg.norm(p.exact - p.predicted) < 0.05 * np.linalg.norm(p.predicted)


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    cfg = ExperimentConfig(
        name="interaction", model=ModelConfig(n_layer=2, n_head=2, d_model=16, d_ff=32, n_ctx=16),
        train=TrainConfig(steps=4, batch_size=4, warmup_steps=1, eval_every=4, eval_batches=1, checkpoint_every=4,
                          snapshot_every=2, sample_tokens=8, torch_threads=1, device="cpu", lr=1e-3),
        data=DataConfig(corpus="test text"))
    path = tmp_path_factory.mktemp("interaction") / "run"
    list(Trainer(cfg, path, text=shakespeare_text()[:20_000]).steps())
    return RunAnalysis(path)


def test_run_analysis_answers_a_pair_and_the_map_between_saved_steps(analysis):
    assert analysis.saved_steps() == [0, 2, 4]
    p = analysis.interaction("blocks.1.W_K", "blocks.0.W_Q")
    assert (p.step, p.prev_step, p.predicted.shape) == (4, 2, (16, 16))
    before, after = analysis.run.load_weights(2), analysis.run.load_weights(4)
    loss = ia.ProbeLoss(analysis.config.model, analysis.run.probe().x, analysis.run.probe().y)
    want = coefficient(loss, after, "blocks.1.W_K") - coefficient(loss, before, "blocks.1.W_K")
    np.testing.assert_allclose(p.real, want.numpy(), rtol=0, atol=1e-12)
    series = analysis.interaction_series("blocks.1.W_K", "blocks.0.W_Q")
    assert [(q.prev_step, q.step) for q in series] == [(0, 2), (2, 4)] and series[-1] is p  # cached
    m = analysis.interaction_map(2)
    assert (m.prev_step, m.step) == (0, 2)
    assert m.change == pytest.approx(m.predicted_change, abs=0.2 * abs(m.change) + 1e-6)


def test_the_predicted_move_by_bs_route_classes_adds_up_to_it(analysis):
    p = analysis.interaction("blocks.1.W_K", "blocks.0.W_Q")
    r = analysis.interaction_routes("blocks.1.W_K", "blocks.0.W_Q")
    assert (r.step, r.prev_step) == (p.step, p.prev_step) and "direct" in r.moves
    np.testing.assert_allclose(sum(r.moves.values()), p.predicted, rtol=0, atol=1e-10 * np.abs(p.predicted).max())
    assert sum(r.shares.values()) == pytest.approx(1.0) and "%" in r.words()
    assert analysis.interaction_routes("blocks.1.W_K", "blocks.0.W_Q") is r  # cached


def test_route_shares_say_so_when_nothing_moves():
    r = ia.RouteMoves("B", "A", 2, 0, {"direct": np.zeros((2, 2)), "L1.mlp": np.zeros((2, 2))})
    assert r.shares == {} and "leaves B's coefficient" in r.words()


@pytest.mark.parametrize("call, message", [
    (lambda a: a.interaction("blocks.1.W_K", "W_Q"), "no weight 'W_Q'"),
    (lambda a: a.interaction_routes("blocks.1.W_K", "W_Q"), "no weight 'W_Q'"),
    (lambda a: a.interaction(None, "blocks.0.W_Q"), "--weight is required"),
    (lambda a: a.interaction_map(0), "first saved step"),
    (lambda a: a.interaction_map(3), "no weights saved at step 3"),
])
def test_a_users_mistake_is_one_clear_line(analysis, call, message):
    with pytest.raises(UserError, match=message):
        call(analysis)


def test_export_interaction_writes_the_pair_over_training_and_at_a_step(analysis, tmp_path, capsys):
    from engine.cli import main

    run, pair = str(analysis.path), ["--weight", "blocks.1.W_K", "--other", "blocks.0.W_Q"]
    assert main(["export", "--run", run, "--what", "interaction", *pair, "--step", "2",
                 "--out", str(tmp_path / "p.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"),
                                  analysis.interaction("blocks.1.W_K", "blocks.0.W_Q", 2).predicted)
    assert main(["export", "--run", run, "--what", "interaction", *pair, "--out", str(tmp_path / "p.csv")]) == 0
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "step,prev_step,predicted_norm,cosine_real,exact_norm,real_norm,share"
    assert [line.split(",")[:2] for line in lines[1:]] == [["2", "0"], ["4", "2"]]
    share = float(lines[2].split(",")[-1])
    assert share == analysis.interaction("blocks.1.W_K", "blocks.0.W_Q", 4).share
    assert main(["export", "--run", run, "--what", "interaction", *pair, "--out", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv", "p.npy", "p.png"]  # no temporary left


def test_export_interaction_csv_holds_each_column_by_value(analysis, tmp_path):
    # a planted swap of the "exact" and "real" columns passed the whole suite once (issue 39): every column is
    # compared with the number it names, computed by the engine for that interval
    from engine.cli import main
    from engine.coefficients import norm

    pair = ["--weight", "blocks.1.W_K", "--other", "blocks.0.W_Q"]
    assert main(["export", "--run", str(analysis.path), "--what", "interaction", *pair,
                 "--out", str(tmp_path / "p.csv")]) == 0
    lines = (tmp_path / "p.csv").read_text().splitlines()
    header = lines[0].split(",")
    for line, p in zip(lines[1:], analysis.interaction_series("blocks.1.W_K", "blocks.0.W_Q"), strict=True):
        got = dict(zip(header, line.split(",")))
        want = {"step": p.step, "prev_step": p.prev_step, "predicted_norm": norm(p.predicted),
                "cosine_real": p.cosine, "exact_norm": norm(p.exact), "real_norm": norm(p.real), "share": p.share}
        assert set(got) == set(want)
        for column, value in want.items():
            assert float(got[column]) == value, column
    assert norm(p.exact) != norm(p.real)  # so a swap of the two columns shows


def test_export_interaction_map_writes_the_matrix_with_names(analysis, tmp_path):
    from engine.cli import main

    run = str(analysis.path)
    assert main(["export", "--run", run, "--what", "interaction-map", "--out", str(tmp_path / "m.npy")]) == 0
    m = analysis.interaction_map()
    np.testing.assert_array_equal(np.load(tmp_path / "m.npy"), m.shares)
    assert main(["export", "--run", run, "--what", "interaction-map", "--out", str(tmp_path / "m.csv")]) == 0
    lines = (tmp_path / "m.csv").read_text().splitlines()
    assert lines[0].split(",")[1:] == m.names and [row.split(",")[0] for row in lines[1:]] == m.names
    np.testing.assert_array_equal([[float(v) for v in row.split(",")[1:]] for row in lines[1:]], m.shares)
    assert main(["export", "--run", run, "--what", "interaction-map", "--step", "2",
                 "--out", str(tmp_path / "m.svg")]) == 0
    assert "<svg" in (tmp_path / "m.svg").read_text()


def test_export_interaction_mistakes_are_one_line(analysis, tmp_path, capsys):
    from engine.cli import main

    rc = main(["export", "--run", str(analysis.path), "--what", "interaction", "--weight", "blocks.1.W_K",
               "--out", str(tmp_path / "x.npy")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "--other is required" in err[0]


def test_a_pair_without_a_cosine_says_why_in_its_titles_instead_of_nan():
    from engine.analysis.interaction_export import pair_figure

    moved = np.array([[1.0, 0.0], [0.0, 1.0]])
    still = ia.PairInteraction("B", "A", 2, 1, predicted=moved, exact=moved, real=np.zeros((2, 2)), share=0.0)
    assert still.cosine_words == "no cosine: a move is zero"
    assert "no cosine: a move is zero" in pair_figure(still).axes[0].get_title()
    half = ia.PairInteraction("B", "A", 2, 1, predicted=moved, exact=moved, real=np.eye(2) * 3, share=0.0)
    assert half.cosine_words == "cos with real 1.000"


def test_a_coefficient_that_is_identically_zero_is_degenerate_not_ratios_of_round_off():
    # issue 43: b_K's gradient is zero for any weights (a constant added to a row of scores leaves the softmax
    # as it was), so its moves are round-off; the view read them as a cosine of 0.59 and "direct 97 %"
    cfg = ModelConfig(n_layer=2, n_head=2, d_model=8, d_ff=16, n_ctx=8, vocab_size=11, attn_bias=True)
    loss, weights, delta = setting(cfg, seed=3)
    p = ia.pair_interaction(loss, weights, delta, "blocks.1.b_K", "blocks.0.W_Q", 2, 1)
    assert p.degenerate and np.abs(p.predicted).max() < 1e-12 and np.isnan(p.cosine)
    assert "round-off" in p.cosine_words and "degenerate" in p.cosine_words
    r = ia.route_moves(loss, weights, delta, "blocks.1.b_K", "blocks.0.W_Q", 2, 1)
    assert r.degenerate and r.shares == {} and "round-off" in r.words() and "%" not in r.words()
    m = ia.interaction_map(loss, weights, delta, 2, 1)
    row = m.names.index("blocks.1.b_K")
    assert [m.names[i] for i in np.flatnonzero(m.degenerate)] == ["blocks.0.b_K", "blocks.1.b_K"]
    assert np.isnan(m.ratios[row]).all() and np.isnan(m.explained[row]).all() and np.isnan(m.residual[row])
    # a weight beside it keeps its numbers: the rule is the first-order check's, not "small"
    q = ia.pair_interaction(loss, weights, delta, "blocks.1.b_Q", "blocks.0.W_Q", 2, 1)
    assert not q.degenerate and not np.isnan(q.cosine)
    assert not np.isnan(m.ratios[m.names.index("blocks.1.b_Q")]).any()
