"""Curvature along the step (engine/analysis/curvature.py, docs/readings.md): κ against the model's whole Hessian
built by double backward and against finite differences of the loss, in float64; the line search's bracket
against the loss itself; a run trained at a learning rate that diverges crosses 2/η before its loss blows up;
every export by value."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
import torch
from torch.func import functional_call

from engine.analysis import curvature as cv
from engine.analysis import interaction as ia
from engine.analysis.curvature_export import COLUMNS, curvature_figure, export_curvature, rows
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.errors import UserError
from engine.model.gpt import GPT
from engine.text.corpus import shakespeare_text
from engine.training.trainer import Trainer

CFG = ModelConfig(n_layer=1, n_head=2, d_model=6, d_ff=8, n_ctx=6, vocab_size=7, pos_encoding="learned")


def setting(scale=0.05, seed=0):
    torch.manual_seed(seed)
    before = {k: v.double() for k, v in GPT(CFG).state_dict().items()}
    g = torch.Generator().manual_seed(seed + 1)
    after = {k: v + scale * torch.randn(v.shape, generator=g, dtype=v.dtype) for k, v in before.items()}
    x = torch.randint(0, CFG.vocab_size, (2, CFG.n_ctx), generator=g)
    y = torch.randint(0, CFG.vocab_size, (2, CFG.n_ctx), generator=g)
    return ia.ProbeLoss(CFG, x, y), before, after


def flat_loss(loss, before):
    names = loss.names(before)
    shapes = [before[n].shape for n in names]
    sizes = [before[n].numel() for n in names]

    def f(theta):
        parts = torch.split(theta, sizes)
        return loss({n: p.reshape(s) for n, p, s in zip(names, parts, shapes)})

    return f, names, sizes


@pytest.mark.parametrize("exact, rel", [(True, 1e-10), (False, 1e-8)])
def test_curvature_equals_the_whole_hessians_and_finite_differences(exact, rel):
    """Hδ by double backward (exact) and by the central difference of two gradients (the default in float64),
    each against the model's whole Hessian and against second differences of the loss itself."""
    loss, before, after = setting()
    c = cv.curvature(loss, before, after, 5, 3, 0.01, weight="blocks.0.W_in", exact=exact)
    f, names, sizes = flat_loss(loss, before)
    theta = torch.cat([before[n].reshape(-1) for n in names])
    delta = torch.cat([(after[n] - before[n]).reshape(-1) / 2 for n in names])  # the mean of 2 steps
    H = torch.autograd.functional.hessian(f, theta, vectorize=True)  # every second derivative, double backward
    along = float(delta @ H @ delta)
    assert c.along == pytest.approx(along, rel=rel)
    assert c.curvature == pytest.approx(along / float(delta @ delta), rel=rel)
    h = 1e-3
    with torch.no_grad():
        fd = (f(theta + h * delta) - 2 * f(theta) + f(theta - h * delta)) / h ** 2
    assert c.along == pytest.approx(float(fd), rel=1e-5)
    # each weight's share of δᵀHδ, and one weight's own block
    Hd = torch.split(H @ delta, sizes)
    ds = torch.split(delta, sizes)
    for n, hd, d in zip(names, Hd, ds):
        assert c.shares[n] == pytest.approx(float(d @ hd) / along, rel=10 * rel, abs=1e-12)
    k = names.index("blocks.0.W_in")
    lo = sum(sizes[:k])
    block = H[lo:lo + sizes[k], lo:lo + sizes[k]]
    assert c.weight_curvature == pytest.approx(float(ds[k] @ block @ ds[k]) / float(ds[k] @ ds[k]), rel=rel)
    assert c.slope == pytest.approx(float(torch.func.grad(f)(theta) @ delta), rel=rel)
    assert c.loss == float(f(theta))


def descending(scale):
    """A step of size `scale` down the probe loss, mixed with a random direction."""
    loss, before, after = setting()
    names = loss.names(before)
    _, grads = ia.gradient(loss, ia.leaves(before, names))
    gn = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    rand = {n: after[n] - before[n] for n in names}
    rn = math.sqrt(sum(float((r * r).sum()) for r in rand.values()))
    return loss, before, {n: before[n] + scale * (-grads[n] / gn + 0.5 * rand[n] / rn) for n in names}


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
def test_the_line_search_brackets_the_first_rise_of_the_loss_in_ten_forwards(scale):
    loss, before, after = descending(scale)
    c = cv.curvature(loss, before, after, 1, 0, 0.01)
    assert c.forwards <= cv.FORWARDS
    lo, hi = c.bracket
    names = loss.names(before)

    def rise(t):
        with torch.no_grad():
            return float(loss({n: before[n] + t * (after[n] - before[n]) for n in names})) - c.loss

    assert c.limit == "" and rise(hi) > 0 and (lo == 0 or rise(lo) <= 0) and c.critical_step == hi
    assert hi - lo <= 0.02 * hi and c.critical_sharpness == 2 / (hi * c.lr)


