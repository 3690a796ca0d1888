"""The Forms pane's numbers, as a view model: the term chosen, and its values at the open run's weights on the
run's probe batch (engine/forms/terms.py TermValues, questions.TermValues), which the analysis process computes.

The weights are the open run's: the copy training published that the pane handed (`live`: while training it
hands one every few steps, not every copy training publishes), else its newest saved step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis import questions as q
from ..analysis.live import Published
from .view import View


@dataclass(eq=False)
class TermValuesView(View):
    term: tuple | None = None      # (term id, weight) chosen; None: no term of the model's form is chosen
    live: object = None            # engine.workspace.LiveWeights handed (None: the newest saved step)
    values: object = None          # engine.forms.terms.TermValues answered last
    asked_for: object = None       # the question `values` answers

    def question(self, ws):
        run = ws.open_run
        if self.term is None or run is None or run.path is None:
            return None
        if self.live is not None:
            source = q.Live(ws.model, Published(self.live.weights), self.live.step, run=str(run.path))
        else:
            steps = run.saved_steps()
            if not steps:
                return None
            source = q.Saved(str(run.path), steps[-1])
        return q.TermValues(source, *self.term)

    def needs(self, workspace) -> list:
        question = self.question(workspace)
        return [] if question is None or question == self.asked_for else [question]

    def take(self, question, answer) -> None:
        self.update(asked_for=question, values=answer)

    def step(self, ws) -> int | None:
        """The step whose values are asked for (None: none are)."""
        question = self.question(ws)
        return None if question is None else question.source.step

    def forget(self) -> None:
        self.update(values=None, asked_for=None, live=None)
        super().forget()
