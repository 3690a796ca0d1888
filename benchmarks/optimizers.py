"""Optimizers as geometries (issue 13, docs/figures.md): AdamW, Muon, SGD on nanogpt-cpu, and what the geometry
view costs.

    python benchmarks/optimizers.py [--steps 2000] [--sgd-lr 0.3] [--val-batches 100] [--threads N]
                                    [--muon-ns-steps K] [--corpus FILE]

Training: three bare loops (engine.training.bench_reference.BareLoop: model, data, optimizer, schedule, clipping,
nothing else) from the same seed, so the same initial weights and the same training batches: AdamW with
nanoGPT's recipe (the `nanogpt-cpu` preset), Muon (the `shakespeare-muon` preset: torch.optim.Muon on the
blocks' matrices, AdamW on the rest) and SGD with momentum 0.9 (`nanogpt-cpu` with optimizer = sgd and
lr = --sgd-lr). They take turns in chunks of 25 steps in one process, so a shared machine's drift hits all
three alike. Validation loss at the end on --val-batches fixed batches of 64 sequences (seed 0; the issue's
figures used 100 of 64). Prints each one's loss and tokens/s (training steps only), and the ratios to AdamW.
Goals: Muon ≤ 1.65 validation loss at 2000 steps; Muon's tokens/s ≥ 0.9× AdamW's.

Where a step's time goes: forward + backward (with clipping) and optimizer.step() of each, timed apart on
fresh loops, alternating, median of --reps. Muon's step is almost all Newton–Schulz: per iteration a
(d, n)·(n, d) Gram product and two products with it, in bf16, for each of the 24 matrices (1.26·10⁹
multiply-adds a step at 5 iterations, two thirds of a forward + backward's at batch 12 × 64 tokens), so its
cost grows with --muon-ns-steps (the preset's by default) and shrinks with nothing else torch.optim.Muon offers.
Measured with --threads 1 on the tiny-Shakespeare text (a shared 2-core machine, lightly loaded): forward +
backward 60 ms, AdamW's step 2.9 ms, Muon's 25.0 ms at 5 iterations and 20.4 at 4; Muon at 0.743× AdamW's
tokens/s (val 1.6282) and 0.778× with --muon-ns-steps 4 (val 1.6346). 0.9× needs a Muon step under ~10 ms:
one iteration.

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
from engine.training.bench_reference import CHUNK, BareLoop, _chunks
from engine.text.data import Dataset
from engine.training.device import set_threads
from engine.configs.presets import load_preset


def configs(steps: int, sgd_lr: float, threads: int, corpus: str | None = None,
            muon_ns_steps: int | None = None) -> dict:
    """name -> resolved-on-build ExperimentConfig of each contender (same model, data, seed)."""
    adamw, muon = load_preset("nanogpt-cpu"), load_preset("shakespeare-muon")
    if muon_ns_steps is not None:
        muon = muon.replace(train=dataclasses.replace(muon.train, muon_ns_steps=muon_ns_steps))
    if corpus:  # e.g. the tiny-Shakespeare text that nanoGPT's figures use
        adamw, muon = (c.replace(data=dataclasses.replace(c.data, corpus=corpus)) for c in (adamw, muon))
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


def bare_loops(cfgs: dict) -> dict:
    """name -> BareLoop of each config, all on one dataset (built from the first config's data)."""
    first = next(iter(cfgs.values()))
    dataset = Dataset.build(first.data, first.model.n_ctx)
    vocab = dataset.tokenizer.vocab_size
    return {k: BareLoop(c.replace(model=dataclasses.replace(c.model, vocab_size=vocab)), dataset)
            for k, c in cfgs.items()}


def train_all(cfgs: dict, val_batches: int) -> dict:
    """name -> (validation loss, tokens/s) of each config trained for its steps, alternating in chunks."""
    loops = bare_loops(cfgs)
    steps, dataset = cfgs["adamw"].train.steps, loops["adamw"].dataset
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


def step_split(cfgs: dict, reps: int) -> dict:
    """name -> (median seconds of forward + backward + clipping, of optimizer.step()) on fresh loops."""
    loops = bare_loops(cfgs)
    times = {k: ([], []) for k in loops}
    for _ in range(reps):
        for name, loop in loops.items():
            t, m = loop.cfg.train, loop.cfg.model
            x, y = loop.dataset.get_batch("train", t.batch_size, m.n_ctx, loop.gen)  # (B, T)
            start = time.perf_counter()
            loop.optimizer.zero_grad(set_to_none=True)
            loop.model(x, y)[1].backward()
            torch.nn.utils.clip_grad_norm_(loop.model.parameters(), t.grad_clip)
            middle = time.perf_counter()
            loop.optimizer.step()
            times[name][0].append(middle - start)
            times[name][1].append(time.perf_counter() - middle)
    return {k: (statistics.median(a), statistics.median(b)) for k, (a, b) in times.items()}


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
    p.add_argument("--reps", type=int, default=30,
                   help="repetitions of each timing (the step split, the geometry cost)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: every core)")
    p.add_argument("--muon-ns-steps", type=int, help="Muon's Newton–Schulz iterations (default: the preset's)")
    p.add_argument("--corpus", help="a text file to train on (default: the bundled Shakespeare; the issue's "
                                    "figures use the tiny-Shakespeare input.txt)")
    args = p.parse_args(argv)
    cfgs = configs(args.steps, args.sgd_lr, args.threads, args.corpus, args.muon_ns_steps)
    problems = cfgs["muon"].validate()
    if problems:
        print("; ".join(map(str, problems)), file=sys.stderr)
        return 2
    threads = set_threads(args.threads)
    print(f"nanogpt-cpu, {args.steps} steps, {threads} thread(s); validation: {args.val_batches} fixed batches "
          f"of 64 (seed 0)", flush=True)
    print(f"Muon: {cfgs['muon'].train.muon_ns_steps} Newton–Schulz iterations", flush=True)
    for name, (fb, opt) in step_split(cfgs, args.reps).items():
        print(f"  {name:<6} forward + backward {fb * 1e3:6.1f} ms, optimizer.step() {opt * 1e3:5.1f} ms", flush=True)
    results = train_all(cfgs, args.val_batches)
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
