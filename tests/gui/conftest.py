"""GUI test setup: settings in a temporary folder (never the user's profile), a small corpus and a tiny
config so a test trains in well under a second, and a factory that builds the real main window."""

from __future__ import annotations

import functools
import types

import pytest
from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig

# The offscreen platform says this for every dock; it is not about our code.
QT_NOISE = r"This plugin does not support propagateSizeHints"

# A wait's cap guards against a hang; it is never what a test checks. Under load (the suite's two workers
# beside two busy processes per core, or six people's work on two cores) an answer from a process that
# imports torch took over the 20–30 s a test had given it, so every qtbot wait is given at least this.
WAIT_CAP_MS = 180_000


def _patient(wait):
    @functools.wraps(wait)
    def patient(self, *args, timeout=5000, raising=None, **kwargs):
        if raising is not False and timeout:  # assertNotEmitted waits its whole timeout: left as asked
            timeout = max(timeout, WAIT_CAP_MS)
        if raising is not None:
            kwargs["raising"] = raising
        return wait(self, *args, timeout=timeout, **kwargs)

    return patient


for _name in ("waitUntil", "waitSignal", "waitSignals", "waitCallback", "waitExposed", "waitActive"):
    setattr(QtBot, _name, _patient(getattr(QtBot, _name)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    """What a test built is deleted as its test ends. pytest-qt closes each widget given to qtbot.addWidget (every
    window make_window builds) and asks Qt to delete it (deleteLater) outside any event loop, where Qt leaves it
    until a later test runs one (qtbot.wait, waitUntil, waitSignal): closed windows lived on, up to 19,549
    widgets in test_main_window (1,737 a window), and every later event loop served their timers and
    polished them. Here, after the test's fixtures are torn down (its askers closed) and inside pytest-qt's
    teardown (an exception raised as they go fails the test), the deletions are made. What still lives after
    (~155 widgets a window: pyqtgraph's parentless menus, heatmaps of pages not shown) is held by the window's
    Python objects, which the window moved out of the cyclic collector (gc.freeze, gui/main_window.py, as the
    app's one window lives as long as the app): hidden and without timers; collecting them after each window
    (gc.unfreeze, a full pass over the ~240,000 objects alive, ~0.15 s) cost more CPU than they do."""
    result = yield
    from PySide6.QtCore import QCoreApplication, QEvent

    if QCoreApplication.instance() is not None:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return result


@pytest.fixture(autouse=True, scope="session")
def gc_on_gui_thread(qapp):
    """As the app does: cyclic garbage (which may hold Qt objects) is collected on the GUI thread only."""
    from gui.app import collect_garbage_on_gui_thread

    collect_garbage_on_gui_thread()


@pytest.fixture(autouse=True, scope="session")
def one_analysis_process(gc_on_gui_thread):
    """One analysis process for every window the GUI tests open, as for the windows of one app session: a
    window's close waits for the work it left there and resets the door, instead of ending the process
    (the Runs pane asks it on every new window, and spawning a Python that imports torch each time was the
    largest part of the GUI suite's time). Ending it with the app is tested in test_asker.py."""
    from gui import analysis, main_window

    from .analysis_state import Forget

    def forget_the_windows_work(_wait: float = 0.0) -> None:
        analysis.ask_and_wait(Forget(), timeout=120)

    patch = pytest.MonkeyPatch()
    patch.setattr(main_window, "analysis", types.SimpleNamespace(shutdown=forget_the_windows_work))
    yield
    patch.undo()
    analysis.shutdown()


@pytest.fixture(autouse=True)
def askers_close_with_their_test(monkeypatch):
    """As a window's close does for its session: when a test ends, every Asker it made cancels what it has out and
    gives no view another answer. A test's session outlives its pane (qtbot deletes the pane); an answer that
    came back from the one analysis process later was handed to the deleted pane ("Internal C++ object
    (QLabel) already deleted" in a later test, under load)."""
    import shiboken6

    from gui import asker

    made = []
    init = asker.Asker.__init__

    def recorded(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(asker.Asker, "__init__", recorded)
    yield
    for a in made:
        if shiboken6.isValid(a):
            a.close()


@pytest.fixture(autouse=True)
def settings_folder(tmp_path):
    """QSettings (IniFormat, user scope) and the runs folder both live under tmp_path."""
    folder = tmp_path / "settings"
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    from gui import settings

    settings.reopen()  # the app's one store opens under this folder
    settings.set_runs_root(tmp_path / "runs")
    return folder


@pytest.fixture(autouse=True)
def stop_training_when_asked(monkeypatch):
    """Opening another run (or a new one) while one trains asks first (dialogs.ask_stop_training); a test
    answers yes unless it replaces this, and never sees a modal box. The questions asked are listed here."""
    from gui.widgets import dialogs

    asked: list[str] = []
    monkeypatch.setattr(dialogs, "ask_stop_training", lambda _parent, doing: asked.append(doing) or True)
    return asked


@pytest.fixture(scope="session")
def small_text() -> str:
    from engine.text.corpus import shakespeare_text

    return shakespeare_text()[:30_000]


@pytest.fixture
def corpus_file(tmp_path, small_text):
    path = tmp_path / "corpus.txt"
    path.write_text(small_text, encoding="utf-8")
    return path


def plots_built(qtbot):
    """Every heatmap shown has its plot and the layout has taken them, before a test reads the layout: a plot is
    built a turn of the event loop after its first paint, one a turn (gui/widgets/heatmap.py), and under load a
    fixed 50 ms wait ended while some were still waiting (a Heatmaps pane 619 px high where it fits in 615)."""
    from gui.widgets import first_sight

    for _ in range(2):  # a plot built may let another panel be painted for the first time
        qtbot.waitUntil(lambda: not first_sight.waiting())
        qtbot.wait(50)


def tiny_config(corpus, **train) -> ExperimentConfig:
    """One block, two heads, d_model 16, context 16: hundreds of steps a second on one thread."""
    t = dict(steps=2000, batch_size=4, warmup_steps=5, eval_every=50, eval_batches=2, sample_tokens=16,
             checkpoint_every=100, snapshot_every=100, device="cpu", torch_threads=1)
    t.update(train)
    return ExperimentConfig(name="tiny-test",
                            model=ModelConfig(n_layer=1, n_head=2, d_model=16, d_ff=32, n_ctx=16),
                            train=TrainConfig(**t), data=DataConfig(corpus=str(corpus)))


@pytest.fixture
def make_window(qtbot, corpus_file):
    """make_window(config=None, run_dir=None) -> a shown MainWindow starting with `config` (default: the
    tiny config on the small corpus). Windows are closed at the end of the test, stopping training, and deleted
    (pytest_runtest_teardown above). A test that needs what is drawn waits for it (plots_built): being exposed is
    not asked (a bare qtbot.waitExposed(window), without `with`, returns a context manager and waits for
    nothing in pytest-qt 4)."""
    from gui import settings
    from gui.app import make_application
    from gui.main_window import MainWindow

    def make(config: ExperimentConfig | None = None, run_dir=None) -> MainWindow:
        make_application()
        settings.set_saved_config((config or tiny_config(corpus_file)).to_toml())
        window = MainWindow(run_dir=run_dir)
        qtbot.addWidget(window)
        window.show()
        return window

    return make


def imported(qtbot, job, timeout: int = 60_000):
    """The run folder an import (gui/run_menu.py's ImportJob, or a window whose File menu started one) wrote,
    or None when it was refused or cancelled, once its process has finished."""
    if not hasattr(job, "sig_finished"):
        from gui.run_menu import ImportJob

        job = job.findChildren(ImportJob)[-1]
    if job.process.finished:
        raise AssertionError("the import had finished before it was waited for")
    with qtbot.waitSignal(job.sig_finished, timeout=timeout) as done:
        pass
    return done.args[0]
