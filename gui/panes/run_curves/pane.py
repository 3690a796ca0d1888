"""Curves of several runs overlaid: train and validation loss, learning rate and tokens/s of the runs ticked
in the run browser, against step, tokens seen or wall time, with TensorBoard's smoothing of the noisy
curves (the raw ones stay faint behind) and a legend beside the plots naming each run in full, in the colour
its curves have on the screen and in the exported figure (engine/figures/palette.py). File → Export… writes the
same figure through matplotlib, its numbers as CSV, or pgfplots/TikZ (engine/figures/run_curves.py).

The legend is a column of labels, not pyqtgraph's legend inside a plot: in a short plot that one covered most
of the curves, and a long run name was cut to its last characters ("-20261124-080249"), so runs that differ
only in their date could not be told apart (seen at 1280×720).

The pane draws its view model (engine/views/run_curves.py: the ticked runs, the axis, the smoothing and the
curves held). The numbers come from the runs' metrics.jsonl files, read in the app's analysis process, asked by
the window's asker (gui/asker.py; engine/analysis/questions.py `RunCurvesOf`), which keeps what it read and
reads a log again only when it changed; it sends back only the runs whose logs changed since what the view
holds. While the pane is seen, a slow timer reads again, so a run training here or in a terminal draws on. The
GUI thread reads no file: it smooths the noisy series and hands arrays to pyqtgraph.

A dragged smoothing slider changes faster than the curves repaint: its changes are coalesced into at most
one redraw per frame, which sets the data of the smoothed lines the pane already holds; only the faint raw
curves fit the view, so a new smoothing refits no range and reticks no axis. The lines are one pixel wide,
long ones drawn as a low and a high point per pixel, and the axes are cached as pixmaps, since painting is
most of a redraw's cost: Qt's raster engine strokes a wider pen about ten times slower, and an unchanged
axis need not replay its text (benchmarks/run_overlay.py measures the event loop while dragging).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QSize, Qt, QTimer
from PySide6.QtWidgets import (QComboBox, QFrame, QGraphicsItem, QGridLayout, QHBoxLayout, QLabel, QScrollArea,
                               QSizePolicy, QSlider, QVBoxLayout, QWidget)

from engine.figures.run_curves import AXIS_LABELS, METRIC_LABELS, SMOOTHED
from engine.figures.run_curves_export import export_overlay
from engine.training.determinism import noise_sentence
from engine.views.run_curves import RunCurvesView

from ...binding import bind
from ...session import Session
from ...theme import color_of, plot_colors, style_plot
from ...widgets.first_sight import GRAPHICS_VIEW, OnSight
from ...widgets.seen import SeenWidget

EXPORT_FILTERS = ("PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf);;CSV table, every run (*.csv);;"
                  "pgfplots/TikZ for LaTeX (*.tex)")
RELOAD_MS = 2000
FRAME_MS = 16  # at most one redraw per frame of a 60 Hz screen
LEGEND_WIDTH = (110, 200)  # the legend's width: its longest name, within these; a longer name wraps
TITLE_SIZE = "10pt"  # pyqtgraph's 11pt made "validation bits per character" wider than a plot in a 730 px pane


class RunLegend(QScrollArea):
    """The runs shown, one row each: a swatch of the run's colour and its full name (wrapped, never cut;
    the folder in its tooltip). Scrolls when more runs are ticked than its height holds."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("curves_legend")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Expanding)
        body = QWidget(self)
        self.rows = QGridLayout(body)
        self.rows.setContentsMargins(2, 0, 2, 0)
        self.rows.setHorizontalSpacing(6)
        self.rows.setColumnStretch(1, 1)
        self.setWidget(body)
        self._entries: list[tuple[str, str]] = []
        self.labels: list[QLabel] = []
        self.hide()

    def set_entries(self, entries: list[tuple[str, str, Path]]) -> None:
        """(name, colour #rrggbb, folder) of each run shown, in order."""
        while self.rows.count():
            item = self.rows.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        for row in range(self.rows.rowCount()):
            self.rows.setRowStretch(row, 0)
        self._entries = [(name, colour) for name, colour, _ in entries]
        self.labels = []
        widest = 0
        for i, (name, colour, path) in enumerate(entries):
            swatch = QLabel(self.widget())
            swatch.setFixedSize(14, 14)
            swatch.setStyleSheet(f"background-color: {colour}; border-radius: 2px;")
            label = QLabel(name, self.widget())
            label.setObjectName("curves_legend_name")
            label.setWordWrap(True)
            label.setToolTip(str(path))
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.rows.addWidget(swatch, i, 0, Qt.AlignmentFlag.AlignTop)
            self.rows.addWidget(label, i, 1, Qt.AlignmentFlag.AlignTop)
            self.labels.append(label)
            widest = max(widest, label.fontMetrics().horizontalAdvance(name))
        self.rows.setRowStretch(len(entries), 1)  # the rows at the top
        low, high = LEGEND_WIDTH
        self.setFixedWidth(min(high, max(low, widest + 14 + 6 + 4 + self.verticalScrollBar().sizeHint().width())))
        self.setVisible(bool(entries))

    def entries(self) -> list[tuple[str, str]]:
        """(name, colour) of each row, as drawn."""
        return list(self._entries)


