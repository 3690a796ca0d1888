"""The one heatmap widget of the app: attention, masks, positional encodings, coefficient matrices.

Follows pyqtgraph's MatrixDisplayExample: one row-major `ImageItem` (``axisOrder='row-major'``) in a plot
whose y axis is inverted, so entry [i, j] is drawn at row i from the top and column j from the left (a causal
mask shows lower-triangular), labels on both axes through `AxisItem.setTicks` (coarse levels first, finer
ones appear when zoomed in), and a `ColorBarItem` with the colormap and levels of `engine.figures.export`
(sequential for probabilities, diverging and symmetric for signed matrices). Non-finite entries (−inf
from a mask) become NaN, which the image leaves transparent over a hatched backdrop: "masked".
Hover emits and shows (row label, column label, value); the wheel zooms and dragging pans, "fit" undoes
them; "colours" chooses the colour map and range (HeatmapControls); "Export…" writes PNG, SVG or PDF
through matplotlib, in the same colours, or CSV/NPY: the widget says what to write (sig_export_requested)
and the app's export queue writes it off the GUI thread (gui/exports.py).

The plot itself is built the first time the widget is painted (or its plot is asked for), in a room of
gui/widgets/first_sight.py: the window holds 30 heatmaps, most on tabs not yet seen, and their pyqtgraph items
were two thirds of the time to open a window. Until then set_matrix only keeps what to draw, and exports, which
draw from that, work as well.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QMetaMethod, QPointF, QRect, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QAction, QBrush, QColor, QFont, QFontMetrics, QPainter, QPixmap
from PySide6.QtWidgets import (QGraphicsItem, QHBoxLayout, QLabel, QSizePolicy, QToolButton,
                               QVBoxLayout, QWidget)

from engine.figures import colormap_tables, export

from .. import theme
from . import dialogs
from .axis_ticks import labelled, tick_plan
from .elided_label import ElidedLabel
from .first_sight import Room
from .heatmap_controls import HeatmapControls

EXPORT_FILTERS = ("PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf);;"
                  "CSV table (*.csv);;NumPy array (*.npy)")
_COLORMAPS: dict[str, pg.ColorMap] = {}


def colormap(kind: str, name: str | None = None) -> pg.ColorMap:
    """The pyqtgraph colormap `name` (a matplotlib name), else the kind's: matplotlib's colours, read from
    the table engine.figures.colormap_tables keeps of them, so exports match the screen."""
    name = name or export.COLORMAPS[kind]
    if name not in _COLORMAPS:
        colors = colormap_tables.table(name)
        _COLORMAPS[name] = pg.ColorMap(np.linspace(0.0, 1.0, len(colors)), colors, name=name)
    return _COLORMAPS[name]


BAR_AXIS_MIN = 45  # px: pyqtgraph's own width for a colour bar's axis


def _tick(value: float, span: float = 0.0) -> str:
    """A colour bar's number; within 1e-9 of the bar's `span` of zero it is 0 (a sequential map whose least value
    was round-off of zero had its end labelled "4.3e-19")."""
    return "0" if abs(value) <= 1e-9 * span else f"{value:.3g}"


class MaskedBackdrop(QGraphicsItem):
    """A hatched rectangle behind the image; NaN pixels are transparent, so masked entries show hatched.
    The hatch is drawn in device pixels, so its density does not change with zoom, from a pixmap kept
    until the view's size changes (a pattern fill per frame cost more than the image itself)."""

    def __init__(self):
        super().__init__()
        self._rect = QRectF()
        self._pixmap: QPixmap | None = None
        self.setZValue(-10)

    def set_rect(self, rect: QRectF) -> None:
        self.prepareGeometryChange()
        self._rect = QRectF(rect)

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(self, painter: QPainter, option, widget=None) -> None:
        device = painter.transform().mapRect(self._rect).toAlignedRect()
        device = device.intersected(QRect(0, 0, painter.device().width(), painter.device().height()))
        if device.isEmpty():
            return
        if self._pixmap is None or self._pixmap.size() != device.size():
            self._pixmap = QPixmap(device.size())
            self._pixmap.fill(QColor(export.MASKED_FILL))
            hatch = QPainter(self._pixmap)
            hatch.fillRect(self._pixmap.rect(), QBrush(QColor(export.MASKED_HATCH), Qt.BrushStyle.BDiagPattern))
            hatch.end()
        painter.save()
        painter.resetTransform()
        painter.drawPixmap(device.topLeft(), self._pixmap)
        painter.restore()


