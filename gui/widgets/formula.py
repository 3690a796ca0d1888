"""Formulas on screen: LaTeX rendered by matplotlib's mathtext away from the GUI thread, wrapped to the
widget's width (engine.figures.formula_layout), cached, and shown as a pixmap; the text notation stands in while it
renders and whenever mathtext cannot read a formula.

`FormulaRenderer` is one per application. It renders in the app's symbolic process (gui/symbolic_process.py,
on a lane of its own beside the Forms pane's): mathtext's parser is pure Python, and on a thread it held the
interpreter lock that the GUI thread needs at every call into Python while it paints (measured here: event-loop
stalls of 0.3–1 s while a page of formulas rendered). Results come back as plain bytes; an LRU cache keeps
finished images keyed by (LaTeX, width, size, colour). Tests may render on a single thread instead
(`use_process=False`).
A formula is laid out before it is drawn: its lines and their heights come from the measures of its
pieces (engine.figures.formula_layout.lay_out_formula: cheap, the pieces recur), so a view takes its final
height first and the typeset image fills exactly that room — nothing below it moves when it arrives. The
renderer keeps one request in the process at a time and sends next the most urgent: layouts, then images
of views on screen, then the rest of a list's page (a view scrolled into sight is moved ahead).
`FormulaView` shows one formula and asks again when its width or the theme's text colour changes.
`FormulaList` shows many (label, formula) rows a page at a time, so a whole form never builds thousands
of widgets; its rows take no room until laid out, then appear at their final height, top to bottom.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from PySide6.QtCore import QObject, QPoint, QRect, QThreadPool, QTimer, Qt, Signal
from PySide6.QtGui import QImage, QPalette, QPixmap
from PySide6.QtWidgets import (QApplication, QHBoxLayout, QLabel, QPushButton, QScrollArea, QSizePolicy,
                               QSpinBox, QVBoxLayout, QWidget)

from engine.figures.formula_layout import Typeset, formula_work

from .. import symbolic_process

FONT_PT = 12.0
WIDTH_STEP = 48        # widths are rounded down to this many pixels, so a resize re-renders rarely
CACHE_SIZE = 1500
LAYOUTS = 20_000       # layouts kept (a few numbers each)
LAY_OUT, ON_SCREEN, OFF_SCREEN = 0, 1, 2  # what the renderer sends first: layouts, then what is seen
QWIDGETSIZE_MAX = (1 << 24) - 1


@dataclass(frozen=True)
class RenderKey:
    tex: str
    width: int          # logical pixels the formula may take; lines wrap to it
    dpr: float          # device pixel ratio of the screen
    color: tuple[int, int, int]
    fontsize: float = FONT_PT


@dataclass(frozen=True)
class Layout:
    """Where a formula's lines go before it is drawn, in device pixels."""
    slots: tuple[int, ...]   # each line's height
    height: int              # the image's


def layout_key(key: RenderKey) -> RenderKey:
    """What a layout depends on: everything but the colour (a theme's change draws again, at the same size)."""
    return replace(key, color=(0, 0, 0))


def _plain(key: RenderKey, layout: Layout | None) -> tuple:
    """formula_work's arguments after its kind: the key and the layout's slots as plain values."""
    return key.tex, key.width, key.dpr, key.color, key.fontsize, None if layout is None else layout.slots


def _work(kind: str, key: RenderKey, layout: Layout | None):
    """On the fallback thread: one layout or one image, as the process answers them."""
    return formula_work(kind, *_plain(key, layout))


def _always() -> bool:
    return True


def _safely(in_sight: Callable[[], bool]) -> bool:
    try:
        return bool(in_sight())
    except RuntimeError:  # the view asking was deleted
        return False