class CurvesGrid(OnSight):
    """The four plots, one view each, so a change of smoothing repaints the smoothed plots only; built on first
    sight (gui/widgets/first_sight.py), in the room the grid of four views asks for."""

    def __init__(self, parent=None):
        view, spacing = GRAPHICS_VIEW, 2
        least = 2 * 68 + spacing  # a pyqtgraph view's least is 68 px each way
        super().__init__(parent, least=(least, least),
                         hint=QSize(2 * view.width() + spacing, 2 * view.height() + spacing))

    def build_costly(self) -> None:
        grid = QGridLayout()
        grid.setSpacing(2)
        self.plots = {}
        for i, (metric, label) in enumerate(METRIC_LABELS.items()):
            view = pg.PlotWidget()
            view.setObjectName(f"curves_{metric}")
            grid.addWidget(view, i // 2, i % 2)
            plot = view.getPlotItem()
            plot.setDownsampling(auto=True, mode="peak")  # thousands of steps on a few hundred pixels
            plot.setClipToView(True)
            for side in ("left", "bottom"):
                plot.getAxis(side).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            self.plots[metric] = plot
        for plot in list(self.plots.values())[1:]:
            plot.setXLink(self.plots["train_loss"])
        self.room.layout().addLayout(grid)
        self._restyle()

    def _restyle(self) -> None:
        """The theme's plot colours (pyqtgraph draws black plots otherwise, also in the light theme)."""
        c = plot_colors()
        for metric, plot in self.plots.items():
            plot.getViewWidget().setBackground(c.background)
            plot.setTitle(METRIC_LABELS[metric], color=c.foreground, size=TITLE_SIZE)
            style_plot(plot, c)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.built:  # else built in the theme of then
            self._restyle()


class RunCurvesPane(SeenWidget):
    title = "Run curves"
    object_name = "pane_run_curves"

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.view = RunCurvesView()
        self.view.seen = False  # until the pane is on screen
        self._items: dict[Path, dict[str, tuple]] = {}  # per run, per metric: (faint raw curve | None, line)
        self.redraws = 0  # redraws of the curves so far (tests count them)
        self._build()
        self._connect()

    def _build(self) -> None:
        self.axis_box = QComboBox(self)
        self.axis_box.setObjectName("curves_axis")
        for key, label in AXIS_LABELS.items():
            self.axis_box.addItem(label, key)
        self.smooth_slider = QSlider(Qt.Orientation.Horizontal, self)
        self.smooth_slider.setObjectName("curves_smoothing")
        self.smooth_slider.setRange(0, 99)
        self.smooth_slider.setToolTip("Exponential moving average of the train loss, its bits per character "
                                      "and tokens/s, as TensorBoard smooths (0: raw)")
        self.smooth_label = QLabel(self)
        self.hint = QLabel("Tick runs in the Runs pane to overlay their curves.", self)
        self.hint.setObjectName("curves_hint")
        self.grid = CurvesGrid()
        self.grid.sig_built.connect(self._draw)  # what was ticked before the plots were first seen
        self.legend = RunLegend(self)
        top = QHBoxLayout()
        top.addWidget(QLabel("x axis", self))
        top.addWidget(self.axis_box)
        top.addSpacing(12)
        top.addWidget(QLabel("smoothing", self))
        top.addWidget(self.smooth_slider, 1)
        top.addWidget(self.smooth_label)
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        col.addLayout(top)
        col.addWidget(self.hint)
        self.noise = QLabel(self)  # engine.training.determinism: ticked runs that did not train to the bit
        self.noise.setObjectName("curves_noise")
        self.noise.setWordWrap(True)
        self.noise.hide()
        col.addWidget(self.noise)
        body = QHBoxLayout()
        body.addWidget(self.grid, 1)
        body.addWidget(self.legend)
        col.addLayout(body, 1)
        self._timer = QTimer(self, interval=RELOAD_MS)
        # a dragged slider moves faster than a redraw: the latest value is drawn at the next frame
        self._smooth_timer = QTimer(self, singleShot=True, interval=FRAME_MS)
        self._show_smoothing()

    @property
    def plots(self) -> dict:
        """metric -> its pyqtgraph PlotItem (asked for, they are built now)."""
        return self.grid.plots

    def _connect(self) -> None:
        self.session.sig_runs_compared.connect(self.view.tick)
        bind(self.axis_box, self.view, "axis")
        bind(self.smooth_slider, self.view, "smoothing", scale=100)
        self._smooth_timer.timeout.connect(lambda: self._draw(only_smoothing=True))
        self._timer.timeout.connect(self.view.read_again)
        self.view.changed.connect(self._on_view_changed)
        self.session.asker.watch(self.view, self)

    def export_job(self):
        """File → Export…: the overlaid figure (matplotlib), its data (CSV) or pgfplots/TikZ, of every shown
        run."""
        curves = [self.view.curves[p] for p in self.view.shown()]
        if not curves:
            return None
        axis, smoothing = self.view.axis, self.view.smoothing
        return EXPORT_FILTERS, "runs.png", functools.partial(export_overlay, curves=curves, axis=axis,
                                                             smoothing=smoothing)

    # ---- drawing ---------------------------------------------------------------------------

    def _draw(self, only_smoothing: bool = False, paths: list[Path] | None = None) -> None:
        """Hand each run's series to its curves (made once per ticked run: making them cost 10x setting
        their data). A change of smoothing sets only the smoothed lines: the faint raw curves behind them
        keep the plots' ranges, so the axes need not be redrawn. pyqtgraph fits the ranges once, at paint."""
        self.redraws += 1
        curves = self.curves
        shown = [Path(p) for p in self.view.shown()]
        self.hint.setVisible(not shown)
        note = noise_sentence([curves[p].noise for p in shown])
        self.noise.setText(note or "")
        self.noise.setVisible(note is not None)
        if not self.grid.built:  # the curves are drawn whole once built (sig_built); the runs named now
            self._name_runs(shown)
            return
        if list(self._items) != shown:
            self._sync_items(shown)
            only_smoothing, paths = False, None
        metrics = SMOOTHED if only_smoothing else tuple(METRIC_LABELS)
        for path in shown if paths is None else [p for p in paths if p in self._items]:
            c = curves[path]
            for metric in metrics:
                faint, line = self._items[path][metric]
                if faint is not None:
                    if not only_smoothing:
                        faint.setData(*c.series(metric, self.view.axis), skipFiniteCheck=True)
                    faint.setOpacity(1.0 if self.view.smoothing > 0 else 0.0)  # unpainted, yet still fits the view
                line.setData(*c.series(metric, self.view.axis, self.view.smoothing), skipFiniteCheck=True)
        if not only_smoothing:
            for plot in self.plots.values():
                plot.setLabel("bottom", AXIS_LABELS[self.view.axis])

    def _sync_items(self, shown: list[Path]) -> None:
        """Curves for exactly the shown runs, coloured by their order as the exported figure colours them, and
        the legend naming them."""
        for path in set(self._items) - set(shown):
            for metric, pair in self._items.pop(path).items():
                for item in pair:
                    if item is not None:
                        self.plots[metric].removeItem(item)
        for i, path in enumerate(shown):
            colour = pg.mkColor(color_of(i))
            faint_colour = pg.mkColor(colour)
            faint_colour.setAlpha(60)
            items = self._items.setdefault(path, {})
            for metric, plot in self.plots.items():
                if metric not in items:
                    items[metric] = self._new_curves(plot, metric)
                faint, line = items[metric]
                if faint is not None:
                    faint.setPen(pg.mkPen(faint_colour, width=1))
                line.setPen(pg.mkPen(colour, width=1))
                if metric.startswith("val_"):
                    line.setSymbolBrush(colour)
        self._name_runs(shown)
        self._items = {p: self._items[p] for p in shown}

    def _name_runs(self, shown: list[Path]) -> None:
        self.legend.set_entries([(self.view.curves[str(p)].name, color_of(i), p) for i, p in enumerate(shown)])

    @staticmethod
    def _new_curves(plot, metric: str) -> tuple:
        """(faint raw curve | None, line) of one run's metric. A smoothed line never fits the view: an EMA is a
        weighted mean of the raw values, so it lies between its raw curve's extremes and the raw curve alone
        fits the view; a new smoothing then leaves the ranges (and axes) as they are. A long curve is drawn
        as the lowest and highest point of each pixel's worth of steps (pyqtgraph's peak downsampling, one
        bin a pixel rather than its default five): the same pixels, far fewer segments to stroke."""
        smoothed = metric in SMOOTHED
        faint = plot.plot([], [], autoDownsampleFactor=1.0) if smoothed else None
        line = pg.PlotDataItem([], [], autoDownsampleFactor=1.0,
                               **(dict(symbol="o", symbolSize=5) if metric.startswith("val_") else {}))
        plot.addItem(line, ignoreBounds=smoothed)
        return faint, line

    @property
    def curves(self) -> dict:
        """The curves held of the ticked runs (folder -> engine.figures.run_curves.RunCurves)."""
        return {Path(p): c for p, c in self.view.curves.items()}

    def line(self, path: Path, metric: str):
        """The line drawn for one run's metric (its faint raw curve, when smoothed, is behind it); asked for, the
        plots are built now."""
        self.grid.ensure_built()
        return self._items[Path(path)][metric][1]

    def legend_names(self) -> list[str]:
        return [name for name, _ in self.legend.entries()]

    # ---- handlers --------------------------------------------------------------------------

    def _on_view_changed(self, name: str) -> None:
        v = self.view
        if name == "paths":
            self._draw()  # an unticked run goes at once; a ticked one is drawn when its curves come
            self._update_timer()
        elif name == "problems":
            for path in v.fresh:
                if path in v.problems:
                    self.session.post_message(f"Cannot draw {Path(path).name}: {v.problems[path]}", "warning")
        elif name == "curves":
            self._draw(paths=[Path(p) for p in v.fresh])
        elif name == "failures" and v.failures:
            self.session.post_message(f"Cannot read the runs' curves: {next(iter(v.failures.values()))}",
                                      "warning")
        elif name == "axis":
            self._draw()
        elif name == "smoothing":
            self._show_smoothing()
            if not self._smooth_timer.isActive():  # started, not restarted: a drag draws every frame, not at its end
                self._smooth_timer.start()

    def _show_smoothing(self) -> None:
        self.smooth_label.setText(f"{self.view.smoothing:.2f}")

    def _update_timer(self) -> None:
        if self.seen() and self.view.paths:
            self._timer.start()
        else:
            self._timer.stop()

    def seen_changed(self, seen: bool) -> None:
        self.view.seen = seen
        if seen:
            self.view.read_again()
        self._update_timer()

