"""The weight pane's views over training (issue 7): the norms of G and of its route classes or terms as
lines or as stacked shares, the optimizer's geometry (cos(ΔW, G) and ‖ΔW‖/‖G‖), and the list of parts.

They are handed plain numbers (engine.coefficients.Summary per step, the store's geometry) and only set
data; a cursor marks the timeline's step. A part's share at a step is ‖part‖ / Σ ‖parts‖: the parts are
not orthogonal, so norms do not add up to ‖G‖, but shares say which routes carry the weight's coefficient
and when that changes. Lines are drawn in one colour per part, the same in the chart and the list.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QGraphicsItem, QHeaderView, QTreeWidget, QTreeWidgetItem

from ...theme import color_of, plot_colors, recolor_legend, style_plot
from ...widgets.first_sight import OnSight, when_built

TOTAL = "G"
CACHED = QGraphicsItem.CacheMode.DeviceCoordinateCache


def cache_axes(plot: pg.PlotItem) -> None:
    """Axes drawn from a pixmap, re-rendered only when their range changes: a cursor moving over the
    plot repaints what it crosses, and axes repainted per frame were most of a scrub's cost."""
    for name in ("left", "bottom"):
        plot.getAxis(name).setCacheMode(CACHED)


def cached(item: pg.PlotDataItem) -> pg.PlotDataItem:
    """A curve drawn from a pixmap until its data or the view changes (the step cursor crosses it)."""
    item.curve.setCacheMode(CACHED)
    return item


def short_name(part: str, weight: str) -> str:
    """A term's ID without its weight's name ("h0 via H_1@X_2#0"); a class's name as it is."""
    if weight and part.startswith(weight):
        return part[len(weight):].lstrip(". ") or part
    return part


def series(steps: list[int], summaries: dict, split: str) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(steps computed, ‖G‖, part -> norms) over the steps whose summary is known, in step order."""
    known = [s for s in steps if s in summaries]
    attr = "class_norms" if split == "classes" else "term_norms"
    names = list(dict.fromkeys(k for s in known for k in getattr(summaries[s], attr)))
    parts = {k: np.array([getattr(summaries[s], attr).get(k, 0.0) for s in known]) for k in names}
    return np.array(known, float), np.array([summaries[s].norm for s in known]), parts


def shares(parts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each part's ‖part‖ / Σ‖parts‖ per step (0 where every part is 0)."""
    if not parts:
        return {}
    total = np.sum(list(parts.values()), axis=0)
    safe = np.where(total > 0, total, 1.0)
    return {k: v / safe for k, v in parts.items()}


def empty_range(plot: pg.PlotItem, y: bool = True) -> None:
    """An empty plot's range, 0 … 1 (on a log axis 1 … 10), as a fresh plot has: auto-range with no data keeps
    the range it had, the previous run's steps and values."""
    plot.setXRange(0, 1, padding=0)
    if y:
        plot.setYRange(0, 1, padding=0)


class _Chart(OnSight):
    """A pyqtgraph layout with themed axes, a step cursor and restyling on palette changes, built on first sight
    (gui/widgets/first_sight.py): a subclass makes its plots in `add_plots`."""

    def build_costly(self) -> None:
        self.graphics = pg.GraphicsLayoutWidget()
        self.room.hold(self.graphics)
        self.plots: list[pg.PlotItem] = []
        self.cursors: list[pg.InfiniteLine] = []
        self.add_plots()
        self._restyle()

    def add_plots(self) -> None:
        """Override: the chart's plots (add_plot) and what they hold."""

    def add_plot(self, row: int, left: str) -> pg.PlotItem:
        plot = self.graphics.addPlot(row=row, col=0, enableMenu=False)  # not built to be disabled: 10 ms a plot
        plot.setLabel("left", left)
        plot.getAxis("left").enableAutoSIPrefix(False)  # "(x0.001)" on a log axis reads wrongly
        cache_axes(plot)
        if self.plots:
            plot.setXLink(self.plots[0])
        cursor = pg.InfiniteLine(angle=90, movable=False)
        plot.addItem(cursor, ignoreBounds=True)
        self.plots.append(plot)
        self.cursors.append(cursor)
        return plot

    @when_built
    def set_cursor(self, step: int | None) -> None:
        for c in self.cursors:
            c.setVisible(step is not None)
            if step is not None:
                c.setPos(step)

    def _restyle(self) -> None:
        c = plot_colors()
        self.graphics.setBackground(c.background)
        for plot in self.plots:
            style_plot(plot, c)
        for cursor in self.cursors:
            cursor.setPen(pg.mkPen(c.accent, width=1, style=Qt.PenStyle.DashLine))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.built:  # else built in the theme of then
            self._restyle()


