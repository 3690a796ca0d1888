"""The Run diff pane's view model: the pair of runs compared (the first two ticked in the run browser, A then B),
the step and what is compared, and what the analysis process answered (engine/analysis/pair.py: the pair's
choices, questions.PairChoices, then the difference chosen, questions.PairAttention / PairWeight).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis import questions as q
from ..analysis.pair import ATTENTION, COEFFICIENT
from .view import View


@dataclass(eq=False)
class RunDiffView(View):
    follows_open_run = False   # the ticked pair, whichever run is open

    pair: tuple[str, ...] = ()     # A and B (folders); a fork's parent is A once the choices say which it is
    step: int | None = None        # a step both saved (the newest, when the choices come)
    what: str = ATTENTION          # ATTENTION or a weight's name
    part: str = COEFFICIENT        # a weight's coefficient G or the weight W (engine.analysis.pair)
    choices: object = None         # engine.analysis.pair.PairChoices of the pair
    diff: object = None            # engine.analysis.pair.PairDiff answered last
    answered: object = None        # the question `diff` answers

    def question(self):
        """The difference chosen (None until the pair's choices came)."""
        if len(self.pair) < 2 or self.choices is None or self.step is None:
            return None
        a, b = self.pair
        if self.what == ATTENTION:
            return q.PairAttention(a, b, self.step)
        return q.PairWeight(a, b, self.step, self.what, self.part)

    def needs(self, workspace) -> list:
        if len(self.pair) < 2:
            return []
        if self.choices is None:
            return [q.PairChoices(*self.pair)]
        question = self.question()
        return [] if question is None or question == self.answered else [question]

    def tick(self, paths) -> None:
        """These runs are ticked now: the first two are the pair (kept in its order if it is the same pair)."""
        pair = tuple(str(p) for p in paths)[:2]
        if set(pair) != set(self.pair) or len(pair) != len(self.pair):
            self.update(pair=pair, choices=None, step=None, what=ATTENTION, diff=None, answered=None, failures={})

    def swap(self) -> None:
        self.pair = tuple(reversed(self.pair))

    def take(self, question, answer) -> None:
        if isinstance(question, q.PairChoices):
            if {question.a, question.b} != set(self.pair) or len(self.pair) != 2:
                return  # another pair was ticked meanwhile
            pair = (question.b, question.a) if answer.parent_second else (question.a, question.b)
            self.update(choices=answer, pair=pair, step=answer.steps[-1] if answer.steps else None,
                        what=ATTENTION)
        elif question == self.question():
            self.update(answered=question, diff=answer)

    def failure(self) -> str | None:
        """Why the pair or the difference chosen cannot be shown (None: nothing failed of them)."""
        for question in (q.PairChoices(*self.pair) if len(self.pair) == 2 else None, self.question()):
            if question is not None and question in self.failures:
                return self.failures[question]
        return None
