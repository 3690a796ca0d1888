"""The Heatmaps pane's view model: the tab shown, the prompt, the masks' β, the shift k, the saved step the head
diff subtracts, how often live weights are looked at while training, and each tab's answer.

Which weights it shows is the workspace's: a saved step of the open run (the shared timeline's, the
selection's `step`; None follows the newest), the copy training published while following, or, before any run,
the builder's draft at initialisation (engine/analysis/draft.py). The layer and head chosen are the selection's
too; choosing one re-slices the answer held and asks nothing. While training, the pane hands the view the newest
published copy at a bounded rate (`live`); at rest it hands it the copy training rests on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis import questions as q
from ..analysis.attention import BAND, SHIFT
from ..analysis.draft import draft_of
from ..analysis.live import Published
from .view import View

TABS = ("attention", "masks", "positional", "diff")
DEFAULT_PROMPT = "Before we proceed any further, hear me speak."
_TAB_OF = {q.Attention: "attention", q.Masks: "masks", q.Positional: "positional", q.AttentionDiff: "diff"}


@dataclass(eq=False)
class HeatmapsView(View):
    tab: str = "attention"
    prompt: str = DEFAULT_PROMPT
    band: int = BAND               # β of the banded mask on the masks tab
    shift: int = SHIFT             # k of the shift map on the positional tab
    other: int | None = None       # the saved step the head diff subtracts
    refresh_every: int = 10        # steps between looks at the published weights while training
    live: object = None            # engine.workspace.LiveWeights shown while following (the pane hands it)
    results: dict = field(default_factory=dict)   # tab -> (question, answer) answered last

    # ---- what to show ------------------------------------------------------------------------

    def source(self, ws, saved: bool = False):
        """Where the weights shown come from now (engine/analysis/sources.py), None when there are none: the
        copy handed while following (unless `saved`), else the browsed saved step of the open run (its
        newest), else with no run open the builder's draft (unless `saved`, or while it has problems)."""
        run = ws.open_run
        if ws.selection.step is None and self.live is not None and not saved:
            return q.Live(ws.model, Published(self.live.weights), self.live.step,
                          run=None if run is None or run.path is None else str(run.path),
                          tokenizer=None if run is None or run.path is not None else run.tokenizer)
        if run is None:
            return None if saved or ws.draft.problems else q.Draft(draft_of(ws.draft.config))
        if run.run is None:
            return None
        steps = run.saved_steps()
        step = ws.selection.step if ws.selection.step is not None else (steps[-1] if steps else None)
        return None if step is None else q.Saved(str(run.path), step)

    def question(self, ws):
        """The question the current tab needs now, or None (nothing to show it of)."""
        source = self.source(ws, saved=self.tab == "diff")
        if source is None:
            return None
        if self.tab == "diff":
            return None if self.other is None else q.AttentionDiff(source.run, source.step, self.other, self.prompt)
        if isinstance(source, q.Live) and source.run is None and source.tokenizer is None:
            return None
        return {"attention": lambda: q.Attention(source, self.prompt),
                "masks": lambda: q.Masks(source, self.prompt, self.band),
                "positional": lambda: q.Positional(source, self.shift)}[self.tab]()

    def needs(self, workspace) -> list:
        question = self.question(workspace)
        return [] if question is None or self.results.get(self.tab, (None,))[0] == question else [question]

    def shown(self, ws):
        """(question, answer) to draw on the current tab: the newest answered, unless it is of a draft edited
        since (a run's other step or older copy is drawn until the newer one comes)."""
        got = self.results.get(self.tab)
        if got is None:
            return None
        source = getattr(got[0], "source", None)
        if isinstance(source, q.Draft) and source != self.source(ws):
            return None
        return got

    # ---- answers -----------------------------------------------------------------------------

    def take(self, question, answer) -> None:
        self.results = {**self.results, _TAB_OF[type(question)]: (question, answer)}

    def forget(self) -> None:
        self.update(results={}, live=None)
        super().forget()
