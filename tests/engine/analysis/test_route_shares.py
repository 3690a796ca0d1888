"""Which routes the optimizer used over training (engine/analysis/routes.py, RunAnalysis.route_shares): the
shares of every interval sum to ⟨G(p), ΔW⟩ in float64, the whole model is the sum over weights, and each
geometry's split sums to ⟨G(p), D⟩. No Qt."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analysis import geometry as geo
from engine.analysis import routes
from engine.analysis.run_analysis import RunAnalysis
from engine.coefficients.cache import CoefficientStore
from engine.errors import UserError
from tests.engine.analysis.test_update_geometry import trained


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return trained(tmp_path_factory.mktemp("routes") / "run", "adamw")


@pytest.fixture(scope="module")
def analysis(run):
    return RunAnalysis(run.path)


def test_each_intervals_shares_sum_exactly_to_the_first_order_decrease(run):
    store = CoefficientStore(run, "float64", disk=False)
    steps = run.saved_steps()
    per = routes.assemble("blocks.1.W_Q", [routes.interval(store, "blocks.1.W_Q", s) for s in steps[1:]])
    assert list(per.steps) == steps[1:] and list(per.prev_steps) == steps[:-1]
    assert len(per.classes) > 1 and per.directions == [routes.APPLIED, "euclidean", "sign", "spectral"]
    for i, (p, s) in enumerate(zip(steps, steps[1:])):
        G = store.record("blocks.1.W_Q", p).G
        dW = run.load_weights(s)["blocks.1.W_Q"].double().numpy() - run.load_weights(p)["blocks.1.W_Q"].double().numpy()
        assert per.total()[i] == pytest.approx(geo.inner(G, dW), rel=1e-10, abs=1e-15)
        for name, D in geo.directions(G).items():
            assert per.total(name)[i] == pytest.approx(geo.inner(G, D), rel=1e-10)
    assert sum(per.fractions().values()) == pytest.approx(1.0)


def test_run_analysis_gives_every_interval_of_a_weight(analysis, run):
    per = analysis.route_shares("blocks.0.W_V")
    store = CoefficientStore(run, "float64", disk=False)
    for i, s in enumerate(per.steps):
        want = geo.class_shares(store.record("blocks.0.W_V", int(per.prev_steps[i])).classes,
                                store.update("blocks.0.W_V", int(s)).dW)
        got = dict(zip(per.classes, per.shares[routes.APPLIED][i]))
        for c, v in want.items():  # the analysis reads float32 records: agreement to their precision
            assert got[c] == pytest.approx(v, rel=1e-4, abs=1e-6 * max(map(abs, want.values())))
    assert analysis.route_shares("blocks.0.W_V") is per  # cached


def test_whole_model_ranking_is_the_sum_over_weights(analysis):
    whole = analysis.route_shares(None)
    names = analysis.coefficients.weight_names()
    per = {w: analysis.route_shares(w) for w in names}
    summed = {w: dict(zip(r.classes, r.shares[routes.APPLIED].sum(axis=0))) for w, r in per.items()}
    want = geo.rank_routes(summed)
    got = whole.ranking()
    assert [c for c, _ in got] == [c for c, _ in want]
    np.testing.assert_allclose([v for _, v in got], [v for _, v in want], rtol=1e-12)
    np.testing.assert_allclose(whole.total(), np.sum([r.total() for r in per.values()], axis=0), rtol=1e-12)
    for name in whole.directions:
        np.testing.assert_allclose(whole.total(name), np.sum([r.total(name) for r in per.values()], axis=0),
                                   rtol=1e-12)


def test_an_unknown_weight_is_one_line(analysis):
    with pytest.raises(UserError, match="no weight 'nope'"):
        analysis.route_shares("nope")


def test_export_routes_writes_the_analysis_numbers(analysis, run, tmp_path, capsys):
    import csv

    from engine.cli import main

    for suffix in ("csv", "npy", "png"):
        rc = main(["export", "--run", str(run.path), "--what", "routes", "--weight", "blocks.0.W_V",
                   "--out", str(tmp_path / f"r.{suffix}")])
        assert rc == 0
    per = analysis.route_shares("blocks.0.W_V")
    with open(tmp_path / "r.csv", newline="") as f:
        table = list(csv.DictReader(f))
    applied = [row for row in table if row["direction"] == "applied_dW"]
    assert [row["class"] for row in applied[:len(per.classes)]] == per.classes
    for i, s in enumerate(per.steps):
        got = sum(float(row["share"]) for row in applied if int(row["step"]) == s)
        assert got == pytest.approx(per.total()[i], rel=1e-12, abs=1e-300)
    assert {row["direction"] for row in table} == {"applied_dW", "euclidean", "sign", "spectral"}
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), per.shares[routes.APPLIED])
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    rc = main(["export", "--run", str(run.path), "--what", "routes", "--weight", "nope", "--out",
               str(tmp_path / "x.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "no weight 'nope'" in err and err.count("\n") == 1


def test_a_weight_over_the_splits_budget_keeps_its_whole_share_as_one_not_split_class(run, monkeypatch):
    import engine.coefficients as co

    monkeypatch.setattr(co, "SPLIT_BYTES", 0)
    store = CoefficientStore(run, disk=False)
    got = routes.interval(store, "blocks.0.W_Q", run.saved_steps()[1])
    update = store.update("blocks.0.W_Q", run.saved_steps()[1])
    G = store.record("blocks.0.W_Q", update.prev_step).G
    assert list(got.shares) == [routes.NOT_SPLIT]
    assert got.shares[routes.NOT_SPLIT] == pytest.approx(float(np.sum(G.astype(np.float64) * update.dW)), rel=1e-9)


def test_a_large_models_whole_shares_come_in_one_pass_and_equal_the_sum_over_weights(run, monkeypatch):
    import engine.coefficients as co

    monkeypatch.setattr(co, "PROGRESSIVE_FLOPS", 0.0)  # a "large" model: classes by autograd on the module
    store = CoefficientStore(run, "float64", disk=False)
    steps = run.saved_steps()
    among = ("W_E", "blocks.0.W_Q", "blocks.1.ln1.g", "blocks.1.W_out", "ln_f.b", "b_U")
    for s in steps[1:]:
        got = routes.model_interval(store, s, among)
        want = [routes.interval(store, w, s) for w in among]
        for direction in (routes.APPLIED, "euclidean", "sign", "spectral"):
            summed: dict[str, float] = {}
            for it in want:
                for c, v in (it.shares if direction == routes.APPLIED else it.by_geometry[direction]).items():
                    summed[c] = summed.get(c, 0.0) + v
            mine = got.shares if direction == routes.APPLIED else got.by_geometry[direction]
            assert set(mine) == set(summed)
            for c in summed:
                assert mine[c] == pytest.approx(summed[c], rel=1e-9, abs=1e-12 * max(map(abs, summed.values())))
    whole = RunAnalysis(run.path).route_shares(None)
    assert whole.weight is None and list(whole.steps) == steps[1:] and "direct" in whole.classes
