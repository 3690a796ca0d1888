"""Curves of several runs: columns from metrics.jsonl, x axes, smoothing, and the exported figure and CSV."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from engine.errors import UserError
from engine.run_curves import export_overlay, load_curves, overlay_figure
from engine.smoothing import ema
from tests.engine.test_run_list import runs_folder  # noqa: F401  (the fixture: runs 'short' and 'long')


def test_columns_and_axes_come_from_the_metrics_and_config(runs_folder):  # noqa: F811
    c = load_curves(runs_folder / "long")
    assert list(c.columns["step"]) == list(range(1, 21))
    x, _ = c.series("train_loss", "tokens")
    assert np.array_equal(x, c.columns["step"] * 8 * 16)  # batch 8 × context 16
    x, y = c.series("val_loss")
    assert list(x) == [5, 10, 15, 20] and np.all(np.isfinite(y))
    assert np.allclose(c.series("train_loss", smoothing=0.8)[1], ema(c.columns["train_loss"], 0.8))
    assert np.array_equal(c.series("val_loss", smoothing=0.8)[1], y)  # sparse points are not smoothed


def test_the_figure_names_each_run_and_the_csv_holds_their_rows(runs_folder, tmp_path):  # noqa: F811
    curves = [load_curves(runs_folder / n) for n in ("short", "long")]
    fig = overlay_figure(curves, "wall_s", 0.6)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["short", "long"]
    export_overlay(tmp_path / "o.svg", curves, smoothing=0.6)
    assert "short" in (tmp_path / "o.svg").read_text()
    export_overlay(tmp_path / "o.csv", curves, smoothing=0.6)
    rows = list(csv.DictReader(open(tmp_path / "o.csv", encoding="utf-8")))
    assert [r["run"] for r in rows] == ["short"] * 12 + ["long"] * 20
    assert float(rows[-1]["train_loss_smoothed"]) == pytest.approx(ema(curves[1].columns["train_loss"], 0.6)[-1])
    with pytest.raises(UserError):
        export_overlay(tmp_path / "o.npy", curves)
