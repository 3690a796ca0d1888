"""Everything the app asks about a run, as frozen question objects: the one typed door to a run's numbers.

A question names what it asks in its fields, its answer's type in its base (`Question[AttentionResult]`) and
the lane it is answered in (`lane`): NOW for what a pane shows from one step, LONG for what reads every saved
step or takes minutes on a large model (the analysis process answers each lane on a thread of its own, so a light
question never waits behind a long one). `answer(door)` is computed in the GUI's analysis process
(engine/analysis/door.py; its lanes are engine/service_process.py's, one thread each). A question about one model's weights names where they come from in its `source` field
(engine/analysis/sources.py: a saved step, the copy training published, the builder's draft), so each is one
class whatever the source. No question is named by a string: the GUI, the command line and the tests construct
these classes; a parameter's default (the masks' β, the shift k) is stated once, in engine/analysis/attention.py.

    Attention(Saved("runs/tiny", 250), "To be")                       # -> attention.AttentionResult
    Attention(Live(model_config, Published(weights), 251, run="runs/tiny"), "To be")
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ..model.sampling import SampleRequest
from . import attention as attn
from .live import Published
from .sources import Draft, Live, Saved, Source

if TYPE_CHECKING:
    from .door import Door

A = TypeVar("A")
NOW, LONG = "now", "long"   # the lanes: one step's answer; what reads every saved step
LANES = (NOW, LONG)


class Question(Generic[A]):
    """A question about a run whose answer is an A, answered in `lane` (NOW, or LONG for work that reads
    every saved step: seconds to minutes on a large model)."""

    lane: ClassVar[str] = NOW

    def answer(self, door: Door) -> A:
        raise NotImplementedError


# ---- one model's weights, from any source (engine/analysis/sources.py) --------------------------------

@dataclass(frozen=True)
class Attention(Question["attn.AttentionResult"]):
    source: Source
    prompt: str

    def answer(self, door):
        return self.source.at(door).attention(self.source.step, self.prompt)


@dataclass(frozen=True)
class Masks(Question["attn.MasksResult"]):
    source: Source
    prompt: str
    band: int = attn.BAND

    def answer(self, door):
        return self.source.at(door).masks(self.source.step, self.prompt, self.band)


@dataclass(frozen=True)
class Positional(Question["attn.PositionalResult"]):
    source: Source
    shift: int = attn.SHIFT

    def answer(self, door):
        return self.source.at(door).positional(self.source.step, self.shift)


@dataclass(frozen=True)
class NextTokens(Question[Any]):
    """engine.analysis.next_tokens.NextTokens: the model's next-token probabilities after `position` of
    `text`, and Generate's at `temperature` and `top_k`."""

    source: Source
    text: str
    position: int
    temperature: float = 1.0
    top_k: int | None = None

    def answer(self, door):
        return self.source.at(door).next_tokens(self.source.step, self.text, self.position, self.temperature,
                                                self.top_k)


@dataclass(frozen=True)
class TermValues(Question["terms.TermValues"]):
    """A term's values at the source's weights, on the run's probe batch (a saved step, or published weights
    of a run with a folder)."""

    source: Source
    term_id: str
    weight: str

    def answer(self, door):
        return self.source.at(door).term_values(self.source.step, self.term_id, self.weight)


@dataclass(frozen=True)
class Tokens(Question[Any]):
    """engine.analysis.tokens.TokenReading: `weight`'s coefficient at the source's weights (a saved step, or a
    copy training published, of a run with a folder), the update that reached them and, with `split`, each
    route class, read in tokens (docs/readings.md). Without the split it is one step's light answer; the split
    takes seconds to minutes on a large model, so it has the long lane."""

    source: Source
    weight: str
    split: bool = False

    @property
    def lane(self) -> str:
        return LONG if self.split else NOW

    def answer(self, door):
        return self.source.at(door).tokens(self.weight, self.source.step, self.split)


@dataclass(frozen=True)
class CurvatureAt(Question[Any]):
    """engine.analysis.curvature.Curvature: the curvature along the update that reached the source's weights
    from the saved step before them, and the critical sharpness against 2/η, with `weight`'s own curvature when
    one is named (docs/readings.md)."""

    source: Source
    weight: str | None = None

    def answer(self, door):
        return self.source.at(door).curvature(self.source.step, self.weight)


# ---- a saved step of a run (RunAnalysis) -------------------------------------------------------------

@dataclass(frozen=True)
class AttentionDiff(Question["attn.AttentionDiff"]):
    run: str
    step: int
    other: int
    prompt: str

    def answer(self, door):
        return door.analysis(self.run).attention_diff(self.step, self.other, self.prompt)


