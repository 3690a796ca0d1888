"""The Training pane's next-token view: for a chosen position of the generated text (click in the text, or
the spin box), the tokens most likely to follow as bars — the model's own probabilities (temperature 1,
no cut, outlined) and the ones Generate draws with at the chosen temperature and top-k (filled) — so what
temperature and top-k do to the distribution is seen. Its view model (engine/views/next_tokens.py) says what it
needs and holds the answer (engine.analysis.next_tokens.NextTokens, computed in the analysis process on the
copy training published or the newest saved step); this widget only binds its position and draws.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from engine.views.next_tokens import NextTokensView

from ...binding import bind
from ...theme import plot_colors, style_plot
from ...widgets.elided_label import ElidedLabel
from ...widgets.first_sight import PlotOnSight
from ...widgets.seen import SeenWidget


class NextTokensPanel(SeenWidget):
    """The bars of its view model's answer (`view`), with the position bound to it."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.view = NextTokensView()
        self.view.seen = False
        self.result = None
        self.position = QSpinBox(self, minimum=0, maximum=0)
        self.position.setObjectName("next_token_position")
        self.position.setToolTip("The token after which the next one is predicted (or click in the text)")
        self.context = QLabel(" ", self)
        self.context.setTextFormat(Qt.TextFormat.PlainText)
        # one line, the rest in its tooltip: wrapped, it overlapped the plot in a short Generate tab
        self._at_hand = False  # a model to generate with: a run open, or one training
        self.note = ElidedLabel(self.hint(), self)
        self.note.setObjectName("next_token_note")
        # built on first sight: its tab is behind the heads chart when a window opens (a plot ~10 ms of CPU)
        self.plot = PlotOnSight(lambda: pg.PlotWidget(enableMenu=False), self._setup_plot)
        self.plot.setMinimumHeight(110)  # eight bars a user can read, even in the laptop layout
        self.plot.setToolTip("Outlined bars: the model's own probabilities of the next token (softmax, "
                             "temperature 1). Filled: the probabilities Generate draws with, after dividing "
                             "the logits by the temperature and keeping the top-k.")
        self.model_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.8)
        self.sampled_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.5)
        row = QHBoxLayout()
        row.addWidget(QLabel("after token", self))
        row.addWidget(self.position)
        row.addWidget(self.context, 1)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(row)
        col.addWidget(self.plot, 1)
        col.addWidget(self.note)
        self.view.changed.connect(self._on_view_changed)  # first: the position's room before its value
        bind(self.position, self.view, "position")
        self._restyle()

    def _setup_plot(self, plot: pg.PlotWidget) -> None:
        plot.setMouseEnabled(x=False, y=False)
        plot.hideButtons()
        plot.invertY(True)  # the most likely token on top
        plot.setLabel("bottom", "probability")
        plot.getAxis("bottom").enableAutoSIPrefix(False)  # "(x0.001)" read as a unit
        plot.addItem(self.model_bars)
        plot.addItem(self.sampled_bars)
        self._restyle()
        self._draw_axes()

    def _on_view_changed(self, name: str) -> None:
        if name == "result" and self.view.result is not None:
            self.show_result(self.view.result)
        elif name == "failures" and self.view.failures:
            self.note.setText(next(iter(self.view.failures.values())))
        elif name in ("text", "live") and not self.view.text:
            self.note.setText(self.hint())
        elif name == "position":
            self.position.setMaximum(max(self.position.maximum(), self.view.position))

    def hint(self) -> str:
        """What to do for bars to show: it said "Generate, or open a run" with a run open (issue 40)."""
        if self._at_hand:
            return "Press Generate; then click in the text to see what the model predicts after that token."
        return "Train, or open a run, then Generate to see what the model predicts next."

    def set_model_at_hand(self, at_hand: bool) -> None:
        self._at_hand = at_hand
        if self.view.result is None and not self.view.text:
            self.note.setText(self.hint())

    def seen_changed(self, seen: bool) -> None:
        self.view.seen = seen

    def show_result(self, r) -> None:
        self.result = r
        self.position.blockSignals(True)
        self.position.setMaximum(len(r.tokens) - 1)
        self.position.setValue(r.position)
        self.position.blockSignals(False)
        tail = "".join(r.tokens[max(0, r.position - 24): r.position + 1])
        self.context.setText(f"…{tail}" if r.position >= 24 else tail)
        y = np.arange(len(r.candidates), dtype=float)
        self.model_bars.setOpts(x0=np.zeros_like(y), y=y, width=r.model, height=0.8)
        self.sampled_bars.setOpts(x0=np.zeros_like(y), y=y, width=r.sampled, height=0.5)
        self._draw_axes()
        cut = f", top-{r.top_k}" if r.top_k else ""
        self.note.setText(f"step {r.step} · outlined: the model · filled: Generate at temperature "
                          f"{r.temperature:g}{cut} · other tokens {r.rest_model:.1%} / {r.rest_sampled:.1%}")

    def _draw_axes(self) -> None:
        """The candidates on the left axis and the ranges that hold the bars (once the plot is built)."""
        r = self.result
        if r is None or not self.plot.built:
            return
        self.plot.getAxis("left").setTicks([[(i, t) for i, t in enumerate(r.candidates)]])
        self.plot.setXRange(0, max(1e-3, float(max(r.model.max(), r.sampled.max()))), padding=0.05)
        self.plot.setYRange(-0.6, len(r.candidates) - 0.4, padding=0)

    def _restyle(self) -> None:
        c = plot_colors()
        if self.plot.built:
            self.plot.setBackground(c.background)
            style_plot(self.plot.getPlotItem(), c, grid=False)
        self.model_bars.setOpts(pen=pg.mkPen(c.foreground, width=1), brush=pg.mkBrush(0, 0, 0, 0))
        self.sampled_bars.setOpts(pen=None, brush=pg.mkBrush(c.train))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._restyle()
