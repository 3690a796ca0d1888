"""HeatmapGrid: every layer × head as one mosaic image, tiles in place, hover and clicks name the tile."""

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPointF, Qt

from gui.exports import Exports
from gui.widgets.heatmap_grid import GAP, HeatmapGrid, mosaic
from tests.gui.widgets.test_heatmap import hover

TOKENS = list("abcde")


@pytest.fixture
def grid(qtbot):
    w = HeatmapGrid(title="attention")
    qtbot.addWidget(w)
    w.resize(420, 420)
    w.show()
    return w


def stack(R=2, C=3, n=5) -> np.ndarray:
    a = np.random.default_rng(0).random((R, C, n, n))
    a[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = -np.inf
    return a


def test_tiles_sit_in_one_image_in_row_major_order(grid):
    s = stack()
    grid.set_stack(s, TOKENS, TOKENS)
    items = [i for i in grid.plot_item.items if isinstance(i, pg.ImageItem)]
    assert items == [grid.image_item]
    img = grid.image_item.image
    assert img.shape == (2 * 5 + GAP, 3 * 5 + 2 * GAP)
    for r in range(2):
        for c in range(3):
            tile = img[r * (5 + GAP): r * (5 + GAP) + 5, c * (5 + GAP): c * (5 + GAP) + 5]
            np.testing.assert_array_equal(np.isnan(tile), ~np.isfinite(s[r, c]))
            np.testing.assert_allclose(tile[np.isfinite(tile)], s[r, c][np.isfinite(s[r, c])], rtol=1e-6)
    assert np.isnan(img[5]).all() and np.isnan(img[:, 5]).all()  # the gaps
    assert not np.isinf(img).any()


def test_mosaic_of_one_tile_is_the_tile():
    a = np.arange(6.0).reshape(1, 1, 2, 3)
    np.testing.assert_array_equal(mosaic(a), a[0, 0])


def test_hover_names_layer_head_and_tokens(grid, qtbot):
    s = stack()
    grid.set_stack(s, TOKENS, TOKENS)
    with qtbot.waitSignal(grid.sig_hovered) as blocker:
        hover(qtbot, grid, 1 * (5 + GAP) + 3, 2 * (5 + GAP) + 1)  # layer 1, head 2, query 3, key 1
    assert blocker.args[:2] == ["layer 1 · head 2 · query 3 d", "key 1 b"]
    assert blocker.args[2] == pytest.approx(s[1, 2, 3, 1])
    assert grid.describe(5, 0) is None  # a gap


def test_click_selects_a_tile(grid, qtbot):
    grid.set_stack(stack(), TOKENS, TOKENS)
    scene = grid.plot_item.vb.mapViewToScene(QPointF(2 * (5 + GAP) + 2.5, 1 * (5 + GAP) + 2.5))
    with qtbot.waitSignal(grid.sig_tile_clicked) as blocker:
        qtbot.mouseClick(grid.view.viewport(), Qt.MouseButton.LeftButton, pos=grid.view.mapFromScene(scene))
    assert blocker.args == [1, 2]
    assert grid._outline.isVisible() and grid._outline.rect().x() == 2 * (5 + GAP)


def test_grid_export_holds_every_tile(grid, qtbot, tmp_path, children_in_thread):
    """(The export on a thread: its file is the point, not its process.)"""
    s = stack()
    grid.set_stack(s, TOKENS, TOKENS)
    exports = Exports(parent=grid)
    grid.sig_export_requested.connect(exports.serve)
    with qtbot.waitSignal(exports.sig_finished, timeout=20000):
        grid.export_async(tmp_path / "grid.npy")
    got = np.load(tmp_path / "grid.npy")
    np.testing.assert_array_equal(np.isnan(got), ~np.isfinite(s))
    np.testing.assert_allclose(got[np.isfinite(got)], s[np.isfinite(s)], rtol=1e-6)
    grid.export_to(tmp_path / "grid.csv")
    header = (tmp_path / "grid.csv").read_text().splitlines()[0]
    assert header == "layer,head,query,key,query_token,key_token,value"  # the tokens named (issue 40)


def test_head_labels_thin_to_what_fits_and_all_show_with_room(grid, qtbot):
    """Issue 40, seen under Xvfb at 1000×650: GPT-2's twelve heads were each labelled in 14-px tiles and
    "8 9 10 11" ran together. Labels shown never overlap; given room, every head is labelled."""
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QApplication

    def shown():
        axis = grid.plot_item.getAxis("bottom")
        ticks = axis._tickLevels[0]
        metrics = QFontMetrics(axis.style["tickFont"] or axis.font())
        spans = []
        for value, label in ticks:
            x = grid.plot_item.vb.mapViewToScene(QPointF(value, 0)).x()
            half = metrics.horizontalAdvance(label) / 2
            spans.append((x - half, x + half))
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), (ticks, spans)
        return [label for _, label in ticks]

    grid.set_stack(np.random.default_rng(0).random((12, 12, 4, 4)), list("abcd"), list("abcd"))
    grid.resize(190, 190)  # ~12 px a head
    QApplication.processEvents()
    few = shown()
    assert few[0] == "0" and 1 < len(few) < 12
    grid.resize(700, 700)
    QApplication.processEvents()
    assert shown() == [str(h) for h in range(12)]
