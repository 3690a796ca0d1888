"""The Weight pane's "Coefficient G" page: G (or the route class or term chosen in the list, whose formula is
rendered below it) beside the weight W and the update ΔW the optimizer applied to reach the step shown from the
one before, with the norms of G's parts and the update's geometry over training below.

It draws the pane's coefficient view model (engine/views/weight.py) at the workspace's weight and step: `draw`
shows the record of that step, or while it is computed the one answered last (its titles say which step), at
most MAX_FPS times a second while a timeline is scrubbed or played; the charts redraw at most CHART_HZ times a
second while steps arrive. Its controls (the part chosen, the chart's split, mode and log axis) are bound to the
view model.
"""

from __future__ import annotations

from PySide6.QtCore import QElapsedTimer, Qt, QTimer
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QScrollArea, QSplitter, QTabWidget, \
    QVBoxLayout, QWidget

from engine.views.weight import shown_step

from ...binding import bind
from ...screen_fit import PLOT_MIN
from ...widgets.formula import FormulaView
from ...widgets.heatmap import HeatmapWidget
from .charts import GeometryChart, NormsChart, PartsList, series

CHART_HZ = 4            # charts redraw at most this often while steps arrive
MAX_FPS = 30            # scrubbing faster than this shows the newest step at this rate (a frame is ~15 ms)
AGREEMENT_OK = 1e-4     # the badge turns amber above this (float32 round-off is ~1e-6)