class NormsChart(_Chart):
    """‖G‖ and each part's norm over the steps (lines), or the parts' shares stacked to 1 (shares)."""

    def _restyle(self) -> None:
        super()._restyle()
        recolor_legend(self.legend, plot_colors().foreground)
        if self.mode == "lines" and TOTAL in self.curves:  # ‖G‖ is drawn in the text colour
            self.curves[TOTAL].setPen(pg.mkPen(plot_colors().foreground, width=2.5))
            self.curves[TOTAL].setSymbolBrush(plot_colors().foreground)  # its dot at a run's one step

    def add_plots(self) -> None:
        # beside the plot, not over it: with a line per route class it covered half the curves
        self.legend = pg.LegendItem(labelTextSize="8pt", verSpacing=-6)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.fills: list[pg.FillBetweenItem] = []
        self.mode = "lines"
        self.plot = self.add_plot(0, "norm")
        self.plot.setLabel("bottom", "step")
        self.graphics.addItem(self.legend, row=0, col=1)
        self._key: tuple = ()
        self._one_step: tuple | None = None  # (the one step, the log axis's decades) as fitted (_fit_steps)

    @when_built
    def show_series(self, steps: np.ndarray, total: np.ndarray, parts: dict[str, np.ndarray], mode: str,
                    log: bool = False, weight: str = "") -> None:
        """mode "lines": ‖G‖ and each part's norm (log: on a log axis, zeros left out); "shares": stacked."""
        key = (mode, tuple(parts), log and mode == "lines")
        if key != self._key:
            self._rebuild(parts, mode, weight)
            self.plot.setLogMode(y=key[2])
            self._key = key
            self._one_step = None
        if mode == "lines":
            shown = (lambda v: np.where(v > 0, v, np.nan)) if log else (lambda v: v)
            self.curves[TOTAL].setData(steps, shown(total))
            for name, values in parts.items():
                self.curves[name].setData(steps, shown(values))
        else:
            cumulative = np.zeros_like(total)
            for name, share in shares(parts).items():
                cumulative = cumulative + share
                self.curves[name].setData(steps, cumulative)
            self.curves["_floor"].setData(steps, np.zeros_like(total))
        self._fit_steps(steps, [total, *parts.values()] if key[2] else [])

    def _fit_steps(self, steps: np.ndarray, logged: list[np.ndarray]) -> None:
        """A run with one saved step: its values as dots (a line through one point is not drawn), the step
        alone on the step axis (it read "step (x0.001)", −400 … 400), and on a log axis whole decades labelled
        at each power of ten only (a range inside one decade labelled 0.004, 0.005, … 0.01, one over another
        in a low plot). No step yet (another run just opened): the plain range an empty plot starts with, not
        the previous run's steps and norms, which auto-range kept with no data to fit. `logged`: the values on a
        log axis (none on a linear one)."""
        left, bottom = self.plot.getAxis("left"), self.plot.getAxis("bottom")
        if not len(steps):
            if self._one_step != "empty":
                self._one_step = "empty"
                bottom.setTicks(None)
                left.setTicks(None)
                empty_range(self.plot, y=self.mode == "lines")
            return
        one = int(steps[0]) if len(steps) == 1 else None
        positive = np.concatenate(logged)[np.concatenate(logged) > 0] if logged else np.array([])
        decades = (math.floor(math.log10(positive.min())), math.ceil(math.log10(positive.max()))) \
            if one is not None and positive.size else None
        if (one, decades) == self._one_step:
            return
        self._one_step = (one, decades)
        for key, curve in self.curves.items():
            if key != "_floor":
                curve.setSymbol("o" if one is not None else None)
                curve.setSymbolSize(7)
                curve.setSymbolPen(None)
                curve.setSymbolBrush(curve.opts["pen"].color())
        if one is None:
            bottom.setTicks(None)
            left.setTicks(None)
            self.plot.enableAutoRange(axis="x")
            if self.mode == "lines":
                self.plot.enableAutoRange(axis="y")
            return
        self.plot.setXRange(one - 1, one + 1, padding=0)
        bottom.setTicks([[(one, str(one))]])
        left.setTicks(None)
        if decades is not None:
            low, high = decades[0], max(decades[1], decades[0] + 1)
            # a log axis's range is in powers of ten; the margin keeps the end labels, which pyqtgraph drops
            # where they would stick out of a low axis (at 1000×650 neither "1" nor "10¹" was drawn)
            self.plot.setYRange(low, high, padding=0.2)
            ticks = list(range(low, high + 1))
            left.setTicks([list(zip(ticks, left.logTickStrings(ticks, 1.0, 1.0)))])

    def _rebuild(self, parts: dict, mode: str, weight: str) -> None:
        for item in list(self.curves.values()) + self.fills:
            self.plot.removeItem(item)
        self.legend.clear()
        self.curves, self.fills, self.mode = {}, [], mode

        def line(key: str, label: str, pen) -> pg.PlotDataItem:
            curve = self.curves[key] = cached(self.plot.plot([], [], pen=pen, connect="finite"))
            self.legend.addItem(curve, label)
            return curve

        if mode == "lines":
            self.plot.setLabel("left", "norm")
            self.plot.enableAutoRange()
            line(TOTAL, "‖G‖", pg.mkPen(plot_colors().foreground, width=2.5))
            for i, name in enumerate(parts):
                line(name, short_name(name, weight), pg.mkPen(color_of(i), width=1.5))
            return
        self.plot.setLabel("left", "share of Σ‖part‖")
        self.plot.enableAutoRange(axis="x")
        self.plot.setYRange(0, 1, padding=0.02)
        below = self.curves["_floor"] = self.plot.plot([], [], pen=None)
        for i, name in enumerate(parts):
            top = line(name, short_name(name, weight), pg.mkPen(color_of(i), width=1))
            color = QColor(color_of(i))
            color.setAlpha(170)
            fill = pg.FillBetweenItem(below, top, brush=pg.mkBrush(color))
            fill.setCacheMode(CACHED)
            self.plot.addItem(fill)
            self.fills.append(fill)
            below = top


