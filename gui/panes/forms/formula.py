"""Formulas on screen: LaTeX rendered by matplotlib's mathtext away from the GUI thread, wrapped to the
widget's width (engine.figures.formula_layout), cached, and shown as a pixmap; the text notation stands in while it
renders and whenever mathtext cannot read a formula.

`FormulaRenderer` is one per application. It renders in a separate process: mathtext's parser is pure
Python, and on a thread it held the interpreter lock that the GUI thread needs at every call into Python
while it paints (measured here: event-loop stalls of 0.3–1 s while a page of formulas rendered). Results
come back as plain bytes; an LRU cache keeps finished images keyed by (LaTeX, width, size, colour). If no
process can be started, a single thread renders instead.
`FormulaView` shows one formula and asks again when its width or the theme's text colour changes.
`FormulaList` shows many (label, formula) rows a page at a time, so a whole form never builds thousands
of widgets.
"""

from __future__ import annotations

from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

from PySide6.QtCore import QObject, QThreadPool, QTimer, Qt, Signal
from PySide6.QtGui import QImage, QPalette, QPixmap
from PySide6.QtWidgets import (QApplication, QHBoxLayout, QLabel, QPushButton, QScrollArea, QSizePolicy,
                               QSpinBox, QVBoxLayout, QWidget)

from engine.figures.formula_layout import render_formula

from ...processes import helper_pool

FONT_PT = 12.0
WIDTH_STEP = 48        # widths are rounded down to this many pixels, so a resize re-renders rarely
CACHE_SIZE = 1500


@dataclass(frozen=True)
class RenderKey:
    tex: str
    width: int          # logical pixels the formula may take; lines wrap to it
    dpr: float          # device pixel ratio of the screen
    color: tuple[int, int, int]
    fontsize: float = FONT_PT


def _render(key: RenderKey) -> tuple[bytes, int, int]:
    return render_formula(key.tex, key.width, key.dpr, key.color, key.fontsize)


