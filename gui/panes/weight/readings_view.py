"""The Weight pane's "Tokens" and "Curvature" tabs: the selected weight's coefficient read in tokens, and the
curvature of the probe loss along the run's step against the edge of stability (docs/readings.md).

Each tab shows what its view model (engine/views/readings.py) holds and asks nothing itself: the app's asker
sends what the view needs while the tab is on screen, the step on screen's reading first, then the readings over
training. During training the newest published weights are read as they come (the timeline following the
newest), each with its update from the newest saved step.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QMenu, QSplitter, QToolButton, QTreeWidget,
                               QTreeWidgetItem, QVBoxLayout, QWidget)

from engine.views.readings import CurvatureView, TokensView

from ...binding import bind, listen
from ...exports import ExportRequest
from ...theme import plot_colors, recolor_legend, style_plot
from ...widgets import dialogs
from ...widgets.first_sight import OnSight, PlotOnSight, when_built
from ...widgets.heatmap import HeatmapWidget

SHOWN = 10          # tokens drawn each way
POSITIONS = 40      # probe positions listed by imprint
LEGEND_ALPHA = 215  # the curvature legend's background: the theme's, a little see-through
TOWARD, AWAY = "#b2182b", "#2166ac"
# W_E's table, beside the bars and the rows: short, since its panel is a third of the tab (at 1280 × 720 a
# sentence naming rows and columns was cut after "the embeddin…"); its axes say which token is which
TABLE_TITLE = "W_E's G: after a, toward b"


def part_name(part: str) -> str:
    return {"G": "G (whole)", "ΔW": "ΔW, the update that reached the step"}.get(part, f"route class {part}")


def bars(reading, part: str, n: int = SHOWN) -> tuple[list[str], list[float]]:
    """(labels, values) drawn: the part's leading tokens toward, then away (the largest at both ends)."""
    rk = reading.ranks.get(part)
    if rk is None:
        return [], []
    items = list(rk.toward[:n]) + list(reversed(rk.away[:n]))
    return [reading.names[t] for t, _ in items], [v for _, v in items]


def positions(reading, part: str, n: int = POSITIONS) -> list[tuple[str, float]]:
    """A reader's probe positions with the largest imprints (by size) of the part: (context, imprint)."""
    values = reading.imprints.get(part)
    if values is None:
        return []
    order = np.argsort(-np.abs(values))[:n]
    return [(reading.contexts[i], float(values[i])) for i in order]


def unplotted(series) -> str:
    """The κ and κ_W of `series` that the log scale cannot draw (≤ 0: the probe loss bends down along the step,
    or is flat), in words: "" when every one is drawn."""
    def steps(values) -> str:
        at = [c.step for c, k in zip(series, values) if k is not None and k <= 0]
        named = ", ".join(str(s) for s in at[:6]) + (f" and {len(at) - 6} more" if len(at) > 6 else "")
        return f"at step{'s' * (len(at) > 1)} {named}" if at else ""

    parts = [f"{what} {where}" for what, where in (
        ("κ", steps([c.curvature for c in series])),
        (f"κ of {series[-1].weight}" if series else "", steps([c.weight_curvature for c in series]))) if where]
    return ("; not drawn on the log scale, being ≤ 0 (the probe loss bends down along the step there): "
            + "; ".join(parts)) if parts else ""


class _Plot(pg.PlotWidget):
    """A themed pyqtgraph plot, restyled when the palette changes."""

    def __init__(self):
        super().__init__(enableMenu=False)  # at creation: built and then disabled, its menu cost 10 ms a plot
        self._restyle()

    def _restyle(self) -> None:
        if self.getPlotItem() is None:  # a palette change while pyqtgraph builds the view
            return
        c = plot_colors()
        self.setBackground(c.background)
        style_plot(self.getPlotItem(), c)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "plotItem"):
            self._restyle()


