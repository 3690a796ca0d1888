"""The run browser: every run under the runs folder (and the folders the user adds) with its preset,
optimizer, steps, best validation loss, date and size; open, rename, delete, reveal in the file manager,
fork (a paired run, engine/rundir/fork.py); tick runs to overlay their curves (the Run curves pane, through `Session.compare_runs`).
A fork and a delete run in a child process (gui/child_work.py): a fork builds trainers and writes the weights (a
GPT-2-sized run's take minutes), a delete removes gigabytes; the row under the list says what runs and how far
(a fork's Cancel leaves nothing). A rename is one system call and stays here.

The rows come from engine.rundir.listing, which reads only small files, answered in the app's analysis process
to the pane's view model (engine/views/runs.py, asked by the app's asker in its light lane, so a head timeline
scoring meanwhile never holds it back), so the GUI thread only fills the tree; the folders to watch come with
them. The
list is refreshed when the pane is shown, when a run is opened or stops training, by its Refresh button,
and when a listed folder's entries change on disk while the pane is seen (gui/panes/runs/folder_watch.py: a
run made by `gpt-explorer train` in a terminal appears) — not on a timer, since a folder of hundreds of runs
costs a tenth of a second to list. Questions to the user (a new name, "delete for good?") go through
`ask_name` and `confirm`, which tests replace.
"""

from __future__ import annotations

import math
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QInputDialog, QLabel, QMessageBox, QToolButton,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout)

from engine.errors import UserError
from engine.rundir.listing import RunSummary, delete_run, human_bytes, rename_run
from engine.views.runs import RunsView

from ... import recent
from ...child_work import ChildWork
from ...session import Session
from ...widgets import dialogs
from .button_flow import ButtonFlow
from .folder_watch import FolderWatch
from ...widgets.seen import SeenWidget

COLUMNS = ("Run", "Preset", "Optimizer", "Steps", "Best val", "Date", "Size")
NAME_LEAST = 140  # px: the Run column gives up its width down to this so that every other column shows
_PATH = Qt.ItemDataRole.UserRole
_SORT = Qt.ItemDataRole.UserRole + 1


class _Item(QTreeWidgetItem):
    """Sorts numeric columns by number (steps, loss, date, size), not by their text."""

    def __lt__(self, other) -> bool:
        col = self.treeWidget().sortColumn() if self.treeWidget() else 0
        a, b = self.data(col, _SORT), other.data(col, _SORT)
        return a < b if a is not None and b is not None else self.text(col) < other.text(col)


