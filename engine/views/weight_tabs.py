"""The Weight pane's other tabs, as view models: the update's geometry at the step shown, the route shares over
training (of the weight shown, or of the whole model weight by weight), the distributions of W, G and ΔW, and the
second-order view (how another weight's update moved this one's coefficient, and the model's map of pairs).

Each reads the weight and the step shown from the workspace (engine/views/weight.py's `shown_weight`,
`shown_step`), keeps its answers keyed by what they answer, and is asked only while its tab is shown (its pane
sets `seen`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis import questions as q
from ..model.weight_layout import weight_names
from .view import View
from .weight import run_path, shown_step, shown_weight


def _ends(ws) -> tuple[int, ...]:
    """The ends s of the intervals [p, s] of saved steps the run has now (route shares are drawn at them)."""
    return tuple(ws.open_run.saved_steps()[1:])


@dataclass(eq=False)
class GeometryView(View):
    answers: dict = field(default_factory=dict)   # UpdateGeometry -> engine.analysis.update.UpdateGeometry

    def question(self, ws):
        path, weight, step = run_path(ws), shown_weight(ws), shown_step(ws)
        return None if path is None or weight is None or step is None else q.UpdateGeometry(path, weight, step)

    def needs(self, ws) -> list:
        question = self.question(ws)
        return [] if question is None or question in self.answers else [question]

    def take(self, question, answer) -> None:
        self.answers = {**self.answers, question: answer}

    def forget(self) -> None:
        self.answers = {}
        super().forget()


@dataclass(eq=False)
class DistributionsView(View):
    answers: dict = field(default_factory=dict)   # (Distributions, its saved steps) -> {quantity: Distribution}

    def key(self, ws):
        path, weight = run_path(ws), shown_weight(ws)
        if path is None or weight is None:
            return None
        return q.Distributions(path, weight), tuple(ws.open_run.saved_steps())

    def needs(self, ws) -> list:
        key = self.key(ws)
        return [] if key is None or key in self.answers else [key[0]]

    def take(self, question, answer) -> None:
        steps = tuple(int(s) for s in next(iter(answer.values())).steps) if answer else ()
        self.answers = {**self.answers, (question, steps): answer}

    def forget(self) -> None:
        self.answers = {}
        super().forget()


@dataclass(eq=False)
class RoutesView(View):
    """The route shares of the weight shown, or (`whole`) of every weight summed: one long question either way
    (a large model's whole is one pass over every weight an interval at a time, engine/analysis/routes.py), whose
    progress the asker reports with the time left."""

    whole: bool = False            # the whole model, not the weight shown
    direction: str | None = None   # the direction drawn (None: the update applied)
    answers: dict = field(default_factory=dict)   # (RouteShares, interval ends it spans) -> RouteShares

    def key(self, ws):
        path, weight = run_path(ws), shown_weight(ws)
        if path is None or weight is None:
            return None
        return q.RouteShares(path, None if self.whole else weight), _ends(ws)

    def needs(self, ws) -> list:
        key = self.key(ws)
        return [] if key is None or key in self.answers else [key[0]]

    def take(self, question, answer) -> None:
        self.answers = {**self.answers, (question, tuple(int(s) for s in answer.steps)): answer}

    def shown(self, ws):
        """The shares to draw now (None while they are asked)."""
        key = self.key(ws)
        return None if key is None else self.answers.get(key)

    def forget(self) -> None:
        self.answers = {}
        super().forget()


@dataclass(eq=False)
class InteractionView(View):
    """B is the weight shown, A the other weight chosen here; the pair at the step shown, and every saved step's
    map of pairs (the step shown's first) for the chart of what each other weight explains over training."""

    other: str | None = None       # A (None: the model's first weight)
    map_kind: int = 0              # which quantity the map draws (the pane's MAP_KINDS)
    pairs: dict = field(default_factory=dict)     # Interaction -> PairInteraction
    routes: dict = field(default_factory=dict)    # InteractionRoutes -> RouteMoves
    maps: dict = field(default_factory=dict)      # step -> InteractionMap

    def other_weight(self, ws) -> str | None:
        names = weight_names(ws.model)
        return self.other if self.other in names else (names[0] if names else None)

    def questions(self, ws):
        """(Interaction, InteractionRoutes) at the step shown, or None."""
        path, weight, step = run_path(ws), shown_weight(ws), shown_step(ws)
        if path is None or weight is None or step is None:
            return None
        other = self.other_weight(ws)
        return q.Interaction(path, weight, other, step), q.InteractionRoutes(path, weight, other, step)

    def needs(self, ws) -> list:
        asked = self.questions(ws)
        if asked is None:
            return []
        pair, routes = asked
        out = [x for x, held in ((pair, self.pairs), (routes, self.routes)) if x not in held]
        later = ws.open_run.saved_steps()[1:]
        step = pair.step
        order = ([step] if step in later else []) + [s for s in later if s != step]
        return out + [q.InteractionMap(pair.run, s) for s in order if s not in self.maps]

    def take(self, question, answer) -> None:
        if isinstance(question, q.Interaction):
            self.pairs = {**self.pairs, question: answer}
        elif isinstance(question, q.InteractionRoutes):
            self.routes = {**self.routes, question: answer}
        else:
            self.maps = {**self.maps, answer.step: answer}

    def forget(self) -> None:
        self.update(pairs={}, routes={}, maps={})
        super().forget()
