"""Optimizers as geometries (issue 13, DESIGN §7): AdamW vs Muon vs SGD on nanogpt-cpu, and what the geometry
view costs.

    python benchmarks/optimizers.py [--steps 2000] [--sgd-lr 0.3] [--val-batches 100] [--threads N]

Training: three bare loops (engine.bench_reference.BareLoop: model, data, optimizer, schedule, clipping,
nothing else) from the same seed, so the same initial weights and the same training batches: AdamW with
nanoGPT's recipe (the `nanogpt-cpu` preset), Muon (the `shakespeare-muon` preset: torch.optim.Muon on the
blocks' matrices, AdamW on the rest) and SGD with momentum 0.9 (`nanogpt-cpu` with optimizer = sgd and
lr = --sgd-lr). They take turns in chunks of 25 steps in one process, so a shared machine's drift hits all
three alike. Validation loss at the end on --val-batches fixed batches of 64 sequences (seed 0; the issue's
figures used 100 of 64). Prints each one's loss and tokens/s (training steps only), and the ratios to AdamW.
Goals: Muon ≤ 1.65 validation loss at 2000 steps; Muon's tokens/s ≥ 0.9× AdamW's.

Geometry cost: every geometry (engine.analysis.geometry.geometries: G, sign G, G/(√v̂+ε), U Vᵀ, each with
its spectrum and cosines) of one 128×128 weight (blocks.0.W_Q), against one autograd backward of the whole
model on a training batch, alternating, median of --reps each. Goal: ≤ 3×.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

import numpy as np
import torch

from engine.analysis.geometry import geometries
from engine.bench_reference import CHUNK, BareLoop, _chunks
from engine.data import Dataset
from engine.device import set_threads
from engine.presets import load_preset


def configs(steps: int, sgd_lr: float, threads: int) -> dict:
    """name -> resolved-on-build ExperimentConfig of each contender (same model, data, seed)."""
    adamw, muon = load_preset("nanogpt-cpu"), load_preset("shakespeare-muon")
    out = {"adamw": adamw, "muon": muon,
           "sgd": adamw.replace(train=dataclasses.replace(adamw.train, optimizer="sgd", lr=sgd_lr,
                                                          min_lr=sgd_lr / 10))}
    return {k: c.replace(train=dataclasses.replace(c.train, steps=steps, eval_every=steps, eval_batches=1,
                                                   torch_threads=threads)) for k, c in out.items()}


@torch.no_grad()
def fixed_val_loss(model, dataset: Dataset, n_ctx: int, batches: int, batch_size: int = 64) -> float:
    gen = torch.Generator().manual_seed(0)
    model.eval()
    losses = [model(*dataset.get_batch("val", batch_size, n_ctx, gen))[1] for _ in range(batches)]
    model.train()
    return float(torch.stack(losses).mean())


def train_all(steps: int, sgd_lr: float, threads: int, val_batches: int) -> dict:
    cfgs = configs(steps, sgd_lr, threads)
    dataset = Dataset.build(cfgs["adamw"].data, cfgs["adamw"].model.n_ctx)
    vocab = dataset.tokenizer.vocab_size
    loops = {k: BareLoop(c.replace(model=dataclasses.replace(c.model, vocab_size=vocab)), dataset)
             for k, c in cfgs.items()}
    seconds = dict.fromkeys(loops, 0.0)
    done = 0
    for n in _chunks(steps, CHUNK):
        for name, loop in loops.items():
            start = time.perf_counter()
            loop.run(n)
            seconds[name] += time.perf_counter() - start
        done += n
        if done % 250 == 0 or done == steps:
            print(f"  step {done}: " + ", ".join(f"{k} {lp.last_loss:.3f}" for k, lp in loops.items()), flush=True)
    tokens = steps * cfgs["adamw"].train.batch_size * cfgs["adamw"].model.n_ctx
    return {k: (fixed_val_loss(lp.model, dataset, cfgs[k].model.n_ctx, val_batches), tokens / seconds[k])
            for k, lp in loops.items()}


def geometry_cost(reps: int) -> tuple[float, float]:
    """(median seconds of every geometry of blocks.0.W_Q, median seconds of one backward of the model)."""
    cfg = load_preset("nanogpt-cpu")
    dataset = Dataset.build(cfg.data, cfg.model.n_ctx)
    loop = BareLoop(cfg.replace(model=dataclasses.replace(cfg.model, vocab_size=dataset.tokenizer.vocab_size)),
                    dataset)
    x, y = dataset.get_batch("train", cfg.train.batch_size, cfg.model.n_ctx, torch.Generator().manual_seed(0))
    rng = np.random.default_rng(0)
    G, dW, v = (rng.standard_normal((128, 128)) for _ in range(3))
    geo_s, back_s = [], []
    for _ in range(reps):
        start = time.perf_counter()
        geometries(G, dW, v ** 2, 1e-8)
        geo_s.append(time.perf_counter() - start)
        loop.model.zero_grad(set_to_none=True)
        _, loss = loop.model(x, y)
        start = time.perf_counter()
        loss.backward()
        back_s.append(time.perf_counter() - start)
    return statistics.median(geo_s), statistics.median(back_s)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--sgd-lr", type=float, default=0.3)
    p.add_argument("--val-batches", type=int, default=100)
    p.add_argument("--reps", type=int, default=30, help="repetitions of the geometry-cost measurement")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: every core)")
    args = p.parse_args(argv)
    threads = set_threads(args.threads)
    print(f"nanogpt-cpu, {args.steps} steps, {threads} thread(s); validation: {args.val_batches} fixed batches "
          f"of 64 (seed 0)", flush=True)
    results = train_all(args.steps, args.sgd_lr, args.threads, args.val_batches)
    ref_loss, ref_tps = results["adamw"]
    print(f"{'optimizer':<10}{'val loss':>10}{'tokens/s':>12}{'loss / AdamW':>14}{'tok/s / AdamW':>15}")
    for name, (loss, tps) in results.items():
        print(f"{name:<10}{loss:>10.4f}{tps:>12,.0f}{loss / ref_loss:>14.3f}{tps / ref_tps:>15.3f}")
    print(f"goals: Muon val loss ≤ 1.65 at 2000 steps (got {results['muon'][0]:.4f}); Muon tokens/s ≥ 0.9× AdamW "
          f"(got {results['muon'][1] / ref_tps:.3f}×)")
    geo, back = geometry_cost(args.reps)
    print(f"every geometry of one 128×128 weight: {geo * 1e3:.2f} ms; one backward of the model: {back * 1e3:.2f} ms; "
          f"ratio {geo / back:.2f} (goal ≤ 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
