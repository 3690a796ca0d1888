"""The Trainer: a Qt-free generator of StepReports that trains a GPT and fills its run directory.

After minGPT's `Trainer` and nanoGPT's `train.py` (AdamW with decoupled weight decay on matrices only,
warm-up then cosine learning rate, gradient clipping, periodic evaluation), reshaped as a generator so
that a consumer pauses by not calling `next()`, steps once with `steps(1)`, and stops with `close()`,
which writes a checkpoint so the run resumes exactly (docs/reliability.md). A non-finite loss or gradient norm
stops training before the optimizer touches the weights, and the last good checkpoint stays as it was.

Randomness: batches come from the trainer's own generator; model initialisation and dropout use torch's
global generator, which the trainer seeds (a fresh run) or restores (a resumed one). Evaluation and
logged samples use generators seeded from the step, so they never disturb training.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from .acceleration import autocast, autocast_dtype, compile_or_eager
from ..configs.config import ExperimentConfig
from ..text.corpus import CorpusError
from ..text.data import Dataset
from ..text.pieces import Cancel
from ..configs.resolve import resolve
from .continuation import CONTINUE, adapt_optimizer, edited, plan_edit
from .determinism import record_session
from .device import pick_device, set_threads, single_thread
from .distributed import SOLO, Group
from ..errors import UserError, shown
from ..model.gpt import GPT
from ..model.sampling import NonFiniteLogits
from ..rundir.integrity import Diverged, NonFiniteWeights, largest_weight, require_finite
from .optimizers import make_optimizer  # AdamW, SGD or Muon (TrainConfig.optimizer)
from ..model.probes import induction_probe
from ..configs.sizes import probe_sequences
from ..rundir.create import check_loss, require_valid
from ..rundir.runs import Probe, Run, RunError, RunWriter
from .schedule import apply_schedule, lr_at
from .update_ratio import UpdateRatios

__all__ = ["StepReport", "Trainer", "lr_at", "pick_device", "make_optimizer", "generate_text"]

_HOW = ("train.steps", "train.device", "train.precision", "train.compile")  # edits the optimizer never sees
SAMPLE_TEMPERATURE = 0.8  # logged samples: a little cooler than the model's distribution, easier to read


@dataclass(frozen=True)
class StepReport:
    """What one training step did; only Python scalars and strings (and tuples of them), never live tensors."""

    step: int                # optimizer steps completed so far (1 after the first step)
    total_steps: int
    train_loss: float
    val_loss: float | None   # set at evaluation steps (and the final step)
    lr: float
    grad_norm: float         # before clipping
    tokens_per_s: float      # smoothed
    wall_s: float            # training seconds, cumulative across resumes (pauses not counted)
    eta_s: float             # estimated seconds left
    sample: str | None       # text generated at evaluation steps
    snapshot: bool           # weights were snapshotted at this step
    checkpoint: bool         # a checkpoint was written at this step
    event: str | None        # None | "nan" (stopped before the weights changed) | "done"
    message: str | None      # a sentence for the user when there is an event
    train_bpc: float | None = None  # the losses in bits per character of text (cross-entropy only):
    val_bpc: float | None = None    # comparable across tokenizers, unlike a loss per token
    update_ratios: tuple[tuple[str, float], ...] = ()  # (weight, ‖ΔW‖ / ‖W‖) of the weights measured at
    # this step, a few in rotation (engine/training/update_ratio.py)


def _tensors(tree, path: str = "optimizer") -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor in an optimizer state dict, with where it sits (walked without recursion)."""
    stack = [(path, tree)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, torch.Tensor):
            yield where, node
        elif isinstance(node, dict):
            stack.extend((f"{where}.{k}", v) for k, v in node.items())
        elif isinstance(node, (list, tuple)):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(node))


