"""The Run curves pane's view model: the runs ticked in the run browser, the x axis and the smoothing, and the
curves the analysis process read of their logs (questions.RunCurvesOf: it reads a log again only when it changed
since the stamp held here, and sends back only those runs).

A look is one reading of the ticked runs' logs: ticking other runs starts one, and `read_again` (the pane's slow
timer while it is seen) starts the next once the last has come, so a run training here or in a terminal draws on
without questions piling up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.questions import RunCurvesOf
from .view import View


@dataclass(eq=False)
class RunCurvesView(View):
    follows_open_run = False   # the ticked runs, whichever run is open
    while_hidden = True        # read when runs are ticked, seen or not (light; the pane reads again only when seen)

    paths: tuple[str, ...] = ()   # the runs ticked in the run browser, in order (folders)
    axis: str = "step"            # engine.figures.run_curves.AXIS_LABELS
    smoothing: float = 0.6        # TensorBoard's default
    look: int = 0                 # raised to read the logs again
    read: int = -1                # the look the curves held answer
    curves: dict = field(default_factory=dict)    # path -> engine.figures.run_curves.RunCurves
    problems: dict = field(default_factory=dict)  # path -> why its curves cannot be drawn (one line)
    fresh: tuple[str, ...] = ()   # the runs the last answer changed (the pane redraws those)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._stamps: dict = {}   # path -> what its curves (or its problem) were read from

    def needs(self, workspace) -> list:
        if not self.paths or self.read >= self.look:
            return []
        known = {p: self._stamps[p] for p in self.paths if p in self._stamps}
        return [RunCurvesOf(self.paths, known, self.look)]

    def tick(self, paths) -> None:
        """These runs are ticked now: drop what is held of the others, read the logs of these."""
        paths = tuple(str(p) for p in paths)
        self._stamps = {p: s for p, s in self._stamps.items() if p in paths}
        self.update(paths=paths, curves={p: c for p, c in self.curves.items() if p in paths},
                    problems={p: m for p, m in self.problems.items() if p in paths}, look=self.look + 1,
                    failures={})

    def read_again(self) -> None:
        """Read the logs again, once the last reading has come (or failed)."""
        if self.paths and (self.read >= self.look or self.failures):
            self.update(look=self.look + 1, failures={})

    def take(self, question, answer: dict) -> None:
        curves, problems, fresh = dict(self.curves), dict(self.problems), []
        for path, (stamp, got) in answer.items():
            if path not in self.paths:  # unticked while it was read
                continue
            self._stamps[path] = stamp
            if isinstance(got, str):
                curves.pop(path, None)
                problems[path] = got
            else:
                curves[path] = got
                problems.pop(path, None)
            fresh.append(path)
        self.update(read=max(self.read, question.look), problems=problems, fresh=tuple(fresh), curves=curves)

    def shown(self) -> list[str]:
        """The ticked runs whose curves are held, in order."""
        return [p for p in self.paths if p in self.curves]
