"""Starting the app: the QApplication, its theme, the main window, and hooks for the smoke test and the
launch-time benchmark.

Environment (for tests and benchmarks, not for users):
    GPT_EXPLORER_QUIT_AFTER_MS=N   close the window N ms after it is shown (the smoke test)
    GPT_EXPLORER_REPORT_SHOWN=1    print "shown <seconds since the process started>" once the window is up, and
                                   "ready <seconds>" once its panes are built (the session's log says so first)
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from . import desktop_entry, log as app_log, settings, theme
from .about import version_report
from .crash import CrashReporter


def _process_age_s() -> float:
    """Seconds since this process started (Linux: /proc; elsewhere since this module loaded)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        return boot - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.perf_counter() - _LOADED


_LOADED = time.perf_counter()


_collector = None


def collect_garbage_on_gui_thread() -> None:
    """Python's cyclic garbage collector runs on whichever thread happens to allocate. When that is a worker
    (a forms derivation, a feeder) and the garbage holds Qt objects, their C++ destructors run there, take
    Qt's locks, and wait for the interpreter lock that the GUI thread holds while it waits for those same
    Qt locks: the app froze so (seen in the test suite, a derivation's thread in gc beside a window closing).
    pyqtgraph's GarbageCollector turns automatic collection off and collects from a timer on this thread."""
    global _collector
    if _collector is None:
        from pyqtgraph.util.garbage_collector import GarbageCollector

        _collector = GarbageCollector(interval=1.0)


def make_application(argv: list[str] | None = None) -> QApplication:
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv[:1])
    collect_garbage_on_gui_thread()
    # No organization name: per-user data lives in ~/.local/share/gpt-explorer (not …/gpt-explorer twice),
    # and no display name, which Qt would append to every window title.
    app.setApplicationName(settings.APPLICATION)
    app.setDesktopFileName(desktop_entry.APP_ID)  # Wayland's app id; the desktop entry's StartupWMClass
    app.setWindowIcon(QIcon(str(desktop_entry.icon_path())))
    theme.apply_theme(app, settings.theme())
    return app


def start_reporting(window) -> CrashReporter:
    """The log in the user's data folder, with the versions this session runs, and the crash dialog."""
    path = app_log.start_log()
    # the versions once the panes are built: they name torch's, and torch loads then (not before the window)
    window.sig_panes_ready.connect(lambda: app_log.log.info("started\n%s", version_report()))
    reporter = CrashReporter(window)
    reporter.install()
    if path is None:
        print("gpt-explorer: the log cannot be written in the data folder; errors go to this terminal",
              file=sys.stderr)
    return reporter


def run_app(run_dir: str | None = None, argv: list[str] | None = None) -> int:
    app = make_application(argv)
    from .main_window import MainWindow  # after the QApplication: widgets need it

    if run_dir is None:  # the app reopens the run it showed last (issue 15)
        from .recent import run_to_reopen

        run_dir = run_to_reopen()
    window = MainWindow(run_dir=run_dir, panes_after_show=True)
    window.crash_reporter = start_reporting(window)
    window.show()
    if os.environ.get("GPT_EXPLORER_REPORT_SHOWN"):
        window.sig_first_painted.connect(lambda: print(f"shown {_process_age_s():.3f}", flush=True))
        window.sig_panes_ready.connect(lambda: print(f"ready {_process_age_s():.3f}", flush=True))
    quit_after = os.environ.get("GPT_EXPLORER_QUIT_AFTER_MS")
    if quit_after:  # counted from when the panes are built, so a slow machine still boots fully
        window.sig_panes_ready.connect(lambda: QTimer.singleShot(int(quit_after), window.close))
    window.sig_panes_ready.connect(window.controller.probe_device)
    if settings.show_welcome():  # a first start, or a user who kept it (gui/first_run/welcome.py)
        window.sig_panes_ready.connect(window.first_run.show_welcome)
    close_on_signals(window)
    code = app.exec()
    settings.qsettings().sync()  # what the last turn set, before the interpreter (and the store) goes
    return code


def exit_now(status: int) -> None:
    """End the process once the app has quit (the window closed: settings, checkpoint and log written, helper
    processes ended) without the interpreter's own teardown: destroying Qt's widgets, pyqtgraph's items and
    torch's modules one by one took 3.4 s of an 8.3 s quit here (load 10 on 2 cores), after everything worth
    keeping was on disk. Helper processes that outlive it end by themselves when their pipe to it closes
    (engine/service_process.py).

    The other exit handlers still run, as at a normal exit: the log is closed, child jobs are ended, and
    multiprocessing releases its queues' semaphores (without that its resource tracker printed "There appear
    to be 6 leaked semaphore objects" in the terminal at every quit). PySide's own handler, the one that
    deletes every Qt object, is the teardown skipped: with it the handlers took 2-4 s, without it 0.07 s."""
    import atexit

    from PySide6 import QtCore

    qt_teardown = getattr(QtCore, "__moduleShutdown", None)
    if qt_teardown is not None:
        atexit.unregister(qt_teardown)
    atexit._run_exitfuncs()  # noqa: SLF001 — the interpreter's own exit runs these
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def close_on_signals(window) -> None:
    """Ctrl+C in the terminal, or a `kill`, closes the window as its close button does: training stops at
    the next step and is checkpointed, and the layout is saved. Python runs a signal handler only between
    bytecodes, and the GUI thread sleeps inside Qt's event loop, so a slow timer wakes it to look. The handler
    may so run in the middle of any slot: the window is closed in the event loop's next turn, after that slot.
    Closed at once, a signal that came as the panes were ready closed the window in the middle of the
    welcome's making, which then showed it alone, and the app, its window closed, never quit."""
    def close(signum, _frame) -> None:
        print(f"{signal.Signals(signum).name}: closing the window (the run is saved)", file=sys.stderr)
        QTimer.singleShot(0, window, window.close)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, close)
    waker = QTimer(window)
    waker.timeout.connect(lambda: None)
    waker.start(250)
