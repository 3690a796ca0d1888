"""The formula widget: mathtext rendered off the GUI thread, wrapped to the view's width, cached, in the
theme's text colour, with the text notation when mathtext cannot read a formula."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QVBoxLayout, QWidget

from engine.forms import Forms, encoder, latex
from gui.widgets.formula import FormulaList, FormulaView, renderer

LONG = latex(Forms(encoder(3)).term_at(0).G)


_HOSTS: list[QWidget] = []  # qtbot closes them; this keeps Python from collecting them first


def host(qtbot, widget, width=900):
    w = QWidget()
    QVBoxLayout(w).addWidget(widget)
    qtbot.addWidget(w)
    _HOSTS.append(w)
    w.resize(width, 400)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_a_formula_renders_and_wraps_to_a_narrower_view(qtbot):
    view = FormulaView(LONG, "fallback text")
    w = host(qtbot, view, 1400)
    qtbot.waitUntil(lambda: view.rendered, timeout=30000)
    wide = view.pixmap().deviceIndependentSize()
    w.resize(420, 400)
    qtbot.waitUntil(lambda: view.rendered and view.pixmap().deviceIndependentSize().width() <= 420, timeout=30000)
    narrow = view.pixmap().deviceIndependentSize()
    assert narrow.height() > wide.height()  # more lines, none past the edge
    assert view.height() >= narrow.height()


def test_what_mathtext_cannot_read_shows_as_text(qtbot):
    view = FormulaView(r"\frac{", "the text notation")
    host(qtbot, view)
    qtbot.waitUntil(lambda: view.toolTip().startswith("Shown as text"), timeout=30000)
    assert view.text() == "the text notation" and not view.rendered


def test_images_are_cached_and_follow_the_text_colour(qtbot):
    view = FormulaView("G = X_{0}^{t}", "")
    w = host(qtbot, view)
    qtbot.waitUntil(lambda: view.rendered, timeout=30000)
    key = view._key
    assert renderer().image(key) is not None
    twin = FormulaView("G = X_{0}^{t}", "")
    w.layout().addWidget(twin)
    qtbot.waitUntil(lambda: twin.rendered, timeout=5000)
    assert twin._key == key  # the same request, answered from the cache
    pal = w.palette()
    pal.setColor(QPalette.ColorRole.WindowText, QColor("#ff0000"))
    w.setPalette(pal)
    qtbot.waitUntil(lambda: view.rendered and view._key.color == (255, 0, 0), timeout=30000)
    image = view.pixmap().toImage()
    inked = [image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())
             if image.pixelColor(x, y).alpha() > 200]
    assert inked and all(c.red() > 200 and c.green() < 60 for c in inked)


def test_a_long_list_shows_a_page_at_a_time(qtbot):
    rows = [(f"row {k}", f"X_{{{k}}}", "") for k in range(70)]
    lst = FormulaList()
    host(qtbot, lst)
    lst.set_rows(rows)
    assert lst.pages == 3 and len(lst.views()) == FormulaList.PAGE
    lst.next_button.click()
    qtbot.waitUntil(lambda: len(lst.views()) == FormulaList.PAGE and lst.page == 1, timeout=5000)
    assert "rows 31–60 of 70" in lst.position.text()
    lst.page_box.setValue(3)
    qtbot.waitUntil(lambda: len(lst.views()) == 10, timeout=5000)
    assert lst.page == 2 and lst.page_box.suffix() == " of 3"
    assert not lst.next_button.isEnabled()


def test_rendering_runs_in_the_symbolic_process_or_else_on_a_thread(qtbot, monkeypatch):
    from engine.figures import formula_layout
    from gui.widgets import formula

    key = formula.RenderKey(r"\mathrm{tr}\left(E^{t}\,\mathrm{d}W\right)", 480, 1.0, (0, 0, 0))
    for use_process in (True, False):
        r = formula.FormulaRenderer(use_process=use_process)
        if use_process:  # typesetting made to fail here: only the process can answer
            monkeypatch.setattr(formula, "formula_work", lambda *a: (_ for _ in ()).throw(AssertionError))
        with qtbot.waitSignal(r.sig_ready, timeout=60000):
            r.request(key)
        monkeypatch.setattr(formula, "formula_work", formula_layout.formula_work)
        assert r.image(key).width() > 20
        r.shutdown()


def test_a_formula_off_screen_renders_only_once_it_is_brought_into_view(qtbot):
    """As in a dock tabbed behind another, which Qt moves off screen but still calls visible."""
    w = host(qtbot, QWidget(), 600)
    view = FormulaView("G = W_{off}^{t} X_{screen}", "")
    view.setParent(w)
    view.setGeometry(-2000, -2000, 500, 60)
    view.show()
    assert view.isVisible() and view.visibleRegion().isEmpty()
    ready: list = []  # the renderer is the app's one: another test's formulas may still be arriving
    renderer().sig_ready.connect(lambda key: ready.append(key.tex))
    qtbot.wait(500)
    assert "G = W_{off}^{t} X_{screen}" not in ready
    assert view._key is None  # nothing was asked of the renderer
    view.move(10, 10)
    qtbot.waitUntil(lambda: view.rendered, timeout=30000)


def test_list_rows_take_their_final_height_first_and_those_in_sight_are_typeset_first(qtbot):
    """Rows used to appear as one clipped line of text and grow one by one as they were typeset, moving
    everything under them for seconds. Now every row of the page is laid out before any is typeset, keeps
    that height when its image comes, and rows in sight are typeset before the rest."""
    rows = [(f"row {k}", rf"{LONG} + Z_{{{k}}}", f"row {k} as text") for k in range(12)]
    texs = {tex for _, tex, _ in rows}
    events: list[tuple[str, str]] = []
    r = renderer()
    r.sig_laid_out.connect(lambda key: events.append(("laid out", key.tex)) if key.tex in texs else None)
    r.sig_ready.connect(lambda key: events.append(("typeset", key.tex)) if key.tex in texs else None)
    lst = FormulaList()
    host(qtbot, lst, 900)  # 400 high: a few rows in sight
    lst.set_rows(rows)
    views = lst.views()
    laid: dict[str, int] = {}
    for v in views:
        v.sig_laid_out.connect(lambda v=v: laid.setdefault(v.tex, v.maximumHeight()))
    assert all(v.maximumHeight() == 0 for v in views)  # no room, and no text, until laid out
    qtbot.waitUntil(lambda: len(laid) == len(rows), timeout=60000)
    first_typeset = next((i for i, e in enumerate(events) if e[0] == "typeset"), len(events))
    assert {tex for kind, tex in events[:first_typeset] if kind == "laid out"} == texs

    bar = lst.scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    bar.setValue(bar.maximum())  # the last rows come into sight while the first ones are typeset
    qtbot.wait(100)  # the views brought into sight are painted and ask again
    in_sight = {v.tex for v in views if not v.visibleRegion().isEmpty()}
    started = {tex for kind, tex in events if kind == "typeset"} | ({r._running[1].tex} if r._running else set())
    assert in_sight and in_sight != texs
    qtbot.waitUntil(lambda: all(v.rendered for v in views), timeout=120000)
    later = [tex for kind, tex in events if kind == "typeset" and tex not in started]
    seen_first = [tex in in_sight for tex in later]
    assert seen_first == sorted(seen_first, reverse=True), ([t[-6:] for t in later], [t[-6:] for t in in_sight], [t[-6:] for t in started])  # every row in sight before any other

    for v in views:
        assert v.height() == laid[v.tex]  # the height it was laid out at
        assert v.pixmap().deviceIndependentSize().height() == v.height()  # and the image fills it
