"""The Training pane: start, pause, resume, single step and stop; train and validation loss curves with the
learning rate, tokens per second, a progress bar with the time left; under the curves, tabbed: the heads ×
steps chart (head_timeline.py), a sample box (prompt, temperature, top-k, length, Generate) beside the
next-token probabilities after a position of the text (next_tokens_view.py), the samples the trainer
logged at evaluation steps, and how far each step moved each weight, ‖ΔW‖ / ‖W‖ (update_ratios.py)
(docs/design.md#the-training-pane).

It renders what the Session reports and asks the Session for everything else; training and generation
happen elsewhere (the controller's worker thread). Reports can come faster than a screen refreshes, so
they are collected at once and drawn at most `REFRESH_MS` apart.
"""

from __future__ import annotations

import functools

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QDoubleSpinBox, QFormLayout, QGridLayout, QHBoxLayout, QLabel, QLineEdit,
                               QPlainTextEdit, QProgressBar, QPushButton, QSizePolicy, QSpinBox, QSplitter, QStyle,
                               QTabWidget, QToolButton, QVBoxLayout, QWidget)

from engine.errors import UserError
from engine.model.sampling import SampleRequest
from engine.model.weight_layout import weight_names
from engine.progress import duration
from engine.training.state import TrainingState
from engine.training.update_history import UpdateHistory

from ...binding import bind
from ...session import Session
from .head_timeline import HeadTimelinePanel
from .loss_plot import LossHistory, LossPlot
from .next_tokens_view import NextTokensPanel
from .update_ratios import UpdateRatioPanel

REFRESH_MS = 500  # curves and numbers twice a second: live to the eye, and each pyqtgraph paint is Python that
# a small model's training loop waits for (benchmarks/ui_latency.py)
CURVES_SHARE = 0.55  # of the pane's height under its controls: at 1600×1000 the learning rate stands under the loss
DEFAULT_PROMPT = "QUEEN OF WALES"
EXPORT_FILTERS = ("PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf);;CSV table (*.csv);;"
                  "NumPy array (*.npy)")


_STAT_FORMATS = {"train_loss": "{:.4f}".format, "val_loss": "{:.4f}".format, "lr": "{:.2e}".format,
                 "tokens_per_s": "{:,.0f}".format, "grad_norm": "{:.3f}".format, "wall_s": duration,
                 "train_bpc": "{:.4f}".format, "val_bpc": "{:.4f}".format}


