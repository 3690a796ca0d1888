"""The Forms pane's console and its formula snapshots: the note's commands with the engine's answers and the
CLI's counts, a history that Up and Down walk, errors that never run Python, and exports that are valid
files (the .tex compiles when TeX is installed, the SVG parses, the PNG opens)."""

from __future__ import annotations

import functools
import multiprocessing
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage

from engine.cli import main as cli_main
from engine.forms import Forms, encoder, latex
from engine.forms.desk import Desk
from engine.export_process import write_export
from engine.progress import reporting
from engine.service_process import ServiceProcess
from engine.figures.export import FigureOptions
from gui.exports import Exports
from gui.panes.forms import FormsPane
from gui import symbolic_process
from gui.panes.forms.console import History
from gui.session import Session
from gui.widgets import dialogs
from gui.widgets.formula import FormulaView
from tests.child_work import sendable
from tests.gui.panes.forms.spin import add_spin


@pytest.fixture
def pane(qtbot):
    pane = FormsPane(Session())
    qtbot.addWidget(pane)
    pane.resize(1300, 900)
    pane.show()
    qtbot.waitExposed(pane)
    qtbot.waitUntil(lambda: pane.derived is not None, timeout=20000)
    pane.tabs.setCurrentWidget(pane.console)
    return pane


def enter(qtbot, pane, line, ok=True):
    """Type a line at the prompt and press Enter, as a user does; returns the outputs (or the error)."""
    prompt = pane.console.prompt
    qtbot.waitUntil(prompt.isEnabled, timeout=20000)
    prompt.clear()
    qtbot.keyClicks(prompt, line)
    signal = pane.console.sig_ran if ok else pane.console.sig_failed
    with qtbot.waitSignal(signal, timeout=30000) as got:
        qtbot.keyClick(prompt, Qt.Key.Key_Return)
    return got.args[1]


def test_the_console_gives_24_terms_for_the_depth_2_chain(qtbot, pane):
    outputs = enter(qtbot, pane, "z = flatten(expandmm(form(encoder(2)))); log(z.length)")
    assert [(o.kind, o.content) for o in outputs] == [("text", "24")]
    assert enter(qtbot, pane, "log(forms(2).length)")[0].content == "24"
    (html,) = enter(qtbot, pane, "show(html(shiftmm(z[13])))")
    assert html.kind == "html" and "aaC" in html.content
    block = pane.console.outputs()[-1]
    assert block.property("output_kind") == "html"
    (term,) = enter(qtbot, pane, "forms(2, 4)")
    assert term.rows[0][0] == "W_0 via X_1@Z_1#0"
    views = pane.console.outputs()[-1].findChildren(FormulaView)
    assert len(views) == 1
    qtbot.waitUntil(lambda: views[0].rendered, timeout=30000)


def test_the_consoles_counts_are_the_clis(qtbot, pane, capsys):
    assert cli_main(["forms", "--chain", "3", "--count"]) == 0
    lines = capsys.readouterr().out.split()
    cli = dict(zip(lines[::2], map(int, lines[1::2])))
    weights = [w for w in cli if w != "total"]
    line = "; ".join(f'log(count(3, "{w}"))' for w in weights) + "; log(count(3))"
    outputs = enter(qtbot, pane, line)
    assert [int(o.content) for o in outputs] == [cli[w] for w in weights] + [cli["total"]]
    assert cli["total"] == 78


def test_up_and_down_recall_the_history(qtbot, pane):
    for line in ("log(1)", "log(2)", "log(3)"):
        enter(qtbot, pane, line)
    prompt = pane.console.prompt
    qtbot.keyClicks(prompt, "log(")
    qtbot.keyClick(prompt, Qt.Key.Key_Up)
    assert prompt.text() == "log(3)"
    qtbot.keyClick(prompt, Qt.Key.Key_Up)
    qtbot.keyClick(prompt, Qt.Key.Key_Up)
    qtbot.keyClick(prompt, Qt.Key.Key_Up)
    assert prompt.text() == "log(1)"
    qtbot.keyClick(prompt, Qt.Key.Key_Down)
    assert prompt.text() == "log(2)"
    qtbot.keyClick(prompt, Qt.Key.Key_Down)
    qtbot.keyClick(prompt, Qt.Key.Key_Down)
    assert prompt.text() == "log("  # the line being typed comes back
    with qtbot.waitSignal(pane.console.sig_ran, timeout=10000):
        qtbot.keyClick(prompt, Qt.Key.Key_Up)
        qtbot.keyClick(prompt, Qt.Key.Key_Return)
    assert pane.console.history.lines == ["log(1)", "log(2)", "log(3)"]