class GeometryChart(_Chart):
    """cos(ΔW, G) and ‖ΔW‖/‖G‖ over the steps: how far the optimizer's update is from the gradient flow."""

    def add_plots(self) -> None:
        self.cos_plot = self.add_plot(0, "cos(ΔW, G)")
        self.ratio_plot = self.add_plot(1, "‖ΔW‖ / ‖G‖")
        self.ratio_plot.setLabel("bottom", "step")
        self.cos_plot.setYRange(-1, 1, padding=0.02)
        self.ratio_plot.setLogMode(y=True)
        c = plot_colors()
        self.cos_curve = cached(self.cos_plot.plot([], [], pen=pg.mkPen(c.train, width=1.5)))
        self.ratio_curve = cached(self.ratio_plot.plot([], [], pen=pg.mkPen(c.val, width=1.5)))
        self._empty = False  # shown with no step: its range is empty_range's until steps come

    @when_built
    def show_geometry(self, geometry: dict[int, tuple[float, float, float]]) -> None:
        steps = sorted(s for s, g in geometry.items() if math.isfinite(g[0]))
        if not steps and not self._empty:  # nothing yet (another run just opened): no range left from the last
            empty_range(self.cos_plot, y=False)
            empty_range(self.ratio_plot)
        elif steps and self._empty:
            self.cos_plot.enableAutoRange(axis="x")
            self.ratio_plot.enableAutoRange(axis="y")
        self._empty = not steps
        self.cos_curve.setData(np.array(steps, float), np.array([geometry[s][0] for s in steps]))
        ok = [s for s in steps if geometry[s][1] > 0 and math.isfinite(geometry[s][1])]
        self.ratio_curve.setData(np.array(ok, float), np.array([geometry[s][1] for s in ok]))


