"""One layer's attention drawn as lines between tokens, as BertViz's head view draws it (Vig 2019): the prompt's
tokens in two columns, each query on the left joined to the keys it attends to on the right, one colour per
head (ticked above), a line as opaque as its weight. Hovering a token keeps only its lines — what it attends
to (a query) or what attends to it (a key) — and the read-out names each head's strongest link; Export… writes
the figure or the layer's weights (engine/figures/attention_lines.py) through the app's export queue.

Render only: it is given the layer's weights (H, T, T) and the tokens, and paints with QPainter; which lines
to draw is engine.figures.attention_lines.line_segments, the export's too, kept until the weights, the heads
or the hovered token change.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
from PySide6.QtCore import QMetaMethod, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen, QPixmap, QIcon
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from engine.figures import attention_lines as lines_export
from engine.figures.export import FigureOptions
from engine.figures.palette import color_of

from .. import theme
from . import dialogs
from .elided_label import ElidedLabel
from .heatmap import EXPORT_FILTERS

MIN_PITCH = 11  # px a token's row needs to carry its label; denser rows label every k-th token
COLUMN_GAP = 8  # px between a column of tokens and the lines


class LinesCanvas(QWidget):
    """The two columns of tokens and the lines between them."""

    sig_hovered = Signal(object, object)  # the query hovered (int or None), the key hovered (int or None)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.weights = np.zeros((0, 0, 0))
        self.tokens: list[str] = []
        self.heads: list[int] = []
        self.hover: tuple[int | None, int | None] = (None, None)
        self._segments: list | None = None
        self.setMouseTracking(True)
        self.setMinimumSize(200, 150)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def show_layer(self, weights: np.ndarray, tokens: list[str], heads: list[int]) -> None:
        self.weights, self.tokens, self.heads = weights, list(tokens), list(heads)
        self._segments = None
        self.update()

    def segments(self) -> list:
        if self._segments is None:
            q, k = self.hover
            self._segments = lines_export.line_segments(self.weights, self.heads, q, k) if self.tokens else []
        return self._segments

    # ---- geometry ---------------------------------------------------------------------------

    def _font(self) -> QFont:
        font = QFont(self.font())
        font.setStyleHint(QFont.StyleHint.Monospace)
        font.setFamily("monospace")
        font.setPointSizeF(max(6.0, min(10.0, 0.7 * self._pitch())))
        return font

    def _pitch(self) -> float:
        return self.height() / max(len(self.tokens), 1)

    def row_y(self, i: int) -> float:
        return (i + 0.5) * self._pitch()

    def columns(self) -> tuple[float, float]:
        """x of the left column's line ends and of the right column's."""
        metrics = QFontMetrics(self._font())
        width = max((metrics.horizontalAdvance(t) for t in self.tokens), default=0) + COLUMN_GAP
        return float(width), float(self.width() - width)

    def token_at(self, pos: QPointF) -> tuple[int | None, int | None]:
        """(query, None) over the left column, (None, key) over the right one, else (None, None)."""
        if not self.tokens:
            return None, None
        i = int(pos.y() // self._pitch())
        if not 0 <= i < len(self.tokens):
            return None, None
        left, right = self.columns()
        if pos.x() <= left:
            return i, None
        if pos.x() >= right:
            return None, i
        return None, None

    # ---- painting and the mouse ---------------------------------------------------------------

    def paintEvent(self, event) -> None:  # Qt's name
        c = theme.plot_colors()
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(c.background))
        if not self.tokens:
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        left, right = self.columns()
        for s in self.segments():
            colour = QColor(color_of(s.head))
            colour.setAlphaF(min(1.0, 0.05 + s.weight))  # as opaque as its weight: the strong links stand out
            painter.setPen(QPen(colour, 0.8 + 2.2 * s.weight))
            painter.drawLine(QPointF(left, self.row_y(s.query)), QPointF(right, self.row_y(s.key)))
        font = self._font()
        painter.setFont(font)
        pitch, every = self._pitch(), max(1, int(np.ceil(MIN_PITCH / max(self._pitch(), 1e-9))))
        hovered = {("q", self.hover[0]), ("k", self.hover[1])}
        for i, token in enumerate(self.tokens):
            shown = i % every == 0 or ("q", i) in hovered or ("k", i) in hovered
            for side, x0, x1, align in (("q", 0.0, left - COLUMN_GAP / 2, Qt.AlignmentFlag.AlignRight),
                                        ("k", right + COLUMN_GAP / 2, float(self.width()),
                                         Qt.AlignmentFlag.AlignLeft)):
                box = QRectF(x0, self.row_y(i) - pitch / 2, x1 - x0, max(pitch, 1.0))
                if (side, i) in hovered:
                    painter.fillRect(box, QColor(c.accent).darker(150))
                if shown:
                    painter.setPen(QColor(c.foreground))
                    painter.drawText(box, align | Qt.AlignmentFlag.AlignVCenter, token)

    def mouseMoveEvent(self, event) -> None:  # Qt's name
        self._set_hover(self.token_at(event.position()))

    def leaveEvent(self, event) -> None:  # Qt's name
        self._set_hover((None, None))

    def _set_hover(self, hover: tuple[int | None, int | None]) -> None:
        if hover != self.hover:
            self.hover = hover
            self._segments = None
            self.update()
            self.sig_hovered.emit(*hover)


class AttentionLinesWidget(QWidget):
    """The canvas with its title, a toggle per head in that head's colour, Export… and a read-out."""

    # as HeatmapWidget's: path, FigureOptions, write(path) (picklable), what it is, in words
    sig_export_requested = Signal(object, object, object, str)

    def __init__(self, parent: QWidget | None = None, *, title: str = "lines"):
        super().__init__(parent)
        self.layer, self.step = 0, None
        self._title = title
        self._caption_source = self._folder_source = None
        self.title_label = ElidedLabel(title)
        self.title_label.setStyleSheet("font-weight: bold")
        self.head_row = QHBoxLayout()
        self.head_row.setContentsMargins(0, 0, 0, 0)
        self.head_buttons: list[QToolButton] = []
        export_button = QToolButton()
        export_button.setText("Export")
        export_button.setAutoRaise(True)
        export_button.setToolTip("Save these lines as PNG, SVG or PDF, or the layer's weights as CSV or NPY")
        export_button.clicked.connect(self.export_dialog)
        header = QHBoxLayout()
        header.setContentsMargins(2, 0, 2, 0)
        header.addWidget(self.title_label, 1)
        header.addLayout(self.head_row)
        header.addWidget(export_button)
        self.canvas = LinesCanvas()
        self.readout = QLabel(" ")
        self.readout.setObjectName("lines_readout")
        self.readout.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.canvas, 1)
        layout.addWidget(self.readout)
        self.canvas.sig_hovered.connect(self._on_hovered)

    def sizeHint(self) -> QSize:
        return QSize(320, 360)

    def set_layer(self, weights: np.ndarray, tokens, layer: int, step: int | None = None) -> None:
        """Show one layer's attention (H, T, T) over `tokens`; the heads ticked stay ticked."""
        self.layer, self.step = layer, step
        self._ensure_buttons(weights.shape[0])
        self.title_label.setText(f"{self._title} · layer {layer}" + ("" if step is None else f" · step {step}"))
        self.canvas.show_layer(np.asarray(weights), list(tokens), self.heads())
        self._on_hovered(*self.canvas.hover)

    def heads(self) -> list[int]:
        return [h for h, b in enumerate(self.head_buttons) if b.isChecked()]

    def set_heads(self, heads) -> None:
        for h, b in enumerate(self.head_buttons):
            b.setChecked(h in heads)

    def _ensure_buttons(self, n: int) -> None:
        if len(self.head_buttons) == n:
            return
        for b in self.head_buttons:
            self.head_row.removeWidget(b)
            b.deleteLater()
        self.head_buttons = []
        for h in range(n):
            b = QToolButton()
            b.setCheckable(True)
            b.setChecked(True)
            b.setAutoRaise(True)
            b.setText(f"H{h}")
            b.setObjectName(f"lines_head_{h}")
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            b.setIcon(_swatch(color_of(h)))
            b.setToolTip(f"Show head {h}'s lines, in this colour")
            b.toggled.connect(self._on_heads_toggled)
            self.head_row.addWidget(b)
            self.head_buttons.append(b)

    def _on_heads_toggled(self, _on: bool) -> None:
        self.canvas.show_layer(self.canvas.weights, self.canvas.tokens, self.heads())
        self._on_hovered(*self.canvas.hover)

    def _on_hovered(self, query, key) -> None:
        c = self.canvas
        if (query is None and key is None) or not c.tokens:
            self.readout.setText("Hover a token: what it attends to (left), or what attends to it (right)")
            return
        parts = []
        for h in c.heads:
            row = np.nan_to_num(c.weights[h, query] if query is not None else c.weights[h, :, key], nan=0.0)
            best = int(np.argmax(row))
            parts.append(f"H{h} → {c.tokens[best]!r} {row[best]:.2f}" if query is not None
                         else f"H{h} ← {c.tokens[best]!r} {row[best]:.2f}")
        where = f"query {query} {c.tokens[query]!r}" if query is not None else f"key {key} {c.tokens[key]!r}"
        self.readout.setText(f"{where}: " + " · ".join(parts))

    # ---- export ---------------------------------------------------------------------------------

    def set_caption_source(self, source, folder=None) -> None:
        """As HeatmapWidget's: the exported figure's caption (run, step, prompt) and the folder Export… opens."""
        self._caption_source, self._folder_source = source, folder

    def export_job(self):
        """write(path) of what is shown now, picklable for the export process (copies, not the widget)."""
        c = self.canvas
        return functools.partial(lines_export.export_lines, weights=np.array(c.weights, copy=True),
                                 tokens=list(c.tokens), heads=list(c.heads), layer=self.layer,
                                 title=self.title_label.text(),
                                 caption=self._caption_source() if self._caption_source else "")

    def export_dialog(self) -> None:
        slug = re.sub(r"[^0-9a-z]+", "-", f"attention lines layer {self.layer}".lower()).strip("-")
        start = self._folder_source() if self._folder_source is not None else ""
        chosen = dialogs.ask_export(self, "Export attention lines", EXPORT_FILTERS, suggested=f"{slug}.png",
                                    start=start)
        if chosen is not None:
            self.export_async(*chosen)

    def export_async(self, path, options: FigureOptions | None = None) -> None:
        if not self.isSignalConnected(QMetaMethod.fromSignal(self.sig_export_requested)):
            self.readout.setText("Export is not available here: nothing writes these lines' files")
            return
        self.sig_export_requested.emit(Path(path), options or FigureOptions(), self.export_job(),
                                       f"attention lines of layer {self.layer}")


def _swatch(colour: str) -> QIcon:
    pixmap = QPixmap(12, 12)
    pixmap.fill(QColor(colour))
    return QIcon(pixmap)
