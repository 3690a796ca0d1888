"""The Training pane's next-token view: for a chosen position of the generated text (click in the text, or
the spin box), the tokens most likely to follow as bars — the model's own probabilities (temperature 1,
no cut, outlined) and the ones Generate draws with at the chosen temperature and top-k (filled) — so what
temperature and top-k do to the distribution is seen. Computed in the analysis process
(the questions NextTokens, on the newest saved step, and LiveNextTokens, on the copy training published);
this widget only asks and draws an engine.analysis.next_tokens.NextTokens.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from engine.analysis import questions as q
from engine.analysis.live import Published

from ...jobs import AnalysisJob
from ...theme import plot_colors, style_plot
from ...widgets.elided_label import ElidedLabel

DEBOUNCE_MS = 150  # typing in the prompt or spinning the temperature asks once it settles


class NextTokensView(QWidget):
    """`ask(session, text, temperature, top_k)` asks for the distribution after `position`; `show_result`
    only draws."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.result = None
        self._wanted: tuple | None = None  # (source, text, position, temperature, top_k) to ask for
        self._job = AnalysisJob(self)
        self._timer = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self.position = QSpinBox(self, minimum=0, maximum=0)
        self.position.setObjectName("next_token_position")
        self.position.setToolTip("The token after which the next one is predicted (or click in the text)")
        self.context = QLabel(" ", self)
        self.context.setTextFormat(Qt.TextFormat.PlainText)
        # one line, the rest in its tooltip: wrapped, it overlapped the plot in a short Generate tab
        self.note = ElidedLabel("Generate, or open a run, to see what the model predicts next.", self)
        self.note.setObjectName("next_token_note")
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.invertY(True)  # the most likely token on top
        self.plot.setLabel("bottom", "probability")
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)  # "(x0.001)" read as a unit
        self.plot.setMinimumHeight(110)  # eight bars a user can read, even in the laptop layout
        self.plot.setToolTip("Outlined bars: the model's own probabilities of the next token (softmax, "
                             "temperature 1). Filled: the probabilities Generate draws with, after dividing "
                             "the logits by the temperature and keeping the top-k.")
        self.model_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.8)
        self.sampled_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.5)
        self.plot.addItem(self.model_bars)
        self.plot.addItem(self.sampled_bars)
        row = QHBoxLayout()
        row.addWidget(QLabel("after token", self))
        row.addWidget(self.position)
        row.addWidget(self.context, 1)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(row)
        col.addWidget(self.plot, 1)
        col.addWidget(self.note)
        self.position.valueChanged.connect(lambda _v: self._timer.start())
        self._timer.timeout.connect(self._send)
        self._job.sig_done.connect(lambda _tag, result: self.show_result(result))
        self._job.sig_failed.connect(lambda _tag, message: self.note.setText(message))
        self._restyle()

    def ask(self, source: tuple | None, text: str, temperature: float, top_k: int | None,
            position: int | None = None) -> None:
        """`source`: ("run", run path, step) or ("live", config, weights, step, tokenizer); position None
        keeps the one chosen (the last token for a new text)."""
        if position is not None:
            was = self.position.blockSignals(True)
            self.position.setMaximum(max(self.position.maximum(), position))
            self.position.setValue(position)
            self.position.blockSignals(was)
        self._wanted = (source, text, temperature, top_k)
        self._timer.start()

    def _send(self) -> None:
        if self._wanted is None:
            return
        source, text, temperature, top_k = self._wanted
        if source is None or not text:
            self.note.setText("Generate, or open a run, to see what the model predicts next.")
            return
        args = (text, self.position.value(), temperature, top_k)
        if source[0] == "run":
            where = q.Saved(source[1], source[2])
        else:
            _, config, weights, step, tokenizer = source
            where = q.Live(config, Published(weights), step, tokenizer=tokenizer)
        self._job.ask(q.NextTokens(where, *args), tag=args)

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
        self.plot.getAxis("left").setTicks([[(i, t) for i, t in enumerate(r.candidates)]])
        self.plot.setXRange(0, max(1e-3, float(max(r.model.max(), r.sampled.max()))), padding=0.05)
        self.plot.setYRange(-0.6, len(y) - 0.4, padding=0)
        cut = f", top-{r.top_k}" if r.top_k else ""
        self.note.setText(f"step {r.step} · outlined: the model · filled: Generate at temperature "
                          f"{r.temperature:g}{cut} · other tokens {r.rest_model:.1%} / {r.rest_sampled:.1%}")


    def _restyle(self) -> None:
        c = plot_colors()
        self.plot.setBackground(c.background)
        style_plot(self.plot.getPlotItem(), c, grid=False)
        self.model_bars.setOpts(pen=pg.mkPen(c.foreground, width=1), brush=pg.mkBrush(0, 0, 0, 0))
        self.sampled_bars.setOpts(pen=None, brush=pg.mkBrush(c.train))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._restyle()