class RunsPane(SeenWidget):
    title = "Runs"
    object_name = "pane_runs"
    sig_listed = Signal(int)  # the browser (re)listed this many runs
    sig_forked = Signal(object)    # Path of a fork written and asked to open
    sig_deleted = Signal(object)   # Path of a run deleted

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.summaries: dict[str, RunSummary] = {}
        self._filling = False
        self.folder_watch = FolderWatch(self)
        self.view = RunsView()
        self.view.seen = False
        self._select: Path | None = None  # the run to select once listed (one just opened)
        self.work: ChildWork | None = None   # the fork or delete running in a child process
        self._forking: Path | None = None     # where the fork running writes
        self._build()
        self._connect()

    def _build(self) -> None:
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("runs_tree")
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setRootIsDecorated(False)
        self.tree.setSortingEnabled(True)
        self.tree.sortByColumn(5, Qt.SortOrder.DescendingOrder)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setToolTip("Tick runs to overlay their curves; double-click one to open it")
        # a long name is cut in its middle, keeping its start and its date (the whole path is its tooltip)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.tree.viewport().installEventFilter(self)
        self.buttons, self.acts = {}, {}
        # buttons that wrap onto a second line in a narrow dock (button_flow.py), every act in sight
        self.button_row = ButtonFlow()
        for key, text, tip in (("open", "Open", "Open the selected run"),
                               ("fork", "Fork…", "A new run paired with the selected one: same initial weights "
                                                 "and batches, one setting changed"),
                               ("rename", "Rename…", "Rename the selected run's folder"),
                               ("delete", "Delete…", "Delete the selected run's folder, after asking"),
                               ("reveal", "Reveal", "Show the selected run's folder in the file manager"),
                               ("add_folder", "Add folder…", "Also list the runs in another folder"),
                               ("refresh", "Refresh", "List the runs again")):
            action = QAction(text, self)
            action.setToolTip(tip)
            b = QToolButton(self)
            b.setDefaultAction(action)
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            b.setObjectName(f"runs_{key}")
            self.button_row.addWidget(b)
            self.buttons[key], self.acts[key] = b, action
        self.empty_label = QLabel()  # what to do while the browser lists no run
        self.empty_label.setObjectName("runs_empty")
        self.empty_label.setWordWrap(True)
        self.empty_label.hide()
        self.work_label = QLabel()
        self.work_label.setObjectName("runs_work")
        self.work_label.setWordWrap(True)
        self.work_cancel = QToolButton()
        self.work_cancel.setText("Cancel")
        self.work_cancel.setToolTip("Stop the fork; nothing of it is left")
        self.work_row = QHBoxLayout()
        self.work_row.addWidget(self.work_label, 1)
        self.work_row.addWidget(self.work_cancel)
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        col.addLayout(self.button_row)
        col.addWidget(self.empty_label)
        col.addWidget(self.tree, 1)
        col.addLayout(self.work_row)
        self._show_work("")

    def _connect(self) -> None:
        a, s = self.acts, self.session
        a["open"].triggered.connect(lambda: self._with_selected(self.session.request_open_run))
        a["rename"].triggered.connect(lambda: self._with_selected(self.rename))
        a["delete"].triggered.connect(lambda: self._with_selected(self.delete))
        a["reveal"].triggered.connect(lambda: self._with_selected(self.reveal))
        a["fork"].triggered.connect(lambda: self._with_selected(self.fork))
        a["add_folder"].triggered.connect(self._on_add_folder_clicked)
        self.work_cancel.clicked.connect(self._on_work_cancel_clicked)
        a["refresh"].triggered.connect(self.refresh)
        self.tree.itemDoubleClicked.connect(lambda item, _col: s.request_open_run(item.data(0, _PATH)))
        self.tree.itemChanged.connect(self._on_item_changed)
        s.sig_run_replaced.connect(lambda open_run: self._on_run_opened(open_run and open_run.run))
        s.sig_run_attached.connect(self._on_run_opened)
        self.folder_watch.sig_changed.connect(self._on_folders_changed)
        s.sig_training_state_changed.connect(self._on_training_state_changed)
        self.view.changed.connect(self._on_view_changed)
        s.asker.watch(self.view, self)

    # ---- the list --------------------------------------------------------------------------

    def refresh(self) -> None:
        """List the runs again; the rows come in `_on_listed` (then `sig_listed`). An empty list's line says
        so meanwhile: "No runs yet" was the last listing's, and under load (13 on 2 cores) the Xvfb walk of
        issue 37 read it for 22 s beside four runs, the pane shown after runs were trained and imported."""
        self.view.list_again(tuple(str(f) for f in recent.browsed_folders()))
        if not self.empty_label.isHidden():
            self.empty_label.setText(f"Listing the runs in {recent.browsed_folders()[0]}…")

    @property
    def listing(self) -> bool:
        """A listing asked for has not come yet."""
        return self.view.listing_due

    def _on_view_changed(self, name: str) -> None:
        if name == "listed":  # a listing came (it may equal the one before: `listing` would not say so)
            self._on_listed()
        elif name == "failures" and self.view.failures:
            self.session.post_message(f"Cannot list the runs: {next(iter(self.view.failures.values()))}")
            self._say_if_empty(self.tree.topLevelItemCount())  # not "Listing…" for ever

    def _on_listed(self) -> None:
        listing = self.view.listing
        self.folder_watch.watch(listing.watch)
        if listing.damaged:  # never left out silently: each named with its reason
            self.session.post_message("Runs left out of the list: " + "; ".join(
                f"{path.name} ({why})" for path, why in listing.damaged[:5]) +
                (f"; and {len(listing.damaged) - 5} more" if len(listing.damaged) > 5 else ""), "warning")
        rows = listing.runs
        ticked = set(self.checked_paths())
        current = self._select or (self.tree.currentItem() and Path(self.tree.currentItem().data(0, _PATH)))
        self._select = None
        self.summaries = {str(r.path): r for r in rows}
        self._filling = True
        self.tree.setSortingEnabled(False)
        self.tree.clear()
        for r in rows:
            self.tree.addTopLevelItem(self._item(r, r.path in ticked))
        self.tree.setSortingEnabled(True)
        self._filling = False
        self._fit_columns()
        self._say_if_empty(len(rows))
        if current and (item := self.item_for(current)) is not None:
            self.tree.setCurrentItem(item)
        if ticked != set(self.checked_paths()):  # a ticked run was deleted or renamed elsewhere
            self.session.compare_runs(self.checked_paths())
        self.sig_listed.emit(len(rows))

    def _say_if_empty(self, count: int) -> None:
        """An empty list says where runs come from (an empty table said nothing to a newcomer)."""
        self.empty_label.setVisible(count == 0)
        if count == 0:
            folders = recent.browsed_folders()
            self.empty_label.setText(
                f"No runs yet in {folders[0]}{' or the folders added' if len(folders) > 1 else ''}: train one "
                "in the Training pane (Train), open the sample run from Help → Welcome, or bring one in with "
                "File → Import nanoGPT checkpoint… or File → Open Hugging Face model…")

    def _fit_columns(self) -> None:
        """Every column as wide as its contents, but the run's name no wider than what the others leave (and
        no narrower than NAME_LEAST): in a 730 px pane the longest name pushed Size out of sight."""
        for i in range(len(COLUMNS)):
            self.tree.resizeColumnToContents(i)
        others = sum(self.tree.columnWidth(i) for i in range(1, len(COLUMNS)))
        room = self.tree.viewport().width() - others
        if self.tree.columnWidth(0) > room:
            self.tree.setColumnWidth(0, max(NAME_LEAST, room))

    def eventFilter(self, watched, event) -> bool:  # Qt's name
        if watched is self.tree.viewport() and event.type() == QEvent.Type.Resize and self.tree.topLevelItemCount():
            self._fit_columns()
        return super().eventFilter(watched, event)

    def _item(self, r: RunSummary, ticked: bool) -> QTreeWidgetItem:
        best = "—" if r.best_val is None else f"{r.best_val:.4f}"
        item = _Item([r.name, r.preset, r.optimizer, f"{r.steps_done:,} / {r.steps_total:,}", best, r.date,
                      human_bytes(r.size_bytes)])
        item.setData(0, _PATH, str(r.path))
        for col, key in ((3, r.steps_done), (4, math.inf if r.best_val is None else r.best_val),
                         (5, r.modified), (6, r.size_bytes)):
            item.setData(col, _SORT, key)
        item.setToolTip(0, str(r.path))
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(0, Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
        return item

    def items(self) -> list[QTreeWidgetItem]:
        return [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]

    def item_for(self, path: str | Path) -> QTreeWidgetItem | None:
        return next((it for it in self.items() if Path(it.data(0, _PATH)) == Path(path)), None)

    def checked_paths(self) -> list[Path]:
        return [Path(it.data(0, _PATH)) for it in self.items() if it.checkState(0) == Qt.CheckState.Checked]

    def set_checked(self, path: str | Path, checked: bool = True) -> None:
        item = self.item_for(path)
        if item is not None:
            item.setCheckState(0, Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)

    # ---- acts ------------------------------------------------------------------------------

    def _with_selected(self, act) -> None:
        item = self.tree.currentItem()
        if item is None:
            self.session.post_message("Choose a run in the list first.", "info")
            return
        act(Path(item.data(0, _PATH)))

    def _refuse_open_run(self, path: Path, what: str) -> bool:
        run = self.session.run
        if run is not None and Path(run.path).resolve() == path.resolve():
            self.session.post_message(f"{path.name} is the open run; start a new run (File → New run) before "
                                      f"you {what} it.", "warning")
            return True
        return False

    def rename(self, path: Path) -> None:
        if self._refuse_open_run(path, "rename"):
            return
        name = self.ask_name(path.name)
        if not name or name == path.name:
            return
        try:
            rename_run(path, name)
        except UserError as e:
            self.session.post_message(f"Cannot rename the run: {e}")
        self.refresh()

    def delete(self, path: Path) -> None:
        """Delete the run's folder, after asking, in a child process (sig_deleted when it is gone)."""
        if self._refuse_open_run(path, "delete") or self._busy():
            return
        size = human_bytes(self.summaries[str(path)].size_bytes) if str(path) in self.summaries else "?"
        if not self.confirm(f"Delete the run {path.name} ({size}) and everything in its folder?\n{path}"):
            return
        self._start_work(f"Deleting {path.name} ({size})…", False, delete_run, path, name=f"delete {path.name}")
        self.work.sig_done.connect(lambda _none: self._on_deleted(path))
        self.work.sig_failed.connect(lambda message: self._on_work_failed(f"Cannot delete the run: {message}"))

    def reveal(self, path: Path) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))

    def fork(self, path: Path) -> Path | None:
        """Write a fork of the run beside it, in a child process, and open it (sig_forked); Train then trains it
        (engine/rundir/fork.py). Returns where the fork is being written, or None when nothing was started."""
        from engine.rundir.fork import fork_config, fork_into
        from engine.rundir.runs import Run

        from ...controller import new_run_path

        if self._busy():
            return None
        try:  # the form needs the config and the checkpoints only: the fork's child reads and checks the rest
            parent = Run(path, checked=True)
        except UserError as e:
            self.session.post_message(f"Cannot fork {path.name}: {e}")
            return None
        asked = self.ask_fork(parent)
        if asked is None:
            return None
        cfg, step = asked
        try:  # what the configs alone refuse is said now, without a child that would import torch to say it
            fork_config(parent, cfg, step)
        except UserError as e:
            self.session.post_message(f"Cannot fork {path.name}: {e}")
            return None
        run_dir = new_run_path(path.parent, f"{path.name}-fork")
        self._start_work(f"Forking {path.name} into {run_dir.name}…", True, fork_into, path, run_dir, cfg, step,
                         name=f"fork {path.name}")
        self._forking = run_dir
        self.work.sig_event.connect(lambda event: self._on_work_event(f"Forking {path.name} into {run_dir.name}",
                                                                      event))
        self.work.sig_done.connect(lambda warnings: self._on_forked(run_dir, warnings))
        self.work.sig_failed.connect(lambda message: self._on_fork_failed(path, run_dir, message))
        return run_dir

    def _busy(self) -> bool:
        if self.work is not None:
            self.session.post_message("Wait for the fork or delete under way to finish (or cancel it).", "info")
            return True
        return False

    def _start_work(self, text: str, cancellable: bool, fn, *args, name: str) -> None:
        self.work = ChildWork(fn, *args, name=name, parent=self)
        self._show_work(text, cancellable)

    def _show_work(self, text: str, cancellable: bool = False) -> None:
        self.work_label.setText(text)
        self.work_label.setVisible(bool(text))
        self.work_cancel.setVisible(bool(text) and cancellable)

    def _end_work(self) -> None:
        self.work = None
        self._show_work("")

    def _on_work_event(self, what: str, event) -> None:
        if event[0] == "progress":
            done, total, unit = event[1:]
            self._show_work(f"{what}: {done} of {total} {unit}…", True)

    def _on_work_failed(self, message: str) -> None:
        self._end_work()
        self.session.post_message(message)
        self.refresh()

    def _on_deleted(self, path: Path) -> None:
        self._end_work()
        self.refresh()
        self.sig_deleted.emit(path)

    def _on_forked(self, run_dir: Path, warnings: list[str]) -> None:
        self._end_work()
        for warning in warnings:
            self.session.post_message(warning, "warning")
        self.session.request_open_run(run_dir)
        self.refresh()
        self.sig_forked.emit(run_dir)

    def _on_fork_failed(self, parent: Path, run_dir: Path, message: str) -> None:
        from engine.rundir.create import sweep_stale

        sweep_stale(run_dir)
        self._on_work_failed(f"Cannot fork {parent.name}: {message}")

    def _on_work_cancel_clicked(self) -> None:
        """Only a fork offers Cancel: the child ends, and what it had begun to write is removed."""
        from engine.rundir.create import sweep_stale

        if self.work is not None:
            self.work.cancel()
            sweep_stale(self._forking)
            self.session.post_message(f"The fork {self._forking.name} was cancelled; nothing of it is left.", "info")
            self._end_work()

    def ask_fork(self, parent) -> tuple | None:
        """The fork's config and the step to fork at (0 or a checkpoint), from a form of the fields a fork
        may change (fork_form.py)."""
        from .fork_form import ask_fork

        return ask_fork(parent, self)

    def ask_name(self, current: str) -> str | None:
        name, ok = QInputDialog.getText(self, "Rename run", "New folder name:", text=current)
        return name if ok else None

    def confirm(self, question: str) -> bool:
        answer = QMessageBox.question(self, "Delete run", question,
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                                      QMessageBox.StandardButton.Cancel)
        return answer == QMessageBox.StandardButton.Yes

    # ---- handlers --------------------------------------------------------------------------

    def _on_add_folder_clicked(self) -> None:
        folder = dialogs.ask_path(self, "folder", "Add a folder of runs")
        if folder is not None:
            recent.add_browsed_folder(folder)
            self.refresh()

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if column == 0 and not self._filling:
            self.session.compare_runs(self.checked_paths())

    def _on_run_opened(self, run) -> None:
        if run is not None and (item := self.item_for(run.path)) is not None:
            self.tree.setCurrentItem(item)
        self._select = Path(run.path) if run is not None else None
        if self.seen():
            self.refresh()

    def _on_folders_changed(self) -> None:
        if self.seen():  # otherwise the list is made afresh when the pane is shown
            self.refresh()

    def _on_training_state_changed(self, state: str) -> None:
        if state in ("stopped", "finished") and self.seen():
            self.refresh()

    def seen_changed(self, seen: bool) -> None:
        self.view.seen = seen
        if seen:
            self.refresh()