def test_history_keeps_no_repeats_and_a_limit():
    h = History(limit=3)
    for line in ("a", "a", "b", "c", "d"):
        h.add(line)
    assert h.lines == ["b", "c", "d"]
    assert h.next("x") == "x"


@pytest.mark.parametrize("line", ['__import__("os").system("touch pwned")', 'open("pwned", "w")',
                                  "import os", "eval(\"1\")", "forms(2).__class__", "log(1"])
def test_bad_commands_show_an_error_and_never_run_python(qtbot, pane, tmp_path, monkeypatch, line):
    monkeypatch.chdir(tmp_path)
    message = enter(qtbot, pane, line, ok=False)
    assert message and "Traceback" not in message
    assert message in pane.console.log.toPlainText()
    assert not (tmp_path / "pwned").exists()
    assert pane.console.prompt.isEnabled()


def test_a_long_line_and_its_error_wrap_within_the_transcript(qtbot, pane):
    pane.resize(700, 900)
    line = "A = sym(\"A\"); B = sym(\"B\"); Y = otimes(oplus(A, B), A); Z = otimes(Y, Y); " * 3 + "log(1"
    enter(qtbot, pane, line, ok=False)
    viewport = pane.console.scroll.viewport()
    qtbot.waitUntil(lambda: pane.console.body.width() <= viewport.width())
    assert not pane.console.scroll.horizontalScrollBar().isVisible()


@pytest.fixture
def saving_to(monkeypatch, tmp_path):
    chosen = {}

    def ask_export(parent, title, filters="", suggested="", start=""):
        return chosen["path"], FigureOptions()

    monkeypatch.setattr(dialogs, "ask_export", ask_export)
    return chosen


def valid(path, ext: str) -> None:
    assert path.stat().st_size > 0
    if ext == "png":
        assert not QImage(str(path)).isNull()
    elif ext == "svg":
        assert ET.parse(path).getroot().tag.endswith("svg")
    elif ext == "html":
        ET.fromstring(path.read_text(encoding="utf-8").split("\n", 1)[1])


@pytest.mark.parametrize("what", ["term", "weight", "stage", "form"])
def test_every_exported_snapshot_is_a_valid_file(qtbot, pane, tmp_path, saving_to, what, children_in_thread):
    """The term's first format goes the app's whole way (the menu's action, the export queue, its job, here on a
    thread: children_in_thread); every other request the actions made is checked sendable to the export process
    and written here with the function it runs: a process each cost ~0.6-1.1 s of CPU to start and derive the
    forms again, most of this file's CPU (the process itself is tests/engine/test_export_process.py's and
    tests/gui/test_exports.py's point)."""
    # depth 1: a form of 6 terms; the engine's own tests write every format of the depth-2 chain's sheets
    pane.source.depth.setValue(1)
    qtbot.waitUntil(lambda: pane.derived.title == "encoder(1)", timeout=20000)
    pane.terms.select_weight("K_0")
    qtbot.waitUntil(lambda: pane.terms.term is not None, timeout=20000)
    pane.tabs.setCurrentWidget(pane.walkthrough)
    qtbot.waitUntil(lambda: pane.walkthrough.sheet is not None, timeout=20000)
    saving_to["path"] = tmp_path / f"{what}.png"
    formats = ("png", "svg", "html", "tex")
    if what == "term":
        exports = Exports(pane.session, pane)  # the app's queue, as the window makes it
        progress = []
        exports.sig_progress.connect(lambda _request, *p: progress.append(p))
        with qtbot.waitSignal(exports.sig_finished, timeout=60000) as got:
            pane.export_actions[what].trigger()
        request, written = got.args
        assert request.path == saving_to["path"] and progress[-1][0] == progress[-1][1] > 0  # all rows or pages
        for path in written:
            valid(path, "png")
        formats = formats[1:]
    else:
        asked = []  # what the window's queue would be given
        pane.session.sig_export_requested.connect(asked.append)
        pane.export_actions[what].trigger()
        pane.session.sig_export_requested.disconnect(asked.append)
        (request,) = asked
        assert request.path == saving_to["path"] and sendable(request.write)
    for ext in formats:
        progress = []
        written = reporting(lambda *p: progress.append(p), write_export, str(tmp_path / f"{what}.{ext}"),
                            request.write, request.options)
        assert written and progress[-1][0] == progress[-1][1] > 0
        for path in written:
            valid(Path(path), ext)
    if shutil.which("pdflatex"):
        done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{what}.tex"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-1500:]


