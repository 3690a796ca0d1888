"""`RunAnalysis(run_dir)`: the one object that answers what is asked of a run at a saved step.

Every pane (through the GUI's analysis process), every export and the command line ask it: the resolved
config, the saved steps, the weights and the model at a step (one model cache), attention maps, masks and
positional encodings for a prompt, a term's values, and the coefficient records of a weight. Each analysis
is one method: a pure function (engine/analysis/*.py) applied to the cached model, weights or forms
snapshot at a step, through the one generic helper `cached(name, step, params, compute)`. `refresh()` is
the one place where derived results are invalidated when the run grows (engine/analysis/cache.py says the
policy). Thread-safe by one lock, held for one piece of work at a time: the analysis process answers a light
question and a long one at once (two lanes, engine/analysis/questions.py), and an answer made of many pieces (route shares
over every interval, distributions over every step) takes the lock for each piece, not for the whole, so a
light question about the same run waits for one piece at most. The head timeline scores with a model of its
own under a lock of its own. Long answers say how far they are and stop between pieces when cancelled
(engine/progress.py).

    a = RunAnalysis("runs/tiny")
    a.attention(a.saved_steps()[-1], "To be")     # AttentionResult of numpy arrays
    a.coefficients.record("blocks.0.W_K", 10)      # StepCoefficient (cached on disk in RUN/cache/)
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np

from ..progress import checkpoint, report
from ..rundir.runs import Run
from . import attention as attn
from . import terms
from .cache import ResultCache
from .models import ModelCache
from .next_tokens import NextTokens, next_tokens


CURVATURE_SECOND_ORDER = "κ along the step"  # what a model too large for a double backward goes without


class RunAnalysis:
    def __init__(self, run_dir: str | Path, max_bytes: int = 128 * 2**20):
        self.run = run_dir if isinstance(run_dir, Run) else Run(run_dir)
        self.path = self.run.path
        self.results = ResultCache(self.path, max_bytes)
        self._lock = threading.RLock()
        self._models = ModelCache()
        self._weights: tuple[int, dict] | None = None
        self._snapshot: tuple[int, Any] | None = None
        self._coefficients = None
        self._probe_losses = {}  # dtype -> the probe loss of the second-order view and the curvature, built when asked
        self._masked: dict = {}  # the model rebuilt under each other mask (masks tab), reused between calls
        self._scorer = None      # the head timeline scored a slice at a time (head_timeline_slice)
        self._scoring = threading.Lock()  # the scorer's: it never holds the lock the other analyses take
        self.refresh()

    # ---- what the run is --------------------------------------------------------------------------

    @property
    def config(self):
        """The run's resolved ExperimentConfig (vocabulary set from its tokenizer)."""
        return self.run.config

    @property
    def tokenizer(self):
        return self.run.tokenizer

    @property
    def prompt(self) -> str:
        """The run's own probe text: the default prompt of attention maps."""
        return self.run.probe().prompt

    def saved_steps(self) -> list[int]:
        """Steps whose weights can be loaded, listed afresh (a live run keeps adding them)."""
        return self.run.saved_steps()

    def refresh(self) -> bool:
        """Invalidate what the run's growth made stale; True when its saved steps changed."""
        with self._lock:
            grew = self.results.sync(self.saved_steps())
            if grew:
                self._weights = self._snapshot = None  # a thinned step may be gone
        return grew

    # ---- what is cached at a step -----------------------------------------------------------------

    def weights(self, step: int) -> dict:
        """{name: CPU tensor} saved at `step` (the newest step asked for is kept)."""
        with self._lock:
            if self._weights is None or self._weights[0] != step:
                self._weights = (step, self.run.load_weights(step))
            return self._weights[1]

    def model(self, step: int):
        """The GPT holding the weights at `step`, in eval mode (one model, reloaded per step)."""
        with self._lock:
            return self._models.load(self.config.model, self.weights(step), step, f"at step {step}")

    def snapshot(self, step: int):
        """The forms engine bound to the weights at `step` and the run's probe batch."""
        from ..forms import Snapshot

        with self._lock:
            if self._snapshot is None or self._snapshot[0] != step:
                probe = self.run.probe()
                self._snapshot = (step, Snapshot(self.config.model, self.weights(step), probe.x, probe.y))
            return self._snapshot[1]

    def cached(self, name: str, step: int, params: Hashable, compute: Callable[[], Any],
               spans_steps: bool = False, pieces: bool = False) -> Any:
        """The generic helper every analysis goes through: `compute()`'s result for (name, step, params),
        kept until `refresh` finds it stale (`spans_steps`: it also reads later steps). `pieces`: compute is
        made of other analyses (or reads) that lock for themselves, so the lock is not held while it runs."""
        if pieces:
            return self.results.get(name, step, params, compute, spans_steps)
        with self._lock:
            return self.results.get(name, step, params, compute, spans_steps)

    # ---- the analyses -----------------------------------------------------------------------------

    def attention(self, step: int, prompt: str | None = None) -> attn.AttentionResult:
        prompt = self.prompt if prompt is None else prompt
        return self.cached("attention", step, (prompt,),
                           lambda: attn.attention(self.model(step), self.tokenizer, prompt, step))

    def attention_diff(self, step: int, other_step: int, prompt: str | None = None) -> attn.AttentionDiff:
        """Every head's attention on `prompt` at `step` minus at `other_step` (the Heatmaps pane's diff)."""
        prompt = self.prompt if prompt is None else prompt
        return self.cached("attention_diff", step, (other_step, prompt), spans_steps=True,
                           compute=lambda: attn.attention_diff(self.attention(step, prompt),
                                                               self.attention(other_step, prompt)))

    def masks(self, step: int, prompt: str | None = None, band: int = attn.BAND) -> attn.MasksResult:
        prompt = self.prompt if prompt is None else prompt
        return self.cached("masks", step, (prompt, band),
                           lambda: attn.masks(self.model(step), self.tokenizer, prompt, band, step, self._masked))

    def positional(self, step: int, shift: int = attn.SHIFT) -> attn.PositionalResult:
        return self.cached("positional", step, (shift,), lambda: attn.positional(self.model(step), shift, step))

    def next_tokens(self, step: int, text: str, position: int, temperature: float,
                    top_k: int | None) -> NextTokens:
        """The model's next-token probabilities after `position` of `text`, and Generate's at `temperature`
        and `top_k` (the Training pane's Generate)."""
        return self.cached("next_tokens", step, (text, position, temperature, top_k),
                           lambda: next_tokens(self.model(step), self.tokenizer, text, position, temperature,
                                               top_k, step))

    def term_values(self, step: int, term_id: str, weight: str) -> terms.TermValues:
        return self.cached("term", step, (term_id, weight),
                           lambda: terms.term_values(self.snapshot(step), term_id, weight, step))

    def largest_terms(self, step: int, weight: str, k: int | None = None):
        """The k terms of `weight` with the largest ‖G_t‖ at `step`, largest first, with their shares of
        Σ‖G_t‖ (engine/coefficients/largest.py: for weights with too many terms to split at every step)."""
        from ..coefficients.largest import TOP_K, largest_terms

        k = TOP_K if k is None else k
        return self.cached("largest_terms", step, (weight, k),
                           lambda: largest_terms(self.snapshot(step), weight, step, k))

    def update_geometry(self, weight: str, step: int | None = None):
        """G of `weight` at `step` (None: the newest) turned into a step by each geometry, beside the applied
        ΔW and the route classes' shares of it (engine/analysis/update.py, docs/geometries.md)."""
        from .update import update_geometry

        store = self.coefficients
        step = step if step is not None else (self.saved_steps() or [None])[-1]
        if step is None:  # nothing saved yet: the function says so in one line
            return update_geometry(self.run, weight, None, store=store)
        return self.cached("update", step, (weight,),
                           lambda: update_geometry(self.run, weight, step, store=store), spans_steps=True)

    def route_shares(self, weight: str | None = None, upto: int | None = None):
        """Each route class's share ⟨G_c(p), ΔW⟩ of the first-order decrease over every interval [p, s] of
        saved steps (up to the step `upto`, when given), for `weight` or (None) summed over every weight,
        beside each geometry's own split
        (engine/analysis/routes.py, docs/geometries.md). Each weight's interval is kept apart, so a run that
        grows computes only its new intervals; each interval is a piece of work (the lock is taken for it alone;
        a cancel stops between)."""
        from . import routes

        steps = [s for s in self.saved_steps() if upto is None or s <= upto]
        if len(steps) < 2:
            return routes.assemble(weight, [])
        if weight is None and self.coefficients.progressive:  # a large model: every weight in one pass
            return self._model_route_shares(steps)
        if weight is None:
            names = self.coefficients.weight_names()
            intervals = list(zip(steps, steps[1:]))

            def whole():
                # interval by interval, every weight of one: the weights of a step share its backward pass and
                # bound forms in the store (kept for one step at a time), where weight by weight made them again
                # for each weight and step (29 times as often on the 2-layer test model: 1.67 s of CPU, quiet,
                # against 0.63)
                for k, (prev, step) in enumerate(intervals):
                    report(k, len(intervals), "intervals")
                    for w in names:
                        self._route_interval(w, prev, step)
                return routes.combine([self._route_shares_of(w, steps, say=False) for w in names])

            return self.cached("routes", steps[-1], (None,), spans_steps=True, pieces=True, compute=whole)
        return self._route_shares_of(weight, steps, say=True)

    def _model_route_shares(self, steps: list[int]):
        """A large model's route shares summed over its weights, an interval at a time (routes.model_interval:
        one backward pass with an adjoint per route class for all of them)."""
        from . import routes

        intervals = list(zip(steps, steps[1:]))

        def one(k: int, prev: int, step: int):
            report(k, len(intervals), "intervals")
            checkpoint()
            return self.cached("model route interval", step, (prev,),
                               lambda: routes.model_interval(self.coefficients, step))

        return self.cached("routes", steps[-1], (None,), spans_steps=True, pieces=True,
                           compute=lambda: routes.assemble(None, [one(k, p, s) for k, (p, s) in enumerate(intervals)]))

    def _route_shares_of(self, weight: str, steps: list[int], say: bool):
        """One weight's route shares; `say`: report the intervals done (not when the whole model reports)."""
        from ..coefficients.export import check_weight
        from . import routes

        check_weight(self.coefficients, weight)
        intervals = list(zip(steps, steps[1:]))

        def one(k: int, prev: int, step: int):
            if say:
                report(k, len(intervals), "intervals")
            return self._route_interval(weight, prev, step)

        return self.cached("routes", steps[-1], (weight,), spans_steps=True, pieces=True,
                           compute=lambda: routes.assemble(weight, [one(k, p, s)
                                                                    for k, (p, s) in enumerate(intervals)]))

    def _route_interval(self, weight: str, prev: int, step: int):
        """One weight's split of the update from `prev` to `step` (a piece of work: a cancel stops before it)."""
        from . import routes

        checkpoint()
        # keyed by the interval's start too: a thinned step changes which update reaches `step`
        return self.cached("route interval", step, (weight, prev),
                           lambda: routes.interval(self.coefficients, weight, step))

    def distributions(self, weight: str) -> dict:
        """The values of `weight`, of its G and of its update ΔW at every saved step, as histograms on bins
        shared by the steps (engine/analysis/distributions.py)."""
        from ..coefficients.export import check_weight
        from .distributions import distributions

        store, steps = self.coefficients, self.saved_steps()
        check_weight(store, weight)

        done = itertools.count()

        def piece(read: Callable[[int], Any]) -> Callable[[int], Any]:
            def locked(s: int):  # W, G and ΔW at each step: three reads a step
                report(next(done), 3 * len(steps), "reads")
                with self._lock:
                    return read(s)
            return locked

        def update(step: int):
            got = store.update(weight, step)
            return None if got is None else got.dW

        return self.cached("distributions", steps[-1] if steps else 0, (weight,), spans_steps=True, pieces=True,
                           compute=lambda: distributions(
                               steps, piece(lambda s: self.run.load_weights(s)[weight].double().numpy()),
                               piece(lambda s: store.record(weight, s).G), piece(update)))

    # ---- the second-order view (engine/analysis/interaction.py, docs/second-order.md) ---------------

    def interaction(self, weight: str, other: str, step: int | None = None):
        """How `other`'s (A's) update that reached `step` (None: the newest) moved `weight`'s (B's)
        coefficient: −H_BA ΔA, the exact change from A's update alone, the real ΔG_B, the pair's share."""
        from . import interaction as ia

        ia.check_pair(self._weight_names(), weight, other)
        prev, step = ia.interval(self.saved_steps(), step)
        return self.cached("interaction", step, (weight, other, prev), spans_steps=True,
                           compute=lambda: ia.pair_interaction(*self._interval_inputs(prev, step), weight,
                                                               other, step, prev))

    def interaction_routes(self, weight: str, other: str, step: int | None = None):
        """`interaction`'s −H_BA ΔA split by the route classes of B's coefficient (engine/forms/mixed_classes.py):
        the mixed form's route classes, for a model of any size."""
        from . import interaction as ia

        ia.check_pair(self._weight_names(), weight, other)
        prev, step = ia.interval(self.saved_steps(), step)
        return self.cached("interaction routes", step, (weight, other, prev), spans_steps=True,
                           compute=lambda: ia.route_moves(*self._interval_inputs(prev, step), weight, other,
                                                          step, prev))

    def interaction_series(self, weight: str, other: str) -> list:
        """`interaction(weight, other, s)` for every saved step s after the first (each kept on its own, so a
        run that grows computes only its new intervals)."""
        return [self.interaction(weight, other, s) for s in self.saved_steps()[1:]]

    def interaction_map(self, step: int | None = None):
        """Every pair's share of the curvature term of the probe loss change over the update that reached
        `step` (None: the newest), with ‖H_BA ΔA‖/‖ΔG_B‖, each B's residual and the loss accounting."""
        from . import interaction as ia

        prev, step = ia.interval(self.saved_steps(), step)
        return self.cached("interaction map", step, (prev,), spans_steps=True,
                           compute=lambda: ia.interaction_map(*self._interval_inputs(prev, step), step, prev))

    # ---- the readings (docs/readings.md) ------------------------------------------------------------

    def tokens(self, weight: str, step: int | None = None, split: bool = True):
        """`weight`'s coefficient at `step` (None: the newest) read in tokens, with the update that reached it
        and (`split`) each route class (engine/analysis/tokens.py)."""
        from ..coefficients.export import check_step, check_weight

        check_weight(self.coefficients, weight)
        step = check_step(self.coefficients, step)
        steps = self.saved_steps()
        prev = steps[steps.index(step) - 1] if steps.index(step) > 0 else None
        return self.cached("tokens", step, (weight, prev, split), spans_steps=True,
                           compute=lambda: self._token_reading(self.run.load_weights(step), step, prev, weight,
                                                               split))

    def tokens_of(self, weights, step: int, weight: str, split: bool = True):
        """`tokens` of weights the run has not saved (a copy training published at `step`), with the update from
        the newest saved step before it; not cached (a published copy is asked about once)."""
        from ..coefficients.export import check_weight

        check_weight(self.coefficients, weight)
        before = [s for s in self.saved_steps() if s < step]
        return self._token_reading(weights, step, before[-1] if before else None, weight, split)

    def _token_reading(self, weights, step: int, prev: int | None, weight: str, split: bool):
        import numpy as np

        from ..coefficients import progressive
        from . import tokens as tk

        probe, cfg = self.run.probe(), self.config.model
        before = None if prev is None else self.run.load_weights(prev)
        dtype = np.float32 if progressive(cfg, int(np.asarray(probe.x).size)) else np.float64
        return tk.token_reading(cfg, self.tokenizer, weights, before, probe.x, probe.y, weight, step, prev, split,
                                dtype)

    def token_timeline(self, weight: str, split: bool = True, progress=None, upto: int | None = None) -> list:
        """`tokens(weight, s)` at every saved step s (up to `upto`), oldest first (each kept on its own, so a run
        that grows reads only its new steps); reports each step done (engine/progress.py)."""
        from ..progress import report

        steps = [s for s in self.saved_steps() if upto is None or s <= upto]
        out = []
        for k, s in enumerate(steps):
            report(k, len(steps), "steps")
            out.append(self.tokens(weight, s, split))
            if progress is not None:
                progress(k + 1, len(steps))
        return out

    def curvature(self, step: int | None = None, weight: str | None = None):
        """The curvature along the update that reached `step` (None: the newest) from the saved step before it:
        κ, each weight's share, the critical sharpness against 2/η, and with `weight` its own κ_W
        (engine/analysis/curvature.py)."""
        from . import interaction as ia

        if weight is not None:
            ia.check_pair(self._weight_names(), weight, weight)
        prev, step = ia.interval(self.saved_steps(), step, "the curvature along the step")
        return self.cached("curvature", step, (prev, weight), spans_steps=True,
                           compute=lambda: self._curvature(self.run.load_weights(step), step, prev, weight))

    def curvature_of(self, weights, step: int, weight: str | None = None):
        """`curvature` along the update from the newest saved step before `step` to weights the run has not saved
        (a copy training published); not cached."""
        from ..errors import UserError
        from . import interaction as ia

        if weight is not None:
            ia.check_pair(self._weight_names(), weight, weight)
        before = [s for s in self.saved_steps() if s < step]
        if not before:
            raise UserError(f"no saved step before step {step}: no update to measure the curvature along yet")
        return self._curvature(weights, step, before[-1], weight)

    def _curvature(self, after, step: int, prev: int, weight: str | None):
        from . import curvature as cv

        m = cv.curvature_method(self.config.model, *self._probe_shape(), CURVATURE_SECOND_ORDER)
        loss = self._probe_loss(m.dtype)
        with self._lock:
            before = self.run.load_weights(prev)
        return cv.curvature(loss, before, after, step, prev, cv.mean_lr(self.config.train, prev, step), weight,
                            m.unmeasured, m.exact, m.step, m.approximate)

    def curvature_unmeasured(self) -> str:
        """Why this run's curvature along the step has no κ, κ_W or shares, only λ_c ("" when it has them)."""
        from .curvature import curvature_method

        return curvature_method(self.config.model, *self._probe_shape(), CURVATURE_SECOND_ORDER).unmeasured

    def curvature_approximate(self) -> str:
        """How this run's κ, κ_W and shares are computed where less precisely than float64 ("" otherwise)."""
        from .curvature import curvature_method

        return curvature_method(self.config.model, *self._probe_shape(), CURVATURE_SECOND_ORDER).approximate

    def curvature_series(self, weight: str | None = None, progress=None) -> list:
        """`curvature(s, weight)` for every saved step s after the first (each kept on its own); reports each
        interval done (engine/progress.py)."""
        from ..progress import report

        steps = self.saved_steps()[1:]
        out = []
        for k, s in enumerate(steps):
            report(k, len(steps), "intervals")
            out.append(self.curvature(s, weight))
            if progress is not None:
                progress(k + 1, len(steps))
        return out

    def _weight_names(self) -> list[str]:
        from ..model.weight_layout import weight_names

        return weight_names(self.config.model)

    def _probe_shape(self) -> tuple[int, int]:
        """(sequences, tokens) of the run's probe batch."""
        return np.asarray(self.run.probe().x).shape

    def _probe_loss(self, dtype):
        """The probe batch's loss in `dtype` (interaction.ProbeLoss), built when first asked."""
        from . import interaction as ia

        with self._lock:
            if dtype not in self._probe_losses:
                probe = self.run.probe()
                self._probe_losses[dtype] = ia.ProbeLoss(self.config.model, probe.x, probe.y, dtype)
            return self._probe_losses[dtype]

    def _interval_inputs(self, prev: int, step: int):
        """(ProbeLoss on the probe batch, weights at `prev`, every weight's update to `step`). The loss is in
        float64, or float32 where a double backward in float64 would not fit, and refused in one line where
        neither would (curvature.second_order_dtype)."""
        from . import interaction as ia
        from .curvature import second_order_dtype

        loss = self._probe_loss(second_order_dtype(self.config.model, *self._probe_shape(), "the second-order view"))
        with self._lock:
            before = self.run.load_weights(prev)
            after = self.run.load_weights(step)
            return loss, before, ia.updates(before, after, loss.names(before))

    def head_timeline(self, progress=None):
        """Every head's scores at every saved step, roles and formation steps (engine/analysis/heads.py);
        kept per step on disk under RUN/cache/heads/, keyed by each weights file."""
        from .head_timeline import TimelineScorer, finish

        with self._scoring:
            if self._scorer is None:
                self._scorer = TimelineScorer(self.run.path)
            return finish(self._scorer, progress)

    def head_timeline_slice(self, slice_s: float | None = None):
        """The head timeline as far as `slice_s` seconds of scoring more take it (at least one piece): the steps
        scored so far and what is left (`HeadTimeline.scoring`); the step being scored is kept between calls."""
        from .head_timeline import SLICE_S, TimelineScorer

        with self._scoring:
            if self._scorer is None:
                self._scorer = TimelineScorer(self.run.path)
            return self._scorer.advance(SLICE_S if slice_s is None else slice_s)

    @property
    def warnings(self) -> list[str]:
        """What was skipped or replaced while answering — a damaged newer step, a snapshot read from the checkpoint
        of its step — as every reader of the run this analysis holds noticed it (the head timeline reads its own)."""
        said = list(self.run.warnings)
        if self._scorer is not None:
            said += [w for w in self._scorer.run.warnings if w not in said]
        return said

    @property
    def coefficients(self):
        """The run's CoefficientStore: coefficient records per weight and step, in memory and on disk
        (RUN/cache/coefficients/), with the updates ΔW between saved steps."""
        from ..coefficients.cache import CoefficientStore

        with self._lock:
            if self._coefficients is None:
                self._coefficients = CoefficientStore(self.run)
            return self._coefficients