class HeatmapWidget(QWidget):
    """A matrix with token (or index) labels, colour bar, hover read-out, zoom, pan and Export…"""

    sig_hovered = Signal(str, str, float)  # row label, column label, value (NaN: masked)
    sig_cell_clicked = Signal(int, int)    # row, column
    # what Export… asks to write, served by the app's export queue (gui/widgets/plot_export.py routes it):
    # the path, the dialog's FigureOptions, write(path) -> Path (holding copies) and what it is, in words
    sig_export_requested = Signal(object, object, object, str)

    def __init__(self, parent: QWidget | None = None, *, title: str = "", colorbar: bool = True,
                 aspect_locked: bool = True):
        super().__init__(parent)
        self._matrix = np.full((1, 1), np.nan)
        self._row_labels: list[str] = ["0"]
        self._col_labels: list[str] = ["0"]
        self._pinned_cols: tuple[int, ...] = ()
        self._marks: dict[tuple[int, int], str] = {}  # marked cells → what the mark says (set_marks)
        self._kind, self._title, self._row_title, self._col_title = "probability", title, "", ""
        self._levels = (0.0, 1.0)
        self._tick_key: tuple = ()
        self._hovered: tuple[int, int] | None = None  # the cell the read-out describes
        self._label_widths: dict[tuple[tuple[str, ...], float], int] = {}
        self._caption_source = self._folder_source = self._name_source = None
        self._cmap_name: str | None = None    # None: the kind's colour map
        self._range_mode = "auto"
        self._given_levels: tuple[float, float] | None = None
        self._colorbar, self._aspect_locked = colorbar, aspect_locked
        self._least_plot = 0  # px the plot keeps however small the widget is given (keep_plot_height)
        self._view: pg.GraphicsLayoutWidget | None = None  # the plot, built by _ensure_view
        self._plot = self._image = self._bar = self._backdrop = self._mark_item = None
        self._build()

    # --- public API -------------------------------------------------------------------------------

    def _plot_part(attr: str, doc: str) -> property:  # a helper of the class body, deleted below
        def get(self):
            self._ensure_view()  # asked for, the plot is built now
            return getattr(self, attr)
        return property(get, doc=doc)

    image_item = _plot_part("_image", "The pyqtgraph ImageItem showing the matrix.")
    plot_item = _plot_part("_plot", "The pyqtgraph PlotItem holding the image and the axes.")
    colour_bar = _plot_part("_bar", "The pyqtgraph ColorBarItem (None for a heatmap made without one).")
    view = _plot_part("_view", "The graphics view holding the plot and the colour bar.")
    del _plot_part

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def levels(self) -> tuple[float, float]:
        """The colour levels in use (the kind's, or what set_matrix was given)."""
        return self._levels

    def matrix(self) -> np.ndarray:
        """The displayed matrix (float, NaN where masked); do not modify."""
        return self._matrix

    def labels(self) -> tuple[list[str], list[str]]:
        return list(self._row_labels), list(self._col_labels)

    def title(self) -> str:
        return self._title

    def title_width(self) -> int:
        """Pixels the title needs on one line (in its bold font, once the widget is polished)."""
        self._title_label.ensurePolished()
        return self._title_label.fontMetrics().horizontalAdvance(self._title)

    def set_matrix(self, matrix, row_labels=None, col_labels=None, kind: str = "probability",
                   title: str | None = None, row_title: str | None = None, col_title: str | None = None,
                   levels: tuple[float, float] | None = None, pinned_cols: tuple[int, ...] = ()) -> None:
        """Show a 2-D matrix, rows downward. kind: probability (levels 0..1), signed (diverging, symmetric)
        or sequential (min..max); `levels` overrides. Labels default to indices; −inf and NaN show masked.
        `pinned_cols` keep their labels at every zoom (the others are thinned to fit)."""
        a = export.display_matrix(matrix).astype(np.float32)
        if a.ndim != 2:
            raise ValueError(f"a heatmap needs a 2-D matrix, got shape {a.shape}")
        n, m = a.shape
        self._row_labels = export.axis_labels(row_labels, n)
        self._col_labels = export.axis_labels(col_labels, m)
        self._pinned_cols = tuple(c for c in pinned_cols if 0 <= c < m)
        if title is not None and title != self._title:
            self._title = title
            self._title_label.setText(title)
            self._place_title()
        if row_title is not None and row_title != self._row_title:  # setLabel re-lays out the axis
            self._row_title = row_title
            self._tick_key = ()  # the axis's width holds the title's line: measured again
            if self._view is not None:
                self._plot.setLabel("left", row_title)
        if col_title is not None and col_title != self._col_title:
            self._col_title = col_title
            if self._view is not None:
                self._plot.setLabel("bottom", col_title)
        if kind != self._kind:
            if kind not in export.COLORMAPS:
                raise ValueError(f"unknown heatmap kind {kind!r}; one of {', '.join(export.COLORMAPS)}")
            self._kind = kind
            self._apply_colormap()
        shape_changed = a.shape != self._matrix.shape
        self._matrix = a
        self._given_levels = levels
        self._levels = self._levels_for(a, kind, levels)
        if self._view is not None:
            self._draw(shape_changed)
        if self._hovered is not None:  # the same cell now holds another step's or head's value (or none)
            (r, c), (n_now, m_now) = self._hovered, a.shape
            self._show_hovered((r, c) if r < n_now and c < m_now else None)

    def set_marks(self, marks) -> None:
        """Cells marked with a diamond drawn on the cell itself (never on its labels): (row, column, what the
        mark says), said in the read-out when the cell is hovered. Kept until set again."""
        self._marks = {(int(r), int(c)): text for r, c, text in marks}
        if self._view is not None:
            self._draw_marks()
        if self._hovered is not None:
            self._show_hovered(self._hovered)

    def marks(self) -> dict[tuple[int, int], str]:
        return dict(self._marks)

    def _draw_marks(self) -> None:
        n, m = self._matrix.shape
        cells = [(r, c) for r, c in self._marks if r < n and c < m]
        self._mark_item.setData([c + 0.5 for _, c in cells], [r + 0.5 for r, _ in cells])

    def _draw(self, shape_changed: bool) -> None:
        """Hand the matrix and its levels to the plot."""
        a, (lo, hi) = self._matrix, self._levels
        self._draw_marks()
        self._image.setImage(a, autoLevels=False, levels=(lo, hi))
        self._backdrop.setVisible(bool(np.isnan(a).any()))  # hatching costs a fill; draw it only if needed
        if self._bar is not None and self._bar.levels() != (lo, hi):  # a new range re-lays out its axis
            self._bar.setLevels((lo, hi))
            self._label_bar((lo, hi))
        self._update_ticks()
        if shape_changed:
            n, m = a.shape
            self._backdrop.set_rect(QRectF(0, 0, m, n))
            self.reset_view()

    def _levels_for(self, a: np.ndarray, kind: str, given) -> tuple[float, float]:
        if self._range_mode == "fixed":
            return self._levels
        if self._range_mode == "symmetric":
            return export.levels_for(a, "signed")
        return given or export.levels_for(a, kind)

    @property
    def range_mode(self) -> str:
        return self._range_mode

    @property
    def colormap_name(self) -> str:
        """The matplotlib name of the colour map in use."""
        return self._cmap_name or export.COLORMAPS[self._kind]

    def set_colormap(self, name: str | None) -> None:
        """A matplotlib colour map for this heatmap (None: the kind's)."""
        self._cmap_name = name
        self._apply_colormap()

    def set_range_mode(self, mode: str) -> None:
        """auto (the kind's levels, or the caller's), symmetric about 0, or fixed at the levels in use now."""
        if mode not in ("auto", "symmetric", "fixed"):
            raise ValueError(f"unknown range {mode!r}")
        self._range_mode = mode
        self._apply_levels(self._levels_for(self._matrix, self._kind, self._given_levels))

    def _apply_levels(self, levels: tuple[float, float]) -> None:
        self._levels = levels
        if self._view is None:
            return
        self._image.setLevels(levels)
        if self._bar is not None:
            if self._bar.levels() != levels:
                self._bar.setLevels(levels)
            self._label_bar(levels)  # also when the levels stay: a bar labelled before it was laid out kept "0"

    def _label_bar(self, levels: tuple[float, float]) -> None:
        """The colour bar's ends always carry their numbers (and 0 between them): left to pyqtgraph, a short
        bar kept only the one tick that fit, "0", and said nothing of the scale."""
        lo, hi = map(float, levels)
        major = [lo, hi] + ([0.0] if lo < 0 < hi else [])
        axis = self._bar.axis
        # pyqtgraph's coarsest tick level only: its finer levels labelled a tall bar every 0.05 (41 labels)
        coarse = (axis.tickValues(lo, hi, max(axis.height(), 1)) or [(None, [])])[0][1]
        minor = [v for v in coarse if all(abs(v - m) > 1e-9 * max(abs(lo), abs(hi)) for m in major)]
        span = max(abs(lo), abs(hi))
        axis.setTicks([[(v, _tick(v, span)) for v in major], [(v, _tick(v, span)) for v in minor]])
        # pyqtgraph drops a label wider than its axis: "-0.0025" did not fit the bar's 45 px, leaving "0"
        font = axis.style.get("tickFont") or axis.font()
        longest = max(QFontMetrics(font).horizontalAdvance(_tick(v, span)) for v in major)
        axis.setWidth(max(BAR_AXIS_MIN, longest + abs(axis.style.get("tickLength", 5)) + 8))

    def sizeHint(self) -> QSize:
        """Modest, so layouts share space by their stretch factors (a graphics view asks for 600×480)."""
        return QSize(300, 260)

    def keep_plot_height(self, px: int) -> None:
        """The plot keeps `px` of height: the widget asks for that, its read-out and its title on a row of its
        own above the tools, wherever the title is now, and for the width of the title beside them
        (minimumSizeHint). A minimum that followed the title's place would follow the width, and a scroll bar
        it brought would change the width."""
        self._least_plot = px
        self._room.setMinimumHeight(px)
        self.updateGeometry()

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        if self._least_plot:
            gap = max(0, self._layout.spacing())
            tools = max(t.sizeHint().height() for t in self._tools)
            least = (self._title_label.sizeHint().height() + gap + tools + gap + self._least_plot + gap
                     + self._readout.sizeHint().height())
            hint.setHeight(max(hint.height(), least))
            if not self._title_beside:  # as wide as with the title beside the tools: the same either way
                beside = (self._header.minimumSize().width() + max(0, self._header.spacing())
                          + self._title_label.minimumSizeHint().width())
                hint.setWidth(max(hint.width(), beside))
        return hint

    def chrome(self) -> QSize | None:
        """What the widget takes beside the matrix's own box: its title row, axes and colour bar, as laid out
        now (None before the plot is laid out)."""
        if self._view is None or self._plot.vb.width() <= 0 or self._plot.vb.height() <= 0:
            return None
        box = self._plot.vb.size()
        return QSize(max(0, self.width() - int(box.width())), max(0, self.height() - int(box.height())))

    def reset_view(self) -> None:
        """Fit the whole matrix, and keep fitting it as the widget resizes until the user zooms or pans."""
        if self._view is None:
            return  # a plot is built fitted
        self._plot.vb.autoRange(padding=0)
        self._plot.vb.enableAutoRange()

    def cell_at(self, view_pos: QPointF) -> tuple[int, int] | None:
        """(row, column) under a point in view coordinates, or None outside the matrix."""
        row, col = math.floor(view_pos.y()), math.floor(view_pos.x())
        n, m = self._matrix.shape
        return (row, col) if 0 <= row < n and 0 <= col < m else None

    def describe(self, row: int, col: int) -> tuple[str, str, float] | None:
        """What hover reports for a cell: row label, column label, value (None: nothing to report)."""
        return (f"{row} {self._row_labels[row]}", f"{col} {self._col_labels[col]}",
                float(self._matrix[row, col]))

    def set_caption_source(self, source, folder=None, name=None) -> None:
        """`source()` -> the caption of an exported figure (run, step, prompt), `folder()` -> where its
        Export… first opens (the open run's folder), `name()` -> what the file's suggested name starts with (the
        weight a coefficient belongs to: "G · step 245" named no weight): the pane knows them."""
        self._caption_source, self._folder_source, self._name_source = source, folder, name

    def export_caption(self) -> str:
        return self._caption_source() if self._caption_source is not None else ""

    def value_title(self) -> str:
        """What the colours measure, for the colour bar of an export: the title before its " · where"."""
        return self._title.split(" · ")[0].strip()

    def export_job(self):
        """write(path) -> Path of what is shown now, picklable for the export process; it holds its own
        references (set_matrix replaces arrays, never mutates them)."""
        matrix, kw = self._matrix, dict(row_labels=list(self._row_labels), col_labels=list(self._col_labels),
                                       kind=self._kind, title=self._title, row_title=self._row_title,
                                       col_title=self._col_title, levels=self._levels,
                                       value_title=self.value_title(), caption=self.export_caption(),
                                       cmap=self._cmap_name)
        return functools.partial(export.export_matrix, matrix=matrix, **kw)

    def export_to(self, path: str | Path) -> Path:
        """Write what is shown to path: PNG, SVG, PDF (matplotlib), CSV or NPY, from the suffix."""
        return self.export_job()(path)

    def export_dialog(self) -> None:
        """Ask for a path, resolution and width (the app's one dialog helper); export off the GUI thread."""
        slug = re.sub(r"[^0-9a-z]+", "-", self._title.lower()).strip("-") or "heatmap"
        lead = self._name_source() if self._name_source is not None else ""
        if lead:
            slug = f"{re.sub(r'[^0-9A-Za-z_.]+', '-', lead).strip('-')}-{slug}"
        start = self._folder_source() if self._folder_source is not None else ""
        chosen = dialogs.ask_export(self, "Export heatmap", EXPORT_FILTERS, suggested=f"{slug}.png", start=start)
        if chosen is not None:
            self.export_async(*chosen)

    def export_async(self, path: str | Path, options: export.FigureOptions | None = None) -> None:
        """Ask the app's export queue to write what is shown now (it says where, and how far it is)."""
        if not self.isSignalConnected(QMetaMethod.fromSignal(self.sig_export_requested)):
            self._readout.setText("Export is not available here: nothing writes this heatmap's files")
            return
        self.sig_export_requested.emit(Path(path), options or export.FigureOptions(), self.export_job(),
                                       f"heatmap {self.value_title() or Path(path).name}")

    # --- construction ----------------------------------------------------------------------------

    def _build(self) -> None:
        """The title, tools and read-out, and the room the plot will take."""
        self._title_label = ElidedLabel(self._title)
        bold = self._title_label.font()  # a bold font, not a style sheet: drawn the same, ~40 a window, and a
        bold.setBold(True)               # style sheet's label is polished again at each theme switch
        self._title_label.setFont(bold)
        self._export_action = QAction("Export…", self)
        self._export_action.setToolTip("Save this heatmap as PNG, SVG or PDF, or its numbers as CSV or NPY")
        self._export_action.triggered.connect(self.export_dialog)
        export_button = QToolButton()
        export_button.setDefaultAction(self._export_action)
        export_button.setAutoRaise(True)
        header = QHBoxLayout()
        header.setContentsMargins(2, 0, 2, 0)
        self.controls = HeatmapControls()
        self.controls.sig_fit.connect(self.reset_view)
        self.controls.sig_colormap_chosen.connect(self.set_colormap)
        self.controls.sig_range_chosen.connect(self.set_range_mode)
        header.addStretch(0)  # takes the room only while the title is on its own row
        header.addWidget(self._title_label, 1)
        header.addWidget(self.controls)
        header.addWidget(export_button)
        self._header, self._tools = header, (self.controls, export_button)
        self._title_beside = True
        self._tick_font = QFont()
        self._tick_font.setPointSizeF(max(7.0, self._tick_font.pointSizeF() - 1))
        self._room = Room(self._ensure_view)

        self._readout = QLabel(" ")
        self._readout.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(1)
        layout.addLayout(header)
        layout.addWidget(self._room, 1)
        layout.addWidget(self._readout)
        self._layout = layout

    def _ensure_view(self) -> None:
        """Build the plot in the room kept for it and draw what set_matrix was given."""
        if self._view is not None:
            return
        self._build_view(self._colorbar, self._aspect_locked)
        self._room.hold(self._view)
        if self.isVisible():
            self._view.show()
            self._room.layout().activate()  # the colour bar's labels below are chosen for its height
        for name, title in (("left", self._row_title), ("bottom", self._col_title)):
            if title:
                self._plot.setLabel(name, title)
        self._apply_colormap()
        self._restyle()
        self._draw(shape_changed=True)
        self._apply_levels(self._levels)  # labels the colour bar's ends even at its first levels
        if self.isVisible():
            self._view.ci.layout.activate()  # laid out now, with the bar's width for its labels, as a plot
                                             # built with the widget is when shown

    def _build_view(self, colorbar: bool, aspect_locked: bool) -> None:
        self._view = pg.GraphicsLayoutWidget()
        self._view.ci.setContentsMargins(0, 6, 0, 6)  # room for the colour bar's end labels
        self._view.scene().contextMenu = [self._export_action]  # replaces pyqtgraph's own exporter
        self._plot = self._view.addPlot(row=0, col=0)
        self._plot.invertY(True)
        self._plot.setAspectLocked(aspect_locked)
        self._plot.hideButtons()
        self._plot.setMenuEnabled(False, enableViewBoxMenu=True)
        self._plot.vb.setDefaultPadding(0)
        self._image = pg.ImageItem(axisOrder="row-major")
        self._backdrop = MaskedBackdrop()
        self._plot.addItem(self._backdrop)
        self._plot.addItem(self._image)
        # white diamonds edged in black read on every colour map, dark or light
        self._mark_item = pg.ScatterPlotItem(symbol="d", size=12, brush=pg.mkBrush("#ffffff"),
                                             pen=pg.mkPen("#000000", width=1.5), pxMode=True)
        self._mark_item.setZValue(10)
        self._plot.addItem(self._mark_item)
        self._bar = None
        if colorbar:
            self._bar = pg.ColorBarItem(interactive=False, width=12, colorMapMenu=False)
            self._bar.setImageItem(self._image)
            self._view.addItem(self._bar, row=0, col=1)
        for name in ("left", "bottom"):
            axis = self._plot.getAxis(name)
            axis.setStyle(tickFont=self._tick_font)
            # drawn from a pixmap, re-rendered only when the range changes: a cursor moving over the plot
            # repaints what it crosses, and axes repainted per frame were most of a weight scrub's cost
            axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self._plot.vb.sigRangeChanged.connect(self._update_ticks)
        self._plot.vb.sigResized.connect(self._update_ticks)
        self._view.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self._view.scene().sigMouseClicked.connect(self._on_mouse_clicked)

    def _place_title(self) -> None:
        """The title beside the tools while both fit, else on a row of its own above them (a title cut to
        "ΔW = W(245) − W(2…" named no step)."""
        need = (self.title_width() + 16
                + sum(t.sizeHint().width() for t in self._tools))
        beside = self.width() >= need
        if beside == self._title_beside:
            return
        self._title_beside = beside
        self._header.removeWidget(self._title_label)
        self._layout.removeWidget(self._title_label)
        if beside:
            self._header.insertWidget(1, self._title_label, 1)
        else:
            self._layout.insertWidget(0, self._title_label)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._place_title()

    def _apply_colormap(self) -> None:
        if self._view is None:
            return
        cmap = colormap(self._kind, self._cmap_name)
        if self._bar is not None:
            self._bar.setColorMap(cmap)
        else:
            self._image.setColorMap(cmap)

    def _update_ticks(self, *_) -> None:
        """Label every row and column that fits at the current zoom, in a smaller font before fewer
        (axis_ticks.tick_plan; re-run on zoom, pan and resize, so zooming in reveals every token)."""
        if self._view is None:
            return
        vb = self._plot.vb
        (x0, x1), (y0, y1) = vb.viewRange()
        key = []
        for name, labels, span, pixels in (("bottom", self._col_labels, x1 - x0, vb.width()),
                                           ("left", self._row_labels, y1 - y0, vb.height())):
            labels = tuple(labels)
            per_cell = pixels / span if span > 0 and pixels > 0 else math.inf  # not laid out yet
            plan = tick_plan(per_cell, lambda pt: self._label_size(labels, name == "bottom", pt),
                             self._tick_font.pointSizeF())
            key.append((name, plan, labels, self._pinned_cols if name == "bottom" else ()))
        if tuple(key) == self._tick_key:
            return
        self._tick_key = tuple(key)
        for name, plan, labels, pinned in key:
            axis = self._plot.getAxis(name)
            font = QFont(self._tick_font)
            font.setPointSizeF(plan.point_size)
            if axis.style["tickFont"] is None or axis.style["tickFont"].pointSizeF() != plan.point_size:
                axis.setStyle(tickFont=font)
            axis.setTicks([labelled(list(labels), plan.step, pinned)])
            if name == "left" and labels:
                # as wide as its widest label, shown or not: sized to the labels the step kept, the axis
                # narrowed the plot, which changed the step, which widened it again, ~200 times a second
                # (a GPT-2 prompt's one-head tiles, seen under Xvfb: the window stopped answering)
                widest = max(map(QFontMetrics(font).horizontalAdvance, labels))
                # and the axis's title beside them: without its line, the rotated title ("query") was drawn
                # over the labels in every token-labelled heatmap
                title = math.ceil(axis.label.boundingRect().height()) if self._row_title else 0
                axis.setWidth(widest + abs(axis.style.get("tickLength", 5)) + 8 + title)

    def _label_size(self, labels: tuple[str, ...], horizontal: bool, point_size: float) -> int:
        """Pixels one label needs along its axis at a font size: the widest label across (with a gap),
        one line of text down (measured once per set of labels and size: every refresh asks)."""
        font = QFont(self._tick_font)
        font.setPointSizeF(point_size)
        metrics = QFontMetrics(font)
        if not horizontal:
            return metrics.height()
        key = (labels, point_size)
        if key not in self._label_widths:
            if len(self._label_widths) > 64:
                self._label_widths.clear()
            self._label_widths[key] = max(map(metrics.horizontalAdvance, labels)) + 3
        return self._label_widths[key]

    def _restyle(self) -> None:
        if self._view is None:
            return  # a plot is built in the theme of its day
        colors = theme.plot_colors()
        self._view.setBackground(colors.background)
        pen = pg.mkPen(colors.foreground)
        for name in ("left", "bottom"):
            axis = self._plot.getAxis(name)
            axis.setPen(pen)
            axis.setTextPen(pen)
        if self._bar is not None:
            self._bar.axis.setPen(pen)
            self._bar.axis.setTextPen(pen)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._restyle()
        super().changeEvent(event)

    # --- events -----------------------------------------------------------------------------------

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        cell = None
        if self._plot.vb.sceneBoundingRect().contains(scene_pos):
            cell = self.cell_at(self._plot.vb.mapSceneToView(scene_pos))
        self._show_hovered(cell)

    def _show_hovered(self, cell: tuple[int, int] | None) -> None:
        """The read-out of the cell under the mouse; cleared when the mouse leaves the cells (a read-out
        left from another step or head named values no longer shown)."""
        described = None if cell is None else self.describe(*cell)
        if described is None:
            if self._hovered is not None:
                self._hovered = None
                self._readout.setText(" ")
            return
        self._hovered = cell
        row_label, col_label, value = described
        shown = "masked" if math.isnan(value) else f"{value:.4g}"
        mark = self._marks.get(cell)
        self._readout.setText(f"{row_label}  ·  {col_label}  →  {shown}" + (f"  ◆ {mark}" if mark else ""))
        self.sig_hovered.emit(row_label, col_label, value)

    def _on_mouse_clicked(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton or event.double():
            return
        cell = self.cell_at(self._plot.vb.mapSceneToView(event.scenePos()))
        if cell is not None:
            self.sig_cell_clicked.emit(*cell)
