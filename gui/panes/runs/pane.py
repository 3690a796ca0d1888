"""The run browser: every run under the runs folder (and the folders the user adds) with its preset,
optimizer, steps, best validation loss, date and size; open, rename, delete, reveal in the file manager,
fork (a paired run, engine/rundir/fork.py); tick runs to overlay their curves (the Run curves pane, through `Session.compare_runs`).

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
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QInputDialog, QMessageBox, QToolButton,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout)

from engine.errors import UserError
from engine.rundir.listing import RunSummary, delete_run, human_bytes, rename_run
from engine.views.runs import RunsView

from ... import recent
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

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.summaries: dict[str, RunSummary] = {}
        self._filling = False
        self.folder_watch = FolderWatch(self)
        self.view = RunsView()
        self.view.seen = False
        self._select: Path | None = None  # the run to select once listed (one just opened)
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
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        col.addLayout(self.button_row)
        col.addWidget(self.tree, 1)

    def _connect(self) -> None:
        a, s = self.acts, self.session
        a["open"].triggered.connect(lambda: self._with_selected(self.session.request_open_run))
        a["rename"].triggered.connect(lambda: self._with_selected(self.rename))
        a["delete"].triggered.connect(lambda: self._with_selected(self.delete))
        a["reveal"].triggered.connect(lambda: self._with_selected(self.reveal))
        a["fork"].triggered.connect(lambda: self._with_selected(self.fork))
        a["add_folder"].triggered.connect(self._on_add_folder_clicked)
        a["refresh"].triggered.connect(self.refresh)
        self.tree.itemDoubleClicked.connect(lambda item, _col: s.request_open_run(item.data(0, _PATH)))
        self.tree.itemChanged.connect(self._on_item_changed)
        s.sig_run_replaced.connect(lambda open_run: self._on_run_opened(open_run and open_run.run))
        s.sig_run_attached.connect(self._on_run_opened)
        self.folder_watch.sig_changed.connect(self._on_folders_changed)
        s.sig_training_state_changed.connect(self._on_training_state_changed)
        self.view.changed.connect(self._on_view_changed)
        s.asker.watch(self.view)

    # ---- the list --------------------------------------------------------------------------

    def refresh(self) -> None:
        """List the runs again; the rows come in `_on_listed` (then `sig_listed`)."""
        self.view.list_again(tuple(str(f) for f in recent.browsed_folders()))

    @property
    def listing(self) -> bool:
        """A listing asked for has not come yet."""
        return self.view.listing_due

    def _on_view_changed(self, name: str) -> None:
        if name == "listed":  # a listing came (it may equal the one before: `listing` would not say so)
            self._on_listed()
        elif name == "failures" and self.view.failures:
            self.session.post_message(f"Cannot list the runs: {next(iter(self.view.failures.values()))}")

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
        if current and (item := self.item_for(current)) is not None:
            self.tree.setCurrentItem(item)
        if ticked != set(self.checked_paths()):  # a ticked run was deleted or renamed elsewhere
            self.session.compare_runs(self.checked_paths())
        self.sig_listed.emit(len(rows))

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
        if self._refuse_open_run(path, "delete"):
            return
        size = human_bytes(self.summaries[str(path)].size_bytes) if str(path) in self.summaries else "?"
        if not self.confirm(f"Delete the run {path.name} ({size}) and everything in its folder?\n{path}"):
            return
        try:
            delete_run(path)
        except UserError as e:
            self.session.post_message(f"Cannot delete the run: {e}")
        self.refresh()

    def reveal(self, path: Path) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))

    def fork(self, path: Path) -> Path | None:
        """Write a fork of the run beside it and open it; Train then trains it (engine/rundir/fork.py)."""
        from engine.rundir.fork import fork_run
        from engine.rundir.runs import Run

        from ...controller import new_run_path

        try:
            parent = Run(path)
            asked = self.ask_fork(parent)
            if asked is None:
                return None
            cfg, step = asked
            run_dir = new_run_path(path.parent, f"{path.name}-fork")
            QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)  # reads the corpus: a second or so
            try:
                fork_run(path, run_dir, cfg, step)
            finally:
                QApplication.restoreOverrideCursor()
        except UserError as e:
            self.session.post_message(f"Cannot fork {path.name}: {e}")
            return None
        self.session.request_open_run(run_dir)
        self.refresh()
        return run_dir

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
