"""A large model's coefficients: G first from one autograd backward shared by the step's weights, then the
split; a split over its budget says why; a weight wider than a screen is sent as a drawn view (window.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import engine.coefficients as co
from engine.analysis import questions as q
from engine.analysis.door import Door
from engine.coefficients import window
from engine.coefficients.cache import CoefficientStore

from .wide import VOCAB, wide_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return wide_run(tmp_path_factory.mktemp("wide") / "run")


def test_pooling_keeps_each_bands_largest_entry_with_its_sign():
    a = np.zeros((3000, 4))
    a[7, 1], a[1500, 2], a[2999, 3] = -9.0, 5.0, 1.0
    drawn = window.reduce(a, window.Window())
    assert drawn.shape == (1024, 4)
    band = lambda row: int(np.searchsorted(window._bands(3000), row, side="right")) - 1  # noqa: E731
    assert drawn[band(7), 1] == -9.0 and drawn[band(1500), 2] == 5.0 and drawn[band(2999), 3] == 1.0
    assert np.count_nonzero(drawn) == 3
    axes = window.axes(a.shape, window.Window())
    assert axes.row_labels[0] == "0–2" and axes.row_labels[-1].endswith("–2999") and len(axes.col_labels) == 4
    assert axes.note == "3,000 rows in 1024 bands, 4 columns (a band shows its entry of largest magnitude)"
    chosen = window.reduce(a, window.Window((1500, 7)))
    np.testing.assert_array_equal(chosen, a[[1500, 7]])
    wide = window.reduce(np.arange(2 * 4096.0).reshape(2, 4096), window.Window())
    assert wide.shape == (2, 1024) and wide[0, -1] == 4095.0  # columns pooled too


def test_a_large_models_g_comes_first_shared_by_the_steps_weights_then_its_split(run, monkeypatch):
    calls = []
    real = co.autograd_coefficients
    monkeypatch.setattr(co, "autograd_coefficients", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(co, "PROGRESSIVE_FLOPS", 0.0)
    store = CoefficientStore(run, disk=False)
    assert store.progressive
    first = store.first("blocks.1.W_Q", 0)
    assert first.pending and first.classes == {} and np.isnan(first.agreement) and store.summaries(
        "blocks.1.W_Q")[0].pending
    np.testing.assert_array_equal(first.G, first.grad)
    other = store.first("blocks.0.W_in", 0)
    assert other.pending and len(calls) == 1  # one backward for every weight of the step
    whole = store.record("blocks.1.W_Q", 0)
    assert not whole.pending and whole.classes and whole.agreement < 1e-5 and len(calls) == 1
    np.testing.assert_allclose(sum(whole.classes.values()), first.G, atol=1e-7)
    assert store.first("blocks.1.W_Q", 0) is whole and not store.summaries("blocks.1.W_Q")[0].pending


def test_a_split_over_its_budget_keeps_g_whole_and_says_why(run, monkeypatch):
    from engine.forms import derive, evaluate

    cfg = run.config.model
    n = len(evaluate.class_names(derive(cfg), "W_E"))
    need = co.split_bytes(cfg, "W_E", n, 2, 32)
    assert n == 2 + 4 * cfg.n_layer and need == 4 * n * VOCAB * 64 * 4  # its class matrices are the largest
    monkeypatch.setattr(co, "SPLIT_BYTES", need - 1)
    rec = CoefficientStore(run, disk=False).record("W_E", 0)
    assert rec.classes == {} and not rec.pending and np.isnan(rec.agreement)
    assert rec.unsplit == (f"not split: its {n} route classes would hold about {need / 2**30:.1f} GB at once on the "
                           f"probe batch (2 × 32 tokens), over the {(need - 1) / 2**30:.0f} GB budget")
    np.testing.assert_array_equal(rec.G, rec.grad)
    monkeypatch.setattr(co, "SPLIT_BYTES", need)
    assert len(CoefficientStore(run, disk=False).record("W_E", 0).classes) == n


def test_the_pane_is_sent_a_view_of_w_e_pooled_or_of_a_texts_tokens_rows(run):
    door = Door()
    summary, _, (drawn, update) = q.CoefficientAt(str(run.path), "W_E", 0, True).answer(door)
    assert drawn.W.shape == (1024, 64) and drawn.G.shape == (1024, 64) and update is None
    assert drawn.axes.shape == (VOCAB, 64) and drawn.axes.note.startswith("5,000 rows in 1024 bands, 64 columns")
    whole = door.analysis(str(run.path)).coefficients.record("W_E", 0)
    assert summary == whole.summary() == drawn.summary() and drawn.agreement == whole.agreement
    ids = tuple(dict.fromkeys(run.tokenizer.encode(" the king")))
    _, _, (rows, _) = q.CoefficientAt(str(run.path), "W_E", 0, True, window=window.Window(ids)).answer(door)
    np.testing.assert_array_equal(rows.G, whole.G[list(ids)])
    assert rows.axes.row_labels == tuple(f"{i} {run.tokenizer.token_strings([i])[0]}" for i in ids)
    assert rows.axes.note == f"{len(ids)} chosen rows of 5,000, 64 columns"
    for name, m in rows.classes.items():
        np.testing.assert_array_equal(m, whole.classes[name][list(ids)])
    # the text itself, encoded here with the run's tokenizer (the GUI's Run of a large tokenizer has not read it)
    _, _, (by_text, _) = q.CoefficientAt(str(run.path), "W_E", 0, True, window=window.Window(text=" the king")
                                         ).answer(door)
    np.testing.assert_array_equal(by_text.G, rows.G)
    assert by_text.axes == rows.axes
    small = q.CoefficientAt(str(run.path), "blocks.0.W_Q", 0, True).answer(door)[2][0]
    assert small.axes is None and small.W.shape == (64, 64)  # small enough: sent whole
    assert dataclasses.replace(q.CoefficientAt(str(run.path), "W_E", 0, False), split=True).lane == q.LONG


def test_a_large_models_w_e_split_keeps_its_probe_tokens_rows_and_reads_back_from_the_cache(run, tmp_path,
                                                                                         monkeypatch):
    import shutil

    from engine.rundir.runs import Run

    monkeypatch.setattr(co, "PROGRESSIVE_FLOPS", 0.0)  # split by autograd on the module (class_split.py)
    copy = Run(shutil.copytree(run.path, tmp_path / "run", ignore=shutil.ignore_patterns("cache")))
    store = CoefficientStore(copy)
    rec = store.record("W_E", 0)
    rows = np.unique(copy.probe().x)
    assert rec.agreement < 1e-5 and "unembed" in rec.classes
    for name, m in rec.classes.items():
        assert isinstance(m, np.ndarray) if name == "unembed" else np.array_equal(m.rows, rows)
    again = CoefficientStore(copy).record("W_E", 0)  # from RUN/cache
    assert list(again.classes) == list(rec.classes) and again.summary() == rec.summary()
    for name, m in rec.classes.items():
        np.testing.assert_array_equal(co.dense(again.classes[name]), co.dense(m))
    drawn = window.shown(rec, window.Window(tuple(int(r) for r in rows[:3])))
    for name, m in drawn.classes.items():
        np.testing.assert_array_equal(m, co.dense(rec.classes[name])[rows[:3]])