def _message(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


class _Relay(QObject):
    sig_finished = Signal(object, object, str)  # (kind, key), a Layout or (bytes, w, h) or None, error


class FormulaRenderer(QObject):
    sig_laid_out = Signal(object)         # RenderKey whose Layout is now known
    sig_ready = Signal(object)            # RenderKey whose image is now in the cache
    sig_failed = Signal(object, str)      # RenderKey, why mathtext could not read it

    def __init__(self, parent: QObject | None = None, use_process: bool = True):
        super().__init__(parent)
        self._use_process = use_process
        self._pool = QThreadPool(self)    # the fallback: one thread
        self._pool.setMaxThreadCount(1)
        self._cache: OrderedDict[RenderKey, QImage] = OrderedDict()
        self._layouts: OrderedDict[RenderKey, Layout] = OrderedDict()
        self._failed: dict[RenderKey, str] = {}
        self._waiting: dict[tuple[str, RenderKey], int] = {}  # job ("layout" or "render", key) -> order asked
        self._sights: dict[RenderKey, set[Callable[[], bool]]] = {}  # whether a view asking for it is seen
        self._running: tuple[str, RenderKey] | None = None
        self._order = itertools.count()
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

    def layout(self, key: RenderKey) -> Layout | None:
        return self._layouts.get(layout_key(key))

    def error(self, key: RenderKey) -> str | None:
        return self._failed.get(key) or self._failed.get(layout_key(key))

    def lay_out(self, key: RenderKey) -> None:
        """Lay `key` out unless that is known or on its way; sig_laid_out(layout_key(key)) or sig_failed
        follows. Layouts go before every image."""
        key = layout_key(key)
        if key not in self._layouts and key not in self._failed:
            self._enqueue(("layout", key))

    def request(self, key: RenderKey, in_sight: Callable[[], bool] | None = None) -> None:
        """Render `key` unless it is cached, failed or running; sig_ready or sig_failed follows. Whether
        the view asking is in sight (`in_sight()`, asked whenever the next image is chosen: a list scrolls
        meanwhile) puts it before the images of views out of sight; None: it is."""
        if key in self._cache or self.error(key) is not None:
            return
        if self.layout(key) is None:
            self.lay_out(key)  # drawn once laid out
        self._sights.setdefault(key, set()).add(in_sight or _always)
        self._enqueue(("render", key))

    def pending(self, key: RenderKey) -> bool:
        jobs = (("layout", layout_key(key)), ("render", key))
        return self._running in jobs or any(job in self._waiting for job in jobs)

    def _enqueue(self, job: tuple[str, RenderKey]) -> None:
        if job != self._running and job not in self._waiting:
            self._waiting[job] = next(self._order)
        self._send_next()

    def _urgency(self, job: tuple[str, RenderKey]) -> tuple[int, int]:
        kind, key = job
        if kind == "layout":
            return LAY_OUT, self._waiting[job]
        return (ON_SCREEN if any(_safely(seen) for seen in self._sights.get(key, ())) else OFF_SCREEN,
                self._waiting[job])

    def _send_next(self) -> None:
        """One request in the process at a time, so a later, more urgent one overtakes those waiting."""
        if self._running is not None:
            return
        ready = [job for job in self._waiting if job[0] == "layout" or self.layout(job[1]) is not None]
        if not ready:
            return
        job = min(ready, key=self._urgency)
        del self._waiting[job]
        self._running = job
        kind, key = job
        if kind == "render":
            self._sights.pop(key, None)
        layout = self.layout(key)
        relay = self._relay
        if self._use_process:
            # the process is asked in plain values, nothing of this module: unpickling imports a class's module
            # there, and this one's package imports the whole Forms pane and torch (a 62 MB process became 347 MB)
            def answered(_number, kind_of_event, payload, j=job):
                if kind_of_event in ("part", "progress"):
                    return
                result, error = (payload, "") if kind_of_event == "done" else (None, payload)
                try:
                    relay.sig_finished.emit(j, result, error)
                except RuntimeError:  # the application is closing
                    pass

            symbolic_process.service().ask(Typeset(kind, _plain(key, layout)), answered)
            return

        def work() -> None:
            try:
                result, error = _work(kind, key, layout), ""
            except Exception as e:  # FormulaError, or a mathtext failure we did not foresee
                result, error = None, _message(e)
            try:
                relay.sig_finished.emit(job, result, error)
            except RuntimeError:  # the application is closing
                pass

        self._pool.start(work)

    def shutdown(self) -> None:
        """Forget what waits (the symbolic process itself ends with the application)."""
        self._waiting.clear()
        self._sights.clear()

    def wait(self, msecs: int = 30_000) -> bool:
        return self._pool.waitForDone(msecs)

    def _on_finished(self, job, result, error: str) -> None:
        self._running = None
        kind, key = job
        if result is None:
            self._failed[key] = error
            for k in [k for k in self._sights if layout_key(k) == key or k == key]:
                self._waiting.pop(("render", k), None)
                self._sights.pop(k, None)
            self.sig_failed.emit(key, error)
        elif kind == "layout":
            self._layouts[key] = Layout(*result)
            while len(self._layouts) > LAYOUTS:
                self._layouts.popitem(last=False)
            self.sig_laid_out.emit(key)
        else:
            data, w, h = result
            image = QImage(data, w, h, 4 * w, QImage.Format.Format_RGBA8888).copy()
            image.setDevicePixelRatio(key.dpr)
            self._cache[key] = image
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
            self.sig_ready.emit(key)
        self._send_next()


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
    renders and if mathtext cannot read it.

    It lays the formula out first and takes the height the image will have, so the image fills its room
    when it comes. With `area` (a list's scrolled viewport), it takes no room until laid out, and while the
    area is on screen it is laid out and typeset even when scrolled out of sight, after the views in sight."""

    sig_laid_out = Signal()  # the view has its final height for this width (or shows the text notation)

    def __init__(self, tex: str = "", fallback: str = "", parent: QWidget | None = None, *,
                 area: QWidget | None = None):
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setWordWrap(True)
        self._tex, self._fallback = "", ""
        self._key: RenderKey | None = None
        self._area = area
        self.laid_out = False
        self._renderer = renderer()
        self._renderer.sig_laid_out.connect(self._on_laid_out)
        self._renderer.sig_ready.connect(self._on_ready)
        self._renderer.sig_failed.connect(self._on_failed)
        self._timer = QTimer(self, singleShot=True, interval=60)
        self._timer.timeout.connect(self.ask)
        self.set_formula(tex, fallback)

    @property
    def tex(self) -> str:
        return self._tex

    @property
    def key(self) -> RenderKey | None:
        """What this view asked the renderer for last."""
        return self._key

    @property
    def rendered(self) -> bool:
        return self._key is not None and self._renderer.image(self._key) is not None

    def set_formula(self, tex: str, fallback: str = "") -> None:
        self._tex, self._fallback = tex, fallback or tex
        self._key = None
        self.laid_out = False
        if self._area is not None:
            self.setFixedHeight(0)  # no room until laid out: the rows after it do not move when it is
        self._show_pending()
        self.ask()

    def _width(self) -> int:
        return max(WIDTH_STEP * 4, (self.width() - 8) // WIDTH_STEP * WIDTH_STEP)

    def _in_sight(self) -> bool:
        return not self.visibleRegion().isEmpty()

    def _area_on_screen(self) -> bool:
        """Whether the list's viewport lies within its window (a dock tabbed behind another is moved out of
        it; the viewport's visibleRegion cannot say, as the rows cover it)."""
        area = self._area
        if area is None or not area.isVisible():
            return False
        window = area.window()
        return QRect(area.mapTo(window, QPoint(0, 0)), area.size()).intersects(window.rect())

    def ask(self) -> None:
        """Lay out and typeset what this view shows, at its width now, if it may be seen."""
        # only what is on screen: a formula in a dock tabbed behind another waits until it is painted
        # (paintEvent asks again, at the width it is given then); in a list on screen, the rows out of
        # sight are laid out and typeset too, after those in sight
        if not self._tex or not (self._in_sight() or self.isVisible() and self._area_on_screen()):
            return
        c = self.palette().color(QPalette.ColorRole.WindowText)
        key = RenderKey(self._tex, self._width(), self.devicePixelRatioF(), (c.red(), c.green(), c.blue()))
        if key != self._key:
            self._key = key
            if self._renderer.layout(key) is not None:
                self._take_layout(key)
        if self._renderer.image(key) is not None:
            self._show(key)
        elif self._renderer.error(key) is not None:
            self._show_fallback(self._renderer.error(key))
        else:
            self._renderer.request(key, self._in_sight)

    def _take_layout(self, key: RenderKey) -> None:
        self.setFixedHeight(math.ceil(self._renderer.layout(key).height / key.dpr))
        if not self.laid_out:
            self.laid_out = True
            self.sig_laid_out.emit()

    def _show(self, key: RenderKey) -> None:
        self.setWordWrap(False)  # a word-wrapping QLabel asks heightForWidth, which a pixmap answers with 0
        self.setPixmap(QPixmap.fromImage(self._renderer.image(key)))
        self.setForegroundRole(QPalette.ColorRole.WindowText)
        self.setToolTip("")

    def _show_pending(self) -> None:
        """The text notation on one line (clipped, greyed) while the formula renders: a word-wrapped
        rich-text label is laid out again at every relayout of its list, which cost the GUI thread ~0.5 s
        while a page of 30 long formulas arrived one by one."""
        self.setWordWrap(False)
        self.setText(self._fallback)
        self.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.setToolTip("")

    def _show_fallback(self, error: str = "") -> None:
        self.setMinimumHeight(0)
        self.setMaximumHeight(QWIDGETSIZE_MAX)  # as tall as its text: no image will come
        self.setWordWrap(True)
        self.setText(self._fallback)
        self.setForegroundRole(QPalette.ColorRole.WindowText)
        self.setToolTip(f"Shown as text: {error}" if error else "")
        if not self.laid_out:
            self.laid_out = True
            self.sig_laid_out.emit()

    def _on_laid_out(self, key: RenderKey) -> None:
        if self._key is not None and key == layout_key(self._key):
            self._take_layout(self._key)
            self._timer.start()  # typeset once the new height is in place (and where it is seen)

    def _on_ready(self, key: RenderKey) -> None:
        if key == self._key:
            self._show(key)

    def _on_failed(self, key: RenderKey, error: str) -> None:
        if self._key is not None and key in (self._key, layout_key(self._key)):
            self._show_fallback(error)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._tex and self._key is not None and self._width() != self._key.width:
            self._timer.start()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._area is None:  # a list asks for all its rows at once, in order (FormulaList.ask)
            self._timer.start()

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if self._tex and not self.rendered and not self._timer.isActive() and (
                self._key is None or self._renderer.pending(self._key)):
            self._timer.start()  # asked for the first time, or moved ahead now that it is seen

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self._tex and self._key is not None:
            c = self.palette().color(QPalette.ColorRole.WindowText)
            if (c.red(), c.green(), c.blue()) != self._key.color:
                self._key = None  # a view out of sight now asks again, in the new colour, when it is painted
                self._timer.start()


class FormulaList(QWidget):
    """(label, LaTeX, fallback) rows, a page at a time, in a scroll area. A row (its label and formula)
    appears once its formula is laid out, at its final height; rows are laid out top to bottom, so what
    is shown never moves, and those in sight are typeset first."""

    PAGE = 30

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.rows: list[tuple[str, str, str]] = []
        self.page = 0
        self._views: list[FormulaView] = []
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
        # always there: a scroll bar appearing as rows take their height would narrow them, and narrower
        # rows are laid out again
        self.scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
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
        self._ask_timer = QTimer(self, singleShot=True, interval=60)  # once the page has its widths
        self._ask_timer.timeout.connect(self.ask)
        self.set_rows([])

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.rows) // self.PAGE))

    def set_rows(self, rows: list[tuple[str, str, str]]) -> None:
        self.rows = list(rows)
        self.show_page(0)

    def views(self) -> list[FormulaView]:
        """The formulas of the page shown, top to bottom."""
        return list(self._views)

    def ask(self) -> None:
        """Every row's layout, top to bottom, in one go: all are laid out before any is typeset."""
        for view in self.views():
            view.ask()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._ask_timer.start()

    def show_page(self, page: int) -> None:
        self.page = max(0, min(page, self.pages - 1))
        while self.body_layout.count():
            item = self.body_layout.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        start = self.page * self.PAGE
        self._views = []
        for label, tex, fallback in self.rows[start:start + self.PAGE]:
            view = FormulaView(tex, fallback, area=self.scroll.viewport())
            self._views.append(view)
            if label:
                tag = QLabel(label)
                tag.setObjectName("formula_label")
                tag.setStyleSheet("font-family: monospace;")
                tag.setForegroundRole(QPalette.ColorRole.PlaceholderText)
                tag.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                tag.setVisible(view.laid_out)  # with its formula
                view.sig_laid_out.connect(tag.show)
                self.body_layout.addWidget(tag)
            self.body_layout.addWidget(view)
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
        self._ask_timer.start()