class TrainingPane(QWidget):
    title = "Training"
    object_name = "pane_training"

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.history = LossHistory()
        self.latest = None          # the newest StepReport
        self._val_bpc: float | None = None  # the newest validation loss in bits per character
        self._last_row: dict | None = None  # the newest metrics row of an opened run
        self._total = session.config.train.steps
        self._sample_request: SampleRequest | None = None
        self._refresh = QTimer(self, singleShot=True, interval=REFRESH_MS)
        self._build()
        self._connect()
        self._on_run_opened(session.run)
        self._on_training_state_changed(session.training_state)

    # ---- layout ----------------------------------------------------------------------------

    def _build(self) -> None:
        self.buttons: dict[str, QToolButton] = {}
        row = QHBoxLayout()
        icon = self.style().standardIcon
        px = QStyle.StandardPixmap
        for act, text, pixmap, tip in (
                ("train", "Train", px.SP_MediaPlay, "Start training (or continue the stopped run)"),
                ("pause", "Pause", px.SP_MediaPause, "Pause after the current step"),
                ("resume", "Resume", px.SP_MediaPlay, "Continue training"),
                ("step", "Step", px.SP_MediaSkipForward, "Train exactly one step"),
                ("stop", "Stop", px.SP_MediaStop, "Stop and save a checkpoint; Train continues the run")):
            b = QToolButton(self)
            b.setIcon(icon(pixmap))
            b.setText(text)
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            b.setObjectName(f"training_{act}")
            b.setToolTip(tip)
            row.addWidget(b)
            self.buttons[act] = b
        row.addStretch(1)
        self.state_label = QLabel(self)
        self.state_label.setObjectName("training_state")
        self.progress = QProgressBar(self)
        self.progress.setObjectName("training_progress")
        self.progress.setFormat("step %v of %m")
        self.eta = QLabel(self)
        self.eta.setObjectName("training_eta")
        bar = QHBoxLayout()
        bar.addWidget(self.state_label)
        bar.addWidget(self.progress, 1)
        bar.addWidget(self.eta)
        self.stats = self._build_stats()
        self.plot = LossPlot(self)
        self.head_timeline = HeadTimelinePanel(self.session, self)
        self.head_timeline.setObjectName("head_timeline")  # the tour's stop (gui/first_run/tour_steps.py)
        self.head_timeline.sig_roles_changed.connect(self.plot.set_formations)  # marked on the loss curve
        # the loss curves above, always in sight; below them one of the heads × steps chart, the sample box and
        # the logged samples, as tabs: stacked, three parts under the curves left each too short to read on
        # a 1280×720 screen (the chart's step axis is its own: a click on a cell names the step)
        self.lower_tabs = self._build_samples()
        self.lower_tabs.insertTab(0, self.head_timeline, "Heads over training")
        self.update_ratios = UpdateRatioPanel(self)
        self.lower_tabs.addTab(self.update_ratios, "Update / weight")
        self.lower_tabs.setTabToolTip(self.lower_tabs.count() - 1, "How far each step moved each weight against "
                                      "its size, ‖ΔW‖ / ‖W‖: what Muon-era recipes steer by")
        self.lower_tabs.setCurrentIndex(0)
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.setObjectName("training_split")
        split.setChildrenCollapsible(False)
        split.addWidget(self.plot)
        split.addWidget(self.lower_tabs)
        self.split = split
        self._split_moved = False
        split.splitterMoved.connect(self._on_split_moved)
        split.installEventFilter(self)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addLayout(bar)
        layout.addWidget(self.stats_box)
        layout.addWidget(split, 1)

    def _build_stats(self) -> dict[str, QLabel]:
        # a box whose least width is that of two pairs a row whatever it shows: its rows follow the pane's
        # width (resizeEvent), and a least width that grew with them kept the pane too wide for its dock
        self.stats_box = QWidget(self)
        self.stats_box.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.stats_layout = QGridLayout(self.stats_box)
        self.stats_layout.setContentsMargins(0, 0, 0, 0)
        self._stat_cells: list[tuple[QLabel, QLabel]] = []
        stats = {}
        for key, text in (("train_loss", "train loss"), ("val_loss", "val loss"),
                          # loss per token differs by tokenizer; bits per character compare
                          ("train_bpc", "train bits/char"), ("val_bpc", "val bits/char"), ("lr", "learning rate"),
                          ("tokens_per_s", "tokens/s"), ("grad_norm", "grad norm"), ("wall_s", "elapsed")):
            name = QLabel(text + ":", self)
            value = QLabel("—", self)
            value.setObjectName(f"stat_{key}")
            value.setMinimumWidth(value.fontMetrics().horizontalAdvance("0,000,000"))
            self._stat_cells.append((name, value))
            stats[key] = value
        self._stat_columns = 0
        self._arrange_stats(2)
        self.stats_box.setMinimumWidth(self._stats_width(2))
        self.stats_box.installEventFilter(self)
        return stats

    def _arrange_stats(self, columns: int) -> None:
        """The numbers in `columns` pairs of name and value a row (rows of three or four in a wide pane, as
        the pane's height is the curves' and the heads chart's)."""
        if columns == self._stat_columns:
            return
        self._stat_columns = columns
        for name, value in self._stat_cells:
            self.stats_layout.removeWidget(name)
            self.stats_layout.removeWidget(value)
        for i, (name, value) in enumerate(self._stat_cells):
            self.stats_layout.addWidget(name, i // columns, 2 * (i % columns))
            self.stats_layout.addWidget(value, i // columns, 2 * (i % columns) + 1)

    def _stats_width(self, columns: int) -> int:
        """The width the numbers take in `columns` pairs a row: each column as wide as its widest name or value."""
        gap = self.stats_layout.horizontalSpacing()
        need = 0
        for c in range(columns):
            cells = self._stat_cells[c::columns]
            need += max(n.sizeHint().width() for n, _ in cells) + max(v.minimumWidth() for _, v in cells)
        return need + (2 * columns - 1) * max(gap, 0)

    def _stat_columns_for(self, width: int) -> int:
        """The most pairs a row (4, 3 or 2) that fit in `width`."""
        return next((c for c in (4, 3) if self._stats_width(c) <= width), 2)

    def eventFilter(self, watched, event) -> bool:  # Qt's name
        """Each arrangement is made as its widget takes its new size, before anything is painted at it."""
        if event.type() == QEvent.Type.Resize:
            if watched is self.split:
                self._share_split()
            elif watched is self.stats_box:
                self._arrange_stats(self._stat_columns_for(event.size().width()))
        return super().eventFilter(watched, event)

    def _share_split(self) -> None:
        """CURVES_SHARE of the room under the controls to the curves and the rest to the tabs below, each at
        least its minimum (on a 1280×720 screen the curves get theirs and the heads chart the rest); once
        the user drags the handle, theirs."""
        if self._split_moved:
            return
        room = self.split.height() - self.split.handleWidth()  # its new height: it shares it out after this
        if room <= 0:
            return
        least_top = self.plot.minimumSizeHint().height()
        least_bottom = self.lower_tabs.minimumSizeHint().height()
        top = max(least_top, min(int(room * CURVES_SHARE), room - least_bottom))
        if self.split.sizes() != [top, room - top]:
            self.split.setSizes([top, room - top])

    def _build_samples(self) -> QTabWidget:
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.prompt = QLineEdit(DEFAULT_PROMPT, self)
        self.prompt.setObjectName("sample_prompt")
        self.temperature = QDoubleSpinBox(self, decimals=2, minimum=0.0, maximum=3.0, singleStep=0.1, value=0.8)
        self.temperature.setToolTip("0 always takes the most likely token; higher is more adventurous")
        self.top_k = QSpinBox(self, minimum=0, maximum=100_000, value=0, specialValueText="off")
        self.top_k.setToolTip("Sample only among the k most likely tokens (off: all of them)")
        self.length = QSpinBox(self, minimum=1, maximum=5000, value=200, suffix=" tokens")
        self.generate = QPushButton("Generate", self)
        self.generate.setObjectName("sample_generate")
        self.output = QPlainTextEdit(self, readOnly=True)
        self.output.setObjectName("sample_output")
        self.output.setFont(mono)
        self.output.setPlaceholderText("Generated text appears here.")
        form = QFormLayout()
        form.addRow("Prompt:", self.prompt)
        knobs = QGridLayout()
        for i, (text, w) in enumerate((("temperature:", self.temperature), ("top-k:", self.top_k),
                                       ("length:", self.length))):
            knobs.addWidget(QLabel(text, self), i // 2, 2 * (i % 2))
            knobs.addWidget(w, i // 2, 2 * (i % 2) + 1)
        knobs.addWidget(self.generate, 1, 3)
        knobs.setColumnStretch(4, 1)
        form.addRow(knobs)
        gen = QWidget(self)
        col = QVBoxLayout(gen)
        col.setContentsMargins(4, 4, 4, 4)
        col.addLayout(form)
        self.next_tokens = NextTokensPanel(self)
        split = QSplitter(Qt.Orientation.Horizontal, gen)
        split.setObjectName("generate_split")
        split.setChildrenCollapsible(False)
        split.addWidget(self.output)
        split.addWidget(self.next_tokens)
        # the text three parts, the bars two: by their size hints the text was a ~110 px column
        self.output.setMinimumWidth(self.output.fontMetrics().horizontalAdvance("0" * 16))
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([3000, 2000])  # kept in proportion when the splitter takes its size
        col.addWidget(split, 1)
        self.logged = QPlainTextEdit(self, readOnly=True)
        self.logged.setObjectName("logged_samples")
        self.logged.setFont(mono)
        self.logged.setPlaceholderText("Samples written at evaluation steps appear here.")
        tabs = QTabWidget(self)
        tabs.addTab(gen, "Generate")
        tabs.addTab(self.logged, "Logged samples")
        return tabs

    def _connect(self) -> None:
        for act, b in self.buttons.items():
            b.clicked.connect(lambda _=False, a=act: self.session.request_training(a))
        self.generate.clicked.connect(self._on_generate_clicked)
        self.output.cursorPositionChanged.connect(self._on_output_clicked)
        bars = self.next_tokens.view
        bars.update(temperature=self.temperature.value(), top_k=self.top_k.value())
        bind(self.temperature, bars, "temperature")  # Generate's knobs are the bars' too
        bind(self.top_k, bars, "top_k")
        self.prompt.returnPressed.connect(self._on_generate_clicked)
        self._refresh.timeout.connect(self._render)
        s = self.session
        s.sig_step_reported.connect(self._on_step_reported)
        s.sig_run_replaced.connect(self._on_run_replaced)
        s.sig_run_attached.connect(self._on_run_opened)
        s.sig_training_state_changed.connect(self._on_training_state_changed)
        s.sig_config_problems_changed.connect(self._on_config_problems_changed)
        s.sig_config_changed.connect(self._on_config_changed)
        s.sig_sample_ready.connect(self._on_sample_ready)
        s.sig_message_posted.connect(self._on_message_posted)
        s.asker.watch(bars, self.next_tokens)

    def export_job(self):
        """File → Export…: the loss curves as a figure (matplotlib) or their numbers."""
        if not self.history.steps:
            return None
        from engine.figures.export import export_loss

        val = dict(zip(self.history.val_steps, self.history.val))
        rows = [{"step": s, "train_loss": t, "val_loss": val.get(s)}
                for s, t in zip(self.history.steps, self.history.train)]
        return EXPORT_FILTERS, "loss.png", functools.partial(export_loss, rows=rows)

    # ---- handlers --------------------------------------------------------------------------

    def _on_split_moved(self, *_) -> None:
        self._split_moved = True

    def _on_step_reported(self, report) -> None:
        if self.history.add(report.step, report.train_loss, report.lr, report.val_loss):
            if report.sample:
                self._append_sample(report.step, report.sample)
        self.update_ratios.history.add(report.step, dict(report.update_ratios))
        self.latest, self._total = report, report.total_steps
        if report.val_bpc is not None:
            self._val_bpc = report.val_bpc
        if not self._refresh.isActive():
            self._refresh.start()

    def _on_run_replaced(self, open_run) -> None:
        """Another run is open (one event): its history, its training state, and no sample of the previous."""
        self._sample_request = None
        self._on_run_opened(None if open_run is None else open_run.run)
        self._on_training_state_changed(self.session.training_state)
        self._on_config_changed(self.session.config)

    def _on_run_opened(self, run) -> None:
        self.history, self.latest, self._last_row, self._val_bpc = LossHistory(), None, None, None
        self.logged.clear()
        model = (run.config if run is not None else self.session.config).model
        updates = UpdateHistory(order=tuple(weight_names(model)))
        if run is not None:
            updates.add_rows(run.updates())
        self.update_ratios.set_history(updates)
        if run is not None:
            self._total = run.config.train.steps
            rows = run.metrics()
            self.history.add_rows(rows)
            self._val_bpc = next((r["val_bpc"] for r in reversed(rows) if r.get("val_bpc") is not None), None)
            # a run without a metrics log (a nanoGPT checkpoint imported) is at its newest saved step
            self._last_row = rows[-1] if rows else {"step": run.latest_step()}
            for row in run.samples():
                self._append_sample(row.get("step", "?"), row.get("text", ""))
        self._render()
        self._update_buttons()
        self.next_tokens.set_model_at_hand(self.session.open_run is not None)

    def _on_config_changed(self, cfg) -> None:
        if self.session.run is None and self.latest is None:
            self._total = cfg.train.steps
            self._render()

    def _on_training_state_changed(self, state: str) -> None:
        self.state_label.setText(TrainingState(state).text)
        self.eta.setText(self._eta_text())
        self._update_buttons()

    def _eta_text(self) -> str:
        """Time left only while training runs: after Stop or Pause an estimate is no one's time."""
        r = self.latest
        if r is None:
            return ""
        if r.step >= r.total_steps:
            return "done"
        return f"{duration(r.eta_s)} left" if self.session.training_state == "running" else ""

    def _on_config_problems_changed(self, _problems) -> None:
        self._update_buttons()

    def _on_generate_clicked(self) -> None:
        if not self.generate.isEnabled():
            return
        self._sample_request = SampleRequest(self.prompt.text(), self.length.value(), self.temperature.value(),
                                             self.top_k.value() or None)
        self.generate.setEnabled(False)
        self.generate.setText("Generating…")
        self.session.request_sample(self._sample_request)

    def _on_sample_ready(self, request, text: str) -> None:
        if request is not self._sample_request:
            return
        self._sample_request = None
        self.output.setPlainText(request.prompt + text)
        self._update_buttons()
        self._ask_next_tokens(last=True)

    def _ask_next_tokens(self, position: int | None = None, last: bool = False) -> None:
        """The next-token bars for the text shown: on the newest weights training published while it trains,
        else on the newest saved step of the open run (engine/views/next_tokens.py)."""
        s, text = self.session, self.output.toPlainText() or self.prompt.text()
        live = s.workspace.live if TrainingState(s.training_state).live else None
        if last:
            position = -1  # the text's last token, counted where the text is tokenised (the analysis process)
        self.next_tokens.view.update(text=text, live=live, **({} if position is None else {"position": position}))

    def _on_output_clicked(self) -> None:
        """A click in the text chooses the token the bars follow (the one left of the cursor)."""
        cursor = self.output.textCursor().position()
        if cursor > 0 and (position := self._token_at(cursor)) is not None:
            self._ask_next_tokens(position)

    def _token_at(self, cursor: int) -> int | None:
        """The index of the token left of character `cursor` of the text: the last of the text up to it, by the
        app's tokenizer; a run opened with its tokenizer read elsewhere (a large one: gui/controller.py) has
        none here, so then the token whose characters reach the cursor in the last answer about this text
        (its tokens spelled out). None for characters the tokenizer lacks, or before any answer."""
        text = self.output.toPlainText()
        tokenizer = self.session.tokenizer
        if tokenizer is not None:
            try:
                return max(0, len(tokenizer.encode(text[:cursor])) - 1)
            except UserError:  # a character outside the vocabulary: the analysis says so when asked
                return None
        answered = self.next_tokens.view.result
        if answered is None or self.next_tokens.view.text != text:
            return None
        end = 0
        for k, token in enumerate(answered.tokens):  # spelled one character for one (␣ for a space)
            end += len(token)
            if end >= cursor:
                return k
        return len(answered.tokens) - 1

    def _on_message_posted(self, level: str, _text: str) -> None:
        if level == "error" and self._sample_request is not None:
            self._sample_request = None  # the sample failed (the banner says why)
            self._update_buttons()

    # ---- rendering -------------------------------------------------------------------------

    def _render(self) -> None:
        self.plot.show_history(self.history, self._total)
        self.update_ratios.refresh()
        r = self.latest
        row = self._last_row or {}
        if r is not None:
            row = {"step": r.step, "train_loss": r.train_loss, "lr": r.lr, "tokens_per_s": r.tokens_per_s,
                   "grad_norm": r.grad_norm, "wall_s": r.wall_s, "train_bpc": r.train_bpc}
        step = row.get("step") or self.history.last_step
        self.progress.setMaximum(max(self._total, 1))
        self.progress.setValue(min(step, self._total))
        self.eta.setText(self._eta_text())
        row["val_loss"] = self.history.val[-1] if self.history.val else None
        row["val_bpc"] = self._val_bpc
        for key, label in self.stats.items():
            value = row.get(key)
            label.setText("—" if value is None else _STAT_FORMATS[key](value))

    def _append_sample(self, step, text: str) -> None:
        self.logged.appendPlainText(f"── step {step} ──\n{text}\n")

    def _update_buttons(self) -> None:
        state = TrainingState(self.session.training_state)
        valid = not self.session.config_problems
        for act, b in self.buttons.items():
            b.setEnabled(state.allows(act, valid))
        has_model = self.session.run is not None or state.live
        self.generate.setEnabled(has_model and self._sample_request is None)
        self.generate.setText("Generate" if self._sample_request is None else "Generating…")
        self.generate.setToolTip("" if has_model else "Train, or open a run, to have a model to sample from")
