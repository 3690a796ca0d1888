"""The main window: every pane a dock (moved, tabbed, floated, closed, reopened from View), the menus and
shortcuts, a banner for messages, and a status bar with the device, the run directory, the export in
progress (with Cancel) and the step.

The window owns the Session, the TrainingController and the export queue and nothing else of the app's state; panes are
built from `gui.panes.pane_classes()`. Geometry and layout are saved through `gui.settings` on close and restored on
start; a layout that cannot be restored leaves the default one.
"""

from __future__ import annotations

import gc
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QRect, Qt, QTimer, Signal
from PySide6.QtWidgets import (QApplication, QDockWidget, QLabel, QMainWindow, QMenuBar, QMessageBox,
                               QToolBar, QWidget)

from engine.configs.config import ConfigError, ExperimentConfig
from engine.errors import UserError
from engine.configs.presets import DEFAULT_PRESET, load_preset
from engine.service_process import QUIT_WAIT_S
from engine.training.state import TrainingState

from . import analysis, drops, screen_fit, settings, theme
from .about import APP_NAME
from .controller import TrainingController
from .exports import ExportRequest, Exports, ExportStatus
from .first_run.first_run import FirstRun
from .menus import build_menus
from .panes import pane_classes
from .session import Session
from .torch_import import ensure_torch
from .widgets import dialogs
from .widgets.banner import Banner
from .widgets.plot_export import route_heatmap_exports, route_plot_exports
from .widgets.seen import SeenWidget

# keys and mouse gestures inside the views, which no menu action lists (F1 shows them with the menus')
IN_VIEWS = (("Timeline: play / pause (when it has focus)", "Space"),
            ("Timeline: one saved step back / on", "Left / Right"),
            ("Timeline: first / newest step", "Home / End"), ("Heatmap: zoom / pan", "wheel / drag"),
            ("Heatmap: the whole matrix again", "fit"), ("A field in a form: change by wheel", "click it first"))
DEFAULT_SIZE = (1480, 900)  # at most: a smaller screen gets its available size (screen_fit.window_size)


def initial_config() -> ExperimentConfig:
    """The config the builder showed when the app was last closed, else the default preset."""
    text = settings.saved_config()
    if text:
        try:
            cfg = ExperimentConfig.from_toml(text)
            if not cfg.validate():
                return cfg
        except ConfigError:
            pass
    return load_preset(DEFAULT_PRESET)


