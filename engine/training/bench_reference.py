"""The throughput benchmark of docs/figures.md: our Trainer, as the app runs it, against a bare PyTorch loop.

`BareLoop` is the reference: nanoGPT's `train.py` loop reduced to what any training needs, on the same
model (`engine.model.gpt.GPT`), data (`Dataset.get_batch`), optimizer (`make_optimizer`), schedule (`apply_schedule`),
precision (the forward under the config's autocast, as nanoGPT's `ctx`), clipping and evaluation schedule — and
nothing else: no reports, no NaN guard, no run directory, no
samples, no snapshots. It lives in the engine (not in benchmarks/) so that an installed
`gpt-explorer bench` can import it.

`compare()` alternates the two in one process, A B A B … in chunks of 25 steps, each continuing the same
two trainings; a round (by default one evaluation period) sums its chunks, so evaluations, samples and
checkpoints count in full. It reports tokens per second of each and the median of the per-round ratios
(goal ≥ 0.95): pairing cancels the drift of a machine shared with other work.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ..configs.config import ExperimentConfig
from ..text.data import Dataset
from ..model.gpt import GPT
from ..configs.presets import load_preset
from .acceleration import autocast, autocast_dtype
from .schedule import apply_schedule

# The heatmaps pane's default while training (gui/panes/heatmaps/pane.py, refresh_every): it asks the worker
# for a weights copy every 10 steps and recomputes every layer's attention maps from it.
REFRESH_EVERY = 10
CHUNK = 25  # steps the two loops take in turn within a round, so a burst of other load hits both alike


class BareLoop:
    """A bare training loop of `cfg` (already resolved: vocab_size set) on `dataset`."""

    def __init__(self, cfg: ExperimentConfig, dataset: Dataset):
        from .trainer import make_optimizer

        self.cfg, self.dataset, self.step = cfg, dataset, 0
        torch.manual_seed(cfg.train.seed)
        self.model = GPT(cfg.model)
        self.optimizer = make_optimizer(self.model, cfg.train)
        self.gen = torch.Generator().manual_seed(cfg.train.seed)
        self.dtype = autocast_dtype(cfg.train.precision, torch.device("cpu"))
        self.last_loss = self.last_val = float("nan")

    def run(self, n: int) -> None:
        t, m = self.cfg.train, self.cfg.model
        self.model.train()
        for _ in range(n):
            apply_schedule(self.optimizer, self.step, t)
            x, y = self.dataset.get_batch("train", t.batch_size, m.n_ctx, self.gen)  # (B, T)
            with autocast(x.device, self.dtype):
                _, loss = self.model(x, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if t.grad_clip:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.grad_clip)
            self.optimizer.step()
            self.step += 1
            if self.step % 10 == 0:  # nanoGPT's log_interval
                self.last_loss = loss.item()
            if self.step % t.eval_every == 0 or self.step == t.steps:
                self.last_val = self.evaluate()

    @torch.no_grad()
    def evaluate(self) -> float:
        t, m = self.cfg.train, self.cfg.model
        gen = torch.Generator().manual_seed(t.seed + 1)
        self.model.eval()
        losses = [self.model(*self.dataset.get_batch("val", t.batch_size, m.n_ctx, gen))[1]
                  for _ in range(t.eval_batches)]
        self.model.train()
        return float(torch.stack(losses).mean())


def app_round(trainer, n: int) -> None:
    """n steps as the app runs them: every report is consumed, and every REFRESH_EVERY steps the
    weights are copied for the panes and the attention maps of the heatmap prompt are computed."""
    from ..model.probes import attention_maps, prompt_ids

    ids = prompt_ids(trainer.tokenizer, trainer.probe.prompt, trainer.cfg.model.n_ctx)
    for report in trainer.steps(n):
        if report.step % REFRESH_EVERY == 0:
            trainer.weights_copy()
            attention_maps(trainer.model, ids)


@dataclass(frozen=True)
class BenchResult:
    preset: str
    rounds: int
    steps_per_round: int
    threads: int
    trainer_tps: list[float]  # tokens per second of each round
    bare_tps: list[float]

    @property
    def ratio(self) -> float:
        """Median over rounds of trainer / bare (paired, so slow drift of the machine cancels)."""
        return statistics.median(a / b for a, b in zip(self.trainer_tps, self.bare_tps))


def compare(preset: str = "nanogpt-cpu", rounds: int = 4, steps_per_round: int | None = None,
            corpus: str | None = None, threads: int | None = None, train_overrides: dict | None = None,
            log: Callable[[str], None] = print) -> BenchResult:
    """Train `preset` with the Trainer (writing a temporary run) and with BareLoop, alternating.

    A round is by default the preset's evaluation period, so every round holds the same share of
    evaluations, samples, snapshots and checkpoints as the whole training would. `threads` overrides
    the preset's torch thread count (0: every core); `train_overrides` other TrainConfig fields.
    """
    from .trainer import Trainer

    cfg = load_preset(preset)
    steps_per_round = steps_per_round or cfg.train.eval_every
    train = dataclasses.replace(cfg.train, steps=rounds * steps_per_round)
    if threads is not None:
        train = dataclasses.replace(train, torch_threads=threads)
    train = dataclasses.replace(train, **(train_overrides or {}))
    data = cfg.data if corpus is None else dataclasses.replace(cfg.data, corpus=corpus)
    cfg = cfg.replace(train=train, data=data)
    dataset = Dataset.build(cfg.data, cfg.model.n_ctx)
    tokens = steps_per_round * cfg.train.batch_size * cfg.model.n_ctx
    ours, bare_tps = [], []
    with tempfile.TemporaryDirectory(prefix="gpt-explorer-bench-") as tmp:
        trainer = Trainer(cfg, Path(tmp) / "run", dataset=dataset)
        bare = BareLoop(trainer.cfg, dataset)
        for r in range(rounds):
            a = b = 0.0
            for n in _chunks(steps_per_round, CHUNK):  # A B A B … inside the round too
                a += _seconds(lambda: app_round(trainer, n))
                b += _seconds(lambda: bare.run(n))
            ours.append(tokens / a)
            bare_tps.append(tokens / b)
            log(f"round {r + 1}/{rounds}: trainer {ours[-1]:,.0f} tok/s, bare loop {bare_tps[-1]:,.0f} tok/s")
    return BenchResult(preset, rounds, steps_per_round, trainer.threads, ours, bare_tps)


def _chunks(total: int, size: int) -> list[int]:
    return [size] * (total // size) + ([total % size] if total % size else [])


def _seconds(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
