"""Exports: valid PNG, SVG, PDF, CSV and NPY files that hold the numbers they were given."""

import csv
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from engine.figures import export
from engine.errors import UserError

LABELS = ["F", "i", "r", "␣", "$"]


def attention_like() -> np.ndarray:
    rng = np.random.default_rng(0)
    a = rng.random((5, 5))
    a[np.triu_indices(5, 1)] = -np.inf  # as masked scores arrive
    return a


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_figure_formats_are_valid_files(tmp_path):
    a = attention_like()
    kw = dict(row_labels=LABELS, col_labels=LABELS, kind="signed", title="layer 0 · head 1 scores",
              row_title="query", col_title="key")
    png = export.export_matrix(tmp_path / "a.png", a, **kw)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = export.export_matrix(tmp_path / "a.svg", a, **kw)
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    text = "".join(root.itertext())
    assert "layer 0 · head 1 scores" in text and "query" in text and "␣" in text and "$" in text
    pdf = export.export_matrix(tmp_path / "a.PDF", a, **kw).read_bytes()
    assert pdf.startswith(b"%PDF-") and b"%%EOF" in pdf[-32:]


def test_figure_draws_the_same_numbers_colormap_and_levels():
    a = attention_like()
    fig = export.matrix_figure(a, kind="signed")
    im = fig.axes[0].images[0]
    shown = np.ma.filled(im.get_array().astype(float), np.nan)
    np.testing.assert_array_equal(np.isnan(shown), ~np.isfinite(a))
    np.testing.assert_array_equal(shown[np.isfinite(a)], a[np.isfinite(a)])
    m = np.abs(a[np.isfinite(a)]).max()
    lo, hi = im.get_clim()
    assert (lo, hi) == export.levels_for(a, "signed") and -lo == hi >= m
    assert im.get_cmap().name.startswith(export.COLORMAPS["signed"])
    assert export.matrix_figure(a, kind="probability").axes[0].images[0].get_clim() == (0, 1)
    assert export.matrix_figure(a, kind="signed", levels=(-3, 3)).axes[0].images[0].get_clim() == (-3, 3)


def test_csv_and_npy_hold_the_same_numbers_with_nan_for_masked(tmp_path):
    a = attention_like()
    npy = np.load(export.export_matrix(tmp_path / "a.npy", a))
    rows = read_csv(export.export_matrix(tmp_path / "a.csv", a, row_labels=LABELS, col_labels=LABELS))
    assert rows[0] == [""] + LABELS
    assert [r[0] for r in rows[1:]] == LABELS
    from_csv = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    for got in (npy, from_csv):
        np.testing.assert_array_equal(np.isnan(got), ~np.isfinite(a))
        np.testing.assert_array_equal(got[np.isfinite(a)], a[np.isfinite(a)])
    assert not np.isinf(npy).any()


def test_grid_exports_every_tile(tmp_path):
    stack = np.random.default_rng(1).random((2, 3, 4, 4))
    stack[..., 0, 1] = np.nan
    fig = export.grid_figure(stack, row_labels=list("abcd"), col_labels=list("abcd"))
    assert len([ax for ax in fig.axes if ax.images]) == 6
    np.testing.assert_array_equal(np.load(export.export_grid(tmp_path / "g.npy", stack)), stack)
    rows = read_csv(export.export_grid(tmp_path / "g.csv", stack))
    assert rows[0] == ["layer", "head", "query", "key", "value"] and len(rows) == 1 + stack.size
    layer, head, q, k, v = rows[1 + 1 * 16 + 2 * 4 + 3]  # (0, 1, 2, 3) in row-major order
    assert (layer, head, q, k) == ("0", "1", "2", "3") and float(v) == stack[0, 1, 2, 3]
    assert ET.parse(export.export_grid(tmp_path / "g.svg", stack)).getroot().tag.endswith("svg")


def test_an_attention_grid_csv_names_the_query_and_key_tokens(tmp_path):
    """Issue 40: the attention CSV had indices only; a reader had to find the prompt's tokens elsewhere."""
    stack = np.random.default_rng(1).random((1, 2, 3, 3))
    tokens = ["The", " cat", ","]
    rows = read_csv(export.export_grid(tmp_path / "g.csv", stack, row_labels=tokens, col_labels=tokens))
    assert rows[0] == ["layer", "head", "query", "key", "query_token", "key_token", "value"]
    layer, head, q, k, q_token, k_token, v = rows[1 + 1 * 9 + 2 * 3 + 1]  # (0, 1, 2, 1)
    assert (q, k, q_token, k_token) == ("2", "1", ",", " cat") and float(v) == stack[0, 1, 2, 1]


def test_loss_exports_columns_and_figure(tmp_path):
    rows = [{"step": s, "train_loss": 4 - s / 10, **({"val_loss": 4.1 - s / 10} if s % 5 == 0 else {})}
            for s in range(1, 11)]
    table = np.load(export.export_loss(tmp_path / "loss.npy", rows))
    assert table.shape == (10, 3)
    np.testing.assert_array_equal(table[:, 0], np.arange(1, 11))
    assert np.isnan(table[0, 2]) and table[4, 2] == pytest.approx(3.6)
    lines = read_csv(export.export_loss(tmp_path / "loss.csv", rows))
    assert lines[0] == ["step", "train_loss", "val_loss"] and float(lines[3][1]) == rows[2]["train_loss"]
    assert [line[0] for line in lines[1:4]] == ["1", "2", "3"]  # steps as integers, not "1.0" (issue 40)
    assert export.export_loss(tmp_path / "loss.png", rows).stat().st_size > 1000
    with pytest.raises(UserError, match="no logged steps"):
        export.export_loss(tmp_path / "x.csv", [])


@pytest.mark.parametrize("name", ["a.jpg", "a", "a.txt"])
def test_unknown_suffix_is_a_user_error(tmp_path, name):
    with pytest.raises(UserError, match=r"\.png .*\.npy"):
        export.export_matrix(tmp_path / name, np.eye(2))
    assert not (tmp_path / name).exists()


def test_levels_and_ticks():
    assert export.levels_for(np.array([[-2.0, 1.0], [np.nan, -np.inf]]), "signed") == (-2.0, 2.0)
    assert export.levels_for(np.array([[3.0, 5.0]]), "sequential") == (3.0, 5.0)
    assert export.levels_for(np.full((2, 2), np.nan), "sequential") == (0.0, 1.0)
    assert [export.label_step(n, 16) for n in (5, 16, 17, 64, 65)] == [1, 1, 2, 4, 8]
    assert [export.nice_ceil(x) for x in (0.0, 0.03, 0.7, 1.0, 1.3, 2.2, 3.1, 7.9, 80.0)] == \
        [1.0, 0.05, 1.0, 1.0, 2.0, 2.5, 5.0, 10.0, 100.0]
    assert export.levels_for(np.array([[0.37, -0.1]]), "signed") == (-0.5, 0.5)