class MainWindow(QMainWindow):
    """With `panes_after_show`, the window appears with its menus and status bar first and builds the
    panes in the first turn of the event loop: a pane module may import torch (seconds), and the user
    should see the app start before that. Tests build the panes at once."""

    sig_panes_ready = Signal()
    sig_first_painted = Signal()  # the window is on screen (its "loading" placeholder was painted)

    def __init__(self, run_dir: str | Path | None = None, parent: QWidget | None = None, *,
                 panes_after_show: bool = False):
        super().__init__(parent)
        self.setObjectName("main_window")
        self.session = Session(initial_config(), self)
        self.controller = TrainingController(self.session, self)
        self.exports = Exports(self.session, self)  # the app's one export queue
        self.panes: dict[str, QWidget] = {}
        self.docks: dict[str, QDockWidget] = {}
        self._columns: list[QDockWidget] = []  # the default layout's side-by-side docks
        self.layout_restored = False
        self._last_state = TrainingState.IDLE
        self._build_banner()
        self._build_central()
        self._build_status_bar()
        self.first_run = FirstRun(self)  # the welcome, the sample run and the tour (Help menu)
        self.actions = build_menus(self)
        self._connect()
        self.resize(screen_fit.window_size(DEFAULT_SIZE, self._available()))
        self._restore_geometry()
        self._update_title()
        self._on_training_state_changed(self.session.training_state)
        self._run_dir = run_dir
        self.loading.installEventFilter(self)
        self.setAcceptDrops(True)  # a run folder, config or corpus dropped on the window (gui/drops.py)
        if not panes_after_show:
            self._build_panes(run_dir)

    @property
    def pane_names(self) -> list[str]:
        return list(self.docks)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.loading and event.type() == QEvent.Type.Paint:
            self.loading.removeEventFilter(self)
            if not self.docks:  # painted before the panes exist: build them now that it shows
                QTimer.singleShot(0, lambda: self._build_panes(self._run_dir))
            self.sig_first_painted.emit()
        return False

    def _build_panes(self, run_dir) -> None:
        # the panes import torch (the forms engine, the model); importing it here, on this thread, before a
        # pane can start a job that imports it on another keeps it to one importer. Not at this module's
        # import: the window's frame is on screen before torch's ~0.7 s
        ensure_torch()
        if self.isVisible():
            # the window keeps showing "loading" until the docks have their final layout: painted at once,
            # they showed Qt's first guess at their widths for a moment, then jumped to the default's
            self.setUpdatesEnabled(False)
        self._build_docks()
        self.loading.hide()  # first: the room it frees goes to the docks before a layout is restored
        if self.isVisible():
            # docks added to a window on screen are shown by Qt in the next turn of the event loop, which
            # would undo a restored layout's closed docks and its widths: restore after that turn
            QTimer.singleShot(0, lambda: self._restore_layout_and_open(run_dir))
        else:
            self._restore_layout_and_open(run_dir)

    def _restore_layout_and_open(self, run_dir) -> None:
        self._share_columns()  # the window has its size on screen now (a window manager may have changed it)
        self._default_state = self.saveState(settings.STATE_VERSION)
        self.layout_restored = settings.restore_layout(self, self.pane_names, self._available().size())
        if self.layout_restored and self.isVisible():
            # the default layout on screen may have widened the window for panes the saved one closes: now
            # that they are closed it can take its saved size, and then the docks their saved widths in it
            self._restore_geometry()
            settings.restore_layout(self, self.pane_names, self._available().size())
        self.message_row.setVisible(bool(self.banner.level))  # a saved layout may have had a message showing
        if not self.updatesEnabled():
            self.layout().activate()
            # the panes arrange themselves as their docks take these sizes (the stats' rows, a splitter's
            # halves), which asks their layouts again: painted after those, not between
            QTimer.singleShot(0, self, lambda: self.setUpdatesEnabled(True))
        self.sig_panes_ready.emit()
        if run_dir is not None:
            self.open_run(run_dir)
        # What is alive now (modules, torch, the panes: ~230,000 objects) lives as long as the app: out of the
        # cyclic collector's full passes, which the app runs on the GUI thread (gui/app.py) and which each held
        # it ~110 ms over these objects (~0 after the freeze). A full collection here found 10 objects of
        # garbage to leave behind, and took 110 ms itself, so none is run.
        gc.freeze()

    # ---- building --------------------------------------------------------------------------

    def _build_banner(self) -> None:
        """The menu bar, and the banner in a row of its own above the status bar: a fixed tool bar, so it
        covers no control, and a restored dock layout can never hide it."""
        self.menu_bar = QMenuBar(self)
        self.setMenuWidget(self.menu_bar)
        self.banner = Banner(self)
        self.message_row = row = QToolBar("Messages", self)
        row.setObjectName("messages")
        row.setMovable(False)
        row.setFloatable(False)
        row.toggleViewAction().setVisible(False)  # not a pane to show or hide from a menu
        self.banner.show()  # the row's visibility is the banner's: a tool bar keeps a hidden widget hidden
        row.addWidget(self.banner)
        self.addToolBar(Qt.ToolBarArea.BottomToolBarArea, row)
        row.hide()
        self.banner.sig_shown.connect(row.show)
        self.banner.sig_dismissed.connect(row.hide)

    def _build_central(self) -> None:
        """QMainWindow needs a central widget; the panes are all docks, so it only says "loading" until
        they exist and is hidden after."""
        self.loading = QLabel("Loading panes…", self)
        self.loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setCentralWidget(self.loading)
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks
                            | QMainWindow.DockOption.AllowNestedDocks)

    def _build_docks(self) -> None:
        toggles = self.actions["reset_layout"]  # pane entries go above it in the View menu
        for cls in pane_classes():
            pane = cls(self.session)
            pane.setObjectName(cls.object_name)
            dock = QDockWidget(cls.title, self)
            dock.setObjectName(cls.object_name)
            dock.setWidget(screen_fit.scrolling(pane))
            for seen in [pane] * isinstance(pane, SeenWidget) + pane.findChildren(SeenWidget):
                # a tab behind another is not seen, though Qt calls it visible (also a costly part of a pane)
                dock.visibilityChanged.connect(seen.set_tab_seen)
            self.panes[cls.object_name], self.docks[cls.object_name] = pane, dock
            if hasattr(pane, "export_job"):
                route_plot_exports(pane, lambda p=pane: self.export_pane(p))
            route_heatmap_exports(pane, self.exports.serve)
            toggle = dock.toggleViewAction()
            toggle.setStatusTip(f"Show or hide the {cls.title} pane")
            self.view_menu.insertAction(toggles, toggle)
        self.view_menu.insertSeparator(toggles)
        self._place_docks(list(self.docks.values()), screen_fit.layout_columns(self._available()))

    def _place_docks(self, docks: list[QDockWidget], columns: int) -> None:
        """The default layout (docs/design.md#the-window). Three columns: the builder, Training, and the views
        with the run browser's panes tabbed in the widest (the Runs table needs its width for its columns).
        Two (a laptop): Training alone in a control column, beside one tabbed view area that holds the
        builder first and every view after it, so that each gets the window's whole height; stacked in two
        columns, a 1280×720 screen left the block diagram 50 px and the loss plots 35 px."""
        if not docks:
            return
        first = docks[0] if columns >= 3 or len(docks) < 2 else docks[1]  # compact: Training leads
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, first)
        if len(docks) == 1:
            return
        if columns >= 3:
            self._columns = docks[:3]
            for before, dock in zip(docks, docks[1:3]):
                self.splitDockWidget(before, dock, Qt.Orientation.Horizontal)
            area, behind = self._columns[-1], docks[3:]
        else:
            self._columns = [docks[1], docks[0]]
            self.splitDockWidget(docks[1], docks[0], Qt.Orientation.Horizontal)
            area, behind = docks[0], docks[2:]
        for dock in behind:
            self.tabifyDockWidget(area, dock)
        area.raise_()  # the view area's first pane is its chosen tab, whether shown yet or not
        self._share_columns()

    def _share_columns(self) -> None:
        """The default layout's column widths from the window's width now: 3 : 4 : 6 (the views' column holds
        the Weight pane's three maps side by side and the Runs table's seven columns), or 2 : 3 on a small
        screen (Training's curves side by side in the control column, the builder's form beside its diagram
        in the view area)."""
        parts = [3, 4, 6] if len(self._columns) == 3 else [2, 3]
        self._share(self._columns, parts[:len(self._columns)], Qt.Orientation.Horizontal)

    def _share(self, docks: list[QDockWidget], parts: list[int], orientation: Qt.Orientation) -> None:
        """Share the window's room between docks in proportion to `parts`. resizeDocks takes pixels: given
        [4, 5, 5] it left every dock but the first at its minimum once panes scroll below theirs."""
        if not docks:
            return
        room = self.width() if orientation == Qt.Orientation.Horizontal else self.height()
        self.resizeDocks(docks, [max(1, room * p // sum(parts)) for p in parts], orientation)

    def _available(self) -> QRect:
        screen = self.screen() or QApplication.primaryScreen()
        return screen.availableGeometry() if screen is not None else QRect()

    def _restore_geometry(self) -> None:
        """The saved size and place when they were made for a screen like this one (settings.fits_screen), cut
        to its available area."""
        if settings.restore_geometry(self, self._available().size()):
            fit = screen_fit.window_size((self.width(), self.height()), self._available(), (0, 0))
            if fit != self.size():
                self.resize(fit)

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.device_label = QLabel("device: …", self)
        self.device_label.setObjectName("status_device")
        self.run_label = QLabel(self)
        self.run_label.setObjectName("status_run")
        self.step_label = QLabel(self)
        self.step_label.setObjectName("status_step")
        bar.addWidget(self.device_label)
        bar.addWidget(self.run_label, 1)
        bar.addPermanentWidget(ExportStatus(self.exports, self))  # shown only while an export runs
        bar.addPermanentWidget(self.step_label)
        self._step_text = ""
        self._step_timer = QTimer(self, singleShot=True, interval=250)
        self._step_timer.timeout.connect(self._on_step_timer)
        self._on_run_dir_changed("")

    def _connect(self) -> None:
        s, c = self.session, self.controller
        s.sig_message_posted.connect(self._on_message_posted)
        s.sig_status_posted.connect(self._on_status_posted)
        s.sig_step_reported.connect(self._on_step_reported)
        s.sig_run_replaced.connect(self._on_run_replaced)
        s.sig_run_attached.connect(self._on_run_attached)
        s.sig_training_state_changed.connect(self._on_training_state_changed)
        s.sig_head_at_step.connect(lambda *_: self._show_pane("pane_heatmaps"))  # the head timeline's click
        s.sig_config_problems_changed.connect(lambda _: self._on_training_state_changed(s.training_state))
        s.sig_open_run_requested.connect(self.open_run)
        c.sig_device_changed.connect(self._on_device_changed)

    # ---- acts (menus call these) -----------------------------------------------------------

    def confirm_stop_training(self, doing: str) -> bool:
        """Before an act that stops the run training (nothing is lost: it is checkpointed): ask first. True
        when nothing trains or the user agreed."""
        return not self.controller.alive or dialogs.ask_stop_training(self, doing)

    def new_run(self) -> bool:
        if not self.confirm_stop_training("start a new run"):
            return False
        self.controller.new_run()
        return True

    def open_run(self, path: str | Path | None = None) -> bool:
        """Open a run folder (asked for when not given); False when it was not opened."""
        if path is None:
            path = dialogs.ask_path(self, "folder", "Open run", start=settings.runs_root())
            if path is None:
                return False
        if not self.confirm_stop_training(f"open {Path(path).name}"):
            return False
        try:
            self.controller.open_run(path)
        except UserError as e:
            self.session.post_message(f"Cannot open the run: {e}. Choose a folder made by Train or "
                                      "`gpt-explorer train`.")
            return False
        return True

    def export(self) -> None:
        """File → Export…: the focused pane's view, else the first pane's that shows something (the first pane
        alone, Training, had nothing at an imported run's step 0, and the app said to open a run that was open)."""
        able = [p for p in self.panes.values() if hasattr(p, "export_job")]
        focus = QApplication.focusWidget()
        focused = [p for p in able if focus is not None and p.isAncestorOf(focus)]
        for pane in focused + able:
            if pane.export_job() is not None:
                self.export_pane(pane)
                return
        self.export_pane(None)

    def export_pane(self, pane) -> None:
        """File → Export… for one pane (a plot's right-click Export… names its own)."""
        job = pane.export_job() if pane is not None else None
        if job is None:
            self.session.post_message("Nothing to export yet: train, or open a run, first." if self.session.run is None
                                      else "Nothing to export yet: no view shows this run yet.", "info")
            return
        filters, suggested, fn = job
        run = self.session.run
        chosen = dialogs.ask_export(self, "Export", filters, suggested=suggested,
                                    start=run.path if run is not None else "")
        if chosen is not None:
            path, options = chosen
            self.exports.submit(ExportRequest(Path(path), fn, options))

    def _show_pane(self, name: str) -> None:
        if name in self.docks:
            self.docks[name].show()
            self.docks[name].raise_()

    def reset_layout(self) -> None:
        for dock in self.docks.values():
            dock.setFloating(False)
        self.restoreState(QByteArray(self._default_state), settings.STATE_VERSION)
        for dock in self.docks.values():
            dock.show()
        settings.clear_window_state()

    def set_theme(self, name: str) -> None:
        theme.apply_theme(QApplication.instance(), name)
        settings.set_theme(name)

    def show_shortcuts(self) -> None:
        keys = [(a.text().replace("&", ""), a.shortcut().toString()) for a in self.actions.values()
                if not a.shortcut().isEmpty()]
        rows = "".join(f"<tr><td>{what}</td><td><b>{how}</b></td></tr>" for what, how in keys + list(IN_VIEWS))
        QMessageBox.information(self, "Keyboard shortcuts", f"<table cellpadding='3'>{rows}</table>")

    def show_about(self) -> None:
        from .about import AboutDialog

        dialog = AboutDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()

    def install_desktop_entry(self) -> None:
        """Help → Add to applications menu (Linux): the desktop entry and icon, for this user."""
        from . import desktop_entry

        try:
            entry, _icon = desktop_entry.install()
        except (OSError, UserError) as e:
            self.session.post_message(f"Cannot add GPT Explorer to the applications menu: {e}")
            return
        self.session.post_message(f"GPT Explorer is in the applications menu now ({entry}); it starts "
                                  f"{desktop_entry.describe_command(desktop_entry.launcher_command())}.",
                                  "info")

    # ---- handlers --------------------------------------------------------------------------

    def _on_message_posted(self, level: str, text: str) -> None:
        self.banner.show_message(level, text)

    def _on_status_posted(self, text: str) -> None:
        if text:
            self.statusBar().showMessage(text)
        else:
            self.statusBar().clearMessage()

    def _on_step_reported(self, report) -> None:
        self._step_text = f"step {report.step:,} / {report.total_steps:,}"
        if not self._step_timer.isActive():  # the status bar need not relayout at every step
            self._step_timer.start()

    def _on_step_timer(self) -> None:
        self.step_label.setText(self._step_text)

    def _on_run_replaced(self, open_run) -> None:
        """Another run is open: its folder, its step, the acts its training state allows (one event says it all)."""
        run = None if open_run is None else open_run.run
        self._step_timer.stop()  # a report of the run trained before must not overwrite this run's step
        self._step_text = "" if run is None else f"step {run.latest_step():,} / {run.config.train.steps:,}"
        self.step_label.setText(self._step_text)
        self._on_run_attached(run)
        self._on_training_state_changed(self.session.training_state)

    def _on_run_attached(self, run) -> None:
        self._on_run_dir_changed("" if run is None else str(run.path))

    def _on_run_dir_changed(self, path: str) -> None:
        self.run_label.setText(f"run: {path}" if path else "run: not started (Train creates it)")
        self.run_label.setToolTip(path)
        self._update_title()

    def _on_device_changed(self, name: str) -> None:
        self.device_label.setText(f"device: {name}")

    def _on_training_state_changed(self, state: str) -> None:
        a, valid, state = self.actions, not self.session.config_problems, TrainingState(state)
        if state == TrainingState.RUNNING and not self._last_state.live:
            self._builder_makes_way()
        self._last_state = state
        for action in ("train", "pause_resume", "step", "stop", "save"):
            a[action].setEnabled(state.allows(action, valid))
        # Train (F5) stays enabled for an invalid config, to say what is wrong and where, not nothing
        a["train"].setEnabled(state.allows("train", True))
        a["pause_resume"].setText("&Resume" if state.allows("resume") else "&Pause")

    def _builder_makes_way(self) -> None:
        """A run starts training: the builder, locked now, gives its tab to the attention, which training
        fills (in the default layout of a small screen the two share the view area)."""
        arch, heat = self.docks.get("pane_architecture"), self.docks.get("pane_heatmaps")
        if arch is not None and heat is not None and heat in self.tabifiedDockWidgets(arch) \
                and not arch.visibleRegion().isEmpty():
            heat.raise_()

    def _update_title(self, *_) -> None:
        path = self.controller.run_dir
        self.setWindowTitle(f"{APP_NAME} — {path.name if path is not None else 'new run'}")

    def dragEnterEvent(self, event) -> None:  # Qt's name
        paths = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        if drops.usable(paths):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # Qt's name
        drops.drop(self, [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()])
        event.acceptProposedAction()

    def closeEvent(self, event) -> None:
        if self.controller.alive:
            self.statusBar().showMessage("Stopping training and saving a checkpoint…")
        self.first_run.tour.end()
        self.controller.shutdown()
        self.first_run.shutdown()  # the sample's training, if it was going on: checkpointed, resumed next time
        self.session.asker.close()
        analysis.shutdown(QUIT_WAIT_S)  # the panes' analysis process
        settings.set_saved_config(self.session.config.to_toml())
        settings.save_window_state(self, self.pane_names, self._available().size())  # and writes the store
        super().closeEvent(event)