def test_line_search_on_a_parabola_and_its_bounds():
    for a in (0.1, 1.0, 3.0, 40.0):  # E(t) = −t + a t²/2 rises again past t = 2/a
        t_c, (lo, hi), used = cv.line_search(lambda t, a=a: -t + a * t * t / 2)
        assert used <= cv.FORWARDS and lo <= 2 / a <= hi and (hi - lo) <= 0.1 * hi
    t_c, (lo, hi), _ = cv.line_search(lambda t: -t)  # never rises
    assert t_c == math.inf and lo == cv.T_MAX
    t_c, (lo, hi), _ = cv.line_search(lambda t: t)  # every step rises
    assert lo == 0 and hi == cv.T_MIN


def diverging_run(path):
    """SGD without momentum or clipping, its rate warmed up to 10 over 300 steps: the NaN guard stops it."""
    cfg = ExperimentConfig(
        name="diverges", model=ModelConfig(n_layer=1, n_head=2, d_model=16, d_ff=32, n_ctx=16),
        train=TrainConfig(steps=300, batch_size=8, optimizer="sgd", momentum=0.0, lr=10.0, min_lr=10.0,
                          warmup_steps=300, grad_clip=0.0, weight_decay=0.0, eval_every=1000, eval_batches=1,
                          checkpoint_every=1000, snapshot_every=1, sample_tokens=0, torch_threads=1, device="cpu"),
        data=DataConfig(corpus="test text"))
    return list(Trainer(cfg, path, text=shakespeare_text()[:50_000]).steps())


def test_a_diverging_run_crosses_the_threshold_before_its_loss_blows_up(tmp_path):
    from engine.analysis.run_analysis import RunAnalysis

    reports = diverging_run(tmp_path / "run")
    first = reports[0].train_loss
    blown = next(r.step for r in reports if r.event == "nan" or r.train_loss > 3 * first)
    a = RunAnalysis(tmp_path / "run")
    crossed = None
    for s in range(5, blown, 5):  # consecutive saved steps: each interval is one optimizer step
        c = a.curvature(s)
        assert c.steps == 1
        if s == 5:
            assert c.critical_sharpness < c.threshold  # it starts below
        if c.limit == "" and c.critical_sharpness > c.threshold:
            crossed = s
            break
    assert crossed is not None and crossed < blown, (crossed, blown)


@pytest.fixture(scope="module")
def run_path(tmp_path_factory):
    from tests.engine.coefficients.test_coefficients import tiny_run

    return tiny_run(tmp_path_factory.mktemp("curvature") / "run").path


