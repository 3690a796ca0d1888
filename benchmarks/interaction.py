"""The second-order view's cost (issue 25; docs/figures.md#goals), printed as ratios against one backward.

1. The interaction map at one step (engine/analysis/interaction.py: one gradient with its graph, one double
   backward per weight, one gradient at s) against one backward of the same probe loss (float64, the
   explicit attention path both use; the backward's forward counted in, as the map's are). Goal:
   ≤ 3 × (number of weights + 1).
2. One pair over 40 saved steps (a pair's numbers per interval: the gradient with its graph, one double
   backward, the gradients at W(p) + ΔA and at s), against 40 backwards.
3. One pair at one step split by B's route classes (engine/forms/mixed_classes.py: a forward-mode derivative
   of B's class split), against one backward.
4. The symbolic mixed form's derivation (engine/forms/mixed.py) by chain depth, for the note's question
   (K of the last layer by Q two layers below, or layer 0), each depth cold in its own interpreter since
   words are interned process-wide.

Runs alternate with the backward they are compared with and the best of each is taken, so a busy neighbour
weighs on both. Weights are the preset's initial ones and the updates random (1e-3 of each weight's scale):
the cost does not depend on their values.

    python benchmarks/interaction.py [--preset nanogpt-cpu] [--rounds 3] [--steps 40] [--threads 1]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from engine.analysis import interaction as ia  # noqa: E402
from engine.model.gpt import GPT  # noqa: E402
from engine.configs.presets import load_preset  # noqa: E402


def setting(preset: str, seed: int = 0):
    """(ProbeLoss on a probe-sized batch, the initial weights, a random update) for the preset's model."""
    exp = load_preset(preset)
    cfg = exp.model
    torch.manual_seed(seed)
    weights = {k: v.double() for k, v in GPT(cfg).state_dict().items()}
    x = torch.randint(0, cfg.vocab_size, (exp.train.probe_batch, cfg.n_ctx))
    y = torch.randint(0, cfg.vocab_size, (exp.train.probe_batch, cfg.n_ctx))
    loss = ia.ProbeLoss(cfg, x, y)
    delta = {k: 1e-3 * torch.randn_like(v) * (float(v.abs().mean()) or 1.0) for k, v in weights.items()}
    return loss, weights, delta


def one_backward(loss, weights) -> float:
    t = time.perf_counter()
    ia.gradient(loss, ia.leaves(weights, loss.names(weights)))
    return time.perf_counter() - t


def best(ours, loss, weights, rounds: int) -> tuple[float, float]:
    """(best time of ours, best time of one backward), alternating."""
    a, b = [], []
    for _ in range(rounds):
        gc.collect()
        b.append(one_backward(loss, weights))
        t = time.perf_counter()
        ours()
        a.append(time.perf_counter() - t)
    return min(a), min(b)


def map_row(preset: str, rounds: int) -> None:
    loss, weights, delta = setting(preset)
    n = len(loss.names(weights))
    ours, ref = best(lambda: ia.interaction_map(loss, weights, delta, 1, 0), loss, weights, rounds)
    print(f"interaction map, {preset}, {n} weights: {ours:.2f} s = {ours / ref:.1f} backwards "
          f"(one backward {1e3 * ref:.0f} ms; goal ≤ 3 × ({n} + 1) = {3 * (n + 1)}): "
          f"{'ok' if ours / ref <= 3 * (n + 1) else 'OVER'}")


def pair_row(preset: str, steps: int, rounds: int) -> None:
    loss, weights, delta = setting(preset)
    last = loss.cfg.n_layer - 1
    B, A = f"blocks.{last}.W_K", f"blocks.{max(0, last - 3)}.W_Q"

    def series():
        w = weights
        for s in range(steps):  # each interval starts where the last ended, as saved steps do
            ia.pair_interaction(loss, w, delta, B, A, s + 1, s)
            w = {k: v + delta[k] for k, v in w.items()}

    ours, ref = best(series, loss, weights, max(1, rounds // 2))
    print(f"one pair ({B} by {A}) over {steps} saved steps: {ours:.2f} s = {ours / ref / steps:.1f} backwards "
          f"per step (one backward {1e3 * ref:.0f} ms)")


def routes_row(preset: str, rounds: int) -> None:
    loss, weights, delta = setting(preset)
    B, A = f"blocks.{min(1, loss.cfg.n_layer - 1)}.W_K", "blocks.0.W_Q"  # a low B: its coefficient has many routes
    got = {}

    def split():
        got["routes"] = ia.route_moves(loss, weights, delta, B, A, 1, 0)

    ours, ref = best(split, loss, weights, rounds)
    print(f"one pair ({B} by {A}) by {B}'s {len(got['routes'].moves)} route classes at one step: {ours:.2f} s = "
          f"{ours / ref:.1f} backwards (one backward {1e3 * ref:.0f} ms)")


def derive_once(depth: int) -> dict:
    from engine.forms import chain
    from engine.forms.derive import Forms
    from engine.forms.mixed import mixed
    from engine.forms.printing import latex

    B, A = f"K_{depth - 1}", f"Q_{max(0, depth - 3)}"
    f = Forms(chain.encoder(depth))
    t = time.perf_counter()
    form = mixed(f, B, A)
    chars = sum(len(latex(term.G)) for term in form.terms)
    return {"depth": depth, "pair": f"{B} by {A}", "terms": form.count(), "seconds": time.perf_counter() - t,
            "chars": chars}


def derivation_rows() -> None:
    print("mixed form of the note's chain (words + rules + LaTeX, cold):")
    for depth in range(1, 7):
        out = subprocess.run([sys.executable, __file__, "--derive-once", str(depth)], capture_output=True,
                             text=True, check=True)
        r = json.loads(out.stdout)
        print(f"  depth {r['depth']}  {r['pair']:<12} {r['terms']:>4} terms  {1e3 * r['seconds']:8.1f} ms  "
              f"{r['chars']:>7} LaTeX characters")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="nanogpt-cpu")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--derive-once", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.derive_once:
        print(json.dumps(derive_once(args.derive_once)))
        return
    torch.set_num_threads(args.threads)
    map_row(args.preset, args.rounds)
    pair_row(args.preset, args.steps, args.rounds)
    routes_row(args.preset, args.rounds)
    derivation_rows()


if __name__ == "__main__":
    main()