@dataclass(frozen=True)
class Distributions(Question[dict]):
    """Histograms of `weight`, its G and its update ΔW at every saved step (engine/analysis/distributions.py)."""

    lane = LONG

    run: str
    weight: str

    def answer(self, door):
        return door.analysis(self.run).distributions(self.weight)


@dataclass(frozen=True)
class LargestTerms(Question[Any]):
    """engine.coefficients.largest.LargestTerms of `weight` at `step`."""

    run: str
    step: int
    weight: str

    def answer(self, door):
        return door.analysis(self.run).largest_terms(self.step, self.weight)


@dataclass(frozen=True)
class UpdateGeometry(Question[Any]):
    """engine.analysis.update.UpdateGeometry of `weight` at `step`."""

    run: str
    weight: str
    step: int | None

    def answer(self, door):
        return door.analysis(self.run).update_geometry(self.weight, self.step)


@dataclass(frozen=True)
class RouteShares(Question[Any]):
    """engine.analysis.routes.RouteShares of `weight` (None: every weight summed) over the saved steps."""

    lane = LONG

    run: str
    weight: str | None

    def answer(self, door):
        return door.analysis(self.run).route_shares(self.weight)


@dataclass(frozen=True)
class HeadTimeline(Question[Any]):
    """engine.analysis.head_timeline's HeadTimeline: every head's scores at the saved steps scored after at
    most `slice_s` seconds more of scoring (at least one piece; None: head_timeline.SLICE_S), with what is
    left in its `scoring`: the view needs it again until that is None, so the long lane's other questions
    are answered between the slices, and a cancel loses at most the piece being scored."""

    lane = LONG

    run: str
    look: int = 0                  # the asking view's count of looks: a new look scores the steps saved since
    slice_s: float | None = None

    def answer(self, door):
        return door.analysis(self.run).head_timeline_slice(self.slice_s)


@dataclass(frozen=True)
class CoefficientTable(Question[tuple]):
    """(model config, weight names) of a run whose coefficients can be computed; a run without a probe batch
    is refused in one line."""

    run: str

    def answer(self, door):
        store = door.analysis(self.run).coefficients
        return store.cfg, store.weight_names()


@dataclass(frozen=True)
class CoefficientRecord(Question[Any]):
    """engine.coefficients.StepCoefficient of `weight` at `step` (from the run's disk cache, else computed)."""

    run: str
    weight: str
    step: int

    def answer(self, door):
        return door.analysis(self.run).coefficients.record(self.weight, self.step)


@dataclass(frozen=True)
class CoefficientAt(Question[tuple]):
    """What the Weight pane draws of `weight` at `step`: (Summary, the update's (cos, ratio, ‖ΔW‖) or None,
    and when `full` the (StepCoefficient, Update or None) themselves). Charts need only the first two at
    every step, so the matrices cross the process boundary only for the step on screen, and then as drawn
    through `window` when the weight is large (engine/coefficients/window.py: GPT-2's W_E is 50,257 rows).
    A large model's first answer has G alone (`StepCoefficient.pending`); asked again with `split`, a
    long question (seconds to minutes on GPT-2 small), it has the route classes."""

    run: str
    weight: str
    step: int
    full: bool
    split: bool = False
    window: Any = None          # engine.coefficients.window.Window (rows, or a text's tokens'); None: every row

    @property
    def lane(self) -> str:  # the split of a large model's G: seconds to minutes on GPT-2 small
        return LONG if self.split else NOW

    def answer(self, door):
        from ..coefficients import window as view

        analysis = door.analysis(self.run)
        store = analysis.coefficients
        record = (store.record if self.split else store.first)(self.weight, self.step)
        update = store.update(self.weight, self.step)
        shown = None
        if self.full:
            window = self.window or view.Window()
            window = window.of_tokens(analysis.tokenizer) if window.text is not None else window
            names = None
            if record.W.shape[0] == store.cfg.vocab_size and record.W.ndim == 2:  # a row per token
                tok = analysis.tokenizer
                names = lambda r: tok.token_strings([r])[0]  # noqa: E731
            shown = (view.shown(record, window, names), view.shown_update(update, window))
        return record.summary(), store.geometry(self.weight).get(self.step), shown


@dataclass(frozen=True)
class Sample(Question[str]):
    """Text the run's newest intact checkpoint appends to the request's prompt."""

    run: str
    request: SampleRequest

    def answer(self, door):
        from ..training.trainer import generate_text

        run, r = door.analysis(self.run).run, self.request
        return generate_text(run.build_model(), run.tokenizer, r.prompt, r.n_tokens, r.temperature, r.top_k, r.seed)