def _message(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


class _Relay(QObject):
    sig_finished = Signal(object, object, str)  # key, (bytes, w, h) or None, error


class FormulaRenderer(QObject):
    sig_ready = Signal(object)            # RenderKey whose image is now in the cache
    sig_failed = Signal(object, str)      # RenderKey, why mathtext could not read it

    def __init__(self, parent: QObject | None = None, use_process: bool = True):
        super().__init__(parent)
        self._process: ProcessPoolExecutor | None = None
        self._use_process = use_process
        self._pool = QThreadPool(self)    # the fallback: one thread
        self._pool.setMaxThreadCount(1)
        self._cache: OrderedDict[RenderKey, QImage] = OrderedDict()
        self._failed: dict[RenderKey, str] = {}
        self._pending: set[RenderKey] = set()
        self._relay = _Relay(self)
        self._relay.sig_finished.connect(self._on_finished)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    def image(self, key: RenderKey) -> QImage | None:
        got = self._cache.get(key)
        if got is not None:
            self._cache.move_to_end(key)
        return got

    def error(self, key: RenderKey) -> str | None:
        return self._failed.get(key)

    def request(self, key: RenderKey) -> None:
        """Render `key` unless it is cached, failed or on its way; sig_ready or sig_failed follows."""
        if key in self._cache or key in self._failed or key in self._pending:
            return
        self._pending.add(key)
        executor = self._executor()
        if executor is not None:
            try:
                # the process is handed the engine's function, not this module's: unpickling a function imports
                # its module there, and this one's package imports the whole Forms pane and torch (~250 MB)
                future = executor.submit(render_formula, key.tex, key.width, key.dpr, key.color, key.fontsize)
                future.add_done_callback(lambda f, k=key: self._on_future(k, f))
                return
            except Exception:  # the process died or cannot start: render on a thread from now on
                self._use_process, self._process = False, None
        relay = self._relay

        def work() -> None:
            try:
                result, error = _render(key), ""
            except Exception as e:  # FormulaError, or a mathtext failure we did not foresee
                result, error = None, _message(e)
            try:
                relay.sig_finished.emit(key, result, error)
            except RuntimeError:  # the application is closing
                pass

        self._pool.start(work)

    def _executor(self) -> ProcessPoolExecutor | None:
        if self._process is None and self._use_process:
            try:
                self._process = helper_pool()
            except Exception:
                self._use_process = False
        return self._process

    def _on_future(self, key: RenderKey, future: Future) -> None:
        """Runs on the executor's thread: hand the result to the GUI thread."""
        try:
            result, error = future.result(), ""
        except Exception as e:
            result, error = None, _message(e)
        try:
            self._relay.sig_finished.emit(key, result, error)
        except RuntimeError:
            pass

    def shutdown(self) -> None:
        if self._process is not None:
            self._process.shutdown(wait=True, cancel_futures=True)  # at most one render to finish
            self._process = None

    def wait(self, msecs: int = 30_000) -> bool:
        return self._pool.waitForDone(msecs)

    def _on_finished(self, key: RenderKey, result, error: str) -> None:
        self._pending.discard(key)
        if result is None:
            self._failed[key] = error
            self.sig_failed.emit(key, error)
            return
        data, w, h = result
        image = QImage(data, w, h, 4 * w, QImage.Format.Format_RGBA8888).copy()
        image.setDevicePixelRatio(key.dpr)
        self._cache[key] = image
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        self.sig_ready.emit(key)


_RENDERER: FormulaRenderer | None = None


def renderer() -> FormulaRenderer:
    """The application's renderer (made on first use, owned by the QApplication)."""
    global _RENDERER
    if _RENDERER is None:
        _RENDERER = FormulaRenderer(QApplication.instance())
        _RENDERER.destroyed.connect(_forget)
    return _RENDERER


def _forget(*_) -> None:
    global _RENDERER
    _RENDERER = None


class FormulaView(QLabel):
    """One formula, wrapped to the width this view is given. `fallback` (text or HTML) shows while it
    renders and if mathtext cannot read it."""

    def __init__(self, tex: str = "", fallback: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setWordWrap(True)
        self._tex, self._fallback = "", ""
        self._key: RenderKey | None = None
        self._renderer = renderer()
        self._renderer.sig_ready.connect(self._on_ready)
        self._renderer.sig_failed.connect(self._on_failed)
        self._timer = QTimer(self, singleShot=True, interval=60)
        self._timer.timeout.connect(self._ask)
        self.set_formula(tex, fallback)

    @property
    def tex(self) -> str:
        return self._tex

    @property
    def rendered(self) -> bool:
        return self._key is not None and self._renderer.image(self._key) is not None

    def set_formula(self, tex: str, fallback: str = "") -> None:
        self._tex, self._fallback = tex, fallback or tex
        self._key = None
        self._show_pending()
        self._ask()

    def _width(self) -> int:
        return max(WIDTH_STEP * 4, (self.width() - 8) // WIDTH_STEP * WIDTH_STEP)

    def _ask(self) -> None:
        # only what is on screen: a formula in a dock tabbed behind another, or scrolled out of its list,
        # waits until it is painted (paintEvent asks again, at the width it is given then)
        if not self._tex or self.visibleRegion().isEmpty():
            return
        c = self.palette().color(QPalette.ColorRole.WindowText)
        key = RenderKey(self._tex, self._width(), self.devicePixelRatioF(), (c.red(), c.green(), c.blue()))
        if key == self._key:
            return
        self._key = key
        if self._renderer.image(key) is not None:
            self._show(key)
        elif self._renderer.error(key) is not None:
            self._show_fallback(self._renderer.error(key))
        else:
            self._renderer.request(key)

    def _show(self, key: RenderKey) -> None:
        self.setWordWrap(False)  # a word-wrapping QLabel asks heightForWidth, which a pixmap answers with 0
        self.setPixmap(QPixmap.fromImage(self._renderer.image(key)))
        self.setToolTip("")

    def _show_pending(self) -> None:
        """The text notation on one line (clipped) while the formula renders: a word-wrapped rich-text
        label is laid out again at every relayout of its list, which cost the GUI thread ~0.5 s while a
        page of 30 long formulas arrived one by one."""
        self.setWordWrap(False)
        self.setText(self._fallback)
        self.setToolTip("")

    def _show_fallback(self, error: str = "") -> None:
        self.setWordWrap(True)
        self.setText(self._fallback)
        self.setToolTip(f"Shown as text: {error}" if error else "")

    def _on_ready(self, key: RenderKey) -> None:
        if key == self._key:
            self._show(key)

    def _on_failed(self, key: RenderKey, error: str) -> None:
        if key == self._key:
            self._show_fallback(error)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._tex and self._key is not None and self._width() != self._key.width:
            self._timer.start()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._timer.start()

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if self._tex and self._key is None and not self._timer.isActive():
            self._timer.start()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self._tex:
            self._key = None  # a view out of sight now asks again, in the new colour, when it is painted
            self._timer.start()


class FormulaList(QWidget):
    """(label, LaTeX, fallback) rows, a page at a time, in a scroll area."""

    PAGE = 30

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.rows: list[tuple[str, str, str]] = []
        self.page = 0
        self.prev_button, self.next_button = QPushButton("◀ Previous"), QPushButton("Next ▶")
        self.position = QLabel()
        self.page_box = QSpinBox()  # a whole form at depth 6 is 73 pages: jump, don't click through
        self.page_box.setPrefix("page ")
        self.page_box.setKeyboardTracking(False)
        self.body = QWidget()
        self.body_layout = QVBoxLayout(self.body)
        self.body_layout.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(self.body)
        nav = QHBoxLayout()
        nav.setContentsMargins(0, 0, 0, 0)
        for w in (self.prev_button, self.page_box, self.next_button, self.position):
            nav.addWidget(w)
        nav.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.scroll, 1)
        layout.addLayout(nav)
        self.prev_button.clicked.connect(lambda: self.show_page(self.page - 1))
        self.next_button.clicked.connect(lambda: self.show_page(self.page + 1))
        self.page_box.valueChanged.connect(lambda v: self.show_page(v - 1) if v - 1 != self.page else None)
        self.set_rows([])

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.rows) // self.PAGE))

    def set_rows(self, rows: list[tuple[str, str, str]]) -> None:
        self.rows = list(rows)
        self.show_page(0)

    def views(self) -> list[FormulaView]:
        return self.body.findChildren(FormulaView)

    def show_page(self, page: int) -> None:
        self.page = max(0, min(page, self.pages - 1))
        while self.body_layout.count():
            item = self.body_layout.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        start = self.page * self.PAGE
        for label, tex, fallback in self.rows[start:start + self.PAGE]:
            if label:
                tag = QLabel(label)
                tag.setObjectName("formula_label")
                tag.setStyleSheet("font-family: monospace;")
                tag.setForegroundRole(QPalette.ColorRole.PlaceholderText)
                tag.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                self.body_layout.addWidget(tag)
            self.body_layout.addWidget(FormulaView(tex, fallback))
        n = len(self.rows)
        self.position.setText(f"rows {start + 1}–{min(n, start + self.PAGE)} of {n}" if n else "nothing to show")
        self.prev_button.setEnabled(self.page > 0)
        self.next_button.setEnabled(self.page < self.pages - 1)
        was = self.page_box.blockSignals(True)
        self.page_box.setRange(1, self.pages)
        self.page_box.setSuffix(f" of {self.pages}")
        self.page_box.setValue(self.page + 1)
        self.page_box.blockSignals(was)
        for w in (self.prev_button, self.next_button, self.page_box):
            w.setVisible(self.pages > 1)
        self.scroll.verticalScrollBar().setValue(0)