def test_file_export_and_copy_latex_follow_the_chosen_term(qtbot, pane, tmp_path):
    pane.tabs.setCurrentWidget(pane.terms)
    pane.terms.select_weight("Q_1")
    qtbot.waitUntil(lambda: pane.terms.term is not None, timeout=20000)
    filters, name, write = pane.export_job()
    assert ".tex" in filters and ".svg" in filters and name == "term.tex" and sendable(write)
    (path,) = write(tmp_path / "t.tex")
    assert r"\section*{Term Q\_1}" in path.read_text(encoding="utf-8")
    term = Forms(encoder(2)).term(pane.terms.term.id)
    qtbot.waitUntil(lambda: pane.terms.detail.G.tex == "G = " + latex(term.G), timeout=20000)
    pane.copy_latex()
    assert QGuiApplication.clipboard().text() == "G = " + latex(term.G)


@pytest.fixture
def spinning(monkeypatch):
    """The app's symbolic process replaced by one whose console has spin(); the Event it sets once spinning."""
    started = multiprocessing.get_context("spawn").Event()
    service = ServiceProcess(Desk, functools.partial(add_spin, started), name="symbolic")
    monkeypatch.setattr(symbolic_process, "_SERVICE", service)
    yield started
    service.close()


@pytest.mark.parametrize("how", ["button", "escape"])
def test_stop_cancels_a_running_line_and_shows_only_while_one_runs(qtbot, pane, spinning, how):
    """A line that runs until stopped: Stop (or Esc) ends it with "evaluation cancelled", the prompt comes
    back, and the button is hidden again; it is not shown while nothing runs."""
    console = pane.console
    stop = console.stop_button
    assert not stop.isVisible()
    console.prompt.setText("z = spin(); log(1)")
    with qtbot.waitSignal(console.sig_failed, timeout=60000) as got:
        qtbot.keyClick(console.prompt, Qt.Key.Key_Return)
        assert console.running and stop.isVisible()
        assert spinning.wait(120)  # the line is running in the symbolic process
        if how == "button":
            qtbot.mouseClick(stop, Qt.MouseButton.LeftButton)
        else:
            qtbot.keyClick(stop, Qt.Key.Key_Escape)
    assert "evaluation cancelled" in got.args[1]
    assert not stop.isVisible() and console.prompt.isEnabled()
    assert "evaluation cancelled" in console.log.toPlainText()
    assert enter(qtbot, pane, "log(1)") and not stop.isVisible()  # the next line runs uncancelled


def test_an_output_of_many_rows_shows_the_first_rows_text_while_they_render():
    from engine.forms import Output
    from gui.panes.forms.console import ROWS_SHOWN, _text_rows

    rows = [("", f"x_{k}") for k in range(100)]
    text = "\n".join(f"x{k}" for k in range(100))
    assert _text_rows(Output("text", text, rows)) == [f"x{k}" for k in range(ROWS_SHOWN)]
    assert _text_rows(Output("text", "x0\nx1", rows[:2])) == ["x0", "x1"]
    assert _text_rows(Output("text", "one line", rows[:3])) == ["", "", ""]  # not one line per row


def test_the_transcript_scrolls_to_each_new_output_as_it_grows(qtbot, pane):
    """Issue 40: the console did not scroll to new output; its formulas take their height once laid out,
    after the output is added, so scrolling once at the add left the newest rows below the fold."""
    bar = pane.console.scroll.verticalScrollBar()
    for _ in range(3):
        enter(qtbot, pane, "show(forms(2))")
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=20000)
    qtbot.waitUntil(lambda: all(v.height() > 0 for v in pane.console.findChildren(FormulaView)), timeout=30000)
    qtbot.wait(200)  # rows laid out after the last output: the transcript followed them
    assert bar.value() == bar.maximum()
    bar.setValue(0)  # the reader scrolls up to read: the transcript stays there while rows settle...
    qtbot.wait(100)
    assert bar.value() == 0
    enter(qtbot, pane, "log(forms(2).length)")  # ...until a new output comes
    qtbot.waitUntil(lambda: bar.value() == bar.maximum(), timeout=5000)