def test_exports_and_the_question_hold_the_engines_numbers(run_path, tmp_path):
    from engine.analysis import door
    from engine.analysis import questions as q
    from engine.analysis.run_analysis import RunAnalysis
    from engine.cli import main

    a = RunAnalysis(run_path)
    series = a.curvature_series("blocks.0.W_V")
    steps = a.saved_steps()
    assert [(c.prev_step, c.step) for c in series] == list(zip(steps, steps[1:]))
    got = door.answer(q.CurvatureAt(q.Saved(str(run_path), steps[-1]), "blocks.0.W_V"))
    assert got.curvature == series[-1].curvature and got.weight_curvature == series[-1].weight_curvature
    assert door.answer(q.CurvatureSeries(str(run_path), "blocks.0.W_V"))[-1].curvature == series[-1].curvature
    from engine.analysis.live import Mirror
    from tests.engine.analysis.test_live import cross

    held = cross(Mirror(), a.run.load_weights(steps[-1]))  # published at a step: from the saved step before it
    live = door.answer(q.CurvatureAt(q.Live(a.config.model, held, steps[-1], run=str(run_path)), "blocks.0.W_V"))
    assert (live.prev_step, live.curvature) == (series[-1].prev_step, series[-1].curvature)
    assert main(["export", "--run", str(run_path), "--what", "curvature", "--weight", "blocks.0.W_V",
                 "--out", str(tmp_path / "c.csv")]) == 0
    with open(tmp_path / "c.csv", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert tuple(table[0]) == COLUMNS
    for line, c in zip(table[1:], series, strict=True):
        got = dict(zip(COLUMNS, line))
        want = dict(zip(COLUMNS, rows([c])[0]))
        for k, v in want.items():
            assert (got[k] == v) if isinstance(v, str) else float(got[k]) == pytest.approx(v, rel=0, abs=0) or \
                (math.isnan(v) and got[k] == "nan"), k
    assert main(["export", "--run", str(run_path), "--what", "curvature", "--out", str(tmp_path / "c.npy")]) == 0
    npy = np.load(tmp_path / "c.npy")
    whole = a.curvature_series()
    assert npy.shape == (len(whole), len(COLUMNS))
    np.testing.assert_array_equal(npy[:, COLUMNS.index("curvature")], [c.curvature for c in whole])
    np.testing.assert_array_equal(npy[:, COLUMNS.index("critical_sharpness")], [c.critical_sharpness for c in whole])
    fig = curvature_figure(series, a.run.metrics())
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    np.testing.assert_array_equal(lines["2/η (the schedule's rate)"].get_ydata(), [c.threshold for c in series])
    kappa = lines["κ = δᵀHδ/‖δ‖², whole model"].get_ydata()
    np.testing.assert_array_equal(kappa, [c.curvature if c.curvature > 0 else np.nan for c in series])
    assert export_curvature(tmp_path / "c.svg", series).read_text().startswith("<?xml")


def test_mistakes_are_one_line(run_path, tmp_path, capsys):
    from engine.cli import main

    for argv, message in ((["--weight", "W_Q"], "no weight 'W_Q'"),):
        assert main(["export", "--run", str(run_path), "--what", "curvature", *argv,
                     "--out", str(tmp_path / "x.csv")]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err


def test_the_method_follows_the_memory_estimates_before_anything_is_allocated(monkeypatch):
    """Each budget between two estimates picks the next way down: float64 by the difference, float32 exactly,
    the float32 difference (saying so), forwards alone (saying why), refused."""
    import engine.coefficients

    f64, f32 = (cv.second_order_bytes(CFG, 4, 64, k) for k in (8, 4))
    diff, fwd = cv.difference_bytes(CFG, 4, 64, 4), cv.forward_bytes(CFG, 4, 64, 4)
    assert fwd < diff < f32 < f64
    for budget, want in ((f64, cv.Method(torch.float64, False, cv.DIFFERENCE_STEP)),
                         (f32, cv.Method(torch.float32, True, cv.DIFFERENCE_STEP)),
                         (diff, cv.Method(torch.float32, False, cv.FLOAT32_STEP, "", cv.FLOAT32_ACCURACY))):
        monkeypatch.setattr(engine.coefficients, "SPLIT_BYTES", budget)
        assert cv.curvature_method(CFG, 4, 64) == want
    monkeypatch.setattr(engine.coefficients, "SPLIT_BYTES", diff - 1)
    m = cv.curvature_method(CFG, 4, 64)
    assert (m.dtype, m.approximate) == (torch.float32, "") and m.unmeasured.startswith("κ is not measured") \
        and "its central difference about" in m.unmeasured
    monkeypatch.setattr(engine.coefficients, "SPLIT_BYTES", fwd - 1)
    with pytest.raises(UserError, match="a forward alone would hold about"):
        cv.curvature_method(CFG, 4, 64)


def test_the_float32_difference_is_within_its_stated_accuracy_of_the_float64_exact_product():
    """κ, κ_W, the shares and ∇E·δ by the float32 central difference at FLOAT32_STEP against the float64 double
    backward, along a random and a descending step: within FLOAT32_TOLERANCE (FLOAT32_ACCURACY, docs/readings.md)."""
    loss, before, after = setting()
    names = loss.names(before)
    _, grads = ia.gradient(loss, ia.leaves(before, names))
    descending = {n: before[n] - 2 * 0.05 * grads[n] for n in names}  # two steps of gradient descent's direction
    x, y = loss.x, loss.y
    single = ia.ProbeLoss(CFG, x, y, torch.float32)
    for to in (after, descending):
        exact = cv.curvature(loss, before, to, 5, 3, 0.01, weight="blocks.0.W_in", exact=True)
        got = cv.curvature(single, before, to, 5, 3, 0.01, weight="blocks.0.W_in", step_length=cv.FLOAT32_STEP,
                           approximate=cv.FLOAT32_ACCURACY)
        assert got.approximate == cv.FLOAT32_ACCURACY
        tol = cv.FLOAT32_TOLERANCE
        assert got.curvature == pytest.approx(exact.curvature, rel=tol)
        assert got.weight_curvature == pytest.approx(exact.weight_curvature, rel=tol)
        assert got.slope == pytest.approx(exact.slope, rel=tol)
        assert max(abs(got.shares[n] - exact.shares[n]) for n in names) < tol


def test_a_model_too_large_for_a_double_backward_gets_the_line_search_alone_stated_before_anything_is_allocated():
    from engine.configs.config import ModelConfig

    gpt2 = ModelConfig(n_layer=12, n_head=12, d_model=768, d_ff=3072, n_ctx=1024, vocab_size=50257, attn_bias=True,
                       tied=True, pos_encoding="learned", activation="gelu_tanh")
    assert cv.second_order_bytes(gpt2, 1, 1024, 4) / 2**30 == pytest.approx(10, abs=1)  # docs/readings.md
    assert cv.difference_bytes(gpt2, 1, 1024, 4) / 2**30 == pytest.approx(6.4, abs=0.2)  # docs/readings.md
    m = cv.curvature_method(gpt2, 1, 1024, "κ along the step")  # the float32 difference, and it says so
    assert m == cv.Method(torch.float32, False, cv.FLOAT32_STEP, "", cv.FLOAT32_ACCURACY)
    with pytest.raises(UserError, match=r"^the second-order view is not measured on this model: .* about 10 GB"):
        cv.second_order_dtype(gpt2, 1, 1024, "the second-order view")
    assert cv.curvature_method(CFG, 4, 64) == cv.Method(torch.float64, False, cv.DIFFERENCE_STEP)
    baby = ModelConfig(n_layer=6, n_head=6, d_model=384, d_ff=1536, n_ctx=256, vocab_size=65)
    assert 0.4e9 < cv.second_order_bytes(baby, 1, 256, 4) < 0.5e9  # measured 471 MB (float32, 1 × 256 tokens)


def test_forwards_alone_find_the_same_critical_step_and_claim_no_curvature():
    loss, before, after = setting()
    full = cv.curvature(loss, before, after, 5, 3, 0.01, weight="blocks.0.W_in")
    alone = cv.curvature(loss, before, after, 5, 3, 0.01, weight="blocks.0.W_in", unmeasured="κ: too large")
    assert (alone.critical_step, alone.bracket, alone.forwards, alone.loss, alone.loss_after, alone.threshold) == \
        (full.critical_step, full.bracket, full.forwards, full.loss, full.loss_after, full.threshold)
    assert all(math.isnan(v) for v in (alone.slope, alone.along, alone.curvature, alone.quadratic_step))
    assert alone.shares == {} and alone.weight_curvature is None and alone.unmeasured == "κ: too large"
    assert full.unmeasured == "" and not math.isnan(full.curvature)


def test_a_run_over_the_budget_for_kappa_exports_lambda_c_alone_and_says_why(run_path, tmp_path, capsys,
                                                                              monkeypatch):
    import engine.coefficients
    from engine.analysis.run_analysis import RunAnalysis
    from engine.cli import main

    a = RunAnalysis(run_path)
    full = a.curvature_series()
    shape = np.asarray(a.run.probe().x).shape
    # a float32 forward fits it, neither a double backward nor the central difference
    budget = min(cv.second_order_bytes(a.config.model, *shape, 4), cv.difference_bytes(a.config.model, *shape, 4)) - 1
    assert cv.forward_bytes(a.config.model, *shape, 4) < budget
    monkeypatch.setattr(engine.coefficients, "SPLIT_BYTES", budget)
    b = RunAnalysis(run_path)
    why = b.curvature_unmeasured()
    assert why.startswith("κ along the step is not measured on this model")
    alone = b.curvature_series("blocks.0.W_V")
    assert [c.unmeasured for c in alone] == [why] * len(full)
    assert all(math.isnan(c.curvature) and c.weight_curvature is None for c in alone)
    for c, f in zip(alone, full):  # the line search in float32 against float64's: the same bracket
        assert c.critical_step == f.critical_step and c.loss == pytest.approx(f.loss, rel=1e-6)
    capsys.readouterr()
    assert main(["export", "--run", str(run_path), "--what", "curvature", "--out", str(tmp_path / "c.csv")]) == 0
    err = capsys.readouterr().err
    assert f"gpt-explorer: warning: {why}: λ_c alone, from forwards" in err
    with open(tmp_path / "c.csv", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert [float(r["critical_sharpness"]) for r in table] == [c.critical_sharpness for c in alone]
    assert all(r["curvature"] == "nan" for r in table)
    monkeypatch.setattr(engine.coefficients, "SPLIT_BYTES", cv.forward_bytes(a.config.model, *shape, 4) - 1)
    with pytest.raises(UserError, match="a forward alone would hold about"):
        RunAnalysis(run_path).curvature()
    # where the float32 difference fits and no double backward does: κ by it, and every output says so
    diff = cv.difference_bytes(a.config.model, *shape, 4)
    assert diff < cv.second_order_bytes(a.config.model, *shape, 4)
    monkeypatch.setattr(engine.coefficients, "SPLIT_BYTES", diff)
    c = RunAnalysis(run_path).curvature()
    assert c.approximate == cv.FLOAT32_ACCURACY and c.unmeasured == ""
    assert c.curvature == pytest.approx(full[-1].curvature, rel=cv.FLOAT32_TOLERANCE)
    capsys.readouterr()
    assert main(["export", "--run", str(run_path), "--what", "curvature", "--out", str(tmp_path / "c.csv")]) == 0
    assert f"gpt-explorer: note: κ and the shares {cv.FLOAT32_ACCURACY}" in capsys.readouterr().err
