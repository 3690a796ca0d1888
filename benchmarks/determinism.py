"""What bit-reproducible training costs in tokens/s, and whether two runs of one config are equal.

    python -m benchmarks.determinism [--preset tiny] [--rounds 6] [--steps 20] [--device cpu|cuda]

On the CPU, training is reproducible because GPT.forward looks the token embedding up with F.embedding,
whose backward sums each row in index order; the alternative, indexing W_E[idx], accumulates rows in an
order that varies between runs on several threads. On CUDA, torch's deterministic algorithms (with
cuBLAS's workspace fixed) are what makes a run repeat. Both ways are trained here in the same process,
alternating round by round on one batch order; the script prints each way's median tokens/s, the median
of the per-round ratios (goal: determinism costs ≤ 5%, a ratio ≥ 0.95) and whether two runs of each way
ended with equal weights. On a loaded machine the rounds' ratios spread widely; the lookup itself, the
only work that differs on the CPU, is then also timed alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Callable

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read when cuBLAS starts: before torch does

import torch  # noqa: E402

import engine.model.gpt  # noqa: E402
from engine.text.data import Dataset  # noqa: E402
from engine.configs.presets import load_preset  # noqa: E402
from engine.training.trainer import Trainer  # noqa: E402


class _Indexing:
    """torch.nn.functional with the embedding looked up by indexing (the non-deterministic way)."""

    def __getattr__(self, name):
        return getattr(torch.nn.functional, name)

    @staticmethod
    def embedding(idx, weight):
        return weight[idx]


def ways(device: str) -> dict[str, Callable[[bool], None]]:
    """Each way's switch: called with True before its steps, False after."""
    if device == "cuda":
        return {"deterministic": lambda on: torch.use_deterministic_algorithms(on),
                "default": lambda on: None}

    def indexing(on: bool) -> None:
        engine.model.gpt.F = _Indexing() if on else torch.nn.functional
    return {"deterministic": lambda on: None, "indexing": indexing}


def train(trainer: Trainer, steps: int, switch) -> float:
    """Seconds for `steps` more optimizer steps with the way switched on."""
    switch(True)
    try:
        if trainer.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in trainer.steps(steps):
            pass
        if trainer.device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start
    finally:
        switch(False)


def equal_runs(cfg, dataset, steps: int, switch) -> bool:
    a, b = Trainer(cfg, dataset=dataset), Trainer(cfg, dataset=dataset)
    train(a, steps, switch), train(b, steps, switch)
    wa, wb = a.weights_copy(), b.weights_copy()
    return all(torch.equal(wa[k], wb[k]) for k in wa)


def lookup_ratio(cfg, device: str, reps: int = 50) -> float:
    """Median over alternating repetitions of (indexing's / F.embedding's) seconds for the lookup's forward
    and backward alone, at the preset's shapes: the only work that differs on the CPU, timed without the
    rest of the step's noise."""
    m, t = cfg.model, cfg.train
    gen = torch.Generator().manual_seed(0)
    weight = torch.randn(m.vocab_size, m.d_model, generator=gen, device=device, requires_grad=True)
    idx = torch.randint(m.vocab_size, (t.batch_size, m.n_ctx), generator=gen).to(device)
    grad = torch.randn(t.batch_size, m.n_ctx, m.d_model, generator=gen).to(device)

    def seconds(lookup) -> float:
        weight.grad = None
        start = time.perf_counter()
        lookup(idx, weight).backward(grad)
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start
    ratios = [seconds(_Indexing.embedding) / seconds(torch.nn.functional.embedding) for _ in range(reps)]
    return statistics.median(ratios)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="tiny")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--steps", type=int, default=20, help="optimizer steps per round and way")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = p.parse_args(argv)
    cfg = load_preset(args.preset)
    total = (args.rounds + 1) * args.steps
    cfg = cfg.replace(train=dataclasses.replace(cfg.train, steps=10 * total, eval_every=10 * total,
                                                device=args.device, torch_threads=0))
    dataset = Dataset.build(cfg.data, cfg.model.n_ctx)
    switches = ways(args.device)
    trainers = {name: Trainer(cfg, dataset=dataset) for name in switches}
    for name, t in trainers.items():  # a warm-up round each: allocator, kernels, caches
        train(t, args.steps, switches[name])
    tokens = args.steps * cfg.train.batch_size * cfg.model.n_ctx
    tps = {name: [] for name in switches}
    for r in range(args.rounds):
        for name, t in trainers.items():
            tps[name].append(tokens / train(t, args.steps, switches[name]))
        print(f"  round {r + 1}/{args.rounds}: " + ", ".join(f"{n} {v[-1]:,.0f} tok/s" for n, v in tps.items()),
              flush=True)
    det, other = list(switches)
    ratios = [a / b for a, b in zip(tps[det], tps[other])]
    print(f"{args.preset} on {args.device}, {torch.get_num_threads()} thread(s), {args.rounds} rounds x "
          f"{args.steps} steps")
    for name in switches:
        same = equal_runs(cfg, dataset, args.steps, switches[name])
        print(f"{name:13s} {statistics.median(tps[name]):,.0f} tokens/s; two runs equal to the bit: "
              f"{'yes' if same else 'no'}")
    ratio = statistics.median(ratios)
    print(f"ratio {det}/{other} {ratio:.3f} (per round {min(ratios):.3f} … {max(ratios):.3f}); "
          f"goal ≥ 0.95: {'met' if ratio >= 0.95 else 'MISSED'}")
    if args.device == "cpu":
        print(f"the embedding lookup alone (forward and backward): F.embedding is "
              f"{lookup_ratio(trainers[det].cfg, args.device):.2f}x as fast as indexing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
