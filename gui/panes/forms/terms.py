"""The forms pane's term browser: weights with their term counts, the terms of the chosen weight, and the
chosen term's detail (term_detail.py).

Terms are listed by a model/view table (`TermTable`, uniform rows, nothing rendered) that the symbolic process
fills in Leibniz order a batch at a time (`TermLoader`, engine/forms/questions.py's ListTerms): the list shows
its first rows at once, a progress bar counts the rest, Cancel stops, and a weight with more terms than LOAD_CAP
stops there with a button for the next LOAD_CAP, which the process lists from where it stopped. Counts come
from the derivation without enumerating, so a GPT's millions of routes are counted, never listed all at once.
The pane holds rows of strings and numbers (TermRow), never the forms themselves.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QProgressBar,
                               QPushButton, QSplitter, QTableView, QTreeWidget, QTreeWidgetItem, QVBoxLayout,
                               QWidget)

from engine.forms import questions as fq
from engine.forms.count_text import count_text
from engine.forms.source import Source

from .process import FormsJob
from .term_detail import TermDetail

LOAD_CAP = 5000   # terms listed per "load" of a weight
PROGRESS_MS = 100


class TermTable(QAbstractTableModel):
    """The listed terms as a table model over their rows. A batch of rows is one insertion (a few microseconds),
    and a paint asks `data` for the cells in sight only. Building four QStandardItems a term instead cost the GUI
    thread ~21 ms for each batch of 250 (benchmarks/forms_pane.py); that model was chosen while the listing ran on
    a thread of this process, whose Python held the interpreter lock a Python model's every call waits for."""

    HEADERS = ("#", "Term ID", "Route", "Ops")
    _RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.terms: list[fq.TermRow] = []

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # Qt's names, from here on
        return 0 if parent.isValid() else len(self.terms)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(self, section: int, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        t, col = self.terms[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (str(t.index), t.id, t.route_class, str(t.op_count))[col]
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (0, 3):
            return self._RIGHT
        if role == Qt.ItemDataRole.ToolTipRole and col == 1:
            return f"{t.id}\nroute class {t.route_class}, {t.operators}, term {t.index} in Leibniz order"
        return None

    def clear(self) -> None:
        self.beginResetModel()
        self.terms = []
        self.endResetModel()

    def extend(self, terms: list[fq.TermRow]) -> None:
        if terms:
            self.beginInsertRows(QModelIndex(), len(self.terms), len(self.terms) + len(terms) - 1)
            self.terms.extend(terms)
            self.endInsertRows()


class TermLoader(QObject):
    """Lists a weight's terms in the symbolic process, LOAD_CAP at a time, in batches: a new start cancels the
    listing under way (its batches still coming are dropped)."""

    sig_batch = Signal(int, object)         # generation, [TermRow]
    sig_finished = Signal(int, int, bool)   # generation, terms listed so far, whether that is all

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.generation = 0
        self._what: tuple[Source, str] | None = None
        self._listed = 0
        self._job = FormsJob(self)
        self._job.sig_part.connect(self._on_part)
        self._job.sig_done.connect(lambda gen, listed: self.sig_finished.emit(gen, listed.listed, listed.complete))
        # a failure (its message on stderr when a bug): what was listed stays, and the list says it is not all
        self._job.sig_failed.connect(lambda gen, _message: self.sig_finished.emit(gen, self._listed, False))

    @property
    def running(self) -> bool:
        return self._job.busy

    def start(self, source: Source, weight: str) -> None:
        self._job.forget()
        self.generation += 1
        self._what = (source, weight)
        self._run(0)

    def more(self, listed: int) -> None:
        if self._what is not None and not self.running:
            self._run(listed)

    def cancel(self) -> None:
        self._job.cancel()

    def _run(self, listed: int) -> None:
        self._listed = listed
        self._job.ask(fq.ListTerms(*self._what, listed, listed + LOAD_CAP), self.generation)

    def _on_part(self, gen: int, rows: list) -> None:
        if gen == self.generation:
            self._listed += len(rows)
            self.sig_batch.emit(gen, rows)


class TermsView(QWidget):
    sig_weight_chosen = Signal(str)     # the user chose a weight in the list
    sig_term_chosen = Signal(object)    # TermRow

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.source: Source | None = None
        self.counts: dict[str, int] = {}
        self.weight: str | None = None
        self._complete = False
        self.table = TermTable(self)
        self.loader = TermLoader(self)
        self._formulas = FormsJob(self)
        self._build()
        self._connect()

    def _build(self) -> None:
        self.weights = QTreeWidget()
        self.weights.setObjectName("forms_weights")
        self.weights.setHeaderLabels(["Weight", "Terms"])
        self.weights.setRootIsDecorated(False)
        self.weights.setUniformRowHeights(True)
        self.weights.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.weights.header().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.weights.header().setStretchLastSection(False)
        # a name too long for the column keeps its end: blocks.0.W_Q, W_K and W_V differ only there
        self.weights.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        # a table, not a tree: a QTreeView lays out every row (asking the model about each) on every insert
        self.list = QTableView()
        self.list.setObjectName("forms_terms")
        self.list.setModel(self.table)
        self.list.setShowGrid(False)
        self.list.setWordWrap(False)
        self.list.verticalHeader().hide()
        self.list.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.list.verticalHeader().setDefaultSectionSize(self.list.fontMetrics().height() + 4)
        self.list.setAlternatingRowColors(True)
        self.list.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        head = self.list.horizontalHeader()
        head.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        head.setStretchLastSection(False)
        # widths from the font, never ResizeToContents: that measures every row on each batch (seconds
        # of GUI-thread time for a few thousand terms)
        fm = self.list.fontMetrics()
        for col, sample in ((0, "0000000"), (2, "L00.mlp.h00"), (3, "Ops00")):
            head.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            head.resizeSection(col, fm.horizontalAdvance(sample) + 16)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        # QProgressBar repaints at once (not at the next paint) when its text changes: ~17 ms a batch offscreen,
        # so the count shown follows the rows at most every PROGRESS_MS
        self._progress_timer = QTimer(self, singleShot=True, interval=PROGRESS_MS)
        self._progress_timer.timeout.connect(lambda: self.progress.setValue(len(self.table.terms)))
        self.cancel_button = QPushButton("Cancel")
        self.more_button = QPushButton(f"List {LOAD_CAP:,} more")
        self.list_status = QLabel()
        self.list_status.setWordWrap(True)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_button)
        row.addWidget(self.more_button)
        middle = QWidget()
        col = QVBoxLayout(middle)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.list, 1)
        col.addWidget(self.list_status)
        col.addLayout(row)
        self.detail = TermDetail()
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.weights)
        split.addWidget(middle)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 2)
        outer = QSplitter(Qt.Orientation.Vertical)
        outer.addWidget(split)
        outer.addWidget(self.detail)
        outer.setStretchFactor(0, 1)
        outer.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(outer)
        self._show_progress(False)

    def _connect(self) -> None:
        self.weights.currentItemChanged.connect(self._on_weight_item_changed)
        self.list.selectionModel().currentRowChanged.connect(self._on_term_row_changed)
        self.loader.sig_batch.connect(self._on_batch)
        self.loader.sig_finished.connect(self._on_loaded)
        self.cancel_button.clicked.connect(self.loader.cancel)
        self.more_button.clicked.connect(lambda: self._load_more())
        self._formulas.sig_done.connect(lambda _id, formulas: self.detail.show_formulas(formulas))
        self._formulas.sig_failed.connect(lambda _id, message: self.detail.meta.setText(f"No formula: {message}"))

    # ---- what the pane tells it ----

    def set_forms(self, source: Source, counts: dict[str, int]) -> None:
        """Show the weights of the derivation of `source`, with their term counts."""
        self.source, self.counts = source, dict(counts)
        self.weight = None
        was = self.weights.blockSignals(True)
        self.weights.clear()
        for name, n in counts.items():
            item = QTreeWidgetItem([name, f"{n:,}"])
            item.setData(0, Qt.ItemDataRole.UserRole, name)
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setToolTip(0, name)
            self.weights.addTopLevelItem(item)
        self.weights.blockSignals(was)
        if counts:  # wide enough for the longest name and its count, within reason
            fm = self.weights.fontMetrics()
            need = max(map(fm.horizontalAdvance, counts)) + fm.horizontalAdvance("Terms 00,000") + 40
            self.weights.setMinimumWidth(min(need, 260))
        self.loader.cancel()
        self.table.clear()
        self.detail.clear()
        self.list_status.setText("Choose a weight to list its terms.")

    def select_weight(self, name: str) -> bool:
        """Show `name`'s terms (without emitting sig_weight_chosen); False when it is not a weight here."""
        for i in range(self.weights.topLevelItemCount()):
            item = self.weights.topLevelItem(i)
            if item.data(0, Qt.ItemDataRole.UserRole) == name:
                was = self.weights.blockSignals(True)
                self.weights.setCurrentItem(item)
                self.weights.blockSignals(was)
                self._list(name)
                return True
        return False

    def select_term(self, term_id: str) -> bool:
        for row, t in enumerate(self.table.terms):
            if t.id == term_id:
                self.list.setCurrentIndex(self.table.index(row, 1))
                return True
        return False

    # ---- listing ----

    def _list(self, name: str) -> None:
        if self.source is None or name == self.weight:
            return
        self.weight = name
        self.table.clear()
        self.detail.clear()
        self._complete = False
        total = self.counts[name]
        self.progress.setRange(0, max(1, min(total, LOAD_CAP)))
        self.progress.setValue(0)
        self.progress.setFormat(f"listing %v of {count_text(total)} terms")
        self._show_progress(True)
        self.list_status.setText("")
        self.loader.start(self.source, name)

    def _load_more(self) -> None:
        n = len(self.table.terms)
        total = self.counts[self.weight]
        self.progress.setRange(n, min(total, n + LOAD_CAP))
        self._show_progress(True)
        self.loader.more(n)

    def _show_progress(self, running: bool) -> None:
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        self.more_button.setVisible(not running and self.weight is not None and not self._complete
                                    and self.source is not None and bool(self.table.terms))

    def _on_batch(self, gen: int, terms: list) -> None:
        if gen == self.loader.generation:
            self.table.extend(terms)
            if not self._progress_timer.isActive():
                self._progress_timer.start()
            if terms and not self.list.currentIndex().isValid():
                self.list.setCurrentIndex(self.table.index(0, 1))

    def _on_loaded(self, gen: int, listed: int, complete: bool) -> None:
        if gen != self.loader.generation:
            return
        self._complete = complete
        total = self.counts.get(self.weight, listed)
        self.list_status.setText(f"{count_text(total)} terms of {self.weight}." if complete else
                                 f"Listed the first {listed:,} of {count_text(total)} terms of {self.weight} in Leibniz order.")
        self._show_progress(False)

    def _on_weight_item_changed(self, item, _previous) -> None:
        if item is not None:
            name = item.data(0, Qt.ItemDataRole.UserRole)
            self._list(name)
            self.sig_weight_chosen.emit(name)

    def _on_term_row_changed(self, index: QModelIndex, _previous) -> None:
        if index.isValid() and self.source is not None:
            term = self.table.terms[index.row()]
            self.detail.show_term(term, sum(self.counts.values()))
            self._formulas.forget()
            self._formulas.ask(fq.TermDetail(self.source, term.id), term.id)
            self.sig_term_chosen.emit(term)

    @property
    def term(self) -> fq.TermRow | None:
        index = self.list.currentIndex()
        return self.table.terms[index.row()] if index.isValid() else None
