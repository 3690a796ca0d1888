"""HeatmapWidget: rows downward as on paper, NaN drawn masked, hover read-out, zoom, and Export…"""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication

from engine.figures import export
from engine.model import probes
from engine.figures.export import FigureOptions
from gui.exports import Exports
from gui.widgets import dialogs
from gui.widgets.heatmap import HeatmapWidget, colormap
from gui.widgets.plot_export import route_heatmap_exports

TOKENS = list("Before␣w")


@pytest.fixture
def heatmap(qtbot):
    w = HeatmapWidget(title="attention")
    qtbot.addWidget(w)
    w.resize(420, 420)
    w.show()
    return w


def cell_pixel(w: HeatmapWidget, row: int, col: int) -> QColor:
    """The colour on screen at the centre of cell (row, col)."""
    w.view.repaint()
    scene = w.plot_item.vb.mapViewToScene(QPointF(col + 0.5, row + 0.5))
    p = w.view.mapFromScene(scene)
    return w.view.grab().toImage().pixelColor(p.x(), p.y())


def hover(qtbot, w: HeatmapWidget, row: int, col: int) -> None:
    """Move the mouse over cell (row, col) with a real mouse event on the view."""
    w.view.scene()._lastMoveEventTime = 0  # pyqtgraph drops moves closer than its rate limit
    scene = w.plot_item.vb.mapViewToScene(QPointF(col + 0.5, row + 0.5))
    pos = QPointF(w.view.mapFromScene(scene))
    viewport = w.view.viewport()
    event = QMouseEvent(QEvent.Type.MouseMove, pos, QPointF(viewport.mapToGlobal(pos)),
                        Qt.MouseButton.NoButton, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(viewport, event)


def is_hatch_or_fill(c: QColor) -> bool:
    greys = {QColor(export.MASKED_FILL).name(), QColor(export.MASKED_HATCH).name()}
    return c.name() in greys


def test_causal_mask_shows_lower_triangular_in_image_and_pixels(heatmap):
    heatmap.set_matrix(probes.mask_matrix("causal", 8), TOKENS, TOKENS, kind="probability")
    shown = heatmap.image_item.image
    np.testing.assert_array_equal(np.isfinite(shown), np.tril(np.ones((8, 8), bool)))
    yellow = QColor.fromRgbF(*heatmap.image_item.getColorMap().map(1.0, mode="float")[:3])
    for row, col in [(6, 1), (7, 0), (3, 3)]:  # query row below the diagonal: allowed, drawn in colour
        got = cell_pixel(heatmap, row, col)
        assert abs(got.red() - yellow.red()) + abs(got.green() - yellow.green()) < 12, (row, col, got.name())
    for row, col in [(1, 6), (0, 7), (3, 4)]:  # above the diagonal: masked, drawn hatched
        assert is_hatch_or_fill(cell_pixel(heatmap, row, col)), (row, col)


@pytest.mark.parametrize("band", [1, 3])
def test_banded_mask_shows_band_plus_one_entries_per_full_row(heatmap, band):
    heatmap.set_matrix(probes.mask_matrix("banded", 8, band), kind="probability")
    counts = np.isfinite(heatmap.image_item.image).sum(axis=1)
    assert (counts[band:] == band + 1).all()
    assert counts[:band].tolist() == list(range(1, band + 1))


def test_minus_infinity_is_displayed_as_nan(heatmap, monkeypatch):
    scores = np.arange(16, dtype=float).reshape(4, 4) - 8
    scores[np.triu_indices(4, 1)] = -np.inf
    heatmap.set_matrix(scores, kind="signed")
    shown = heatmap.image_item.image
    assert not np.isinf(shown).any()
    assert np.isnan(shown[np.triu_indices(4, 1)]).all()
    np.testing.assert_array_equal(shown[np.tril_indices(4)], scores[np.tril_indices(4)])
    assert heatmap.image_item.getLevels().tolist() == [-10, 10]  # symmetric, a round ±10 ≥ 8; −inf ignored
    heatmap.set_matrix(scores, kind="signed", levels=(-20, 20))  # a scale shared with another view
    assert heatmap.image_item.getLevels().tolist() == [-20, 20] and heatmap.colour_bar.levels() == (-20, 20)
    written = {}
    monkeypatch.setattr(export, "export_matrix", lambda path, matrix, **kw: written.update(kw))
    heatmap.export_to("scores.png")
    assert written["levels"] == (-20, 20) and written["kind"] == "signed"  # exports match the screen


def test_signed_and_probability_use_the_export_colormaps(heatmap):
    heatmap.set_matrix(np.eye(3) - 0.5, kind="signed")
    signed = heatmap.image_item.getColorMap()
    assert signed.name.startswith(export.COLORMAPS["signed"])
    heatmap.set_matrix(np.eye(3), kind="probability")
    assert heatmap.image_item.getColorMap().name.startswith(export.COLORMAPS["probability"])
    assert list(heatmap.image_item.getLevels()) == [0, 1]
    with pytest.raises(ValueError):
        heatmap.set_matrix(np.eye(3), kind="rainbow")


def test_hover_reports_row_column_and_value(heatmap, qtbot):
    m = np.arange(64, dtype=float).reshape(8, 8)
    m[0, 5] = np.nan
    heatmap.set_matrix(m, TOKENS, TOKENS, kind="sequential")
    for (row, col), want in [((2, 5), 21.0), ((0, 5), None)]:
        with qtbot.waitSignal(heatmap.sig_hovered) as blocker:
            hover(qtbot, heatmap, row, col)
        row_label, col_label, value = blocker.args
        assert row_label == f"{row} {TOKENS[row]}" and col_label == f"{col} {TOKENS[col]}"
        if want is None:
            assert np.isnan(value) and heatmap._readout.text().endswith("masked")
        else:
            assert value == want and "21" in heatmap._readout.text()


def test_wheel_zooms_and_refresh_keeps_the_zoom(heatmap, qtbot):
    heatmap.set_matrix(np.eye(8))
    vb = heatmap.plot_item.vb
    before = vb.viewRange()
    viewport = heatmap.view.viewport()
    centre = QPointF(heatmap.view.mapFromScene(vb.mapViewToScene(QPointF(4, 4))))
    wheel = QWheelEvent(centre, QPointF(viewport.mapToGlobal(centre)), QPoint(0, 0), QPoint(0, 240),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase,
                        False)
    QApplication.sendEvent(viewport, wheel)
    zoomed = vb.viewRange()
    assert zoomed[0][1] - zoomed[0][0] < before[0][1] - before[0][0]
    heatmap.set_matrix(np.eye(8) * 0.5)  # a live refresh must not undo the user's zoom
    assert vb.viewRange() == zoomed
    heatmap.set_matrix(np.eye(4))  # a new shape shows the whole matrix again
    assert vb.viewRange()[0] == pytest.approx([0, 4], abs=0.3)


def test_click_reports_the_cell(heatmap, qtbot):
    heatmap.set_matrix(np.eye(8))
    scene = heatmap.plot_item.vb.mapViewToScene(QPointF(2.5, 6.5))
    with qtbot.waitSignal(heatmap.sig_cell_clicked) as blocker:
        qtbot.mouseClick(heatmap.view.viewport(), Qt.MouseButton.LeftButton,
                         pos=heatmap.view.mapFromScene(scene))
    assert blocker.args == [6, 2]


@pytest.fixture
def exports(heatmap):
    """The app's export queue, serving the heatmap's Export… as the window does."""
    queue = Exports(parent=heatmap)
    assert route_heatmap_exports(heatmap, queue.serve) == 1
    return queue


@pytest.mark.parametrize("suffix", ["png", "svg", "pdf", "csv", "npy"])
def test_export_dialog_writes_each_format_off_the_gui_thread(heatmap, exports, qtbot, tmp_path, monkeypatch,
                                                             suffix, request):
    """PNG in the export's own process, as the app writes every format; the others on a thread of this process
    (children_in_thread): what is checked of them is the file, and a spawned process for each was ~0.8 s of CPU."""
    if suffix != "png":
        request.getfixturevalue("children_in_thread")
    scores = np.random.default_rng(0).normal(size=(8, 8))
    scores[np.triu_indices(8, 1)] = -np.inf
    heatmap.set_matrix(scores, TOKENS, TOKENS, kind="signed", title="scores after the mask")
    target = tmp_path / f"out.{suffix}"
    asked = []
    monkeypatch.setattr(dialogs, "ask_export", lambda *a, **k: asked.append(k) or (target, FigureOptions()))
    with qtbot.waitSignal(exports.sig_finished, timeout=20000) as blocker:
        heatmap._export_action.trigger()
    assert blocker.args[1] == [target] and asked[0]["suggested"] == "scores-after-the-mask.png"
    data = target.read_bytes()
    if suffix == "png":
        assert data.startswith(b"\x89PNG")
    elif suffix == "svg":
        assert "scores after the mask" in "".join(ET.fromstring(data).itertext())
    elif suffix == "pdf":
        assert data.startswith(b"%PDF-")
    elif suffix == "npy":
        np.testing.assert_array_equal(np.load(target), heatmap.matrix())
    else:
        rows = [line.split(",") for line in data.decode().splitlines()]
        got = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
        np.testing.assert_array_equal(got, heatmap.matrix())
        assert rows[0][1:] == TOKENS


def test_export_to_an_unknown_suffix_says_why(heatmap, exports, qtbot, tmp_path, children_in_thread):
    heatmap.set_matrix(np.eye(3))
    with qtbot.waitSignal(exports.sig_failed) as blocker:
        heatmap.export_async(tmp_path / "x.jpg")
    assert ".png" in blocker.args[1] and not list(tmp_path.glob("*x.jpg*"))


def test_an_export_nothing_serves_says_so_instead_of_doing_nothing(heatmap, tmp_path):
    heatmap.set_matrix(np.eye(3))
    heatmap.export_async(tmp_path / "x.png")
    assert "not available" in heatmap._readout.text()


def test_pyqtgraph_exporter_is_replaced_by_ours(heatmap):
    assert heatmap.view.scene().contextMenu == [heatmap._export_action]


def test_labels_thin_out_to_fit_and_zooming_in_shows_every_token(heatmap):
    tokens = [f"t{i}" for i in range(64)]
    heatmap.resize(260, 260)
    heatmap.set_matrix(np.eye(64), tokens, tokens)
    bottom = heatmap.plot_item.getAxis("bottom")
    shown = [label for _, label in bottom._tickLevels[0]]
    assert shown[0] == "t0" and 1 < len(shown) < 64  # every s-th token
    step = int(shown[1][1:])
    assert shown == tokens[::step]
    heatmap.plot_item.vb.setRange(xRange=(10, 14), yRange=(10, 14), padding=0)
    assert [label for _, label in bottom._tickLevels[0]] == tokens


def shown_labels(w: HeatmapWidget, axis: str) -> tuple[list[str], float]:
    ax = w.plot_item.getAxis(axis)
    return [label for _, label in ax._tickLevels[0]], ax.style["tickFont"].pointSizeF()


PROMPT = list("To be, or not to be: that is the question. Whether 'tis nobler in the mind to suffer")


@pytest.mark.parametrize("n,size", [(32, 560), (32, 400), (64, 900)])
def test_a_prompt_that_fits_is_labelled_at_every_token_smaller_before_fewer(heatmap, n, size):
    tokens = PROMPT[:n]
    heatmap.resize(size, size)
    heatmap.set_matrix(np.eye(n), tokens, tokens)
    QApplication.processEvents()
    for axis in ("bottom", "left"):
        shown, point_size = shown_labels(heatmap, axis)
        assert shown == tokens, (axis, point_size)  # every token, so the prompt reads as typed
        assert point_size >= 6


def test_where_no_size_fits_a_regular_subset_is_labelled_and_hover_names_every_token(heatmap, qtbot):
    tokens = PROMPT[:64]
    heatmap.resize(200, 200)
    heatmap.set_matrix(np.eye(64), tokens, tokens)
    QApplication.processEvents()
    shown, _ = shown_labels(heatmap, "bottom")
    step = next(s for s in range(2, 64) if shown == tokens[::s])
    assert len(shown) > 64 // (2 * step)  # the smallest step that fits, not the next power of two
    with qtbot.waitSignal(heatmap.sig_hovered) as blocker:
        hover(qtbot, heatmap, 1, 1)
    assert blocker.args[1] == f"1 {tokens[1]}"


def test_the_hover_read_out_follows_the_matrix_and_clears_when_its_cell_is_gone(heatmap, qtbot):
    heatmap.set_matrix(np.arange(64, dtype=float).reshape(8, 8), TOKENS, TOKENS, kind="sequential")
    with qtbot.waitSignal(heatmap.sig_hovered):
        hover(qtbot, heatmap, 6, 6)
    assert heatmap._readout.text().endswith("→  54")
    heatmap.set_matrix(-np.arange(64, dtype=float).reshape(8, 8), TOKENS, TOKENS, kind="sequential")
    assert heatmap._readout.text().endswith("→  -54")  # another step or head: its value, not the old one
    heatmap.set_matrix(np.eye(4), TOKENS[:4], TOKENS[:4])
    assert heatmap._readout.text().strip() == ""


def test_a_pinned_column_keeps_its_label_where_the_others_are_a_subset(heatmap):
    tokens = [f"t{i}" for i in range(64)]
    heatmap.resize(200, 200)
    heatmap.set_matrix(np.eye(64), tokens, tokens, pinned_cols=(37,))
    QApplication.processEvents()
    shown, _ = shown_labels(heatmap, "bottom")
    regular = [int(t[1:]) for t in shown if t != "t37"]
    step = regular[1] - regular[0]
    assert "t37" in shown and 37 % step != 0 and len(shown) < 64  # shown though the subset would skip it
    assert all(abs(i - 37) >= step for i in regular)  # in place of the regular labels that would crowd it


def test_a_title_too_long_for_its_view_ends_in_an_ellipsis_and_keeps_the_rest_in_its_tooltip(qtbot):
    long = "encoding P (64 positions × 64 dimensions) of a learned positional encoding"
    w = HeatmapWidget(title=long)
    qtbot.addWidget(w)
    w.resize(200, 200)
    w.show()
    label = w._title_label
    assert label.width() < label.fontMetrics().horizontalAdvance(long)  # it did not widen the widget
    assert label.toolTip() == long
    w.set_matrix(np.eye(3), title="short")
    assert label.toolTip() == "short"
    label.setText(long)
    shown = label.shown_text()
    assert shown.endswith("…") and long.startswith(shown[:-1]) and len(shown) > 3
    assert label.fontMetrics().horizontalAdvance(shown) <= label.contentsRect().width()
    w.resize(900, 200)
    qtbot.waitUntil(lambda: label.shown_text() == long)


def bar_labels(qtbot, width: int, height: int, m: np.ndarray,
               kind: str = "signed") -> tuple[list[str], tuple, HeatmapWidget]:
    """The labels a shown heatmap's colour bar would draw, its levels, and the heatmap."""
    from PySide6.QtGui import QPainter, QPixmap

    w = HeatmapWidget()
    qtbot.addWidget(w)
    w.resize(width, height)
    w.set_matrix(m, kind=kind, title="ΔW")
    w.show()
    qtbot.waitUntil(lambda: w._view is not None)  # built on its first paint
    w._label_bar(w._levels)  # as a refresh after the layout does
    pixmap = QPixmap(10, 10)
    painter = QPainter(pixmap)
    try:
        return [spec[2] for spec in w.colour_bar.axis.generateDrawSpecs(painter)[2]], w._levels, w
    finally:
        painter.end()


def test_a_colour_bar_draws_both_end_labels_however_many_digits_they_take(qtbot):
    """ΔW of a late step spans about ±0.0025: pyqtgraph drew only '0' on the bar, dropping '-0.0025' and
    '0.0025' as wider than its 45 px axis (issue 16, item 5). Read what the axis would draw."""
    m = np.linspace(-0.0025, 0.0025, 64, dtype=np.float32).reshape(8, 8)
    texts, (lo, hi), _ = bar_labels(qtbot, 250, 200, m)
    assert lo < 0 < hi and {f"{lo:.3g}", f"{hi:.3g}", "0"} <= set(texts)


def test_a_colour_bar_whose_end_is_round_off_of_zero_reads_0(qtbot):
    """Issue 40: a sequential map whose least value was float round-off of zero (a ratio of a pair that does not
    interact) had its bar's end labelled '4.3e-19'."""
    m = np.linspace(0.0, 0.8, 64).reshape(8, 8)
    m[0, 0] = 4.3e-19
    texts, (lo, hi), _ = bar_labels(qtbot, 250, 300, m, kind="sequential")
    assert 0 < lo < 1e-18 and "0" in texts and not any("e-19" in t for t in texts)


def test_a_tall_colour_bar_is_labelled_at_a_readable_spacing(qtbot):
    """Run diff's bar, 700 px tall at 1600×1000, was labelled every 0.05 from -1 to 1: 41 labels (seen
    under Xvfb)."""
    m = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    texts, _, w = bar_labels(qtbot, 300, 900, m)
    given = [label for level in w.colour_bar.axis._tickLevels for _, label in level]  # what pyqtgraph may draw
    assert {"-1", "0", "1"} <= set(texts) and len(given) <= 12


def test_a_heatmap_builds_its_plot_on_its_first_paint_and_shows_what_it_was_given_before(qtbot, tmp_path):
    """The plot waits for the first paint (the window's 30 heatmaps are mostly on tabs not yet seen); what
    set_matrix was given meanwhile is what the plot shows, and an export needs no plot."""
    from PySide6.QtWidgets import QLabel, QTabWidget

    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    tabs.addTab(QLabel("front"), "front")
    w = HeatmapWidget(title="behind")
    tabs.addTab(w, "behind")
    m = np.array([[-2.0, 1.0, 0.5], [0.0, -np.inf, 3.0]])
    w.set_matrix(m, row_title="query", col_title="key", kind="signed", levels=(-4, 4))
    w.set_colormap("coolwarm")
    tabs.resize(400, 300)
    with qtbot.waitExposed(tabs):  # the front tab painted (a bare waitExposed, without `with`, waited for nothing)
        tabs.show()
    assert w._view is None  # on the tab behind: never painted
    np.testing.assert_array_equal(np.load(w.export_to(tmp_path / "behind.npy")), w.matrix())
    assert w.matrix().shape == (2, 3) and w._view is None  # exported from what it keeps, no plot built
    tabs.setCurrentWidget(w)
    qtbot.waitUntil(lambda: w._view is not None)
    np.testing.assert_array_equal(w.image_item.image, w.matrix())
    assert w.image_item.getLevels().tolist() == [-4, 4] and w.colour_bar.levels() == (-4, 4)
    assert w.colour_bar.colorMap() is colormap("signed", "coolwarm")
    assert w.plot_item.getAxis("left").labelText == "query" and w.plot_item.getAxis("bottom").labelText == "key"
    assert w._backdrop.isVisible()  # the masked entry shows hatched


def test_a_window_builds_no_plot_for_a_pane_behind_a_tab(qtbot, make_window, tmp_path):
    """Every pane builds its plots (heatmaps, charts, curves) on first sight (gui/widgets/first_sight.py): a
    window's panes behind a tab hold none, with a run open, and one brought forward shows them; nor does a tab
    behind another in a pane in sight (Training's next-token bars). And every heatmap of the window has the same
    controls (from test_heatmap_controls.py: one window for both)."""
    import pyqtgraph as pg

    from gui.widgets.heatmap_controls import HeatmapControls
    from tests.engine.cli.test_export_cli import tiny_run

    window = make_window(run_dir=tiny_run(tmp_path / "run").path)
    maps = [h for pane in window.panes.values() for h in pane.findChildren(HeatmapWidget)]
    assert len(maps) >= 6
    for h in maps:
        assert isinstance(h.controls, HeatmapControls) and h.controls.parent() is not None

    qtbot.waitUntil(lambda: window.docks["pane_heatmaps"].isVisible())
    behind = {name for name, dock in window.docks.items() if dock.visibleRegion().isEmpty()}
    assert {"pane_weight", "pane_run_curves"} <= behind
    plotted = {name for name in behind if window.panes[name].findChildren(pg.GraphicsView)}
    assert not plotted
    weight, curves = window.panes["pane_weight"], window.panes["pane_run_curves"]
    window.docks["pane_weight"].raise_()  # its maps show once the run's coefficients come
    qtbot.waitUntil(lambda: weight.G_map._view is not None and weight.page.norms.built)
    window.docks["pane_run_curves"].raise_()
    qtbot.waitUntil(lambda: curves.grid.built)
    training = window.panes["pane_training"]  # in sight, its Generate tab behind the heads chart: no bars yet
    assert not training.next_tokens.plot.built
    tabs = training.lower_tabs
    tabs.setCurrentIndex(next(i for i in range(tabs.count()) if tabs.widget(i).isAncestorOf(training.next_tokens)))
    qtbot.waitUntil(lambda: training.next_tokens.plot.built)


def test_the_heads_chart_labels_every_head_at_its_usual_height(heatmap):
    heads = [f"L{i // 4} H{i % 4}" for i in range(12)]  # three layers of four heads
    heatmap.resize(500, 230)
    heatmap.set_matrix(np.random.default_rng(0).random((12, 20)), heads, [str(10 * s) for s in range(20)],
                       "probability", row_title="head", col_title="step")
    QApplication.processEvents()
    shown, _ = shown_labels(heatmap, "left")
    assert shown == heads  # every head, not every other one


def test_a_heatmaps_export_first_opens_where_its_pane_says(heatmap, monkeypatch, tmp_path):
    asked = []
    monkeypatch.setattr(dialogs, "ask_export", lambda *a, **k: asked.append(k))
    heatmap.set_matrix(np.eye(3))
    heatmap._export_action.trigger()
    heatmap.set_caption_source(lambda: "run r", lambda: str(tmp_path))  # the Heatmaps pane: the open run
    heatmap._export_action.trigger()
    assert [k["start"] for k in asked] == ["", str(tmp_path)]


def test_the_row_axis_is_as_wide_as_its_widest_label_whichever_the_step_shows(qtbot):
    """Sized to the labels its step kept, the row axis narrowed the plot, which changed the step, which widened
    it again: a GPT-2 prompt's one-head tiles relaid themselves ~200 times a second under Xvfb and the window
    stopped answering. The axis is as wide as its widest label, shown or not, so the step cannot move it."""
    from PySide6.QtGui import QFont, QFontMetrics

    from gui.widgets.heatmap import HeatmapWidget

    labels = ["Now", ",", "␣fair", "␣Hippolyta", "oly", "ta", ",", "␣our"] * 8
    w = HeatmapWidget(title="mask")
    qtbot.addWidget(w)
    w.set_matrix(np.tril(np.ones((64, 64))), labels, labels)
    w.resize(220, 160)  # too short for every row label: a step above 1
    w.show()
    qtbot.waitUntil(lambda: w._plot is not None and w._tick_key is not None)
    axis = w._plot.getAxis("left")
    plan = dict((k[0], k[1]) for k in w._tick_key)["left"]
    assert plan.step > 1  # not every label is shown: its width is still the widest's
    font = QFont(w._tick_font)
    font.setPointSizeF(plan.point_size)
    widest = QFontMetrics(font).horizontalAdvance("␣Hippolyta")
    assert axis.fixedWidth == widest + abs(axis.style.get("tickLength", 5)) + 8


def test_the_row_axis_title_is_never_drawn_over_its_labels(qtbot):
    """Issue 40: in every token-labelled heatmap the rotated row title ("query") was drawn over the tokens,
    the axis being exactly as wide as its labels."""
    from PySide6.QtGui import QImage, QPainter

    labels = ["Now", ",", "␣fair", "␣Hippolyta", "oly", "ta", ",", "␣our"]
    w = HeatmapWidget(title="softmax")
    qtbot.addWidget(w)
    w.set_matrix(np.tril(np.ones((8, 8))), labels, labels, row_title="query", col_title="key")
    w.resize(420, 420)
    w.show()
    qtbot.waitUntil(lambda: w._plot is not None and bool(w._tick_key))
    axis = w._plot.getAxis("left")
    qtbot.waitUntil(lambda: axis.width() == axis.fixedWidth)  # the layout has given the axis its width
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    _, _, texts = axis.generateDrawSpecs(painter)
    painter.end()
    title = axis.label.mapRectToParent(axis.label.boundingRect())
    assert texts and axis.label.isVisible()
    for rect, _flags, text in texts:
        assert not rect.intersects(title), (text, rect, title)


def test_marks_sit_on_their_cells_and_say_what_they_mark_on_hover(heatmap, qtbot):
    heatmap.set_matrix(np.zeros((4, 6)), [f"L0 H{h}" for h in range(4)], [str(s) for s in range(6)],
                       kind="probability")
    heatmap.set_marks([(2, 3, "L0 H2 took the previous-token role at step 3")])
    heatmap.plot_item  # the plot is built on its first paint: now
    xs, ys = heatmap._mark_item.getData()
    assert list(xs) == [3.5] and list(ys) == [2.5]  # the cell's centre: on the chart, not on an axis label
    hover(qtbot, heatmap, 2, 3)
    qtbot.waitUntil(lambda: "took the previous-token role" in heatmap._readout.text())
    hover(qtbot, heatmap, 1, 3)
    qtbot.waitUntil(lambda: "◆" not in heatmap._readout.text())


def test_waiting_plots_are_built_one_per_turn_with_timers_served_between(qtbot):
    """Plots asked together are built one at a time, and a timer due meanwhile (the app's own, a probe's) is
    served between two builds: Qt 6 posts singleShot(0) as an event, and chained so they ran several builds
    before any timer (123 ms of GUI-thread CPU between two ticks in the Heatmaps pane's cold scrub)."""
    import time

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QHBoxLayout, QWidget

    from gui.widgets.first_sight import Room

    log = []

    def build(i):  # a build long enough for the probe's next tick to fall due during it
        log.append(f"built {i}")
        end = time.perf_counter() + 0.003
        while time.perf_counter() < end:
            pass

    holder = QWidget()
    qtbot.addWidget(holder)
    row = QHBoxLayout(holder)
    for i in range(3):
        row.addWidget(Room(lambda i=i: build(i)))
    probe = QTimer(interval=1)
    probe.timeout.connect(lambda: log and log[-1] != "tick" and log.append("tick"))
    probe.start()
    holder.show()
    qtbot.waitUntil(lambda: "built 2" in log, timeout=180_000)
    probe.stop()
    builds = [i for i, entry in enumerate(log) if entry.startswith("built")]
    assert [log[i] for i in builds] == ["built 0", "built 1", "built 2"]
    assert all("tick" in log[a:b] for a, b in zip(builds, builds[1:])), log
