"""CPU bfloat16 autocast against float32 (issue 28): the time of a training forward + backward of a preset's
model, alternating, so `precision = auto` picks bf16 on the CPU only where it is faster.

    python benchmarks/cpu_bf16.py [--preset nanogpt-cpu] [--rounds 6] [--steps 5] [--threads 1]

Prints the CPU's capability as torch sees it (AVX512, AMX…), the median seconds of --steps steps of each
and the median per-round ratio bf16 / float32 (below 1: bf16 is faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.model.gpt import GPT  # noqa: E402
from engine.configs.presets import load_preset  # noqa: E402

VOCAB = 65  # the bundled Shakespeare's characters


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="nanogpt-cpu")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = load_preset(args.preset)
    model = GPT(cfg.model.__class__(**{**cfg.model.__dict__, "vocab_size": VOCAB}))
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, VOCAB, (cfg.train.batch_size, cfg.model.n_ctx), generator=g)
    y = torch.randint(0, VOCAB, x.shape, generator=g)

    def steps(bf16: bool) -> float:
        start = time.perf_counter()
        for _ in range(args.steps):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                _, loss = model(x, y)
            loss.backward()
            model.zero_grad(set_to_none=True)
        return time.perf_counter() - start

    steps(False), steps(True)  # warm-up: kernels chosen, memory allocated
    times: dict[bool, list[float]] = {False: [], True: []}
    for r in range(args.rounds):
        for bf16 in ((False, True) if r % 2 == 0 else (True, False)):
            times[bf16].append(steps(bf16))
    ratio = statistics.median(b / a for a, b in zip(times[False], times[True]))
    print(f"{args.preset}, CPU capability {torch.backends.cpu.get_cpu_capability()}, {args.threads} thread(s)")
    print(f"float32 {statistics.median(times[False]):.3f} s, bf16 {statistics.median(times[True]):.3f} s "
          f"for {args.steps} steps; bf16 / float32 time {ratio:.2f} (below 1: bf16 faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
