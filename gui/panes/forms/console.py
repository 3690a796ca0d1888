"""The forms pane's console: the note's command line (engine.forms.console) with a prompt that keeps its
history (Up and Down), outputs rendered as mathematics, HTML or text, and a log for errors, as in the
note's screenshots. Lines run in the symbolic process, one at a time, on a lane of their own (a long line never
holds up the Terms tab), and the console's variables live there; the console evaluates only the forms
language, never Python (docs/reliability.md): what it cannot parse is an error in the log. A running line shows
a Stop button (and Esc stops it): the process ends the line at its next evaluation step.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (QCheckBox, QFrame, QLabel, QLineEdit, QPlainTextEdit, QPushButton,
                               QScrollArea, QSplitter, QVBoxLayout, QWidget)

from engine.forms.console import Output
from engine.forms.questions import ConsoleLine
from engine.forms.source import Source

from ...widgets.formula import FormulaView
from ...widgets.tiles import row_of
from .process import FormsJob

ROWS_SHOWN = 40     # formulas rendered per output; the rest are counted, and show as text
BLOCKS_KEPT = 200   # outputs kept in the view


class History:
    """Lines entered, oldest first; `previous` and `next` walk them like a shell (the line being typed is
    kept and comes back after the newest)."""

    def __init__(self, limit: int = 500):
        self.lines: list[str] = []
        self.limit = limit
        self._pos = 0
        self._draft = ""

    def add(self, line: str) -> None:
        if line and (not self.lines or self.lines[-1] != line):
            self.lines.append(line)
            del self.lines[:-self.limit]
        self._pos = len(self.lines)
        self._draft = ""

    def previous(self, current: str) -> str:
        if self._pos == len(self.lines):
            self._draft = current
        self._pos = max(0, self._pos - 1)
        return self.lines[self._pos] if self.lines else current

    def next(self, current: str) -> str:
        if self._pos >= len(self.lines):
            return current
        self._pos += 1
        return self._draft if self._pos == len(self.lines) else self.lines[self._pos]


class Prompt(QLineEdit):
    """Enter runs the line (returnPressed); Up and Down walk the history."""

    def __init__(self, history: History, parent: QWidget | None = None):
        super().__init__(parent)
        self.history = history

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Up:
            self.setText(self.history.previous(self.text()))
        elif event.key() == Qt.Key.Key_Down:
            self.setText(self.history.next(self.text()))
        else:
            super().keyPressEvent(event)


def _mono() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


class ConsoleView(QWidget):
    sig_ran = Signal(str, object)   # line, [Output]
    sig_failed = Signal(str, str)   # line, error message

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.source: Source | None = None   # its network is the console's `net`
        self.history = History()
        self._job = FormsJob(self)
        self._build()
        self._job.sig_done.connect(self._on_done)
        self._job.sig_failed.connect(self._on_failed)
        self.prompt.returnPressed.connect(self._on_return)
        self.clear_button.clicked.connect(self.clear)
        self.stop_button.clicked.connect(self.stop)
        stop_key = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        stop_key.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        stop_key.activated.connect(self.stop)

    def _build(self) -> None:
        self.body = QWidget()
        self.blocks = QVBoxLayout(self.body)
        self.blocks.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(self.body)
        # the transcript keeps its newest output in sight while it grows (a formula's row takes its height
        # when it is laid out, after the output is added), unless the reader has scrolled up to read
        self._following = True
        bar = self.scroll.verticalScrollBar()
        bar.rangeChanged.connect(self._on_range_changed)
        bar.valueChanged.connect(self._on_scrolled)
        self.log = QPlainTextEdit()
        self.log.setObjectName("console_log")
        self.log.setReadOnly(True)
        self.log.setFont(_mono())
        self.log.setPlaceholderText("Errors appear here.")
        self.prompt = Prompt(self.history)
        self.prompt.setObjectName("console_prompt")
        self.prompt.setFont(_mono())
        self.prompt.setPlaceholderText("show(html(shiftmm(z[13])))   ·   forms(2, 4)   ·   help   "
                                       "(Enter runs, ↑ ↓ history)")
        self.as_math = QCheckBox("Words as mathematics")
        self.as_math.setChecked(True)
        self.as_math.setToolTip("Render words, terms and networks with mathtext; off: the note's text notation")
        self.clear_button = QPushButton("Clear")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("console_stop")
        self.stop_button.setToolTip("Stop the line being run (Esc)")
        self.stop_button.hide()  # only while a line runs
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.scroll)
        split.addWidget(self.log)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        split.setSizes([600, 110])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split, 1)
        layout.addWidget(self.prompt)
        layout.addLayout(row_of(self.as_math, self.stop_button, self.clear_button))
        self._add(QLabel("The note's console. Type help for its functions; net is the chosen source's network."))

    # ---- running ----

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.prompt.setFocus()

    def set_source(self, source: Source) -> None:
        self.source = source

    def run_line(self, line: str) -> None:
        line = line.strip()
        if not line or self._job.busy or self.source is None:
            return
        self.history.add(line)
        self.prompt.clear()
        self.prompt.setEnabled(False)
        self._add(self._echo(line))
        self.stop_button.setEnabled(True)
        self.stop_button.show()
        self.stop_button.setFocus()  # the prompt is disabled: Esc still reaches the console through it
        self._job.ask(ConsoleLine(self.source, line), line)

    @property
    def running(self) -> bool:
        return self._job.busy

    def stop(self) -> None:
        """Cancel the line being run; it ends as an error ("evaluation cancelled") in the transcript."""
        if not self._job.busy:
            return
        self.stop_button.setEnabled(False)
        self._job.cancel()

    def _on_return(self) -> None:
        self.run_line(self.prompt.text())

    def _on_done(self, line: str, outputs: list[Output]) -> None:
        self._ready()
        for out in outputs:
            self._add(self._output(out))
        self.sig_ran.emit(line, outputs)

    def _on_failed(self, line: str, message: str) -> None:
        self._ready()
        self.log.appendPlainText(f"{line}\n  error: {message}")
        err = QLabel(f"error: {message}  (details in the log below)")
        err.setWordWrap(True)
        err.setForegroundRole(QPalette.ColorRole.BrightText)  # a role, not a colour: follows the theme
        self._add(err)
        self.sig_failed.emit(line, message)

    def _ready(self) -> None:
        self.stop_button.hide()
        self.prompt.setEnabled(True)
        self.prompt.setFocus()

    # ---- output ----

    def _echo(self, line: str) -> QLabel:
        label = QLabel("› " + line)
        label.setFont(_mono())
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setWordWrap(True)  # a long line would widen the transcript past the pane, and the error under it
        label.setForegroundRole(QPalette.ColorRole.Link)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    def _output(self, out: Output) -> QWidget:
        box = QFrame()
        col = QVBoxLayout(box)
        col.setContentsMargins(12, 0, 0, 6)
        if out.kind == "html":
            label = QLabel(out.content)
            label.setTextFormat(Qt.TextFormat.RichText)
            font = label.font()
            font.setPointSizeF(font.pointSizeF() * 1.2)  # sub- and superscripts need the room
            label.setFont(font)
            label.setProperty("output_kind", "html")
        elif out.rows and self.as_math.isChecked():
            texts = _text_rows(out)
            for (tag, tex), text in zip(out.rows[:ROWS_SHOWN], texts):
                if tag:
                    col.addWidget(self._tag(tag))
                col.addWidget(FormulaView(tex, text))
            if len(out.rows) > ROWS_SHOWN:
                col.addWidget(QLabel(f"… and {len(out.rows) - ROWS_SHOWN} more (as text: turn off "
                                     "“Words as mathematics”)"))
            box.setProperty("output_kind", "math")
            return box
        else:
            label = QLabel(out.content)
            label.setFont(_mono())
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setProperty("output_kind", "text")
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        col.addWidget(label)
        box.setProperty("output_kind", label.property("output_kind"))
        return box

    def _tag(self, text: str) -> QLabel:
        tag = QLabel(text)
        tag.setFont(_mono())
        tag.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        return tag

    def _add(self, widget: QWidget) -> None:
        self.blocks.addWidget(widget)
        while self.blocks.count() > BLOCKS_KEPT:
            old = self.blocks.takeAt(0).widget()
            if old is not None:
                old.deleteLater()
        self._following = True  # a new output is in sight however far up the reader was
        self._scroll_to_end()

    def _scroll_to_end(self) -> None:
        bar = self.scroll.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _on_range_changed(self, _low: int, high: int) -> None:
        if self._following:
            self.scroll.verticalScrollBar().setValue(high)

    def _on_scrolled(self, value: int) -> None:
        self._following = value >= self.scroll.verticalScrollBar().maximum() - 4

    def outputs(self) -> list[QWidget]:
        return [self.blocks.itemAt(i).widget() for i in range(self.blocks.count())]

    def clear(self) -> None:
        while self.blocks.count():
            old = self.blocks.takeAt(0).widget()
            if old is not None:
                old.deleteLater()
        self.log.clear()


def _text_rows(out: Output) -> list[str]:
    """The first ROWS_SHOWN rows' text notation, when the content has one line per row (shown while they
    render), else blanks. Split once: splitting forms(6)'s 2,184 lines for each of 40 rows took 13 ms."""
    lines = out.content.split("\n", ROWS_SHOWN)
    if out.content.count("\n") + 1 != len(out.rows):
        return [""] * min(len(out.rows), ROWS_SHOWN)
    return lines[:ROWS_SHOWN]