@dataclass(frozen=True)
class Interaction(Question[Any]):
    """engine.analysis.interaction.PairInteraction: how `other`'s (A's) update that reached `step` moved
    `weight`'s (B's) coefficient (docs/second-order.md)."""

    run: str
    weight: str
    other: str
    step: int | None

    def answer(self, door):
        return door.analysis(self.run).interaction(self.weight, self.other, self.step)


@dataclass(frozen=True)
class InteractionRoutes(Question[Any]):
    """engine.analysis.interaction.RouteMoves: `Interaction`'s −H_BA ΔA split by the route classes of B's
    coefficient (the mixed form's route classes, engine/forms/mixed_classes.py)."""

    run: str
    weight: str
    other: str
    step: int | None

    def answer(self, door):
        return door.analysis(self.run).interaction_routes(self.weight, self.other, self.step)


@dataclass(frozen=True)
class InteractionMap(Question[Any]):
    """engine.analysis.interaction.InteractionMap: every pair's share of the curvature term at `step`."""

    run: str
    step: int | None

    def answer(self, door):
        return door.analysis(self.run).interaction_map(self.step)


@dataclass(frozen=True)
class TokenTimeline(Question[list]):
    """engine.analysis.tokens.TokenReading of `weight` at every saved step (`split`: with each route class), for
    the timeline of its leading tokens; `look` raised to read the steps saved since (docs/readings.md)."""

    lane = LONG

    run: str
    weight: str
    split: bool = True
    look: int = 0

    def answer(self, door):
        return door.analysis(self.run).token_timeline(self.weight, self.split)


@dataclass(frozen=True)
class CurvatureSeries(Question[list]):
    """engine.analysis.curvature.Curvature of every interval between saved steps, with `weight`'s own curvature
    when one is named; `look` raised to measure the intervals saved since (docs/readings.md)."""

    lane = LONG

    run: str
    weight: str | None = None
    look: int = 0

    def answer(self, door):
        return door.analysis(self.run).curvature_series(self.weight)


# ---- two runs side by side (engine/analysis/pair.py) ------------------------------------------------

@dataclass(frozen=True)
class PairChoices(Question[Any]):
    """engine.analysis.pair.PairChoices: the steps, weights and fork relation two runs can be compared on."""

    a: str
    b: str

    def answer(self, door):
        from . import pair

        return pair.choices(door.analysis(self.a), door.analysis(self.b))


@dataclass(frozen=True)
class PairAttention(Question[Any]):
    a: str
    b: str
    step: int
    prompt: str | None = None

    def answer(self, door):
        from . import pair

        return pair.attention(door.analysis(self.a), door.analysis(self.b), self.step, self.prompt)


@dataclass(frozen=True)
class PairWeight(Question[Any]):
    """One weight's coefficient G (part "G") or the weight itself ("W") in both runs at `step`."""

    a: str
    b: str
    step: int
    name: str
    part: str

    def answer(self, door):
        from . import pair

        return pair.weight(door.analysis(self.a), door.analysis(self.b), self.step, self.name, self.part)


# ---- what is not one run's step ----------------------------------------------------------------------

@dataclass(frozen=True)
class RunCurvesOf(Question[dict]):
    """The curves of the runs at `paths` whose logs changed since the stamps `known` (path -> stamp) the
    asker holds: {path: (stamp, RunCurves or a one-line error)} (engine.figures.run_curves.CurvesReader)."""

    paths: tuple[str, ...]
    known: dict = field(hash=False, compare=False)
    look: int = 0   # the asking view's count of looks: the same runs read again is a new question

    def answer(self, door):
        return door.curves().changed(list(self.paths), self.known)


@dataclass(frozen=True)
class RunListing(Question[Any]):
    """engine.rundir.listing.RunListing of the run browser's folders, with the folders to watch for runs to come,
    so the GUI thread stats none of them."""

    folders: tuple[str, ...]
    look: int = 0   # the asking view's count of looks: the same folders listed again is a new question

    def answer(self, door):
        from pathlib import Path

        from ..rundir.listing import list_folders

        return list_folders([Path(f) for f in self.folders])


@dataclass(frozen=True)
class CoefficientFormula(Question[tuple]):
    """(caption, LaTeX, text notation) of a weight's coefficient, of one of its route classes or of one of its
    terms (engine/coefficients/formula.py): it needs the model's forms, which this process derives and keeps."""

    config: Any
    weight: str
    kind: str
    part: Any

    def answer(self, door):
        from ..coefficients.formula import formula_text

        return formula_text(self.config, self.weight, self.kind, self.part)


__all__ = [name for name, value in list(globals().items())
           if isinstance(value, type) and issubclass(value, Question) and not name.startswith("_")]
__all__ += ["Draft", "Live", "Published", "Saved", "LONG", "NOW"]
