"""The block diagram of a GPT drawn from its ModelConfig: embeddings and positions → each block (layer
norms, the heads of attention with the mask in force, the MLP, residual arrows) → unembedding → loss.

Every trained weight is a clickable item carrying its state-dict name (engine.model.weight_layout.weight_shapes; a test
checks the diagram draws exactly those names). Clicking one calls `on_select(name)`; the pane forwards it
to `Session.select_weight`. Which one is outlined is read from `selected()` (the pane's: the workspace's
selection), never kept here: a copy of it kept the builder's outline on a weight the Weight pane had left, or
that another run's model did not have. Drawn with QGraphicsView, scaled to the pane's width and scrolled
vertically.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (QGraphicsEllipseItem, QGraphicsPathItem, QGraphicsRectItem,
                               QGraphicsScene, QGraphicsSimpleTextItem, QGraphicsView)

from engine.configs.config import ModelConfig
from engine.configs.fields import BY_KEY
from engine.model.weight_layout import weight_shapes

from ...theme import plot_colors

ROW_H, GAP, PAD = 24.0, 13.0, 10.0
_MASKS = {"causal": "causal mask", "banded": "banded causal mask (β={band})", "none": "no mask"}
_LOSSES = {"cross_entropy": "softmax → cross-entropy loss",
           "squared_error": "squared error ½‖onehot − logits‖² (Euler form)"}


class WeightItem(QGraphicsRectItem):
    """One trained weight: a box (matrix) or a chip (bias, gain) that selects itself when clicked."""

    def __init__(self, rect: QRectF, name: str, on_click: Callable[[str], None]):
        super().__init__(rect)
        self.name, self._on_click = name, on_click
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.selected = False

    def mousePressEvent(self, event):
        if event.button() == Qt.MouseButton.LeftButton:
            self._on_click(self.name)
            event.accept()
        else:
            super().mousePressEvent(event)

    def hoverEnterEvent(self, event):
        self.setPen(QPen(QColor(plot_colors().accent), 2))

    def hoverLeaveEvent(self, event):
        self.restyle()

    def restyle(self, c=None) -> None:
        c = c or plot_colors()
        self.setPen(QPen(QColor(c.accent), 3) if self.selected else QPen(QColor(c.foreground), 1))


class BlockDiagram(QGraphicsView):
    """Shows a ModelConfig; `items` maps weight names to their WeightItem."""

    def __init__(self, on_select: Callable[[str], None], selected: Callable[[], str | None] = lambda: None,
                 parent=None):
        super().__init__(parent)
        self.setObjectName("block_diagram")
        self.setScene(QGraphicsScene(self))
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.on_select = on_select
        self.items: dict[str, WeightItem] = {}
        self.cfg: ModelConfig | None = None
        self.selected = selected  # () -> the selected weight's name, read each time it is outlined

    def show_config(self, cfg: ModelConfig) -> None:
        if cfg == self.cfg:
            return
        self.cfg = cfg
        self._redraw()

    def outline(self) -> None:
        """Outline the selected weight, as `selected()` reads now."""
        name, colors = self.selected(), plot_colors()  # the theme read once, not once per item (197)
        for n, item in self.items.items():
            item.selected = n == name
            item.restyle(colors)

    def _redraw(self) -> None:
        self.scene().clear()
        self.items = {}
        if self.cfg is not None:
            _Drawing(self, self.cfg).draw()
            self.outline()
        self.scene().setSceneRect(self.scene().itemsBoundingRect().adjusted(-PAD, -PAD, PAD, PAD))
        self._fit()

    def _fit(self) -> None:
        rect = self.sceneRect()
        if rect.width() <= 0:
            return
        # as wide as the view, enlarged past its own size only as far as the whole diagram stays in sight: at
        # 1000×650 it was drawn at 1.6× in a short box, a block's top boxes filling it
        width_fit = (self.viewport().width() - 4) / rect.width()
        height_fit = (self.viewport().height() - 4) / rect.height()
        scale = min(max(width_fit, 0.5), max(height_fit, 1.0), 1.6)
        self.resetTransform()
        self.scale(scale, scale)

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event):
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self.cfg is not None:
            self._redraw()


class _Drawing:
    """Lays the diagram out top to bottom, one row of items at a time, centred on x = 0."""

    def __init__(self, view: BlockDiagram, cfg: ModelConfig):
        self.view, self.scene, self.cfg = view, view.scene(), cfg
        self.shapes = weight_shapes(cfg)  # once: asked per weight's tooltip, GPT-2 small's 197 asks were
                                          # 20 of the 35 ms the diagram took on the GUI thread
        self.c = plot_colors()
        self.fg = QColor(self.c.foreground)
        self.font = QFont(view.font())
        self.metrics = QFontMetricsF(self.font)
        self.y = 0.0
        self.extent = 0.0  # half the width of the widest row of the block being drawn

    def draw(self) -> None:
        m = self.cfg
        self.row([("tokens", None, "op")])
        embed = [("W_E", "W_E", "weight")]
        if m.pos_encoding == "learned":
            embed += [("+", None, "plus"), ("W_P", "W_P", "weight")]
        elif m.pos_encoding == "sinusoidal":
            embed += [("+", None, "plus"), ("sinusoidal positions", None, "op")]
        self.row(embed)
        for i in range(m.n_layer):
            self.block(i)
        if m.has_final_norm:
            self.row([("LN_f g", "ln_f.g", "vector"), ("LN_f b", "ln_f.b", "vector")])
        self.row([("W_Eᵀ (tied)", None, "op") if m.tied else ("W_U", "W_U", "weight"),
                  ("b_U", "b_U", "vector")])
        self.row([(_LOSSES.get(m.loss, m.loss), None, "op")], arrow=True)

    def block(self, i: int) -> None:
        m, p = self.cfg, f"blocks.{i}."
        top = self.y + GAP / 2
        self.y += GAP
        self.extent = 0.0
        title = f"block {i}" + (f" · dropout {m.dropout:g}" if m.dropout else "")
        mask = _MASKS.get(m.mask, m.mask).format(band=m.band)
        qkv = [(s, p + s, "heads") for s in ("W_Q", "W_K", "W_V")]
        out = [("W_O", p + "W_O", "weight")]
        if m.attn_bias:
            qkv = [c for s, part in zip(("Q", "K", "V"), qkv) for c in (part, (f"b_{s}", f"{p}b_{s}", "vector"))]
            out.append(("b_O", p + "b_O", "vector"))
        attention = [
            qkv,
            [(f"softmax(QKᵀ/√d_k + M)·V · {m.n_head} head{'s' * (m.n_head > 1)} · {mask}", None, "op")],
            out,
        ]
        act = BY_KEY["model.activation"].choice_label(m.activation)
        mlp = [[("W_in", p + "W_in", "weight"), ("b_in", p + "b_in", "vector")], [(act, None, "op")],
               [("W_out", p + "W_out", "weight"), ("b_out", p + "b_out", "vector")]]
        for k, rows in ((1, attention), (2, mlp)):
            norm = [(f"LN{k} g", f"{p}ln{k}.g", "vector"), (f"LN{k} b", f"{p}ln{k}.b", "vector")]
            self.sublayer(([norm] if m.norm == "pre" else []) + rows)
            if m.norm == "post":
                self.row(norm)
        half = max(self.extent + 24, 130.0)
        frame = QGraphicsRectItem(QRectF(-half, top - 2, 2 * half, self.y - top + GAP / 2 + 4))
        frame.setPen(QPen(QColor(self.c.block), 1.5, Qt.PenStyle.DashLine))
        frame.setZValue(-2)
        self.scene.addItem(frame)
        label = self.scene.addSimpleText(title, self.font)
        label.setBrush(self.fg)
        label.setPos(frame.rect().right() - label.boundingRect().width() - 6, top + 2)
        self.y += GAP / 2

    def sublayer(self, rows) -> None:
        """Rows on the main path; with residual connections, a bypass into a ⊕ after them."""
        split = self.y
        lefts = [self.row(r) for r in rows]
        if not self.cfg.residual:
            return
        self.row([("+", None, "plus")])
        x = min(lefts) - 16
        path = QPainterPath(QPointF(0, split + GAP / 2))
        path.lineTo(x, split + GAP / 2)
        path.lineTo(x, self.y - ROW_H / 2)
        path.lineTo(-ROW_H / 2 + 4, self.y - ROW_H / 2)
        self.line(path)

    def row(self, items, arrow: bool = True) -> float:
        """Draw items side by side under the previous row; returns the row's left edge."""
        if self.y > 0 and arrow:
            self.line(QPainterPath(QPointF(0, self.y)), to=QPointF(0, self.y + GAP), head=True)
            self.y += GAP
        widths = [self.width_of(text, kind) for text, _, kind in items]
        total = sum(widths) + 8 * (len(items) - 1)
        x = -total / 2
        for (text, name, kind), w in zip(items, widths):
            self.item(QRectF(x, self.y, w, ROW_H), text, name, kind)
            x += w + 8
        self.y += ROW_H
        self.extent = max(self.extent, total / 2)
        return -total / 2

    def width_of(self, text: str, kind: str) -> float:
        if kind == "plus":
            return ROW_H - 6
        return self.metrics.horizontalAdvance(text) + (28 if kind in ("weight", "heads") else 16)

    def item(self, rect: QRectF, text: str, name: str | None, kind: str) -> None:
        if kind == "plus":
            circle = QGraphicsEllipseItem(rect.adjusted(0, 3, 0, -3))
            circle.setPen(QPen(self.fg, 1.2))
            self.scene.addItem(circle)
        elif name is None:
            box = self.scene.addRect(rect, QPen(QColor(self.c.block), 1))
            box.setBrush(QBrush(Qt.BrushStyle.NoBrush))
        else:
            box = WeightItem(rect, name, self.view.on_select)
            box.setBrush(QColor(self.c.vector if kind == "vector" else self.c.weight))
            box.setToolTip(self.describe(name))  # styled by the view's outline() once all are drawn
            self.scene.addItem(box)
            self.view.items[name] = box
            if kind == "heads":
                self.head_stripes(box, rect)
        label = QGraphicsSimpleTextItem(text)
        label.setFont(self.font)
        label.setBrush(self.fg)
        label.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        b = label.boundingRect()
        label.setPos(rect.center().x() - b.width() / 2, rect.center().y() - b.height() / 2)
        if name is None:
            self.scene.addItem(label)
        else:
            label.setParentItem(box)

    def head_stripes(self, box: WeightItem, rect: QRectF) -> None:
        """Heads sit side by side in the columns of W_Q, W_K and W_V: a tick at each head boundary."""
        ticks = QPainterPath()  # one item for all of them: an item per tick was 792 for GPT-2 small
        for h in range(1, self.cfg.n_head):
            x = rect.left() + rect.width() * h / self.cfg.n_head
            for y0, y1 in ((rect.top(), rect.top() + 3), (rect.bottom() - 3, rect.bottom())):  # clear of the label
                ticks.moveTo(x, y0)
                ticks.lineTo(x, y1)
        item = QGraphicsPathItem(ticks, box)
        item.setPen(QPen(QColor(self.c.foreground), 1))
        item.setAcceptedMouseButtons(Qt.MouseButton.NoButton)

    def describe(self, name: str) -> str:
        m = self.cfg
        short = name.split(".", 2)[-1] if name.startswith("blocks.") else name
        shape = self.shapes[name]
        text = f"{name}  ({' × '.join(map(str, shape))})"
        if short in ("W_Q", "W_K", "W_V"):
            text += f"\n{m.n_head} heads side by side, {m.d_head} columns each"
        return text + "\nClick to open it in the Weight pane"


    def line(self, path: QPainterPath, to: QPointF | None = None, head: bool = False) -> None:
        if to is not None:
            path.lineTo(to)
        item = QGraphicsPathItem(path)
        item.setPen(QPen(self.fg, 1.2))
        self.scene.addItem(item)
        if head:
            end = path.currentPosition()
            arrow = QPainterPath(end)
            arrow.lineTo(end.x() - 4, end.y() - 6)
            arrow.lineTo(end.x() + 4, end.y() - 6)
            arrow.closeSubpath()
            self.scene.addPath(arrow, QPen(self.fg), QBrush(self.fg))
