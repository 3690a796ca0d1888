"""GPU benchmark: baby-gpt (6×6×384, context 256, batch 64) on CUDA, our Trainer against a bare loop.

    python benchmarks/gpu.py [CORPUS] [--rounds 3] [--steps 100] [--val-steps 5000]

CORPUS is a UTF-8 text file; give nanoGPT's tiny-Shakespeare `input.txt` (1.1 MB) for a validation loss
comparable with nanoGPT's. Without it the bundled Shakespeare (38 plays, about 4× larger) is used, and
the loss is then not comparable. Two measurements, in one process:

1. Throughput, for float32 and bf16 autocast (where the GPU has bfloat16), each eager and compiled: our
   Trainer as `gpt-explorer train` runs it (every StepReport consumed, its run directory written; no
   evaluation falls in the measured steps) against `BareLoop`, nanoGPT's train.py loop on the same model,
   data, optimizer and schedule (pinned batches, loss read only every 10 steps). The two alternate
   A B A B in chunks of 25 steps after 20 warm-up steps each (compilation and CUDA warm-up are not
   timed), with `torch.cuda.synchronize()` around every chunk; the ratio is the median over rounds of
   trainer / bare, as in engine/training/bench_reference.py.
2. The validation loss after --val-steps steps (5000: nanoGPT's run) of baby-gpt with the Trainer, in
   the fastest precision and compile setting measured, with the preset's evaluation schedule (every 250
   steps, 200 batches) and its snapshots and checkpoints, but no logged samples (nanoGPT logs none).
   nanoGPT's README reports 1.4697 on one A100 in about 3 minutes; it is printed beside ours.

On a machine without CUDA it prints one line saying so and exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from engine.training.acceleration import autocast, autocast_dtype
from engine.configs.config import ExperimentConfig
from engine.text.data import Dataset
from engine.model.gpt import GPT
from engine.configs.presets import load_preset
from engine.training.schedule import lr_at
from engine.training.trainer import Trainer, make_optimizer

NANOGPT_VAL, NANOGPT_SETUP = 1.4697, "one A100, about 3 minutes"
WARMUP, CHUNK = 20, 25


class BareLoop:
    """nanoGPT's training loop, nothing else, on `device` with the given autocast dtype and compile."""

    def __init__(self, cfg: ExperimentConfig, dataset: Dataset, device: torch.device,
                 dtype: torch.dtype | None, compile: bool):
        self.cfg, self.dataset, self.device, self.dtype, self.step = cfg, dataset, device, dtype, 0
        torch.manual_seed(cfg.train.seed)
        self.model = GPT(cfg.model).to(device).train()
        self.optimizer = make_optimizer(self.model, cfg.train)
        self.forward = torch.compile(self.model) if compile else self.model
        self.gen = torch.Generator().manual_seed(cfg.train.seed)

    def run(self, n: int) -> None:
        t, m = self.cfg.train, self.cfg.model
        for _ in range(n):
            for group in self.optimizer.param_groups:
                group["lr"] = lr_at(self.step, t)
            x, y = self.dataset.get_batch("train", t.batch_size, m.n_ctx, self.gen)  # (B, T)
            x = x.pin_memory().to(self.device, non_blocking=True)
            y = y.pin_memory().to(self.device, non_blocking=True)
            with autocast(self.device, self.dtype):
                _, loss = self.forward(x, y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.grad_clip)
            self.optimizer.step()
            self.step += 1
            if self.step % 10 == 0:  # nanoGPT's log_interval: the only sync with the host
                loss.item()