class _DecadeAxis(pg.AxisItem):
    """A log axis labelled at the decades it shows, and at 2 and 5 times them where it shows one; within one
    decade, at every minor tick (pyqtgraph's own labels). The other minor ticks keep their marks. pyqtgraph labels
    all nine per decade on any span under three: on GPT-2's curvature (λ_c from 9·10² to 7·10⁴) at 1280 × 720
    "10⁴" and "9·10³" to "6·10³" were drawn over each other."""

    def logTickStrings(self, values, scale, spacing):
        strings = super().logTickStrings(values, scale, spacing)
        lo, hi = sorted(self.range)
        decades = math.floor(hi) - math.ceil(lo) + 1  # the powers of ten in view

        def kept(v: float) -> bool:
            if decades < 1 or abs(v - round(v)) < 1e-9:
                return True
            return decades < 2 and round(10 ** (v - math.floor(v))) in (2, 5)

        return [text if kept(v) else "" for v, text in zip(values, strings)]


class _StepAxis(pg.AxisItem):
    """An axis of optimizer steps, labelled at whole steps alone: a run saved at steps 0, 1 and 2 had its
    intervals at "1.0", "1.2", … "2.0". No SI prefix: "step (x0.001)" over an empty chart said nothing."""

    def __init__(self, orientation: str):
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values, scale, spacing):
        return [f"{round(v * scale):d}" if abs(v * scale - round(v * scale)) < 1e-9 else "" for v in values]


