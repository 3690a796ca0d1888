"""The Training pane's next-token view model: the text, the position after which the next token is predicted,
Generate's temperature and top-k, and the distribution answered (engine/analysis/next_tokens.py).

The weights are the open run's: the copy training published that the pane handed with the text (`live`: the
bars follow what the user asked about, not every copy training publishes), else its newest saved step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis import questions as q
from ..analysis.live import Published
from .view import View


@dataclass(eq=False)
class NextTokensView(View):
    text: str = ""
    position: int = 0              # the token after which the next one is predicted
    temperature: float = 1.0
    top_k: int = 0                 # 0: no cut
    live: object = None            # engine.workspace.LiveWeights asked about (None: the newest saved step)
    result: object = None          # engine.analysis.next_tokens.NextTokens answered last
    asked_for: object = None       # the question `result` answers

    def question(self, ws):
        run = ws.open_run
        if not self.text or run is None:
            return None
        if self.live is not None:
            source = q.Live(ws.model, Published(self.live.weights), self.live.step,
                            run=None if run.path is None else str(run.path),
                            tokenizer=run.tokenizer if run.path is None else None)
        else:
            steps = run.saved_steps()
            if not steps:
                return None
            source = q.Saved(str(run.path), steps[-1])
        return q.NextTokens(source, self.text, self.position, self.temperature, self.top_k or None)

    def needs(self, workspace) -> list:
        question = self.question(workspace)
        return [] if question is None or question == self.asked_for else [question]

    def take(self, question, answer) -> None:
        self.update(asked_for=question, result=answer)

    def forget(self) -> None:
        self.update(result=None, asked_for=None, live=None)
        super().forget()
