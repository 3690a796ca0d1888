"""Curves of several runs: columns from metrics.jsonl, x axes, smoothing, and the exported figure and CSV."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from engine.errors import UserError
from engine.figures.palette import color_of
from engine.figures.run_curves import METRIC_LABELS, load_curves, overlay_figure
from engine.figures.run_curves_export import export_overlay
from engine.figures.smoothing import ema
from tests.engine.rundir.test_run_list import runs_folder  # noqa: F401  (the fixture: runs 'short' and 'long')


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
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["short", "long"]
    export_overlay(tmp_path / "o.svg", curves, smoothing=0.6)
    assert "short" in (tmp_path / "o.svg").read_text()
    export_overlay(tmp_path / "o.csv", curves, smoothing=0.6)
    rows = list(csv.DictReader(open(tmp_path / "o.csv", encoding="utf-8")))
    assert [r["run"] for r in rows] == ["short"] * 12 + ["long"] * 20
    assert rows[1]["step"].isdigit() and rows[1]["tokens"].isdigit()  # "2", not "2.0" (issue 40)
    assert float(rows[-1]["train_loss_smoothed"]) == pytest.approx(ema(curves[1].columns["train_loss"], 0.6)[-1])
    with pytest.raises(UserError):
        export_overlay(tmp_path / "o.npy", curves)


def test_the_reader_reads_a_log_again_only_when_it_changed(runs_folder, tmp_path):  # noqa: F811
    import json
    import shutil

    from engine.figures.run_curves import CurvesReader

    run = shutil.copytree(runs_folder / "short", tmp_path / "short")
    paths = [str(run), str(runs_folder / "long"), str(runs_folder / "notes")]
    reader = CurvesReader()
    first = reader.changed(paths, {})
    assert reader.reads == 3 and list(first[paths[1]][1].columns["step"]) == list(range(1, 21))
    assert isinstance(first[paths[2]][1], str) and "notes" in first[paths[2]][1]  # not a run: one line
    known = {p: stamp for p, (stamp, _) in first.items()}
    assert reader.changed(paths, known) == {} and reader.reads == 3  # nothing changed: nothing read or sent
    assert set(reader.changed(paths, {})) == set(paths) and reader.reads == 3  # sent again, from memory
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as f:  # the run logs one more step
        f.write(json.dumps({"step": 13, "train_loss": 1.5, "lr": 1e-3, "wall_s": 9.0}) + "\n")
    grown = reader.changed(paths, known)
    assert list(grown) == [str(run)] and reader.reads == 4
    assert grown[str(run)][1].columns["step"][-1] == 13


def test_the_tikz_export_holds_every_run_in_one_picture_in_the_figures_colours(runs_folder,  # noqa: F811
                                                                                 tmp_path):
    import re

    import matplotlib

    from engine.figures.run_curves_tex import MAX_POINTS, thinned

    curves = [load_curves(runs_folder / n) for n in ("short", "long")]
    curves[1] = curves[1].__class__("long_run 100%", curves[1].path, curves[1].columns)  # TeX's specials
    export_overlay(tmp_path / "o.tex", curves, "tokens", 0.6)
    tex = (tmp_path / "o.tex").read_text(encoding="utf-8")
    panels = len(METRIC_LABELS)  # one per metric Run curves plots, each run's curve in each
    assert tex.count("\\begin{tikzpicture}") == 1 and tex.count("\\nextgroupplot") == panels
    assert tex.count("\\addplot") == panels * 2
    assert re.findall(r"\\addlegendentry\{(.*)\}", tex) == ["short", r"long\_run 100\%"]
    assert re.findall(r"\\definecolor\{run\d\}\{HTML\}\{(\w+)\}", tex) == [
        matplotlib.colors.to_hex(color_of(i)).lstrip("#").upper() for i in range(2)]
    # the first panel's second curve is the long run's smoothed train loss against tokens
    coords = re.findall(r"coordinates \{(.*)\}", tex)[1]
    points = [tuple(map(float, p.split(","))) for p in re.findall(r"\(([^)]*)\)", coords)]
    x, y = curves[1].series("train_loss", "tokens", 0.6)
    np.testing.assert_allclose(points, np.c_[x, y], rtol=1e-7)
    assert not list(tmp_path.glob(".*tmp*"))  # written under a temporary name, then renamed
    x, y = thinned(np.arange(5000.0), np.arange(5000.0))
    assert len(x) <= MAX_POINTS and x[0] == 0 and x[-1] == 4999


def test_the_figure_names_long_runs_in_full_beside_the_panels_in_the_screens_colours(runs_folder,  # noqa: F811
                                                                                    tmp_path):
    """Issue 26, item 9: a legend inside a panel covered the curves and cut long names; the exported figure
    drew in matplotlib's colours, the screen in the series palette. Now one palette, and the legend outside."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    names = ["tiny-test-20261124-080249", "tiny-test-20261124-093015", "shakespeare-fast-muon-20261125-101500"]
    base = load_curves(runs_folder / "long")
    curves = [base.__class__(n, base.path, base.columns) for n in names]
    fig = overlay_figure(curves, "step", 0.6)
    FigureCanvasAgg(fig).draw()
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == names
    assert [matplotlib.colors.to_hex(h.get_color()) for h in legend.legend_handles] == [color_of(i) for i in range(3)]
    box = legend.get_window_extent()
    for ax in fig.axes:
        if ax.get_visible():
            assert not box.overlaps(ax.get_window_extent())  # beside the panels, over no curve
            for line in ax.get_lines():  # every curve of run i, faint or smoothed, in colour i
                assert matplotlib.colors.to_hex(line.get_color()) in {color_of(i) for i in range(3)}
    assert box.x1 <= fig.bbox.x1 + 1  # inside the figure: no name cut at its edge
