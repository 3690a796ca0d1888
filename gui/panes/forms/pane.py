"""The Forms pane (docs/design.md): the training error's differential form pulled back to the weights
(docs/forms.md), for the note's encoder chain or for the model of the Architecture pane.

Three tabs over one derivation: Walkthrough (the note's pipeline, stage by stage), Terms (weights with
their counts, terms, one term's word, G and numbers at the current step) and Console (the note's command
line). The derivation, the listing, the formulas and the console's lines are the symbolic process's work
(gui/panes/forms/process.py, engine/forms/questions.py): the pane holds the source it shows and plain rows;
a term's value at a step is the analysis process's, asked by the window's asker for the pane's view model
(engine/views/term_values.py). For the model's form the weight listed is the workspace's selection: choosing one
here selects it app-wide (Session.select_weight), and one selected anywhere (the diagram, the Weight pane's box or
its interaction map) is listed here, read from the workspace when it changes and when the form is derived again;
the pane keeps no copy. The note's chain has none of the model's weights: which of its weights is listed is the
pane's own choice, held by its list. Export… asks the app's export queue
(Session.request_export) to write formula snapshots (engine.forms.snapshot_export), page by page with
progress and Cancel, or, for the model's form with a run open, the chosen weight's coefficient as a program that
computes and checks it from the run's weights (engine/ascode/generate.py); Copy LaTeX puts the chosen formula on
the clipboard.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QLabel, QMenu, QTabWidget, QToolButton, QVBoxLayout, QWidget

from engine.forms import questions as fq
from engine.forms import snapshot_export as se
from engine.forms.count_text import count_text
from engine.forms.derive import DEFAULT_LIMIT
from engine.forms.source import KINDS, Source, SourceChoice
from engine.views.term_values import TermValuesView

from ... import settings
from ...binding import listen
from ...exports import ExportRequest
from ...session import Session
from ...widgets import dialogs
from .console import ConsoleView
from .process import FormsJob
from .source import SourceBar
from .terms import TermsView
from .walkthrough import WalkthroughView

TABS = ("walkthrough", "terms", "console")
WEIGHTS_EVERY = 50   # steps between the weight copies this pane asks for while training (values follow)
SHEET_LIMIT = DEFAULT_LIMIT  # the most terms a weight's or the whole form's sheet is written with


@dataclass
class FormsState:
    source: SourceChoice
    tab: str = "terms"


class FormsPane(QWidget):
    title = "Forms"
    object_name = "pane_forms"

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.derived: fq.Derived | None = None   # what the symbolic process derived of the source shown
        self.shown: Source | None = None          # the source it derived
        self.counts: dict[str, int] = {}
        self._asked: Source | None = None          # the source asked for last
        self._valued_step: int | None = None   # the step whose values were last asked for
        self._derive = FormsJob(self)
        self.values = TermValuesView()  # the chosen term's numbers at the open run's weights
        self._build()
        self.state = FormsState(self.source.choice(), tab="terms")
        self._connect()
        self._on_source_changed(self.source.choice())

    # ---- layout ----------------------------------------------------------------------------

    def _build(self) -> None:
        self.source = SourceBar()
        self.export_button = QToolButton()
        self.export_button.setText("Export…")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        self.export_actions = {
            "term": menu.addAction("This term…"), "weight": menu.addAction("This weight's coefficient…"),
            "stage": menu.addAction("This walkthrough stage…"), "form": menu.addAction("The whole form (paged)…"),
            # the open run's numbers: a program that computes the weight's G and checks it (docs/readings.md)
            "code": menu.addAction("This weight's coefficient as code (.py)…"),
        }
        menu.addSeparator()
        self.copy_action = menu.addAction("Copy LaTeX of the chosen formula")
        menu.aboutToShow.connect(self._offer_exports)
        self.export_button.setMenu(menu)
        self.source.add_widget(self.export_button)
        self.status = QLabel()
        self.status.setObjectName("forms_status")
        self.status.setWordWrap(True)
        self.walkthrough, self.terms, self.console = WalkthroughView(), TermsView(), ConsoleView()
        self.tabs = QTabWidget()
        for view, label in zip((self.walkthrough, self.terms, self.console), ("Walkthrough", "Terms", "Console")):
            self.tabs.addTab(view, label)
        self.tabs.setCurrentIndex(TABS.index("terms"))
        layout = QVBoxLayout(self)
        layout.addWidget(self.source)
        layout.addWidget(self.status)
        layout.addWidget(self.tabs, 1)

    def _connect(self) -> None:
        self.source.sig_changed.connect(self._on_source_changed)
        self._derive.sig_done.connect(self._on_derived)
        self._derive.sig_failed.connect(self._on_derive_failed)
        self.values.changed.connect(self._on_values_changed)
        self.session.asker.watch(self.values, self)
        self.terms.sig_weight_chosen.connect(self._on_weight_chosen)
        self.terms.sig_term_chosen.connect(self._on_term_chosen)
        self.tabs.currentChanged.connect(lambda i: setattr(self.state, "tab", TABS[i]))
        for what, action in self.export_actions.items():
            action.triggered.connect(lambda _=False, w=what: self.export_dialog(w))
        self.copy_action.triggered.connect(self.copy_latex)
        self.session.sig_model_changed.connect(self._on_model_changed)
        listen(self, self.session.workspace.sig_selection_changed, self._on_selection_changed)
        self.session.sig_run_replaced.connect(self._on_run_replaced)
        self.session.sig_run_attached.connect(self._on_run_opened)
        self.session.sig_weights_ready.connect(self._on_weights_ready)

    # ---- the derivation --------------------------------------------------------------------

    def _on_source_changed(self, choice: SourceChoice) -> None:
        self.state.source = choice
        if self.session.run is not None:
            settings.set_run_value(self.session.run.path, "forms/source", choice.kind)
        source = Source.of(choice, self.session.model)
        self.status.setText(f"Deriving the {'model' if choice.kind == 'model' else 'chain'}'s form…")
        self._asked = source
        self._derive.forget()
        self._derive.ask(fq.Derive(source), source)

    def _on_model_changed(self, _model) -> None:
        if self.state.source.kind == "model":
            self._on_source_changed(self.state.source)

    def _on_run_replaced(self, open_run) -> None:
        """Another run is open (one event, gui/session.py): its model's form, if it is another model, and its
        numbers."""
        if self.state.source.kind == "model" and Source.of(self.state.source, self.session.model) != self._asked:
            self._on_source_changed(self.state.source)
        self._on_run_opened(None if open_run is None else open_run.run)

    def _on_derived(self, source: Source, derived: fq.Derived) -> None:
        if source != self._asked:
            return
        listed = self.terms.weight  # kept where the new form has it, unless a weight is selected
        self.shown, self.derived, self.counts = source, derived, derived.counts
        n = sum(self.counts.values())
        self.status.setText(f"{derived.title}: {count_text(n)} terms over {len(self.counts)} weights "
                            f"(derived in {derived.seconds * 1000:.0f} ms). Every term is one route from a weight "
                            "to the output; its coefficients add up to −∂L/∂W.")
        self.terms.set_forms(source, self.counts)
        self.walkthrough.set_forms(source, derived)
        self.console.set_source(source)
        want = self._selected_weight()
        if want is None:  # show something at once, without choosing a weight app-wide
            want = listed if listed in self.counts else next(iter(self.counts), None)
        if want is not None:
            self.terms.select_weight(want)
        self._update_weights_wish()

    def _on_derive_failed(self, source: Source, message: str) -> None:
        if source == self._asked:
            self.status.setText(f"Cannot derive the form: {message}")

    # ---- selection -------------------------------------------------------------------------

    def _selected_weight(self) -> str | None:
        """The workspace's selected weight, when the form shown is the model's and has it."""
        name = self.session.workspace.selection.weight
        return name if self.shown is not None and self.shown.choice.kind == "model" and name in self.counts else None

    def _on_weight_chosen(self, name: str) -> None:
        if self.shown is not None and self.shown.choice.kind == "model" and name != self.session.selected_weight:
            self.session.select_weight(name)

    def _on_selection_changed(self, _selection, changed: frozenset) -> None:
        want = self._selected_weight() if "weight" in changed else None
        if want is not None and want != self.terms.weight:
            self.terms.select_weight(want)

    def _on_term_chosen(self, term) -> None:
        self.walkthrough.set_term(term)
        self._ask_values()

    # ---- numbers at the current step -------------------------------------------------------

    def _on_run_opened(self, run) -> None:
        kind = settings.run_value(run.path, "forms/source") if run is not None else ""
        if kind in KINDS and kind != self.state.source.kind:  # the source last shown with this run
            self.source.set_choice(replace(self.source.choice(), kind=kind))
        self._valued_step = None
        self.terms.detail.show_values(None, "")
        self._update_weights_wish()
        self._ask_values()

    def _on_weights_ready(self, step: int, _weights) -> None:
        """Follow training, but recompute a term's value at most every WEIGHTS_EVERY steps (another pane
        may ask for weights far more often)."""
        if self._valued_step is None or abs(step - self._valued_step) >= WEIGHTS_EVERY:
            self._ask_values()

    def _update_weights_wish(self) -> None:
        live = self.state.source.kind == "model" and self.session.run is not None
        self.session.want_weights(self.object_name, WEIGHTS_EVERY if live else 0)

    def _ask_values(self) -> None:
        """Say which term's values are wanted (the asker asks for them) and what is shown until they come."""
        term, run, ws = self.terms.term, self.session.run, self.session.workspace
        if term is None or self.derived is None:
            return
        if self.state.source.kind != "model":
            self.values.term = None
            self.terms.detail.show_values(None, "Numbers are shown for the model's terms when a run is open "
                                                "(the note's chain has no run).")
            return
        if run is None:
            self.values.term = None
            self.terms.detail.show_values(None, "Open or train a run to see this term's value at the current step.")
            return
        live = ws.live if ws.live is not None and ws.live.step >= 0 else None  # else the newest saved step
        self.values.update(term=(term.id, term.weight), live=live)
        step = self.values.step(ws)
        if step is None:
            self.terms.detail.show_values(None, "The run has no saved weights yet.")
            return
        self._valued_step = step
        if self.values.asked_for == self.values.question(ws):  # held already
            self.terms.detail.show_values(self.values.values, "")
        elif self.terms.detail.values_term != term.id:  # while training, the last value stays until the next
            self.terms.detail.show_values(None, f"Computing the value at step {step}…")

    def _on_values_changed(self, name: str) -> None:
        v = self.values
        if name == "values" and v.values is not None:
            self.terms.detail.show_values(v.values, "")
        elif name == "failures":
            question = v.question(self.session.workspace)
            if question in v.failures:
                self.terms.detail.show_values(None, f"No value: {v.failures[question]}")

    # ---- export ----------------------------------------------------------------------------

    def export_writer(self, what: str):
        """write(path) making the sheet of `what` (term, weight, stage, form), or None if nothing is chosen.
        It names the source and the term rather than holding any formula, so the export derives them where it
        runs; a walkthrough stage is the sheet shown."""
        source, term, weight = self.shown, self.terms.term, self.terms.weight
        if source is None:
            return None
        if what == "term" and term is not None:
            return functools.partial(fq.export_sheet_of, source=source, what="term", term_id=term.id)
        if what == "weight" and weight is not None:
            return functools.partial(fq.export_sheet_of, source=source, what="weight", weight=weight)
        if what == "stage" and self.walkthrough.sheet is not None:
            return functools.partial(se.export_sheet, sheet=self.walkthrough.sheet)
        if what == "form":
            return functools.partial(fq.export_sheet_of, source=source, what="form")
        run = self.session.run
        if what == "code" and weight is not None and source.choice.kind == "model" and run is not None \
                and getattr(run, "path", None) is not None:
            from engine.ascode.generate import export_run_code

            return functools.partial(export_run_code, run_dir=str(run.path), weight=weight,
                                     step=self.session.browse_step)
        return None

    def _default_export(self) -> str:
        if self.state.tab == "walkthrough":
            return "stage"
        return "term" if self.terms.term is not None else "weight"

    def export_job(self):
        what = self._default_export()
        write = self.export_writer(what)
        if write is None:
            return None
        name = {"term": "term", "weight": self.terms.weight or "weight", "stage": "stage", "form": "form"}[what]
        return se.FILTERS, f"{name}.tex", write

    def _offer_exports(self) -> None:
        """The export menu offers only what can be written: a sheet of more than SHEET_LIMIT terms is refused
        when written, so it is shown disabled with its count (issue 40: "The whole form (paged)…" was offered,
        then refused past 2,500 terms)."""
        total, weight = sum(self.counts.values()), self.terms.weight
        able = {"term": (self.terms.term is not None, "This term…"),
                "weight": (weight is not None, "This weight's coefficient…"),
                "stage": (self.walkthrough.sheet is not None, "This walkthrough stage…"),
                "form": (self.derived is not None, "The whole form (paged)…")}
        for what, n in (("weight", self.counts.get(weight, 0)), ("form", total)):
            if n > SHEET_LIMIT:
                able[what] = (False, f"{able[what][1].rstrip('…')} ({count_text(n)} terms: more than {count_text(SHEET_LIMIT)}; "
                                     "export one term instead)")
        for what, (on, text) in able.items():
            self.export_actions[what].setEnabled(on)
            self.export_actions[what].setText(text)

    def export_dialog(self, what: str) -> None:
        write = self.export_writer(what)
        if write is None:
            self.session.post_message("As code: choose a weight of the model's form with a run open (its weights "
                                      "and probe batch are what the file computes from)." if what == "code" else
                                      "Choose a weight, a term or a walkthrough stage first.", "warning")
            return
        run = self.session.run
        if what == "code":
            path = dialogs.ask_path(self, "save", "Export the coefficient as code",
                                    "Python file, with its data beside it as .npz (*.py)",
                                    suggested=f"{self.terms.weight}-G.py", start=run.path, remember=dialogs.EXPORTS)
            if path is not None:
                self.session.request_export(ExportRequest(Path(path), write))
            return
        chosen = dialogs.ask_export(self, "Export formula", se.FILTERS, suggested=f"{what}.tex",
                                    start=run.path if run is not None else "")
        if chosen is not None:  # the dialog's resolution is a PNG's DPI
            path, options = chosen
            self.session.request_export(ExportRequest(Path(path), write, options))

    def chosen_latex(self) -> str | None:
        if self.state.tab == "walkthrough" and self.walkthrough.sheet is not None:
            return "\n".join(f.tex for f in self.walkthrough.sheet.formulas)
        detail = self.terms.detail
        return detail.G.tex if detail.term is not None and detail.G.tex else None

    def copy_latex(self) -> None:
        tex = self.chosen_latex()
        if tex is None:
            self.session.post_message("Choose a term or a walkthrough stage first.", "warning")
            return
        QGuiApplication.clipboard().setText(tex)
        self.session.post_message("LaTeX copied to the clipboard.", "info")