class CoefficientPage(QSplitter):
    """`draw()` shows what the view model holds at the workspace's weight and step; `say(text)` is the pane's
    status line, `badge` its agreement badge."""

    def __init__(self, view, workspace, say, badge: QLabel, parent: QWidget | None = None):
        super().__init__(Qt.Orientation.Vertical, parent)
        self.view, self.workspace, self._say, self.badge = view, workspace, say, badge
        self._square = True
        self._chart_timer = QTimer(self, singleShot=True, interval=int(1000 / CHART_HZ))
        self._frame_timer = QTimer(self, singleShot=True)
        self._frame_clock = QElapsedTimer()
        self._charted: tuple | None = None  # (weight,) the charts show
        self.drawn = None                   # the record drawn (engine.coefficients.StepCoefficient)
        self.G_map = HeatmapWidget(title="G")
        self.W_map = HeatmapWidget(title="W")
        self.dW_map = HeatmapWidget(title="ΔW")
        maps = QSplitter(Qt.Orientation.Horizontal)
        for m in (self.G_map, self.W_map, self.dW_map):
            maps.addWidget(m)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self._parts_column())
        bottom.addWidget(self._charts())
        bottom.setSizes([420, 480])
        self.addWidget(maps)
        self.addWidget(bottom)
        self.setSizes([500, 400])
        # every plot keeps PLOT_MIN and a low pane scrolls: at 1000×650 the norms chart was ~95 px and the
        # maps above took the rest (given their room alone, the charts took it from the maps: ~70 px)
        self.setChildrenCollapsible(False)
        for m in (self.G_map, self.W_map, self.dW_map):
            m.keep_plot_height(PLOT_MIN)
        bind(self.split_box, view, "split", values=("classes", "terms"))
        bind(self.mode_box, view, "mode", values=("lines", "shares"))
        bind(self.log_box, view, "log")
        self.parts.sig_part_chosen.connect(lambda kind, name: view.update(kind=kind, part=name))
        self._chart_timer.timeout.connect(self.draw_charts)
        self._frame_timer.timeout.connect(self.draw)

    def _parts_column(self) -> QWidget:
        """G's route classes (and terms) at the step, and the chosen one's formula."""
        self.parts = PartsList()
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.formula = FormulaView()
        scroll = QScrollArea()
        scroll.setWidget(self.formula)
        scroll.setWidgetResizable(True)
        scroll.setMaximumHeight(90)
        left = QWidget()
        col = QVBoxLayout(left)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.parts, 1)
        col.addWidget(self.caption)
        col.addWidget(scroll)
        return left

    def _charts(self) -> QWidget:
        """The norms of G's parts, and the applied update's cosine with G and size, over training."""
        self.split_box, self.mode_box = QComboBox(), QComboBox()
        self.split_box.addItems(["route classes", "terms"])
        self.mode_box.addItems(["lines", "stacked shares"])
        self.log_box = QCheckBox("log scale")
        self.norms = NormsChart()
        self.norms.setMinimumHeight(PLOT_MIN)
        row = QHBoxLayout()
        for w in (QLabel("Split:"), self.split_box, QLabel("Show:"), self.mode_box, self.log_box):
            row.addWidget(w)
        row.addStretch(1)
        norms = QWidget()
        col = QVBoxLayout(norms)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(row)
        col.addWidget(self.norms, 1)
        self.geometry_label = QLabel()
        self.geometry_chart = GeometryChart()
        self.geometry_chart.setMinimumHeight(2 * PLOT_MIN)  # two plots, one above the other
        update = QWidget()
        col = QVBoxLayout(update)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.geometry_label)
        col.addWidget(self.geometry_chart, 1)
        charts = QTabWidget()
        charts.addTab(norms, "Norms over training")
        charts.addTab(update, "ΔW vs G over training")
        return charts

    # ---- drawing ---------------------------------------------------------------------------

    def frame(self) -> None:
        """Draw what there is now, or at the next frame (at most MAX_FPS a second)."""
        wait = int(1000 / MAX_FPS) - (self._frame_clock.elapsed() if self._frame_clock.isValid() else 10**6)
        if wait <= 0:
            self.draw()
        elif not self._frame_timer.isActive():
            self._frame_timer.start(wait)  # shows the step of that moment, not this one
        if not self._chart_timer.isActive():
            self._chart_timer.start()

    def clear(self) -> None:
        """Draw nothing (another run is open): its maps, parts, formula and charts hold nothing of the previous
        run until this one's answers come."""
        import numpy as np

        self.drawn, self._charted = None, None
        self._frame_timer.stop()
        self._chart_timer.stop()
        blank = np.full((1, 1), np.nan, dtype=np.float32)
        for m, title in ((self.G_map, "G"), (self.W_map, "W"), (self.dW_map, "ΔW")):
            m.set_matrix(blank, kind="signed", title=title)
        self.parts.clear_parts()
        self.caption.setText("")
        self.formula.set_formula("", "")
        self.formula.clear()  # its image: a label given the text it holds ("") keeps the pixmap it shows
        self.norms.show_series(np.array([]), np.array([]), {}, self.view.mode, self.view.log)
        self.geometry_chart.show_geometry({})
        self.geometry_label.setText("")
        self.badge.setText("")

    def draw(self) -> None:
        from engine.coefficients import as_matrix  # loaded: the answers shown unpickled into it

        self._frame_clock.start()
        v, ws = self.view, self.workspace
        weight, step, window = v.weight(ws), shown_step(ws), v.window(ws)
        self.norms.set_cursor(step)
        self.geometry_chart.set_cursor(step)
        self._draw_formula()
        if weight is None:
            return
        rec = v.record(ws)
        if rec is None:
            failed = v.failure(ws)  # it said "computing" for ever
            if failed is not None:
                self._say(failed, error=True)
            elif step is not None:
                self._say(f"computing {weight} at step {step}…")
            newest = v.records.newest(weight, window)
            if newest is None:
                return
            rec = v.records.peek(weight, newest, window)  # the step answered last (its titles say which)
        else:
            self._say("")
        self.drawn = rec
        largest = v.largest.get((rec.weight, rec.step))
        if largest is None:
            largest = next((m for question, m in v.failures.items() if type(question).__name__ == "LargestTerms"
                            and (question.weight, question.step) == (rec.weight, rec.step)), None)
        extra = largest.terms if largest is not None and not isinstance(largest, str) else {}
        part = v.part if v.kind != "total" and (v.part in rec.classes or v.part in rec.terms or
                                                v.part in extra) else None
        what = "G" if part is None else f"G [{part}]"
        matrix = extra[part] if part in extra and part not in rec.terms else rec.part(part)
        if rec.axes is not None and part in extra and part not in rec.terms:
            matrix = None  # a largest term's whole matrix beside a drawn view: not drawn
        labels = (list(rec.axes.row_labels), list(rec.axes.col_labels)) if rec.axes is not None else (None, None)
        self._square_cells(as_matrix(rec.W).shape)
        if matrix is not None:
            self.G_map.set_matrix(as_matrix(matrix), *labels, kind="signed", title=f"{what} · step {rec.step}")
        self.W_map.set_matrix(as_matrix(rec.W), *labels, kind="signed", title=f"W · step {rec.step}")
        update = v.records.peek_update(weight, rec.step, window)
        if update is not None:
            self.dW_map.set_matrix(as_matrix(update.dW), *labels, kind="signed",
                                   title=f"ΔW = W({update.step}) − W({update.prev_step})")
            self.geometry_label.setText(f"step {update.prev_step} → {update.step}: cos(ΔW, G) = "
                                        f"{update.cosine:.3f}, ‖ΔW‖/‖G‖ = {update.ratio:.3g}")
        else:
            self.dW_map.set_matrix(as_matrix(rec.W) * float("nan"), *labels, kind="signed",
                                   title="ΔW: none before the first step")
            self.geometry_label.setText(f"step {rec.step} is the first saved step: no update reached it")
        self._draw_badge(rec)
        self.parts.show_step(rec, largest)
        self.parts.select(v.kind if part is not None else "total", part)

    def _draw_badge(self, rec) -> None:
        if rec.pending or rec.unsplit:
            progress = f" ({self.view.progress})" if rec.pending and self.view.progress is not None else ""
            self.badge.setText("G = autograd's −∂L/∂W; " + (f"splitting it into route classes…{progress}"
                                                           if rec.pending else
                                                           "not split (over the split's budget: see the tooltip)"))
            self.badge.setToolTip(rec.unsplit or "A large model's G comes first; its split follows in the "
                                  "background (docs/figures.md#gpt-2-small)")
            return
        ok = rec.agreement <= AGREEMENT_OK
        color = "#2b8a3e" if ok else "#e8590c"
        self.badge.setText(f"<span style='color:{color}'>{'✓' if ok else '⚠'} Σ classes vs autograd: "
                           f"{rec.agreement:.1e}</span>")
        self.badge.setToolTip("max|Σ classes − autograd's −∂L/∂W| / max|−∂L/∂W| at this step")

    def _square_cells(self, shape: tuple[int, int]) -> None:
        """Square cells, unless the matrix drawn is so elongated that they would make it a thin strip (a
        prompt's dozen rows of W_E's 768 columns): then the maps fill their room."""
        square = 1 / 8 <= shape[0] / shape[1] <= 8
        if square != self._square:
            self._square = square
            for m in (self.G_map, self.W_map, self.dW_map):
                m.plot_item.setAspectLocked(square)
                m.reset_view()

    def _draw_formula(self) -> None:
        v = self.view
        question = v.formula_question(self.workspace) if v.table is not None else None
        if question is None:
            return
        if question in v.failures:
            self.caption.setText(v.failures[question])
        elif question in v.formulas:
            caption, tex, notation = v.formulas[question]
            if self.caption.text() != caption or self.formula.tex != tex:
                self.caption.setText(caption)
                self.formula.set_formula(tex, notation)  # typeset in the text colour, again when the theme changes
        else:
            self.caption.setText("deriving the formula…")

    def draw_charts(self) -> None:
        v, ws = self.view, self.workspace
        weight = v.weight(ws)
        if weight is None or ws.open_run is None:
            return
        steps, total, parts = series(ws.open_run.saved_steps(), v.records.summaries(weight), v.split)
        if v.split == "terms" and not parts and len(steps):
            self._say("Split: terms shows ‖G‖ alone: this weight has more terms than are split at every step "
                      "(the route classes split it instead).")
        if self._charted is None or self._charted[0] != weight:
            self.norms._key = ()  # parts change with the weight
        self._charted = (weight,)
        self.log_box.setEnabled(v.mode == "lines")
        self.norms.show_series(steps, total, parts, v.mode, v.log, weight)
        self.geometry_chart.show_geometry(v.records.geometry(weight))
