"""The controls on every heatmap: a visible fit (reset zoom), colour map and colour range (auto, symmetric,
fixed across steps), and exports drawn in the chosen colours."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from gui.widgets.heatmap import HeatmapWidget, colormap
from gui.widgets.heatmap_controls import COLORMAP_CHOICES, RANGES

from ..conftest import QT_NOISE

pytestmark = [pytest.mark.qt_log_level_fail("WARNING"), pytest.mark.qt_log_ignore(QT_NOISE)]


@pytest.fixture
def heatmap(qtbot):
    w = HeatmapWidget(title="scores · layer 0")
    qtbot.addWidget(w)
    w.resize(400, 360)
    w.show()
    return w


def test_fit_undoes_zoom_and_pan(heatmap, qtbot):
    heatmap.set_matrix(np.random.default_rng(0).random((8, 8)))
    vb = heatmap.plot_item.vb
    whole = vb.viewRange()
    vb.scaleBy((0.25, 0.25))
    vb.translateBy((2, 2))
    assert vb.viewRange() != whole
    assert heatmap.controls.fit_button.isVisible()
    qtbot.mouseClick(heatmap.controls.fit_button, Qt.MouseButton.LeftButton)
    got = vb.viewRange()
    assert all(abs(a - b) < 1e-6 for ra, rb in zip(got, whole) for a, b in zip(ra, rb))


def test_colour_map_choice_reaches_the_screen_and_the_export(heatmap, tmp_path):
    heatmap.set_matrix(np.eye(4), kind="probability")
    heatmap.controls.choose(heatmap.controls.colormaps, "magma")
    assert heatmap.colormap_name == "magma"
    assert heatmap.colour_bar.colorMap() is colormap('probability', 'magma')
    from engine.figures import export

    fig_kw = {}
    original = export.matrix_figure

    def spy(*a, **k):
        fig_kw.update(k)
        return original(*a, **k)

    export.matrix_figure, saved = spy, export.matrix_figure
    try:
        heatmap.export_to(tmp_path / "m.png")
    finally:
        export.matrix_figure = saved
    assert fig_kw["cmap"] == "magma"
    heatmap.controls.choose(heatmap.controls.colormaps, None)
    assert heatmap.colormap_name == export.COLORMAPS["probability"]


def test_range_symmetric_and_fixed_across_steps(heatmap):
    a = np.array([[0.1, 0.4], [0.2, 0.3]])
    heatmap.set_matrix(a, kind="sequential")
    assert heatmap.levels == pytest.approx((0.1, 0.4))
    heatmap.controls.choose(heatmap.controls.ranges, "symmetric")
    assert heatmap.levels == (-0.5, 0.5) and heatmap.range_mode == "symmetric"
    heatmap.controls.choose(heatmap.controls.ranges, "fixed")
    heatmap.set_matrix(a * 10, kind="sequential")  # a later step, larger values: the same colours mean the same
    assert heatmap.levels == (-0.5, 0.5)
    heatmap.controls.choose(heatmap.controls.ranges, "auto")
    assert heatmap.levels == pytest.approx((1.0, 4.0))


@pytest.mark.qt_log_ignore(QT_NOISE, "does not support (raise|grabbing)")  # a menu on the offscreen platform
def test_the_colours_button_opens_every_map_and_range_the_first_time(heatmap, qtbot):
    """The menu's entries are made as it first opens (a window's ~40 heatmaps are mostly never opened)."""
    from PySide6.QtCore import QTimer

    menu, opened = heatmap.controls.menu, {}

    def look():  # inside the menu's own event loop, as the user sees it
        entries = [a for a in menu.actions() if not a.isSeparator()]
        opened.update(visible=menu.isVisible(), texts=[a.text() for a in entries],
                      checked=[a.text() for a in entries if a.isChecked()],
                      fits=menu.height() >= menu.sizeHint().height())
        menu.close()

    QTimer.singleShot(0, look)
    qtbot.mouseClick(heatmap.controls.colours_button, Qt.MouseButton.LeftButton)
    assert opened["visible"] and opened["fits"]
    assert opened["texts"] == [label for label, _ in COLORMAP_CHOICES] + [label for _, label in RANGES]
    assert opened["checked"] == ["by kind", "auto: by kind"]


@pytest.mark.parametrize("scale", [1e-7, 1.0, 3e4])
def test_a_short_colour_bar_still_names_its_ends(qtbot, scale):
    h = HeatmapWidget(title="G")
    qtbot.addWidget(h)
    h.resize(260, 110)  # a small panel: room for one automatic tick only
    h.show()
    h.set_matrix(np.random.default_rng(0).normal(size=(16, 16)) * scale, kind="signed")
    lo, hi = h.levels
    major = dict(h.colour_bar.axis._tickLevels[0])
    assert set(major) == {lo, hi, 0.0} and major[hi] == f"{hi:.3g}" and major[0.0] == "0"


def test_a_long_title_goes_on_its_own_row_rather_than_being_cut(qtbot):
    h = HeatmapWidget(title="x")
    qtbot.addWidget(h)
    h.resize(600, 300)
    h.show()
    title = "ΔW = W(245) − W(240) · blocks.0.W_Q · route L1.mlp"
    h.set_matrix(np.eye(3), kind="signed", title=title)
    label = h._title_label
    assert label.y() == h.controls.y() or abs(label.y() - h.controls.y()) < 8  # beside the tools
    h.resize(300, 300)
    qtbot.waitUntil(lambda: label.y() + label.height() <= h.controls.y() + 2)  # above them
    assert label.width() >= min(label.fontMetrics().horizontalAdvance(title), h.width() - 4)
    h.resize(700, 300)
    qtbot.waitUntil(lambda: abs(label.y() - h.controls.y()) < 8)


def test_the_suggested_file_name_has_no_runs_of_dashes(heatmap, monkeypatch):
    from gui.widgets import dialogs

    asked = []
    monkeypatch.setattr(dialogs, "ask_export", lambda *a, **k: asked.append(k["suggested"]))
    heatmap.set_matrix(np.eye(2), title="attention weights · step 0")
    heatmap.export_dialog()
    assert asked == ["attention-weights-step-0.png"]


def test_drawing_a_heatmap_in_each_colour_map_loads_no_matplotlib(tmp_path):
    """The screen reads matplotlib's colours from a table: pyqtgraph's getFromMatplotlib imported pyplot,
    45 MB in the app's process."""
    from tests.fresh_imports import loaded_by

    code = ("import os\nos.environ['QT_QPA_PLATFORM'] = 'offscreen'\n"
            "import numpy as np\nfrom PySide6.QtWidgets import QApplication\napp = QApplication([])\n"
            "from gui.widgets.heatmap import HeatmapWidget\nfrom gui.widgets.heatmap_controls import "
            "COLORMAP_CHOICES\nw = HeatmapWidget(title='t')\nw.resize(300, 300)\nw.show()\n"
            "w.view  # its plot built now, as its first sight builds it a turn later\n"
            "w.set_matrix(np.eye(4) - 0.5, kind='signed')\napp.processEvents()\n"
            "for _, name in COLORMAP_CHOICES:\n    w.set_colormap(name)\n    app.processEvents()\n"
            "assert w._view is not None\n")
    assert loaded_by(code, ("matplotlib",), tmp_path) == []
