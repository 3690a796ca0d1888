"""The Weight pane (docs/design.md, issue 7): one weight's coefficient matrix G = −∂L/∂W on the run's probe
batch over training, split by the form into route classes (and terms, for small weights).

The weight is the workspace's selection, opened by clicking it anywhere (the architecture diagram, a term in
the forms pane: any `Session.select_weight`) or from the list here, and the step is the shared timeline's (the
Heatmaps pane's too): both are bound to the workspace (gui/binding.py), and the pane keeps no copy of either.
Its pages draw view models (engine/views/weight.py, weight_tabs.py) that say what they need of the analysis
process and hold what it answered; the app's asker asks it (gui/asker.py), only while the pane and the page are
seen. "Coefficient G" (coefficient_page.py): G (or a class or term chosen in the list, with its formula) beside
W and the update ΔW that reached the step, with charts over training below. "Geometry": the update's geometry
(geometry_view.py). "Routes over training": which route classes the updates descended along (routes_view.py, for
the weight or the whole model). "Distributions": W, G and ΔW's values at every saved step. "Interaction": how
another weight's update moved this one's coefficient, and the model's map of pair shares (interaction_view.py,
docs/second-order.md). "Tokens" and "Curvature": the coefficient read in tokens and the curvature along the run's
step against the edge of stability (readings_view.py, engine/views/readings.py, docs/readings.md). A weight
larger than a screen (GPT-2's W_E: 50,257 × 768) is drawn through a row window chosen above the maps
(engine/coefficients/window.py); a large model's G comes first and its split after. The GUI thread only draws
what it was answered; another run opened, nothing of the previous one stays drawn. During training the timeline
follows the newest snapshot.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QSpinBox, QTabWidget, QVBoxLayout, QWidget

from engine.errors import UserError
from engine.model.weight_layout import weight_shapes
from engine.views import weight_tabs as tabs
from engine.views.weight import ROWS, CoefficientView, shown_step

from ...binding import bind, listen
from ...screen_fit import scrolling
from ...session import Session
from ...widgets.seen import SeenWidget
from ...widgets.timeline import Timeline
from .coefficient_page import CoefficientPage
from .distributions_view import DistributionsView
from .export import WeightExporter
from .geometry_view import GeometryView
from .interaction_view import InteractionView
from .readings_view import CurvatureTab, TokensTab
from .routes_view import RoutesView

PAGES = ("coefficient", "geometry", "routes", "distributions", "interaction", "tokens", "curvature")


class WeightPane(SeenWidget):
    title = "Weight"
    object_name = "pane_weight"

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.view = CoefficientView()
        self.pages = {"coefficient": self.view, "geometry": tabs.GeometryView(), "routes": tabs.RoutesView(),
                      "distributions": tabs.DistributionsView(), "interaction": tabs.InteractionView()}
        for view in self.pages.values():
            view.seen = False
        self._build()
        self.exporter = WeightExporter(self)
        for m in (self.G_map, self.W_map, self.dW_map):  # an exported map names its run, weight and step
            m.set_caption_source(self._export_caption, self._run_folder,
                                 lambda: self.view.weight(self.session.workspace) or "")
        self._connect()
        self._on_run_replaced(session.open_run)

    # ---- layout ----------------------------------------------------------------------------

    def _build(self) -> None:
        ws = self.session.workspace
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
        self.page = CoefficientPage(self.view, ws, self._say, self.badge)
        self.geometry_view = GeometryView()
        self.routes_view = RoutesView(self.pages["routes"], ws)
        self.distributions_view = DistributionsView(self.pages["distributions"], ws)
        self.interaction_view = InteractionView(self.pages["interaction"], ws)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.page, "Coefficient G")
        # its five maps, spectra and tables were cut to 390×250 px in a corner of the coefficient page at
        # 1600×1000: a page of its own; below its minimum (a narrow floating dock) it scrolls
        self.tabs.addTab(scrolling(self.geometry_view), "Geometry")
        self.tabs.addTab(self.routes_view, "Routes over training")
        self.tabs.addTab(self.distributions_view, "Distributions")
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
        self.timeline.setVisible(False)  # until the open run's coefficients can be shown
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

    @property
    def G_map(self):
        return self.page.G_map

    @property
    def W_map(self):
        return self.page.W_map

    @property
    def dW_map(self):
        return self.page.dW_map

    @property
    def parts(self):
        return self.page.parts

    @property
    def split_box(self):
        return self.page.split_box

    @property
    def norms(self):
        return self.page.norms

    @property
    def caption(self):
        return self.page.caption

    @property
    def formula(self):
        return self.page.formula

    def _connect(self) -> None:
        s, ws = self.session, self.session.workspace
        bind(self.weight_box, ws, "weight", setter=s.select_weight)  # a choice here is a click anywhere
        bind(self.timeline, ws, "step")  # the one timeline the Heatmaps pane shares
        bind(self.rows_box, self.view, "rows", values=ROWS)
        bind(self.rows_text, self.view, "rows_text")
        bind(self.rows_start, self.view, "rows_start")
        self.tabs.currentChanged.connect(lambda _i: self._update_seen())
        s.sig_weight_selected.connect(self.select_weight)
        s.sig_run_replaced.connect(self._on_run_replaced)
        s.sig_run_attached.connect(lambda _run: self._list_steps())
        s.sig_step_reported.connect(self._on_step_reported)
        s.sig_training_state_changed.connect(lambda _state: self._list_steps())
        listen(self, ws.sig_selection_changed, self._on_selection_changed)
        for name, view in self.pages.items():
            view.changed.connect(lambda field, name=name: self._on_view_changed(name, field))
            s.asker.watch(view, self)
        self.interaction_view.sig_pair_clicked.connect(lambda B, _A: ws.select(weight=B))

    # ---- public ----------------------------------------------------------------------------

    def select_weight(self, name: str) -> None:
        """A weight was opened anywhere (a state-dict key; a head's block opens its matrix): bring the pane
        forward (the workspace's selection is already that weight)."""
        dock = self.parentWidget()
        while dock is not None and not dock.inherits("QDockWidget"):  # the pane lies in a scroll area in it
            dock = dock.parentWidget()
        if dock is not None:
            dock.show()
            dock.raise_()
        names = self.view.names()
        if names and self.view.weight(self.session.workspace) != name and name.rsplit(".", 1)[0] not in names:
            self._say(f"This model has no weight {name}.", error=True)

    def record(self):
        """The record on screen (None while it is computed)."""
        return self.view.record(self.session.workspace)

    def export_job(self):
        return self.exporter.export_job()

    def _export_caption(self) -> str:
        ws, run = self.session.workspace, self.session.run
        weight, step = self.view.weight(ws), shown_step(ws)
        parts = (f"run {run.path.name}" if run is not None else "", f"weight {weight}" if weight else "",
                 f"step {step}" if step is not None else "")
        return " · ".join(p for p in parts if p)

    def _run_folder(self) -> str:
        return str(self.session.run.path) if self.session.run is not None else ""

    # ---- handlers --------------------------------------------------------------------------

    def _on_run_replaced(self, open_run) -> None:
        """Another run is open (its views forgot the previous one): nothing of it is shown until this one's
        coefficients come."""
        self.timeline.setVisible(False)
        self.tabs.hide()
        self.weight_box.clear()
        self.page.clear()
        self.geometry_view.clear("Choose a weight and a step: the geometries are computed from the run's saved "
                                 "weights.")
        self.routes_view.clear()
        self._list_steps()
        if open_run is None:
            self._say("Train, or open a run: the coefficients are computed from the run's saved snapshots.")
        else:
            self._say("Opening the run's coefficients…")

    def _on_view_changed(self, page: str, field: str) -> None:
        v, ws = self.view, self.session.workspace
        if page != "coefficient":
            self._draw_page(page)
            return
        if field == "table" and v.table is not None:
            self._on_table()
        elif field == "failures" and v.table is None and v.failures:
            self._say(f"Coefficients need the run's probe batch: {next(iter(v.failures.values()))}", error=True)
        elif field in ("rows", "rows_text", "rows_start"):
            self._update_rows_row()
        if v.table is None:
            return
        if field in ("split", "mode", "log"):
            self.page.draw_charts()
        if field in ("kind", "part", "failures") or v.record(ws) is not self.page.drawn:  # a choice, the step: now
            self.page.draw()
        else:  # another step's answer: the charts, at their rate
            self.page.frame()
        rec = v.record(ws)
        self.rows_note.setText(rec.axes.note if rec is not None and rec.axes is not None else "")

    def _on_table(self) -> None:
        """The run's coefficients can be shown: its weights listed, the one shown chosen in the workspace."""
        v, ws = self.view, self.session.workspace
        names = v.names()
        self.weight_box.blockSignals(True)
        self.weight_box.clear()
        self.weight_box.addItems(names)
        self.weight_box.blockSignals(False)
        if ws.selection.weight != v.weight(ws):
            ws.select(weight=v.weight(ws))  # the model's first block's, until one is chosen
        self.weight_box.setCurrentText(v.weight(ws))
        if not v.rows_text and ws.open_run is not None and ws.open_run.run is not None:
            try:
                v.rows_text = ws.open_run.run.probe().prompt  # the run's own prompt: its tokens' rows of W_E
            except UserError:
                pass
        self._say("")
        self.timeline.setVisible(True)
        self.tabs.show()
        self._update_seen()
        self._update_rows_row()
        self._list_steps()

    def _on_selection_changed(self, _selection, changed: frozenset) -> None:
        if "weight" in changed:
            self.view.update(kind="total", part=None)
            self._update_rows_row()
        if changed & {"weight", "step"}:
            if self.view.table is not None:
                self.page.frame()
            for page in self.pages:
                if page != "coefficient":
                    self._draw_page(page)

    def _draw_page(self, page: str) -> None:
        if not self.pages[page].seen:
            return
        if page == "geometry":
            geometry = self.pages["geometry"]
            question = geometry.question(self.session.workspace)
            if question in geometry.failures:
                self.geometry_view.show_message(geometry.failures[question])
            elif question in geometry.answers:
                if geometry.answers[question] is not self.geometry_view.result:
                    self.geometry_view.show_result(geometry.answers[question])
            elif question is not None:
                self.geometry_view.show_message(f"computing the geometries of {question.weight} at step "
                                                f"{question.step}…")
        else:
            {"routes": self.routes_view, "distributions": self.distributions_view,
             "interaction": self.interaction_view}[page].draw()

    def _update_rows_row(self) -> None:
        """The row window's controls for a weight too large to draw whole, sized to it."""
        v, ws = self.view, self.session.workspace
        large = v.table is not None and v.large(ws)
        self.rows_row.setVisible(large)
        if large:
            shape = weight_shapes(v.table[0])[v.weight(ws)]
            self.rows_start.setMaximum(shape[0] - 1 if len(shape) == 2 else 0)
            self.rows_text.setVisible(v.rows == "tokens")
            self.rows_start.setVisible(v.rows == "from")

    def _on_step_reported(self, report) -> None:
        if report.snapshot or report.checkpoint or report.event == "done":
            self._list_steps()
            for tab in (self.tokens_tab, self.curvature_tab):
                tab.view.look_again()  # their readings over training take in the step saved

    def _list_steps(self) -> None:
        """The run's saved steps onto the timeline (a directory listing; a live run keeps adding them)."""
        run = self.session.open_run
        self.timeline.set_steps(run.saved_steps() if run is not None else [])
        self.session.asker.later()  # a run that grew needs its new steps

    def _update_seen(self) -> None:
        """Each page's view model is asked while the pane is seen and the page is the tab shown (the
        coefficient page's while the pane is seen: its timeline and badge are over every page)."""
        seen, current = self.seen(), PAGES[self.tabs.currentIndex()]
        shown = seen and self.tabs.isVisible()  # the pages, once the run's coefficients can be shown
        for page, view in self.pages.items():
            view.seen = seen if page == "coefficient" else shown and page == current
        for page, tab in (("tokens", self.tokens_tab), ("curvature", self.curvature_tab)):
            tab.view.seen = shown and page == current  # the readings' views (docs/readings.md)
        if seen and current in self.pages:
            self._draw_page(current) if current != "coefficient" else self.page.frame()

    def seen_changed(self, seen: bool) -> None:
        if seen:
            self._list_steps()
        self._update_seen()

    def _say(self, text: str, error: bool = False) -> None:
        self.status.setText(f"<span style='color:#e8590c'>{text}</span>" if error and text else text)
        self.status.setToolTip(text)  # a long message is clipped to the one line