def timed(fn) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def throughput(cfg: ExperimentConfig, dataset: Dataset, precision: str, compile: bool, rounds: int,
               steps: int, tmp: Path) -> tuple[float, float, float] | str:
    """(trainer tok/s, bare tok/s, median ratio), or why the variant could not run."""
    total = WARMUP + rounds * steps
    train = dataclasses.replace(cfg.train, precision=precision, compile=compile, steps=total + 1,
                                eval_every=total + 1, snapshot_every=total + 1, checkpoint_every=total + 1,
                                sample_tokens=0)
    trainer = Trainer(cfg.replace(train=train), tmp / f"run-{precision}-{compile}", dataset=dataset)
    if trainer.compile_message:
        return trainer.compile_message
    bare = BareLoop(trainer.cfg, dataset, trainer.device, trainer.autocast_dtype, compile)
    timed(lambda: list(trainer.steps(WARMUP)))
    timed(lambda: bare.run(WARMUP))
    tokens = steps * train.batch_size * cfg.model.n_ctx
    ours, theirs = [], []
    for _ in range(rounds):
        a = b = 0.0
        for n in [CHUNK] * (steps // CHUNK) + ([steps % CHUNK] if steps % CHUNK else []):
            a += timed(lambda: list(trainer.steps(n)))
            b += timed(lambda: bare.run(n))
        ours.append(tokens / a)
        theirs.append(tokens / b)
    ratio = statistics.median(x / y for x, y in zip(ours, theirs))
    return statistics.median(ours), statistics.median(theirs), ratio


def validation_run(cfg: ExperimentConfig, dataset: Dataset, precision: str, compile: bool, steps: int,
                   tmp: Path) -> tuple[float, float]:
    """(validation loss after `steps` steps, seconds) of the preset trained by our Trainer."""
    train = dataclasses.replace(cfg.train, steps=steps, precision=precision, compile=compile, sample_tokens=0)
    trainer = Trainer(cfg.replace(train=train), tmp / "run-val", dataset=dataset)
    start, val = time.perf_counter(), float("nan")
    for report in trainer.steps():
        if report.val_loss is not None:
            val = report.val_loss
            print(f"  step {report.step}: val {val:.4f} ({time.perf_counter() - start:.0f} s)", flush=True)
    torch.cuda.synchronize()
    return val, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", nargs="?", default="shakespeare",
                   help="a UTF-8 text file (tiny-Shakespeare's input.txt for nanoGPT's figure); default: bundled")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=100, help="measured steps per round and variant")
    p.add_argument("--val-steps", type=int, default=5000, help="steps of the validation run (0: skip it)")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("benchmarks/gpu.py: no CUDA GPU on this machine (torch.cuda.is_available() is False); "
              "nothing was measured", file=sys.stderr)
        return 2
    cfg = load_preset("baby-gpt")
    corpus = args.corpus if args.corpus == "shakespeare" else str(Path(args.corpus).expanduser().resolve())
    cfg = cfg.replace(data=dataclasses.replace(cfg.data, corpus=corpus))
    dataset = Dataset.build(cfg.data, cfg.model.n_ctx)
    device = torch.device("cuda")
    print(f"{torch.cuda.get_device_name(device)}, torch {torch.__version__}; baby-gpt on {args.corpus} "
          f"({len(dataset.train):,} training tokens)")
    precisions = ["float32"] + (["bf16"] if autocast_dtype("auto", device) is not None else [])
    best, best_tps = ("float32", False), 0.0
    with tempfile.TemporaryDirectory(prefix="gpt-explorer-gpu-") as tmp:
        print(f"{'variant':<18}{'trainer tok/s':>15}{'bare tok/s':>13}{'ratio':>8}")
        for precision in precisions:
            for compile in (False, True):
                name = f"{precision} {'compiled' if compile else 'eager'}"
                got = throughput(cfg, dataset, precision, compile, args.rounds, args.steps, Path(tmp))
                if isinstance(got, str):
                    print(f"{name:<18}  skipped: {got}", flush=True)
                    continue
                print(f"{name:<18}{got[0]:>15,.0f}{got[1]:>13,.0f}{got[2]:>8.3f}", flush=True)
                if got[0] > best_tps:
                    best, best_tps = (precision, compile), got[0]
        if args.val_steps:
            print(f"validation run: {args.val_steps} steps, {best[0]}{', compiled' if best[1] else ''}")
            val, seconds = validation_run(cfg, dataset, *best, args.val_steps, Path(tmp))
            print(f"val loss at step {args.val_steps}: ours {val:.4f} in {seconds / 60:.1f} min; "
                  f"nanoGPT {NANOGPT_VAL} ({NANOGPT_SETUP})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
