"""The Weight pane (docs/design.md, issue 7): one weight's coefficient matrix G = −∂L/∂W on the run's probe
batch over training, split by the form into route classes (and terms, for small weights).

A weight is opened by clicking it anywhere (the architecture diagram, a term in the forms pane: any
`Session.select_weight`) or from the list here. The timeline scrubs and plays over the run's saved steps
(one step shared with the Heatmaps pane: `Session.browse_step`);
its pages share that weight and step. "Coefficient G": beside G (or the class or term chosen in the list,
whose formula is rendered below it) are the weight itself and the update the optimizer applied to reach this
step from the previous one, with charts over training below. "Geometry": the update's geometry
(gui/panes/weight/geometry_view.py), given the whole page. "Routes over training": which route classes the updates
descended along (routes_view.py, for the weight or the whole model). "Interaction": how another weight's update
moved this one's coefficient, and the model's map of pair shares of the curvature term (interaction_view.py,
docs/second-order.md). "Tokens" and "Curvature": the coefficient read in tokens and the curvature along the
run's step against the edge of stability (readings_view.py, docs/readings.md). A badge gives the agreement of the summed
classes with autograd. A weight larger than a screen (GPT-2's W_E: 50,257 × 768) is drawn through a row
window chosen above the maps: every row pooled into bands, the rows of a text's tokens, or a run of rows
from a given one (engine/coefficients/window.py); a large model's G comes first and its split after. Everything is computed in the app's analysis process: the records asked step
by step by `CoefficientFeeder` (compute.py), the geometry and the routes by their AnalysisJobs; the GUI
thread shows only what it was answered. During training the timeline follows the newest snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QElapsedTimer, Qt, QTimer
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QScrollArea, QSpinBox,
                               QSplitter, QTabWidget, QVBoxLayout, QWidget)

from engine.analysis import questions as q
from engine.errors import UserError

from ...jobs import AnalysisJob
from ...screen_fit import scrolling
from ...session import Session
from .geometry_view import GeometryView
from ...widgets.formula import FormulaView
from ...widgets.heatmap import HeatmapWidget
from ...widgets.seen import SeenWidget
from ...widgets.timeline import Timeline
from .records import CoefficientFeeder
from .distributions_view import DistributionsView
from .export import WeightExporter
from .interaction_view import InteractionView
from .readings_view import CurvatureTab, TokensTab
from .routes_view import RoutesView
from .charts import GeometryChart, NormsChart, PartsList, series

CHART_HZ = 4            # charts redraw at most this often while steps arrive
MAX_FPS = 30            # scrubbing faster than this shows the newest step at this rate (a frame is ~15 ms)
AGREEMENT_OK = 1e-4     # the badge turns amber above this (float32 round-off is ~1e-6)


@dataclass
class WeightState:
    weight: str | None = None
    step: int | None = None
    kind: str = "total"         # total | class | term: what the main heatmap shows
    part: str | None = None     # the class or term shown (None for G)
    split: str = "classes"      # the norms chart: classes | terms
    mode: str = "lines"         # the norms chart: lines | shares
    log: bool = True            # the norms chart's lines on a log axis (classes differ by decades)


class WeightPane(SeenWidget):
    title = "Weight"
    object_name = "pane_weight"

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.state = WeightState(weight=session.selected_weight)
        self._opened = False
        self.feeder = CoefficientFeeder(self)
        self._formula_job = AnalysisJob(self, follows=session)
        # the largest terms of a weight with too many to split
        self._terms_job = AnalysisJob(self, follows=session)
        self._largest = None                 # its answer (LargestTerms) or why there is none (a str)
        self._largest_for: tuple | None = None  # the (weight, step) asked, or answered
        self._geometry_job = AnalysisJob(self, follows=session)
        self._geometry_for: tuple | None = None  # the geometry view's (weight, step) asked
        self._chart_timer = QTimer(self, singleShot=True, interval=int(1000 / CHART_HZ))
        self._frame_timer = QTimer(self, singleShot=True)
        self._frame_clock = QElapsedTimer()
        self._build()
        self.exporter = WeightExporter(self)
        self._connect()
        self._on_run_opened(session.run)

    # ---- layout ----------------------------------------------------------------------------

    def _build(self) -> None:
        self.weight_box = QComboBox()
        self.weight_box.setToolTip("The weight whose coefficient is shown (or click one in another pane)")
        self.weight_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.badge = QLabel()
        self.badge.setToolTip("max|Σ classes − autograd's −∂L/∂W| / max|−∂L/∂W| at this step")
        self.timeline = Timeline()
        # one line that keeps its height: a line appearing and vanishing at every uncomputed step while
        # scrubbing laid the whole pane out again (every heatmap and chart resized, tens of ms a frame)
        self.status = QLabel()
        self.status.setFixedHeight(self.status.fontMetrics().height() + 4)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(QLabel("Weight:"))
        top.addWidget(self.weight_box)
        top.addWidget(self.badge, 1)
        self.export_row = top
        self.rows_row = self._rows_controls()
        self.tabs = QTabWidget()
        self.tabs.addTab(self._coefficient_page(), "Coefficient G")
        self.geometry_view = GeometryView()
        # its five maps, spectra and tables were cut to 390×250 px in a corner of the coefficient page at
        # 1600×1000: a page of its own; below its minimum (a narrow floating dock) it scrolls
        self.tabs.addTab(scrolling(self.geometry_view), "Geometry")
        self.routes_view = RoutesView()
        self.tabs.addTab(self.routes_view, "Routes over training")
        self.distributions_view = DistributionsView()
        self.tabs.addTab(self.distributions_view, "Distributions")
        self.interaction_view = InteractionView()
        self.tabs.addTab(self.interaction_view, "Interaction")
        self.tokens_tab = TokensTab(self.session)
        self.tabs.addTab(self.tokens_tab, "Tokens")
        self.curvature_tab = CurvatureTab(self.session)
        self.tabs.addTab(self.curvature_tab, "Curvature")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.rows_row)
        layout.addWidget(self.timeline)
        layout.addWidget(self.status)
        layout.addWidget(self.tabs, 1)
        layout.addStretch(0)  # takes the room only while the tabs are hidden: the rows stay on top
        self.timeline.setVisible(False)  # until the open run's coefficients can be shown (_on_store_ready)
        self.tabs.hide()

    def _rows_controls(self) -> QWidget:
        """Which rows of a weight too large to draw whole are drawn (shown only for such a weight)."""
        self.rows_box = QComboBox()
        self.rows_box.addItems(["every row, pooled", "the rows of these tokens:", "rows from:"])
        self.rows_box.setToolTip("A weight with more rows or columns than the screen has pixels is drawn "
                                 "through a window: all of it pooled into bands (each shows its largest entry), "
                                 "the rows of a text's tokens (W_E), or a run of rows")
        self.rows_text = QLineEdit()
        self.rows_text.setToolTip("Text whose tokens' rows are drawn; Enter applies")
        self.rows_start = QSpinBox()
        self.rows_start.setToolTip("The first row drawn; Enter applies")
        self.rows_start.setKeyboardTracking(False)
        self.rows_note = QLabel()
        self.rows_note.setToolTip("What the maps below draw of the whole matrices")
        row = QWidget()
        lay = QHBoxLayout(row)
        lay.setContentsMargins(0, 0, 0, 0)
        for w, stretch in ((QLabel("Rows:"), 0), (self.rows_box, 0), (self.rows_text, 2), (self.rows_start, 0),
                           (self.rows_note, 3)):
            lay.addWidget(w, stretch)
        row.hide()
        return row

    def window(self):
        """The rows chosen for a large weight (engine.coefficients.window.Window)."""
        from engine.coefficients.window import MAX_SHOWN, Window

        kind = self.rows_box.currentIndex()
        if kind == 1:
            tokenizer = self.session.tokenizer or getattr(self.session.run, "tokenizer", None)
            try:
                ids = tokenizer.encode(self.rows_text.text()) if tokenizer is not None else []
            except Exception:  # a text outside a character vocabulary: no rows
                ids = []
            ids = list(dict.fromkeys(int(i) for i in ids))[:MAX_SHOWN]
            return Window(tuple(ids)) if ids else Window()
        if kind == 2:
            start = self.rows_start.value()
            return Window(tuple(range(start, min(start + MAX_SHOWN, self.rows_start.maximum() + 1))))
        return Window()

    def _update_rows_row(self) -> None:
        """Show the row window's controls for a weight too large to draw whole, sized to it."""
        from engine.coefficients.window import Window, needed
        from engine.model.weight_layout import weight_shapes

        store, name = self.feeder.store, self.state.weight
        shape = weight_shapes(store.cfg).get(name) if store is not None and name else None
        large = shape is not None and needed(shape, Window())
        self.rows_row.setVisible(large)
        if large:
            self.rows_start.setMaximum(shape[0] - 1 if len(shape) == 2 else 0)
            self.rows_text.setVisible(self.rows_box.currentIndex() == 1)
            self.rows_start.setVisible(self.rows_box.currentIndex() == 2)
        self.feeder.set_window(self.window() if large else None)

    def _coefficient_page(self) -> QWidget:
        """G, W and ΔW side by side above the list of G's parts (with the chosen one's formula), their norms
        over training and the applied update's cosine with G over training."""
        self.G_map = HeatmapWidget(title="G")
        self.W_map = HeatmapWidget(title="W")
        self.dW_map = HeatmapWidget(title="ΔW")
        for m in (self.G_map, self.W_map, self.dW_map):  # an exported map names its run, weight and step
            m.set_caption_source(self._export_caption, self._run_folder, lambda: self.state.weight or "")
        maps = QSplitter(Qt.Orientation.Horizontal)
        for m in (self.G_map, self.W_map, self.dW_map):
            maps.addWidget(m)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self._parts_column())
        bottom.addWidget(self._charts())
        bottom.setSizes([420, 480])
        body = QSplitter(Qt.Orientation.Vertical)
        body.addWidget(maps)
        body.addWidget(bottom)
        body.setSizes([500, 400])
        return body

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
        self.log_box.setChecked(self.state.log)
        self.norms = NormsChart()
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
        update = QWidget()
        col = QVBoxLayout(update)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.geometry_label)
        col.addWidget(self.geometry_chart, 1)
        charts = QTabWidget()
        charts.addTab(norms, "Norms over training")
        charts.addTab(update, "ΔW vs G over training")
        return charts

    def _connect(self) -> None:
        s = self.session
        s.sig_weight_selected.connect(self.select_weight)
        s.sig_run_replaced.connect(lambda open_run: self._on_run_opened(open_run and open_run.run))
        s.sig_run_attached.connect(self._on_run_opened)
        s.sig_step_reported.connect(self._on_step_reported)
        s.sig_training_state_changed.connect(lambda _state: self._refresh_steps())
        self.feeder.sig_store_ready.connect(self._on_store_ready)
        self.feeder.sig_computed.connect(self._on_computed)
        self.feeder.sig_failed.connect(lambda message: self._say(message, error=True))
        self.weight_box.currentTextChanged.connect(self._on_weight_box)
        self.rows_box.currentIndexChanged.connect(lambda _i: self._on_rows_changed())
        self.rows_text.editingFinished.connect(self._on_rows_changed)
        self.rows_start.valueChanged.connect(lambda _v: self._on_rows_changed())
        self.timeline.sig_step_changed.connect(self._on_step_changed)
        self.timeline.sig_step_chosen.connect(s.set_browse_step)  # one timeline shared with the Heatmaps pane
        s.sig_browse_step_changed.connect(self.timeline.show)
        self.parts.sig_part_chosen.connect(self._on_part_chosen)
        self.split_box.currentIndexChanged.connect(self._on_chart_options)
        self.mode_box.currentIndexChanged.connect(self._on_chart_options)
        self.log_box.toggled.connect(self._on_chart_options)
        self._chart_timer.timeout.connect(self._draw_charts)
        self._frame_timer.timeout.connect(self._show)
        self._formula_job.sig_done.connect(self._on_formula)
        self._formula_job.sig_failed.connect(lambda _tag, message: self.caption.setText(message))
        self._terms_job.sig_done.connect(self._on_largest)
        self._terms_job.sig_failed.connect(self._on_largest)
        self._geometry_job.sig_done.connect(self._on_geometry)
        self._geometry_job.sig_failed.connect(lambda _tag, message: self.geometry_view.show_message(message))
        self.tabs.currentChanged.connect(lambda _index: self._ask_geometry())
        self.tabs.currentChanged.connect(lambda _index: self._ask_routes())
        self.tabs.currentChanged.connect(lambda _index: self._ask_interaction())
        self.interaction_view.sig_pair_clicked.connect(lambda B, _A: self.session.select_weight(B))
        self.tabs.currentChanged.connect(lambda _index: self._readings_seen())

    # ---- public ----------------------------------------------------------------------------

    def select_weight(self, name: str) -> None:
        """Open a weight (a state-dict key; a head's block such as blocks.0.W_Q.h1 opens its matrix)."""
        names = [self.weight_box.itemText(i) for i in range(self.weight_box.count())]
        if names and name not in names and name.rsplit(".", 1)[0] in names:
            name = name.rsplit(".", 1)[0]
        dock = self.parentWidget()
        while dock is not None and not dock.inherits("QDockWidget"):  # the pane lies in a scroll area in it
            dock = dock.parentWidget()
        if dock is not None:
            dock.show()
            dock.raise_()
        if name == self.state.weight and self.weight_box.currentText() == name:
            return
        self.state.weight = name
        if names and name not in names:
            self._say(f"This model has no weight {name}.", error=True)
            return
        self.weight_box.blockSignals(True)
        self.weight_box.setCurrentText(name)
        self.weight_box.blockSignals(False)
        self._on_weight_chosen(name)

    def record(self):
        """The record on screen (None while it is computed)."""
        st, store = self.state, self.feeder.store
        if store is None or st.weight is None or st.step is None:
            return None
        return store.peek(st.weight, st.step)

    def export_job(self):
        return self.exporter.export_job()

    def _export_caption(self) -> str:
        run, st = self.session.run, self.state
        parts = (f"run {run.path.name}" if run is not None else "", f"weight {st.weight}" if st.weight else "",
                 f"step {st.step}" if st.step is not None else "")
        return " · ".join(p for p in parts if p)

    def _run_folder(self) -> str:
        return str(self.session.run.path) if self.session.run is not None else ""

    # ---- handlers --------------------------------------------------------------------------

    def _on_run_opened(self, run) -> None:
        """Another run is open: show nothing of the previous one until this one's coefficients come."""
        self.timeline.set_steps([])
        self.timeline.show(self.session.browse_step)
        self.timeline.setVisible(False)
        self.tabs.hide()
        self.weight_box.clear()
        self.badge.setText("")
        self._largest, self._largest_for, self._geometry_for = None, None, None
        self.geometry_view.clear("Choose a weight and a step: the geometries are computed from the run's saved "
                                 "weights.")
        self.routes_view.clear()
        self._say("Opening the run's coefficients…" if run is not None else "")
        self._opened = False  # the run is opened here when the pane is first seen: hidden, it costs nothing
        if self.seen() or run is None:
            self._open(run)

    def _open(self, run) -> None:
        self._opened = True
        self.feeder.open_run(run)
        if run is None:
            self._say("Train, or open a run: the coefficients are computed from the run's saved snapshots.")

    def _on_store_ready(self, store) -> None:
        if store is None:
            return
        self.weight_box.blockSignals(True)
        self.weight_box.clear()
        self.weight_box.addItems(store.weight_names())
        if self.state.weight not in store.weight_names():
            self.state.weight = store.weight_names()[1 if len(store.weight_names()) > 1 else 0]
        if self.session.selected_weight is None:  # the weight shown is the one selected, app-wide
            self.session.select_weight(self.state.weight)
        self.weight_box.setCurrentText(self.state.weight)
        self.weight_box.blockSignals(False)
        if not self.rows_text.text():  # the run's own prompt: its tokens' rows of W_E
            try:
                self.rows_text.setText(store.run.probe().prompt)
            except UserError:
                pass
        self._say("")
        self.timeline.setVisible(True)
        self.tabs.show()
        self._readings_seen()
        self._refresh_steps()
        self._on_weight_chosen(self.state.weight)

    def _on_step_reported(self, report) -> None:
        if report.snapshot or report.checkpoint or report.event == "done":
            self._refresh_steps()
            for tab in (self.tokens_tab, self.curvature_tab):
                tab.view.look_again()  # their readings over training take in the step saved

    def _readings_seen(self) -> None:
        """The readings' views are asked about only while their tab is on screen (docs/readings.md)."""
        for tab in (self.tokens_tab, self.curvature_tab):
            tab.view.seen = self.seen() and self.tabs.isVisible() and self.tabs.currentWidget() is tab

    def _refresh_steps(self) -> None:
        store = self.feeder.store
        if store is not None:
            self.timeline.set_steps(store.steps())  # a directory listing: well under a millisecond
            self._want()
            self._ask_routes()
            self._ask_interaction()

    def _on_weight_box(self, name: str) -> None:
        if name:
            self.session.select_weight(name)  # the other panes (the diagram) show the choice too

    def _on_rows_changed(self) -> None:
        self._update_rows_row()
        self._want()
        self._show()

    def _on_weight_chosen(self, name: str) -> None:
        if not name or self.feeder.store is None:
            return
        self.state.weight, self.state.kind, self.state.part = name, "total", None
        self._update_rows_row()
        self.norms._key = ()  # parts change with the weight
        self._want()
        self._show()
        self._draw_charts()
        self._ask_formula()
        self._ask_routes()
        self._ask_interaction()

    def _on_step_changed(self, step: int) -> None:
        self.state.step = step
        self._want()
        self._frame()
        self._ask_interaction()

    def _frame(self) -> None:
        """Show what there is now, or at the next frame (at most MAX_FPS a second)."""
        wait = int(1000 / MAX_FPS) - (self._frame_clock.elapsed() if self._frame_clock.isValid() else 10**6)
        if wait <= 0:
            self._show()
        elif not self._frame_timer.isActive():
            self._frame_timer.start(wait)  # shows the step of that moment, not this one

    def _want(self) -> None:
        """Ask for the step on screen, then the rest of the timeline: only while someone can see it (a
        hidden pane costs training nothing)."""
        if self.seen():
            self.feeder.want(self.state.weight, self.state.step, self.timeline.steps)

    def seen_changed(self, seen: bool) -> None:
        self._readings_seen()
        if not seen:
            self.feeder.want(None, None, [])  # what is being computed finishes; nothing more is started
            return
        if not self._opened:
            self._open(self.session.run)
        self._refresh_steps()
        self._want()

    def _on_computed(self, weight: str, step: int, matrices: bool) -> None:
        if weight != self.state.weight:
            return
        if step == self.state.step:
            self._show()
        elif matrices and self.record() is None:
            self._frame()  # scrubbing moved on while it came: it is the nearest thing to show until then
        if not self._chart_timer.isActive():
            self._chart_timer.start()

    def _on_part_chosen(self, kind: str, name) -> None:
        if (kind, name) == (self.state.kind, self.state.part):
            return
        self.state.kind, self.state.part = kind, name
        self._show()
        self._ask_formula()

    def _on_chart_options(self, _value) -> None:
        self.state.split = ("classes", "terms")[self.split_box.currentIndex()]
        self.state.mode = ("lines", "shares")[self.mode_box.currentIndex()]
        self.state.log = self.log_box.isChecked()
        self.log_box.setEnabled(self.state.mode == "lines")
        self._draw_charts()

    # ---- showing ---------------------------------------------------------------------------

    def _show(self) -> None:
        from engine.coefficients import as_matrix  # loaded: the answers shown unpickled into it

        self._frame_clock.start()
        st, rec = self.state, self.record()
        self.norms.set_cursor(st.step)
        self.geometry_chart.set_cursor(st.step)
        self._ask_geometry()
        if rec is None:
            if st.step is not None and st.weight is not None:
                self._say(f"computing {st.weight} at step {st.step}…")
            newest = self.feeder.store.newest(st.weight) if self.feeder.store and st.weight else None
            if newest is None:
                return
            rec = self.feeder.store.peek(st.weight, newest)  # the step answered last (its titles say which)
        else:
            self._say("")
        largest = self._largest_at(rec)
        extra = largest.terms if largest is not None and not isinstance(largest, str) else {}
        part = st.part if st.kind != "total" and (st.part in rec.classes or st.part in rec.terms or
                                                  st.part in extra) else None
        what = "G" if part is None else f"G [{part}]"
        matrix = extra[part] if part in extra and part not in rec.terms else rec.part(part)
        if rec.axes is not None and part in extra and part not in rec.terms:
            matrix = None  # a largest term's whole matrix beside a drawn view: not drawn
        labels = (list(rec.axes.row_labels), list(rec.axes.col_labels)) if rec.axes is not None else (None, None)
        self.rows_note.setText(rec.axes.note if rec.axes is not None else "")
        self._square_cells(as_matrix(rec.W).shape)
        if matrix is not None:
            self.G_map.set_matrix(as_matrix(matrix), *labels, kind="signed", title=f"{what} · step {rec.step}")
        self.W_map.set_matrix(as_matrix(rec.W), *labels, kind="signed", title=f"W · step {rec.step}")
        update = self.feeder.store.peek_update(st.weight, rec.step)
        if update is not None:
            self.dW_map.set_matrix(as_matrix(update.dW), *labels, kind="signed",
                                   title=f"ΔW = W({update.step}) − W({update.prev_step})")
            self.geometry_label.setText(f"step {update.prev_step} → {update.step}: cos(ΔW, G) = "
                                        f"{update.cosine:.3f}, ‖ΔW‖/‖G‖ = {update.ratio:.3g}")
        else:
            self.dW_map.set_matrix(as_matrix(rec.W) * float("nan"), *labels, kind="signed",
                                   title="ΔW: none before the first step")
            self.geometry_label.setText(f"step {rec.step} is the first saved step: no update reached it")
        if rec.pending or rec.unsplit:
            self.badge.setText("G = autograd's −∂L/∂W; " + ("splitting it into route classes…" if rec.pending else
                                                           "not split (over the split's budget: see the tooltip)"))
            self.badge.setToolTip(rec.unsplit or "A large model's G comes first; its split follows in the "
                                  "background (docs/figures.md#gpt-2-small)")
        else:
            ok = rec.agreement <= AGREEMENT_OK
            color = "#2b8a3e" if ok else "#e8590c"
            self.badge.setText(f"<span style='color:{color}'>{'✓' if ok else '⚠'} Σ classes vs autograd: "
                               f"{rec.agreement:.1e}</span>")
            self.badge.setToolTip("max|Σ classes − autograd's −∂L/∂W| / max|−∂L/∂W| at this step")
        self.parts.show_step(rec, largest)
        self.parts.select(st.kind if part is not None else "total", part)

    def _square_cells(self, shape: tuple[int, int]) -> None:
        """Square cells, unless the matrix drawn is so elongated that they would make it a thin strip (a
        prompt's dozen rows of W_E's 768 columns): then the maps fill their room."""
        square = 1 / 8 <= shape[0] / shape[1] <= 8
        if square != getattr(self, "_square", True):
            self._square = square
            for m in (self.G_map, self.W_map, self.dW_map):
                m.plot_item.setAspectLocked(square)
                m.reset_view()

    def _largest_at(self, rec):
        """The largest terms at the record's step (asked once per weight and step, only for a weight with
        too many terms to split at every step): None until they come, a str when they cannot be found."""
        if rec.terms or not rec.term_count or self.feeder.store is None:
            return None
        key = (rec.weight, rec.step)
        if self._largest_for != key:
            self._largest_for, self._largest = key, None
            self._terms_job.ask(q.LargestTerms(str(self.feeder.store.run.path), rec.step, rec.weight), tag=key)
        return self._largest

    def _on_largest(self, tag, result) -> None:
        if tag == self._largest_for:
            self._largest = result  # LargestTerms, or the one-line message of a failure
            self._show()

    def _ask_geometry(self) -> None:
        """Compute the geometry view's (weight, step) off the GUI thread, only while its tab is shown."""
        store, st = self.feeder.store, self.state
        if store is None or st.weight is None or st.step is None or self.tabs.currentIndex() != 1:
            return
        if self._geometry_for != (st.weight, st.step):
            self._geometry_for = (st.weight, st.step)
            self._geometry_job.ask(q.UpdateGeometry(str(store.run.path), st.weight, st.step),
                                   tag=self._geometry_for)

    def _on_geometry(self, tag, result) -> None:
        if tag == (self.state.weight, self.state.step):
            self.geometry_view.show_result(result)

    def _ask_routes(self) -> None:
        """The views over training of the weight on screen, only while their tab is shown, asked again when
        the saved steps change: the route shares (of the weight or the whole model, routes_view.py) and the
        distributions of W, G and ΔW (distributions_view.py)."""
        store, st = self.feeder.store, self.state
        if store is None or st.weight is None:
            return
        if self.tabs.currentWidget() is self.routes_view:
            self.routes_view.ask(str(store.run.path), st.weight, self.timeline.steps, store.weight_names())
        elif self.tabs.currentWidget() is self.distributions_view:
            self.distributions_view.ask(str(store.run.path), st.weight, self.timeline.steps)

    def _ask_interaction(self) -> None:
        """The second-order view of the weight and step on screen, only while its tab is shown."""
        store, st = self.feeder.store, self.state
        if store is not None and st.weight is not None and self.tabs.currentWidget() is self.interaction_view:
            self.interaction_view.ask(str(store.run.path), st.weight, st.step, self.timeline.steps,
                                      store.weight_names())

    def _draw_charts(self) -> None:
        store, st = self.feeder.store, self.state
        if store is None or st.weight is None:
            return
        steps, total, parts = series(self.timeline.steps, store.summaries(st.weight), st.split)
        if st.split == "terms" and not parts and len(steps):
            self._say("Split: terms shows ‖G‖ alone: this weight has more terms than are split at every step "
                      "(the route classes split it instead).")
        self.norms.show_series(steps, total, parts, st.mode, st.log, st.weight)
        self.geometry_chart.show_geometry(store.geometry(st.weight))

    def _ask_formula(self) -> None:
        store, st = self.feeder.store, self.state
        if store is None or st.weight is None:
            return
        self.caption.setText("deriving the formula…")
        self._formula_job.ask(q.CoefficientFormula(store.cfg, st.weight, st.kind, st.part),
                              tag=(st.weight, st.kind, st.part))

    def _on_formula(self, tag, result) -> None:
        if tag != (self.state.weight, self.state.kind, self.state.part):
            return
        caption, tex, notation = result
        self.caption.setText(caption)
        self.formula.set_formula(tex, notation)  # typeset in the text colour, again when the theme changes

    def _say(self, text: str, error: bool = False) -> None:
        self.status.setText(f"<span style='color:#e8590c'>{text}</span>" if error and text else text)
        self.status.setToolTip(text)  # a long message is clipped to the one line
