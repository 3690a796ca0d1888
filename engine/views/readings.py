"""The Weight pane's two readings of the selected weight's coefficient (docs/readings.md): in tokens and along
the step's curvature. Each view model needs the reading at the step on screen and the reading over training.

The step on screen is the workspace's selection: a saved step, or, while training publishes newer weights than
the newest saved step and the timeline follows the newest (selection.step is None), the published copy (a `Live`
source), read with its update from the newest saved step. Over training the readings of every saved step come
from the long lane; `look` is raised when steps were saved since (the pane does it as training saves).

The token reading comes in two answers: the whole G's first (one step's light answer), then, from the long lane,
the split by route class, which replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis import questions as q
from ..analysis.live import Published
from .view import View


def source_on_screen(ws):
    """The weights the selection shows (module docstring), or None when there are none yet."""
    run = ws.open_run
    if run is None or run.path is None:
        return None
    steps = run.saved_steps()
    live = ws.live
    if ws.selection.step is None and live is not None and (not steps or live.step > steps[-1]):
        return q.Live(ws.model, Published(live.weights), live.step, run=str(run.path))
    step = ws.selection.step if ws.selection.step in steps else (steps[-1] if steps else None)
    return None if step is None else q.Saved(str(run.path), step)


def large(ws) -> bool:
    """A model whose class split takes seconds to minutes (engine.coefficients.progressive): its timeline is read
    without the split."""
    from ..coefficients import progressive

    cfg = ws.open_run.config
    return progressive(cfg.model, cfg.train.probe_batch * cfg.model.n_ctx)


@dataclass(eq=False)
class TokensView(View):
    part: str = "G"            # what the bars show: "G", "ΔW" or a route class (engine.analysis.tokens)
    look: int = 0
    reading: object = None     # the TokenReading on screen (whole, then split)
    asked_for: object = None   # the Tokens question `reading` answers
    timeline: object = None    # [TokenReading] of every saved step
    timeline_for: object = None

    def on_screen(self, ws) -> tuple:
        """The questions of the step on screen, (whole, split), or () while there is nothing to read."""
        weight, source = ws.selection.weight, source_on_screen(ws)
        if weight is None or source is None:
            return ()
        return q.Tokens(source, weight, False), q.Tokens(source, weight, True)

    def needs(self, ws) -> list:
        asked = self.on_screen(ws)
        if not asked:
            return []
        want = []
        (whole, split), weight = asked, ws.selection.weight
        if self.asked_for not in (whole, split):
            want.append(whole)
        if self.asked_for != split:
            want.append(split)
        over = q.TokenTimeline(str(ws.open_run.path), weight, not large(ws), self.look)
        if self.timeline_for != over:
            want.append(over)
        return want

    def take(self, question, answer) -> None:
        if isinstance(question, q.TokenTimeline):
            self.update(timeline_for=question, timeline=answer, progress=None)
        elif question.split or self.asked_for is None or self.asked_for.source != question.source \
                or self.asked_for.weight != question.weight:
            self.update(asked_for=question, reading=answer)

    def look_again(self) -> None:
        self.update(look=self.look + 1, failures={})

    def forget(self) -> None:
        self.update(reading=None, asked_for=None, timeline=None, timeline_for=None)
        super().forget()


@dataclass(eq=False)
class CurvatureView(View):
    look: int = 0
    result: object = None      # the Curvature of the update that reached the step on screen
    asked_for: object = None
    series: object = None      # [Curvature] of every interval between saved steps
    series_for: object = None

    def on_screen(self, ws):
        """The question of the step on screen (None while there are no weights, or no update reaches them: the
        first saved step, `first_step`)."""
        source = source_on_screen(ws)
        if source is None or self.first_step(ws):
            return None
        return q.CurvatureAt(source, ws.selection.weight)

    @staticmethod
    def first_step(ws) -> bool:
        """The step on screen is the run's first saved step: no update between saved steps reaches it."""
        source = source_on_screen(ws)
        return isinstance(source, q.Saved) and source.step == ws.open_run.saved_steps()[0]

    def needs(self, ws) -> list:
        at = self.on_screen(ws)
        if at is None and (source_on_screen(ws) is None or len(ws.open_run.saved_steps()) < 2):
            return []
        want = []
        if at is not None and self.asked_for != at:
            want.append(at)
        over = q.CurvatureSeries(str(ws.open_run.path), ws.selection.weight, self.look)
        if self.series_for != over:
            want.append(over)
        return want

    def take(self, question, answer) -> None:
        if isinstance(question, q.CurvatureSeries):
            self.update(series_for=question, series=answer, progress=None)
        else:
            self.update(asked_for=question, result=answer)

    def look_again(self) -> None:
        self.update(look=self.look + 1, failures={})

    def forget(self) -> None:
        self.update(result=None, asked_for=None, series=None, series_for=None)
        super().forget()


__all__ = ["source_on_screen", "large", "TokensView", "CurvatureView"]