class PartsList(QTreeWidget):
    """G, its route classes and (small weights) its terms, with their norms and shares at the step."""

    sig_part_chosen = Signal(str, object)  # kind ("total" | "class" | "term"), name (None for G)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setColumnCount(3)
        self.setHeaderLabels(["part", "‖·‖", "share"])
        self.setRootIsDecorated(True)
        self.setUniformRowHeights(True)
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        metrics = self.fontMetrics()
        for column, widest in ((1, "8.88e-88"), (2, "100.0%")):
            # fixed widths: ResizeToContents measured every row on every change, ~1 ms per item per step
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Fixed)
            header.resizeSection(column, metrics.horizontalAdvance(widest) + 10)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # long term IDs; the tooltip has them whole
        # no narrower than its group labels beside the number columns (a class name is shorter)
        part = metrics.horizontalAdvance("route classes") + self.indentation() + 8
        self.setMinimumWidth(part + sum(header.sectionSize(c) for c in (1, 2)) + 2 * self.frameWidth())
        self.total = QTreeWidgetItem(self, ["G (all terms)", "", ""])
        self.total.setData(0, Qt.ItemDataRole.UserRole, ("total", None))
        self.groups = {k: QTreeWidgetItem(self, [label, "", ""]) for k, label in
                       (("class", "route classes"), ("term", "terms"))}
        for g in self.groups.values():
            g.setFlags(g.flags() & ~Qt.ItemFlag.ItemIsSelectable)
            g.setExpanded(True)
        self.items: dict[tuple[str, str], QTreeWidgetItem] = {}
        self.weight = ""
        self._names: dict[str, tuple] = {"class": (), "term": ()}
        self.currentItemChanged.connect(self._on_current_changed)

    def show_step(self, record, largest=None) -> None:
        """Norms and shares of the record's parts (names rebuilt only when they change). `largest`
        (engine.coefficients.largest.LargestTerms at the record's step, or None) fills the terms group of a
        weight with too many terms to split at every step."""
        self.weight = record.weight
        failed = largest if isinstance(largest, str) else None  # why the largest terms cannot be found
        if failed or largest is not None and (largest.weight, largest.step) != (record.weight, record.step):
            largest = None
        self._ensure("class", tuple(record.classes))
        self._ensure("term", tuple(record.terms) if record.terms or largest is None else tuple(largest.terms))
        summary = record.summary()  # the whole matrices' norms, also when those drawn are a view of them
        self.total.setText(1, f"{summary.norm:.3g}")
        norms = summary.class_norms
        self._fill("class", norms, lambda k, whole=sum(norms.values()) or 1.0: norms[k] / whole)
        classes = self.groups["class"]
        classes.setText(0, "route classes: splitting G…" if record.pending else
                        "route classes: not split" if record.unsplit else "route classes")
        classes.setToolTip(0, record.unsplit or ("G is autograd's −∂L/∂W until its split into route classes "
                                                 "comes" if record.pending else ""))
        if record.terms:
            norms_t = summary.term_norms
            self._fill("term", norms_t, lambda k, whole=sum(norms_t.values()) or 1.0: norms_t[k] / whole)
        elif largest is not None:
            self._fill("term", largest.norms, largest.share)
        self._show_term_count(record, largest, failed)

    def clear_parts(self) -> None:
        """List no part (another run is open: nothing of the previous one's weight stays)."""
        self._say_why(self.groups["term"], "")
        for kind in self.groups:
            self._ensure(kind, ())
        for item in (self.total, *self.groups.values()):
            item.setText(1, "")
            item.setText(2, "")
        for kind, label in (("class", "route classes"), ("term", "terms")):  # their counts were the weight's
            self.groups[kind].setText(0, label)
            self.groups[kind].setToolTip(0, "")
        self.weight = ""

    def _fill(self, kind: str, norms: dict, share) -> None:
        for k, n in norms.items():
            item = self.items[(kind, k)]
            item.setText(1, f"{n:.3g}")
            item.setText(2, f"{100 * share(k):.1f}%")

    def _show_term_count(self, record, largest, failed: str | None) -> None:
        from engine.coefficients import TERM_LIMIT
        from engine.forms.count_text import count_text

        terms, count = self.groups["term"], count_text(record.term_count)
        many = not record.terms and record.term_count
        if many and largest is not None:
            terms.setText(0, f"terms: largest {len(largest.terms)} of {count}")
            why = (f"the {len(largest.terms)} terms with the largest ‖G_t‖ at step {largest.step}, of "
                   f"{count}; share = ‖G_t‖ / Σ‖G_t‖ over all {count}. Over training "
                   f"G is split by route classes: {count} terms are more than the {count_text(TERM_LIMIT)} "
                   "split at every step")
        else:
            terms.setText(0, f"terms ({count})")
            why = (f"{count} terms are more than the {count_text(TERM_LIMIT)} the pane splits G into at every "
                   "step; the route classes split G instead. " + (failed or "The largest terms at this step are "
                                                                   "being found.")) if many else ""
        terms.setToolTip(0, why)
        note = "too many to split: see the route classes" if failed else "too many to split: finding the largest…"
        self._say_why(terms, why if many and largest is None else "", note)

    def _say_why(self, group: QTreeWidgetItem, why: str, text: str = "") -> None:
        """An empty group says in place why it is empty (it looked expandable and showed nothing)."""
        note = getattr(self, "_why", None)
        if note is not None and (not why or note.toolTip(0) != why or note.text(0) != text):
            group.removeChild(note)
            self._why = note = None
        if why and note is None:
            note = self._why = QTreeWidgetItem(group, [text, "", ""])
            note.setToolTip(0, why)
            note.setFlags(Qt.ItemFlag.ItemIsEnabled)
            note.setForeground(0, self.palette().brush(self.palette().ColorRole.PlaceholderText))

    def _ensure(self, kind: str, names: tuple) -> None:
        if names == self._names[kind]:
            return
        group, old = self.groups[kind], self._names[kind]
        self._names[kind] = names
        self.blockSignals(True)  # removing the current item moves the selection: not the user's choice
        for k in old:
            group.removeChild(self.items.pop((kind, k)))
        for i, k in enumerate(names):
            item = QTreeWidgetItem(group, [short_name(k, self.weight), "", ""])
            item.setData(0, Qt.ItemDataRole.UserRole, (kind, k))
            item.setForeground(0, QBrush(QColor(color_of(i))))
            item.setToolTip(0, k)
            self.items[(kind, k)] = item
        self.blockSignals(False)

    def select(self, kind: str, name: str | None) -> None:
        item = self.total if kind == "total" else self.items.get((kind, name))
        if item is not None and item is not self.currentItem():
            self.setCurrentItem(item)

    def _on_current_changed(self, item, _previous) -> None:
        data = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        if data:
            self.sig_part_chosen.emit(*data)