class _Bars(_Plot):
    """The bars of the leading tokens: as many each way as their labels have room for, up to SHOWN (at 1280 ×
    720 twenty labels overlapped, a BPE run's "␣f" over "␣c"); `resized` is called when that number changes."""

    def __init__(self, resized):
        super().__init__()
        self._resized = resized
        self._fits = self.fits()

    def fits(self) -> int:
        """Tokens drawn each way: a label's line and a quarter of a line apart, in the widget's height less the
        title's, the ticks' and the axis title's lines, at least 3."""
        line = self.fontMetrics().height()
        return max(3, min(SHOWN, int((self.height() - 4 * line) / (1.25 * line)) // 2))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if "_fits" in self.__dict__ and self.fits() != self._fits:  # (not while pyqtgraph builds the widget)
            self._fits = self.fits()
            self._resized()


class TokensTab(QWidget):
    """G, ΔW or a route class as the tokens it pushes toward and away (a writer, the unembedding) or as the
    probe's positions it is made of (a reader); W_E's "after a, toward b" table; G's tokens over training."""

    def __init__(self, session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.view = TokensView()
        self.view.seen = False
        self._parts: list[str] = ["G"]  # the parts the box offers (its items' data)
        self._build()
        bind(self.part_box, self.view, "part")
        self.view.changed.connect(self._on_view_changed)
        listen(self, session.workspace.sig_selection_changed, lambda _selection, _changed: self._say())
        session.asker.watch(self.view, self)

    def _build(self) -> None:
        self.part_box = QComboBox()
        self.part_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.part_box.addItem(part_name("G"), "G")
        self.part_box.setToolTip("Which part of the coefficient the bars read: G, the update ΔW that reached the "
                                 "step, or one route class of G")
        self.message = QLabel("Choose a weight: its coefficient is read in tokens on the run's probe batch.")
        self.message.setWordWrap(True)
        self.export_button = QToolButton()
        self.export_button.setText("Export…")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        for label, suffix in (("Tokens at every saved step (CSV)…", "csv"), ("Figure (PNG, SVG, PDF)…", "png"),
                              ("Push or imprints at this step (NPY)…", "npy")):
            action = QAction(label, menu)
            action.triggered.connect(lambda _c=False, s=suffix: self.ask_export(s))
            menu.addAction(action)
        self.export_button.setMenu(menu)
        row = QHBoxLayout()
        for w in (QLabel("Read:"), self.part_box, self.message, self.export_button):
            row.addWidget(w)
        row.setStretch(2, 1)
        self.bars = PlotOnSight(lambda: _Bars(self._draw_reading), self._setup_bars)  # built on first sight
        self.table = HeatmapWidget(title=TABLE_TITLE)
        self.rows = QTreeWidget()
        self.rows.setColumnCount(3)
        self.rows.setRootIsDecorated(False)
        self.detail = QSplitter(Qt.Orientation.Horizontal)  # side by side: the tab stays as short as the others
        self.detail.addWidget(self.table)
        self.detail.addWidget(self.rows)
        self.rows.setHeaderLabels(["", "", ""])
        self.table.hide()  # until a reading has one (W_E of a small vocabulary)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.bars)
        top.addWidget(self.detail)
        top.setSizes([450, 550])
        # a dozen tokens by tens of steps: the cells fill the room rather than stay square
        self.timeline = HeatmapWidget(title="G's leading tokens over training", aspect_locked=False)
        self.timeline.hide()  # until the readings over training come
        body = QSplitter(Qt.Orientation.Vertical)
        body.addWidget(top)
        body.addWidget(self.timeline)
        body.setSizes([600, 300])
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(row)
        col.addWidget(body, 1)

    def _setup_bars(self, plot: _Bars) -> None:
        plot.getPlotItem().setLabel("bottom", "push (change of the mean logits)")
        self._draw_reading()

    # ---- what the view holds -----------------------------------------------------------------

    def _on_view_changed(self, name: str) -> None:
        if name in ("reading", "part"):
            self._draw_reading()
        if name in ("timeline", "reading"):
            self._draw_timeline()
        if name in ("failures", "progress", "reading", "seen"):
            self._say()

    def _say(self) -> None:
        v, ws = self.view, self.session.workspace
        asked = v.on_screen(ws)
        failed = [v.failures[x] for x in asked if x in v.failures]
        if failed:
            self.message.setText(failed[0])
            return
        r = v.reading
        if asked and (r is None or v.asked_for not in asked):
            source = asked[0].source
            self.message.setText(f"reading {ws.selection.weight} at step {source.step} in tokens…"
                                 + (f" (shown: {r.weight} at step {r.step})" if r is not None else ""))
            return
        if r is None:
            return
        split = "" if len(r.parts) > 2 or r.prev_step is None and len(r.parts) > 1 else " (route classes to come)"
        update = f", ΔW from step {r.prev_step}" if r.prev_step is not None else ", no update before this step"
        more = f"; over training: {v.progress}" if v.progress is not None else ""
        self.message.setText(f"{r.weight} at step {r.step}{update}{split}{more}")
        self.message.setToolTip(r.how)

    def _draw_reading(self) -> None:
        r = self.view.reading
        if r is None:
            return
        head = [p for p in r.parts if p in ("G", "ΔW")]
        parts = head + sorted((p for p in r.parts if p not in head), key=lambda p: -r.norms[p])  # largest first
        if parts != self._parts:
            self._parts = parts
            self.part_box.blockSignals(True)
            self.part_box.clear()
            for p in parts:
                self.part_box.addItem(part_name(p), p)
            self.part_box.setCurrentIndex(parts.index(self.view.part) if self.view.part in parts else 0)
            self.part_box.blockSignals(False)
        if self.view.part not in r.parts:  # a class of another weight: back to the whole
            self.view.part = "G"
            return
        part = self.view.part
        if self.bars.built:  # else drawn once built
            self._draw_bars(r, part)
        self._draw_detail(r, part)

    def _draw_bars(self, r, part: str) -> None:
        labels, values = bars(r, part, self.bars.fits())
        plot = self.bars.getPlotItem()
        plot.clear()
        if values:
            y = np.arange(len(values))
            plot.addItem(pg.BarGraphItem(x0=0, y=y, width=values, height=0.8,
                                         brushes=[TOWARD if v > 0 else AWAY for v in values], pens=[None] * len(y)))
            plot.getAxis("left").setTicks([list(zip(y, labels))])
            plot.invertY(True)
        unit = "imprint (share of G)" if r.role == "reader" else "push (change of the mean logits)"
        plot.setLabel("bottom", unit)
        plot.setTitle(f"{part_name(part)} · ‖·‖ {r.norms.get(part, float('nan')):.3g}", color=plot_colors().foreground)

    def _draw_detail(self, r, part: str) -> None:
        self.rows.clear()
        self.detail.setVisible(r.role == "reader" or bool(r.rows) or r.table is not None)  # not for a bias
        self.table.setVisible(r.table is not None)
        if r.table is not None:
            names = list(r.table_names) or None
            self.table.set_matrix(r.table, names, names, kind="signed", title=TABLE_TITLE,
                                  row_title="after token a", col_title="toward token b")
        if r.role == "reader":
            self.rows.setHeaderLabels(["position (context [token] → target)", "imprint", ""])
            for context, value in positions(r, part):
                QTreeWidgetItem(self.rows, [context, f"{value:+.4f}", ""])
        else:
            self.rows.setHeaderLabels(["row of G", "‖G[row]‖", "pushes toward … / away from …"])
            for label, size, rk in r.rows:
                toward = " ".join(r.names[t] for t, _ in rk.toward[:6])
                away = " ".join(r.names[t] for t, _ in rk.away[:4])
                QTreeWidgetItem(self.rows, [label, f"{size:.3g}", f"{toward}  /  {away}"])
        for c in range(3):
            self.rows.resizeColumnToContents(c)

    def _draw_timeline(self) -> None:
        from engine.analysis.tokens_export import timeline_table

        readings, asked = self.view.timeline, self.view.timeline_for
        if not readings or asked is None or asked.weight != self.session.workspace.selection.weight:
            self.timeline.hide()  # another weight's, or none yet
            return
        ids, table = timeline_table(readings)
        self.timeline.show()
        names = [next(r.names[t] for r in readings if t in r.names) for t in ids]
        self.timeline.set_matrix(table, names, [str(r.step) for r in readings], kind="signed",
                                 title="G's leading tokens over training "
                                       f"({'imprints' if readings[-1].role == 'reader' else 'push'})",
                                 row_title="token", col_title="saved step")

    # ---- exports -----------------------------------------------------------------------------

    def ask_export(self, suffix: str) -> None:
        run, weight = self.session.workspace.open_run, self.session.workspace.selection.weight
        if run is None or run.path is None or weight is None:
            self.session.post_message("Nothing to export yet: open a run and choose a weight.", "info")
            return
        filters = {"csv": "CSV table (*.csv)", "png": "PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf)",
                   "npy": "NumPy array (*.npy)"}[suffix]
        path = dialogs.ask_path(self, "save", "Export the reading in tokens", filters,
                                suggested=f"{weight}-tokens.{suffix}", start=run.path, remember=dialogs.EXPORTS)
        if path is not None:
            self.export(path)

    def export(self, path) -> None:
        """Write the reading of the weight and step on screen (the file's suffix sets what, tokens_export.py)."""
        from engine.analysis.tokens_export import export_run_tokens

        ws = self.session.workspace
        step = self.view.reading.step if self.view.reading is not None and Path(path).suffix != ".csv" else None
        write = functools.partial(export_run_tokens, run_dir=str(ws.open_run.path), weight=ws.selection.weight,
                                  step=step if step in ws.open_run.saved_steps() else None)
        self.session.request_export(ExportRequest(Path(path), write))


class CurvatureTab(OnSight):
    """λ_c and κ (and the weight's own κ_W) against 2/η over training, above the probe loss; the step on
    screen's numbers in words. Its plots are built on first sight (gui/widgets/first_sight.py)."""

    def __init__(self, session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.view = CurvatureView()
        self.view.seen = False
        self._build()
        self.view.changed.connect(self._on_view_changed)
        listen(self, session.workspace.sig_selection_changed, lambda _selection, _changed: self._say())
        session.asker.watch(self.view, self)

    def _build(self) -> None:
        self.message = QLabel("The curvature of the probe loss along the run's step, between saved steps.")
        self.message.setWordWrap(True)
        self.export_button = QToolButton()
        self.export_button.setText("Export…")
        self.export_button.clicked.connect(self.ask_export)
        row = QHBoxLayout()
        row.addWidget(self.message, 1)
        row.addWidget(self.export_button)
        col = self.layout()
        col.insertLayout(0, row)
        col.setStretchFactor(self.room, 1)

    def build_costly(self) -> None:
        self.graphics = pg.GraphicsLayoutWidget()
        self.top = self.graphics.addPlot(row=0, col=0, axisItems={"left": _DecadeAxis("left"),
                                                                  "bottom": _StepAxis("bottom")}, enableMenu=False)
        self.top.setLogMode(y=True)
        self.top.setLabel("left", "curvature")
        self.bottom = self.graphics.addPlot(row=1, col=0, axisItems={"bottom": _StepAxis("bottom")}, enableMenu=False)
        self.bottom.setLabel("left", "probe loss")
        self.bottom.setLabel("bottom", "step")
        self.bottom.setXLink(self.top)
        self.graphics.ci.layout.setRowStretchFactor(0, 3)
        self.graphics.ci.layout.setRowStretchFactor(1, 2)
        # clear of the first saved step (the left edge), whose points it hid at pyqtgraph's offset of 30 px
        self.legend = self.top.addLegend(labelTextSize="8pt", offset=(70, 30))
        self.curves = {
            "threshold": self.top.plot([], [], name="2/η (the schedule's rate)"),
            "critical": self.top.plot([], [], name="critical sharpness λ_c", symbol="o", symbolSize=6),
            "bound": self.top.plot([], [], name="λ_c, a bound", pen=None, symbol="t", symbolSize=7),
            "kappa": self.top.plot([], [], name="κ along the step, whole model", symbol="s", symbolSize=4),
            "weight": self.top.plot([], [], name="κ of the weight", symbol="t1", symbolSize=5),
            "loss": self.bottom.plot([], [], name="probe loss", symbol="o", symbolSize=4),
        }
        self.cursors = [pg.InfiniteLine(angle=90, movable=False) for _ in (self.top, self.bottom)]
        for plot, cursor in zip((self.top, self.bottom), self.cursors):
            plot.addItem(cursor, ignoreBounds=True)
        self.room.hold(self.graphics)
        self._restyle()

    def _restyle(self) -> None:
        c = plot_colors()
        self.graphics.setBackground(c.background)
        for plot in (self.top, self.bottom):
            style_plot(plot, c)
        recolor_legend(self.legend, c.foreground)
        back = QColor(c.background)
        back.setAlpha(LEGEND_ALPHA)
        self.legend.setBrush(pg.mkBrush(back))  # it sits over the first points
        colors = {"critical": TOWARD, "bound": TOWARD, "kappa": AWAY, "weight": "#4d9221", "loss": c.train}
        widths = {"critical": 1.5, "kappa": 1, "weight": 1, "loss": 1.2}  # "bound" is drawn by its symbols alone
        self.curves["threshold"].setPen(pg.mkPen(c.foreground, width=1.2, style=Qt.PenStyle.DashLine))
        for key, width in widths.items():
            self.curves[key].setPen(pg.mkPen(colors[key], width=width))
        for key, color in colors.items():
            self.curves[key].setSymbolBrush(pg.mkBrush(color))
            self.curves[key].setSymbolPen(pg.mkPen(color))
        for cursor in self.cursors:
            cursor.setPen(pg.mkPen(c.accent, width=1, style=Qt.PenStyle.DashLine))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.built:  # else built in the theme of then
            self._restyle()

    def _on_view_changed(self, name: str) -> None:
        if name == "series" or name == "result" and self.view.series is None:
            self._draw_series()
        if name in ("result", "failures", "progress", "series", "seen"):
            self._say()

    def _say(self) -> None:
        from engine.analysis.curvature import threshold_words

        v, c, ws = self.view, self.view.result, self.session.workspace
        asked = v.on_screen(ws)
        failed = v.failures.get(asked)
        if asked is None and ws.open_run is not None and ws.open_run.saved_steps():
            steps = ws.open_run.saved_steps()
            self.message.setText(f"No update reaches step {steps[0]}, the run's first saved step: the curvature is "
                                 "measured along the update between two saved steps"
                                 + ("; train or fine-tune the run to save more" if len(steps) < 2 else ""))
            c = None
        elif failed:
            self.message.setText(failed)
        elif asked is not None and v.asked_for != asked:
            self.message.setText(f"measuring the curvature along the update that reached step {asked.source.step}…")
        elif c is not None:
            lam = {"at most": "≤ ", "at least": "≥ "}.get(c.limit, "= ") + f"{c.critical_sharpness:.3g}"
            verdict = ("a step of the run's size along it raises the probe loss" if c.critical_step < 1 else
                       "a step of the run's size along it still descends")
            own = f", κ of {c.weight} {c.weight_curvature:.3g}" if c.weight_curvature is not None else ""
            kappa = (c.unmeasured if c.unmeasured else f"κ = {c.curvature:.3g}{own}"
                     + (f" ({c.approximate})" if c.approximate else ""))
            self.message.setText(f"steps {c.prev_step} → {c.step} ({c.steps} optimizer step{'s' * (c.steps > 1)}): "
                                 f"{kappa}; λ_c {lam} against 2/η = {c.threshold:.3g}: "
                                 f"{verdict}" + (f"; over training: {v.progress}" if v.progress else "")
                                 + unplotted(v.series or []))
            run = self.session.workspace.open_run
            if run is not None:
                self.message.setToolTip(threshold_words(run.config.train))
        self._place_cursors(c.step if c is not None else None)

    @when_built
    def _place_cursors(self, step: int | None) -> None:
        for cursor in self.cursors:
            cursor.setVisible(step is not None)
            if step is not None:
                cursor.setPos(step)

    @when_built
    def _draw_series(self) -> None:
        # until the intervals over training come (minutes on a large model), the step on screen's alone
        series = self.view.series or ([self.view.result] if self.view.result is not None else [])
        steps = np.array([c.step for c in series], dtype=float)
        lam = np.array([c.critical_sharpness for c in series])
        found = np.array([c.limit == "" for c in series], dtype=bool)

        def positive(a):
            a = np.asarray(a, dtype=float)
            return np.where(a > 0, a, np.nan)

        def put(key, x, y, **kw):  # a curve with no point to draw gets none (pyqtgraph warns on all-NaN)
            y = np.asarray(y, dtype=float)
            self.curves[key].setData(*((x, y) if np.isfinite(y).any() else ([], [])), **kw)

        threshold = positive([c.threshold for c in series])  # one point alone gets a mark: a line needs two
        put("threshold", steps, threshold, symbol="_" if np.isfinite(threshold).sum() == 1 else None, symbolSize=14)
        # a line only between neighbouring steps where it was found: a bound breaks it
        put("critical", steps, positive(np.where(found, lam, np.nan)), connect="finite")
        put("bound", steps[~found], positive(lam[~found]))
        put("kappa", steps, positive([c.curvature for c in series]), connect="finite")
        own = [c.weight_curvature for c in series]
        put("weight", steps, positive([np.nan if k is None else k for k in own]), connect="finite")
        put("loss", steps, [c.loss_after for c in series])

    def ask_export(self) -> None:
        run = self.session.workspace.open_run
        if run is None or run.path is None:
            self.session.post_message("Nothing to export yet: open a run.", "info")
            return
        path = dialogs.ask_path(self, "save", "Export the curvature along the step",
                                "CSV table (*.csv);;PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf);;"
                                "NumPy array (*.npy)", suggested="curvature.csv", start=run.path,
                                remember=dialogs.EXPORTS)
        if path is not None:
            self.export(path)

    def export(self, path) -> None:
        from engine.analysis.curvature_export import export_run_curvature

        ws = self.session.workspace
        write = functools.partial(export_run_curvature, run_dir=str(ws.open_run.path), weight=ws.selection.weight)
        self.session.request_export(ExportRequest(Path(path), write))


__all__ = ["TokensTab", "CurvatureTab", "bars", "positions", "part_name", "unplotted"]