def generate_text(model: GPT, tokenizer, prompt: str, n_tokens: int, temperature: float = 1.0,
                  top_k: int | None = None, seed: int | None = None) -> str:
    """The text the model appends to `prompt` (the continuation only), in eval mode."""
    try:
        ids = tokenizer.encode(prompt)
    except CorpusError as e:
        raise UserError(f"the prompt cannot be encoded with this run's vocabulary: {e}") from None
    if not ids:  # an empty prompt starts a new line when the vocabulary can write one (BPE always can)
        ids = tokenizer.encode("\n") if tokenizer.kind == "bpe" or "\n" in tokenizer.vocab else [0]
    device = next(model.parameters()).device
    gen = torch.Generator(device=device)
    gen.manual_seed(seed) if seed is not None else gen.seed()
    idx = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T0)
    was_training = model.training
    model.eval()
    try:
        with single_thread(), torch.inference_mode():  # inference_mode: ~7% faster than no_grad here
            out = model.generate(idx, n_tokens, temperature, top_k, generator=gen)
    except NonFiniteLogits:
        out = None
    except RuntimeError as e:  # multinomial's refusal of a distribution that overflowed at its temperature
        if "probability tensor" not in str(e):
            raise
        out = None
    finally:
        model.train(was_training)
    if out is None:  # weights that overflow: finite themselves, but not their probabilities
        raise Diverged(f"these weights cannot give finite probabilities ({largest_weight(model.state_dict())}); "
                       "the run diverged, so sample an earlier step")
    return tokenizer.decode(out[0, len(ids):].tolist())  # out: (1, T0 + n)


