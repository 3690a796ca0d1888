"""The heads × steps chart's view model (the Training pane): the score chosen, and the open run's head timeline
as far as it is scored (engine/analysis/head_timeline.py).

A large model's timeline comes a slice at a time: while the answer held says what is left (`scoring`), the view
needs the same question again, and the asker's estimate of the time left spans the slices. `look` is raised
to score the steps saved since (Refresh, training's snapshots, training coming to rest).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.questions import HeadTimeline
from .view import View


@dataclass(eq=False)
class HeadTimelineView(View):
    score: str = "induction"   # engine.analysis.heads.SCORES: the one colouring the cells
    look: int = 0
    timeline: object = None    # the HeadTimeline answered last (partial while its `scoring` says what is left)
    looked: int = -1           # the look it answers

    def needs(self, workspace) -> list:
        run = workspace.open_run
        if run is None or run.path is None:
            return []
        done = self.timeline is not None and self.timeline.scoring is None and self.looked >= self.look
        return [] if done else [HeadTimeline(str(run.path), look=self.look)]

    def take(self, question, timeline) -> None:
        self.update(looked=question.look, timeline=timeline,
                    progress=None if timeline.scoring is None else self.progress)

    def look_again(self) -> None:
        """Score the steps saved since the last answer (those scored are cached in the run)."""
        self.update(look=self.look + 1, failures={})

    def forget(self) -> None:
        self.update(timeline=None, looked=-1)
        super().forget()

    @property
    def scoring(self) -> bool:
        """A timeline is being scored (asked and not whole)."""
        return self.timeline is None or self.timeline.scoring is not None or self.looked < self.look