class Trainer:
    """Trains one GPT from an ExperimentConfig; `steps()` yields StepReports.

    `cfg` is the resolved config (vocab_size from the tokenizer). With `run_dir` the run directory is
    created and written as training goes; without it nothing touches the disk. With a process `group`
    (engine/training/distributed.py) each process trains on its share of every batch and only rank 0 writes.
    """

    def __init__(self, cfg: ExperimentConfig, run_dir: str | Path | None = None, *,
                 dataset: Dataset | None = None, text: str | None = None, group: Group = SOLO,
                 cancel: Cancel = None):
        self._setup(cfg, dataset, text, group, cancel=cancel)
        self.writer: RunWriter | None = None
        if run_dir is not None and group.rank == 0:
            self.writer = RunWriter.create(run_dir, self.cfg, self.tokenizer, self.probe)
            self.writer.save_snapshot(0, self.weights_copy())
            record_session(self.writer.path, 0, self.device)

    @classmethod
    def resume(cls, run_dir: str | Path, *, config: ExperimentConfig | None = None, dataset: Dataset | None = None,
               text: str | None = None, steps: int | None = None, device: str | None = None, group: Group = SOLO,
               corpus: str | None = None, cancel: Cancel = None, **how) -> Trainer:
        """Continue a run from its latest checkpoint, exactly when nothing is edited.

        The run keeps its own tokenizer (its tokenizer.json, which its weights were trained with: an import's
        and a fitted one's alike, fine-tuned or not), and the corpus must encode with it. `config` is the run's
        config edited; `steps` (a new total, and so a new learning-rate curve from here on), `device`,
        `corpus` and `how` (`precision`, `compile`) edit it too. An edit the run can follow continues it, its
        optimizer's moments kept with the new hyperparameters, and is recorded in changes.jsonl; one it cannot
        (a new shape, a new vocabulary: engine/training/continuation.py) is refused naming what a new run
        would lose. A pretrained import (engine/importers/) has weights but no optimizer state yet: it starts
        training from them (fine-tuning)."""
        run = Run(run_dir)
        cfg = run.config if config is None else config
        changes = {k: v for k, v in dict(steps=steps, device=device, **how).items() if v is not None}
        if changes:
            cfg = cfg.replace(train=dataclasses.replace(cfg.train, **changes))
        if corpus is not None:
            cfg = cfg.replace(data=dataclasses.replace(cfg.data, corpus=corpus))
        weights, state = run.load_checkpoint()
        if steps is not None and steps < state["step"]:
            raise RunError(f"--steps {steps} is fewer than the {state['step']} steps {run.path} has trained")
        plan = plan_edit(run, cfg)
        if plan.action != CONTINUE:
            raise RunError(plan.refusal(run.path))
        cfg = edited(run, cfg)
        if any(k.startswith("train.") and k not in _HOW for k in plan.changed) and not is_pretrained(state):
            adapt_optimizer(state, cfg)  # the edited hyperparameters, not the saved ones, from here on
        self = cls.__new__(cls)
        self._setup(cfg, dataset, text, group, run.tokenizer, cancel)
        if self.tokenizer.vocab != run.tokenizer.vocab:  # a dataset handed in, made with another vocabulary
            raise RunError(f"the dataset given is not tokenized with {run.path}'s vocabulary")
        self._restore(weights, state)
        self.warnings = run.warnings  # a damaged newest checkpoint skipped is named here
        self.writer = RunWriter.reopen(run, self.step) if group.rank == 0 else None
        if self.writer is not None:
            record_session(run.path, self.step, self.device)
        if self.writer is not None and cfg != run.config:
            self.writer.write_config(cfg)
            if plan.changed:
                self.writer.log_changes(self.step, plan.changed)
        return self

    # ---- set-up and state ------------------------------------------------------------------

    def _setup(self, cfg: ExperimentConfig, dataset: Dataset | None, text: str | None, group: Group,
               tokenizer=None, cancel: Cancel = None) -> None:
        require_valid(cfg)
        if dataset is None:  # `cancel()` true stops a fit or an encoding under way (Cancelled)
            dataset = Dataset.build(cfg.data, cfg.model.n_ctx, text, tokenizer, cancel)
        if min(len(dataset.train), len(dataset.val)) <= cfg.model.n_ctx:
            raise CorpusError(f"corpus is too short for a context of {cfg.model.n_ctx} tokens")
        cfg = resolve(cfg, dataset)
        require_valid(cfg)
        t = cfg.train
        self.cfg, self.dataset, self.tokenizer = cfg, dataset, dataset.tokenizer
        self.threads = set_threads(t.torch_threads)
        self.group = group
        self.device = group.place(pick_device(t.device))
        torch.manual_seed(t.seed)  # initialisation and dropout draw from torch's global generator
        self.model = GPT(cfg.model).to(self.device)
        self.model.train()
        self.optimizer = make_optimizer(self.model, t)
        self._updates = UpdateRatios([(n, p) for n, p in self.model.named_parameters() if p.requires_grad])
        self._measured: dict[str, float] = {}  # the last step's update-to-weight ratios
        # the state dict's tensors, detached; training and loading update them in place
        self._state_tensors = list(self.model.state_dict(keep_vars=False).items())
        self.batch_gen = torch.Generator().manual_seed(t.seed)
        self.autocast_dtype = autocast_dtype(t.precision, self.device)
        forward, self.compile_message = self.model, None
        if t.compile:  # a trial step on a batch of the training shape, drawn from its own generator
            trial = self._batch("train", torch.Generator().manual_seed(t.seed))
            forward, self.compile_message = compile_or_eager(self.model, *trial, self.autocast_dtype)
        self.compiled = forward is not self.model
        self._forward = group.wrap(forward, self.device)  # self.model keeps the state dict's names
        sequences = probe_sequences(cfg.model.n_ctx, t.probe_batch)
        x, y = dataset.fixed_batch(sequences, cfg.model.n_ctx, t.seed)
        counts = torch.bincount(dataset.train, minlength=cfg.model.vocab_size).numpy()  # the corpus's own tokens
        induction = induction_probe(cfg.model.vocab_size, cfg.model.n_ctx, t.seed, sequences, counts)
        self.probe = Probe(x, y, dataset.text_head, induction)
        self.step, self.wall_s, self.best_val = 0, 0.0, math.inf
        self._ckpt_step: int | None = None
        self._tps: float | None = None
        self._session_s, self._session_steps = 0.0, 0

    def _state(self) -> dict:
        state = {"step": self.step, "optimizer": self.optimizer.state_dict(),
                 "batch_rng": self.batch_gen.get_state(), "torch_rng": torch.get_rng_state(),
                 "wall_s": self.wall_s, "best_val": self.best_val}
        if self.device.type == "cuda":
            state["cuda_rng"] = torch.cuda.get_rng_state(self.device)
        return state

    def _restore(self, weights: dict[str, torch.Tensor], state: dict) -> None:
        if is_pretrained(state):  # the optimizer, batches and dropout start here, as a fresh run's do
            try:
                self.model.load_state_dict(weights)
            except RuntimeError as e:
                raise RunError(f"the imported weights do not fit this run: {str(e).splitlines()[0][:160]}") from None
            self.step, self.wall_s, self._ckpt_step = state["step"], 0.0, state["step"]
            return
        try:
            self.model.load_state_dict(weights)
            self.optimizer.load_state_dict(state["optimizer"])
            self.batch_gen.set_state(state["batch_rng"])
            torch.set_rng_state(state["torch_rng"])
        except (KeyError, ValueError, RuntimeError, TypeError) as e:
            raise RunError(f"the checkpoint does not fit this run: {str(e).splitlines()[0][:160]}") from None
        if self.device.type == "cuda" and "cuda_rng" in state:
            torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        wall = check_loss(state.get("wall_s", 0.0), "checkpoint's training time") or 0.0
        if wall < 0:
            raise RunError(f"the checkpoint's training time {shown(wall)} is negative")
        best = state.get("best_val", math.inf)  # inf until a first evaluation
        if not (isinstance(best, float) and best == math.inf):
            best = check_loss(best, "checkpoint's best validation loss")
        moments = [k for k, v in _tensors(state["optimizer"]) if v.is_floating_point() and
                   not bool(torch.isfinite(v).all())]
        if moments:
            raise RunError(f"the checkpoint's optimizer state holds Inf or NaN ({moments[0]})")
        self.step, self.wall_s, self.best_val = state["step"], wall, math.inf if best is None else best
        self._ckpt_step = self.step

    def weights_copy(self) -> dict[str, torch.Tensor]:
        """CPU clones of the state dict; call between steps (the GUI's view of the weights)."""
        if self.device.type == "cpu":  # clone is ~4x faster than .to(copy=True) for small tensors
            return {k: v.clone() for k, v in self._state_tensors}
        return {k: v.to("cpu") for k, v in self._state_tensors}

    def save_checkpoint(self, val_loss: float | None = None) -> Path:
        if self.writer is None:
            raise RunError("this training has no run directory to save a checkpoint in")
        path = self.writer.save_checkpoint(self.step, self.weights_copy(), self._state(), val_loss)
        self._ckpt_step = self.step
        return path

    # ---- training --------------------------------------------------------------------------

    def steps(self, n: int | None = None) -> Iterator[StepReport]:
        """Train to cfg.train.steps, or n more steps; closing the generator checkpoints the run."""
        stop_at = self.cfg.train.steps if n is None else min(self.cfg.train.steps, self.step + n)
        clock, halted = time.perf_counter(), False
        if self.writer is not None:
            self.writer.hold()  # one writer per run, for as long as this generator trains
        try:
            while self.step < stop_at:
                loss, norm, lr = self._optimizer_step()
                clock = self._tick(clock)
                if not (math.isfinite(loss) and math.isfinite(norm)):
                    halted = True  # the last good checkpoint must stay as it is, even if closed here
                    yield self._nan_report(loss, norm, lr)
                    return
                try:
                    report = self._after_step(loss, norm, lr)
                except (NonFiniteWeights, Diverged) as e:  # finite loss, but weights that are not or overflow
                    halted = True
                    yield self._nan_report(loss, norm, lr, str(e))
                    return
                clock = self._tick(clock)
                if report is not None:
                    yield self._timed(report)
                    clock = time.perf_counter()  # time spent paused is not training time
        except GeneratorExit:
            if self.writer is not None and not halted and self._ckpt_step != self.step:
                self.save_checkpoint()
            raise
        finally:
            if self.writer is not None:
                self.writer.close()  # the logs reopen when training goes on

    def _timed(self, report: StepReport) -> StepReport:
        """Fill in the clock fields once the step's bookkeeping is counted."""
        per_step = self._session_s / max(self._session_steps, 1)
        eta = (report.total_steps - report.step) * per_step
        return dataclasses.replace(report, wall_s=self.wall_s, eta_s=eta)

    def _tick(self, since: float) -> float:
        now = time.perf_counter()
        self.wall_s += now - since
        self._session_s += now - since
        return now

    def _optimizer_step(self) -> tuple[float, float, float]:
        """One step: returns (loss, gradient norm, lr); the weights change only if both are finite."""
        t, started = self.cfg.train, time.perf_counter()
        lr = apply_schedule(self.optimizer, self.step, t)
        x, y = self._batch("train", self.batch_gen)  # (B, T) each; this process's rows of the batch
        with autocast(self.device, self.autocast_dtype):
            _, loss = self._forward(x, y)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        # clip_grad_norm_ returns the norm before clipping; on an inf gradient it writes NaN into the
        # gradients, which is harmless because the step below is then skipped.
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.grad_clip or math.inf)
        # the whole batch's loss (every process's mean); the norm is the same everywhere already
        stats = self.group.mean(torch.stack([loss.detach().float(), norm.float()]))
        loss_v, norm_v = (float(v) for v in stats.cpu())
        if not (math.isfinite(loss_v) and math.isfinite(norm_v)):
            self.optimizer.zero_grad(set_to_none=True)
            return loss_v, norm_v, lr
        measure = (self.step + 1) % t.report_every == 0  # measured where a report will carry it
        if measure:
            self._updates.before()
        self.optimizer.step()
        self._measured = self._updates.after() if measure else {}
        self.step += 1
        self._session_steps += 1
        tps = t.batch_size * self.cfg.model.n_ctx / max(time.perf_counter() - started, 1e-9)
        self._tps = tps if self._tps is None else 0.9 * self._tps + 0.1 * tps
        return loss_v, norm_v, lr

    def _batch(self, split: str, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        batch = self.dataset.get_batch(split, self.cfg.train.batch_size, self.cfg.model.n_ctx, gen)
        x, y = self.group.shard(*batch)  # every process draws the whole batch and keeps its rows
        return x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)

    def _after_step(self, loss: float, norm: float, lr: float) -> StepReport | None:
        """Evaluate, sample, snapshot, checkpoint and log as the schedule asks at this step."""
        t, step = self.cfg.train, self.step
        final = step == t.steps
        val = sample = None
        if step % t.eval_every == 0 or final:
            val = self.evaluate()
            if t.sample_tokens:
                sample = self.sample(self.probe.prompt, t.sample_tokens, SAMPLE_TEMPERATURE, seed=t.seed + step)
        if step % t.snapshot_every == 0 or step % t.checkpoint_every == 0 or final or (
                val is not None and val < self.best_val):  # a save is due: on every process alike,
            require_finite(dict(self._state_tensors), step)  # so that none writes and none goes on
        snapshot = self.writer is not None and (step % t.snapshot_every == 0 or final)
        checkpoint = self.writer is not None and (step % t.checkpoint_every == 0 or final
                                                  or (val is not None and val < self.best_val))
        if val is not None:
            self.best_val = min(self.best_val, val)
        if not (step % t.report_every == 0 or val is not None or snapshot or checkpoint):
            return None
        done = f"training finished at step {step}: validation loss {val:.4f}" if final else None
        bpc = self._bits_per_char(loss, val)
        report = StepReport(step, t.steps, loss, val, lr, norm, self._tps or 0.0, 0.0, 0.0, sample,
                            snapshot, checkpoint, "done" if final else None, done, *bpc,
                            tuple(self._measured.items()))
        if self.writer is not None:
            # the rows first: a kill just after a checkpoint appears must not lose what it claims
            self.writer.log_metrics({"step": step, "train_loss": loss, "val_loss": val, "lr": lr,
                                     "grad_norm": norm, "tokens_per_s": report.tokens_per_s,
                                     "wall_s": round(self.wall_s, 3), "train_bpc": bpc[0], "val_bpc": bpc[1]})
            if self._measured:
                self.writer.log_updates(step, self._measured)
            if sample is not None:
                self.writer.log_sample({"step": step, "prompt": self.probe.prompt, "text": sample,
                                        "temperature": SAMPLE_TEMPERATURE})
            if snapshot:
                self.writer.save_snapshot(step, self.weights_copy())
            if checkpoint:
                self.save_checkpoint(val)
        return report

    def _bits_per_char(self, loss: float, val: float | None) -> tuple[float | None, float | None]:
        if self.cfg.model.loss != "cross_entropy":  # a squared error is not a code length
            return None, None
        bits = self.dataset.bits_per_char
        return bits(loss, "train"), None if val is None else bits(val, "val")

    def _nan_report(self, loss: float, norm: float, lr: float, weights: str | None = None) -> StepReport:
        kept = (f"the last checkpoint (step {self._ckpt_step}) is kept" if self._ckpt_step is not None
                else "no checkpoint was written yet")
        message = (f"step {self.step + 1}: the loss ({loss}) or gradient norm ({norm}) is not finite "
                   f"({largest_weight(dict(self._state_tensors))}); training stopped before the weights changed "
                   f"and {kept}. Try a lower learning rate.")
        if weights is not None:
            message = f"{weights}; training stopped and {kept}. Try a lower learning rate."
        return StepReport(self.step, self.cfg.train.steps, loss, None, lr, norm, self._tps or 0.0,
                          self.wall_s, math.inf, None, False, False, "nan", message)

    @torch.no_grad()
    def evaluate(self) -> float:
        """Mean validation loss over eval_batches batches (the same batches at every evaluation)."""
        gen = torch.Generator().manual_seed(self.cfg.train.seed + 1)
        was_training = self.model.training
        self.model.eval()
        try:
            losses = [self.model(*self._batch("val", gen))[1] for _ in range(self.cfg.train.eval_batches)]
        finally:
            self.model.train(was_training)
        return float(self.group.mean(torch.stack(losses).mean()))

    def sample(self, prompt: str, n_tokens: int, temperature: float = 1.0, top_k: int | None = None,
               seed: int | None = None) -> str:
        """The continuation the model writes after `prompt` (the prompt itself is not repeated)."""
        return generate_text(self.model, self.tokenizer, prompt, n_tokens, temperature, top_k, seed)


def is_pretrained(state: dict) -> bool:
    """A checkpoint an importer wrote: weights from elsewhere, no optimizer state to resume."""
    return "imported_from" in state and "optimizer" not in state
