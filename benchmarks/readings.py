"""The readings' cost (issue 39; docs/figures.md#goals), printed as ratios against one backward of the same probe
loss in the same process, alternating, the best of each taken (so a busy neighbour weighs on both).

1. A coefficient read in tokens (engine/analysis/tokens.py) without its route classes, for a weight reading the
   stream (blocks.0.W_Q), one writing to it (the last block's W_out) and the embedding: goal ≤ 2 backwards.
   With the classes too: about one backward of the weight's block per class, as the class split itself.
2. The curvature along the step (engine/analysis/curvature.py): κ and every weight's share from Hδ by a
   central difference of two gradients, as the app computes it in float64: goal ≤ 3 backwards; the exact
   double backward beside it (a gradient with its graph and a backward through it), which the tests check it
   against. Then one weight's own κ_W (two more gradients, that weight moved alone).
3. The critical sharpness's line search: goal ≤ 10 forwards (counted), timed against one forward.
4. A coefficient as code (engine/ascode/generate.py): writing the .py and the .npz, whose own cost is the forms
   engine's number for the file to check itself with (the whole G, or every class for one class).

The backward is the probe loss's in float64 through the explicit attention path (interaction.ProbeLoss), as
the second-order view's benchmark uses; `--float32` times the token readout in float32 (what a GPT-2-sized
model gets in the app) against a float32 backward. Weights are the preset's initial ones, the update random.

    python benchmarks/readings.py [--preset nanogpt-cpu] [--rounds 3] [--threads 1] [--float32]
    python benchmarks/readings.py --run DIR [--rounds 2] [--classes] [--weights W ...]

`--run` reads a saved run instead (GPT-2-shaped: `benchmarks/gpt2_small.py --keep DIR`, or such a folder
fine-tuned a step or two): its config, probe batch and tokenizer, the weights at its newest saved step and the
update from the one before; the precision the app picks for it (float32 at GPT-2's shape) against a backward in
that precision; the token readout alone (the classes too with `--classes`: one backward of a block per class,
minutes at GPT-2's shape), since a double backward does not fit there (docs/readings.md).

`--float32-difference` measures instead the accuracy of Hδ by a float32 central difference (what a model whose
double backward does not fit gets: curvature.curvature_method) against the float64 double backward, on `tiny`
and `nanogpt-cpu`, along a random and a descending δ, at several ‖εδ‖ (`--steps`): how FLOAT32_STEP was chosen.

    python benchmarks/readings.py --float32-difference [--steps 1e-4,3e-4,1e-3,3e-3,1e-2,3e-2,1e-1,3e-1]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# NumPy's BLAS gets the threads torch gets (read once, when NumPy loads): the analysis process runs both on one
# thread (engine/training/thread_policy.py, for_helper), and two BLAS threads on a loaded 2-core machine made a
# 4×64×128 by 128×512 product 10× slower (43 ms against 4 ms here)
_threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = _threads

import numpy as np  # noqa: E402
import torch  # noqa: E402

from engine.analysis import curvature as cv  # noqa: E402
from engine.analysis import interaction as ia  # noqa: E402
from engine.analysis import tokens as tk  # noqa: E402
from engine.configs.presets import load_preset  # noqa: E402
from engine.model.gpt import GPT  # noqa: E402
from engine.text.tokenizer import CharTokenizer  # noqa: E402


def setting(preset: str, seed: int = 0):
    exp = load_preset(preset)
    cfg = exp.model
    torch.manual_seed(seed)
    weights = {k: v.double() for k, v in GPT(cfg).state_dict().items()}
    after = {k: v + 1e-3 * torch.randn_like(v) * (float(v.abs().mean()) or 1.0) for k, v in weights.items()}
    x = torch.randint(0, cfg.vocab_size, (exp.train.probe_batch, cfg.n_ctx))
    y = torch.randint(0, cfg.vocab_size, (exp.train.probe_batch, cfg.n_ctx))
    return exp, cfg, weights, after, x, y


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def best(ours, ref, rounds: int) -> tuple[float, float]:
    a, b = [], []
    for _ in range(rounds):
        gc.collect()
        b.append(timed(ref))
        a.append(timed(ours))
    return min(a), min(b)


def from_run(folder: str):
    """(config, tokenizer, weights at the newest saved step, at the one before (or a random step from them), x, y,
    the NumPy precision the app reads the run's tokens in)."""
    from engine.analysis.run_analysis import RunAnalysis
    from engine.coefficients import progressive

    a = RunAnalysis(folder)
    steps = a.saved_steps()
    after = a.run.load_weights(steps[-1])
    if len(steps) > 1:
        before = a.run.load_weights(steps[-2])
    else:
        torch.manual_seed(0)
        before = {k: v - 1e-3 * torch.randn_like(v) * (float(v.abs().mean()) or 1.0) for k, v in after.items()}
    probe = a.run.probe()
    x, y = torch.as_tensor(np.asarray(probe.x)), torch.as_tensor(np.asarray(probe.y))
    dtype = np.float32 if progressive(a.config.model, int(x.numel())) else np.float64
    return a.config.model, a.tokenizer, after, before, x, y, dtype


def run_tokens(args) -> None:
    """The token readout of a saved run against one backward of its probe loss in the app's precision."""
    cfg, tokenizer, after, before, x, y, dtype = from_run(args.run)
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    model = GPT(cfg).to(tdtype).eval()
    model.load_state_dict({k: v.to(tdtype) for k, v in after.items()}, strict=True)
    params = [p for p in model.parameters() if p.requires_grad]
    backward = lambda: torch.autograd.grad(model(x, y)[1], params)  # noqa: E731
    print(f"{args.run}: {sum(p.numel() for p in params):,} parameters, probe {tuple(x.shape)}, {args.threads} "
          f"thread(s), {np.dtype(dtype).name}")
    for name in args.weights or ("blocks.0.W_Q", f"blocks.{cfg.n_layer - 1}.W_out", "W_E"):
        for split in (False, True) if args.classes else (False,):
            ours, ref = best(lambda: tk.token_reading(cfg, tokenizer, after, before, x, y, name, 1, 0, split, dtype),
                             backward, args.rounds)
            goal = "" if split else f" (goal ≤ 2: {'ok' if ours / ref <= 2 else 'OVER'})"
            print(f"tokens {name:<18} {'by class' if split else 'whole   '} {ours:8.1f} s = {ours / ref:5.2f} "
                  f"backwards of {ref:.1f} s{goal}", flush=True)


def float32_difference(steps: list[float]) -> None:
    """κ (δᵀHδ), Hδ, the shares and ∇E·δ by the float32 difference against the float64 double backward."""
    for preset in ("tiny", "nanogpt-cpu"):
        exp, cfg, w, _, x, y = setting(preset)
        exact_loss, single = ia.ProbeLoss(cfg, x, y, torch.float64), ia.ProbeLoss(cfg, x, y, torch.float32)
        names = exact_loss.names(w)
        params = ia.leaves(w, names)
        _, grads = ia.gradient(exact_loss, params, create_graph=True)
        g = torch.Generator().manual_seed(1)
        along = {"random": {n: 1e-3 * torch.randn(w[n].shape, generator=g, dtype=torch.float64)
                            * (float(w[n].abs().mean()) or 1.0) for n in names},
                 "descending": {n: -1e-3 * grads[n].detach() for n in names}}
        for kind, d in along.items():
            Hd = cv.hessian_along(params, grads, d)
            dHd = sum(float((d[n] * Hd[n]).sum()) for n in names)
            share = {n: float((d[n] * Hd[n]).sum()) / dHd for n in names}
            slope = sum(float((grads[n].detach() * d[n]).sum()) for n in names)
            norm = sum(float((Hd[n] ** 2).sum()) for n in names) ** 0.5
            w32, d32 = {n: w[n].float() for n in names}, {n: d[n].float() for n in names}
            for step in steps:
                got, got_slope = cv.along_difference(single, w32, d32, step=step)
                got = {n: got[n].double() for n in names}
                got_dHd = sum(float((d[n] * got[n]).sum()) for n in names)
                err = sum(float(((got[n] - Hd[n]) ** 2).sum()) for n in names) ** 0.5 / norm
                shares = max(abs(float((d[n] * got[n]).sum()) / got_dHd - share[n]) for n in names)
                print(f"{preset:<12} {kind:<10} ‖εδ‖ {step:7.0e}  κ {abs(got_dHd - dHd) / abs(dHd):.1e} rel  Hδ "
                      f"{err:.1e} rel  shares {shares:.1e} abs  ∇E·δ {abs(got_slope - slope) / abs(slope):.1e} rel",
                      flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="nanogpt-cpu")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--float32", action="store_true")
    ap.add_argument("--run", help="a saved run's folder (GPT-2-shaped: the token readout alone)")
    ap.add_argument("--classes", action="store_true", help="with --run: each route class too")
    ap.add_argument("--weights", nargs="+", help="with --run: the weights read (default: blocks.0.W_Q, the last "
                                                 "block's W_out, W_E)")
    ap.add_argument("--float32-difference", action="store_true", help="the float32 difference's accuracy instead")
    ap.add_argument("--steps", default="1e-4,3e-4,1e-3,3e-3,1e-2,3e-2,1e-1,3e-1", help="with --float32-difference")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.float32_difference:
        float32_difference([float(v) for v in args.steps.split(",")])
        return
    if args.run:
        run_tokens(args)
        return
    exp, cfg, weights, after, x, y = setting(args.preset)
    loss = ia.ProbeLoss(cfg, x, y)
    names = loss.names(weights)
    backward = lambda: ia.gradient(loss, ia.leaves(weights, names))  # noqa: E731
    tokenizer = CharTokenizer([chr(33 + i) for i in range(cfg.vocab_size)])
    dtype = np.float32 if args.float32 else np.float64
    if args.float32:
        model = GPT(cfg).eval()
        model.load_state_dict({k: v.float() for k, v in weights.items()})
        backward = lambda: torch.autograd.grad(model(x, y)[1], list(model.parameters()))  # noqa: E731
    print(f"{args.preset}: {sum(v.numel() for v in weights.values()):,} parameters, probe {tuple(x.shape)}, "
          f"{args.threads} thread(s), {'float32' if args.float32 else 'float64'}")
    last = cfg.n_layer - 1
    for name in ("blocks.0.W_Q", f"blocks.{last}.W_out", "W_E"):
        for split in (False, True):
            ours, ref = best(lambda: tk.token_reading(cfg, tokenizer, after, weights, x, y, name, 1, 0, split, dtype),
                             backward, args.rounds)
            goal = "" if split else f" (goal ≤ 2: {'ok' if ours / ref <= 2 else 'OVER'})"
            print(f"tokens {name:<18} {'by class' if split else 'whole   '} {ours * 1e3:8.0f} ms = "
                  f"{ours / ref:5.2f} backwards{goal}")
    if args.float32:
        return
    params = ia.leaves(weights, names)
    delta = {n: after[n].double() - weights[n] for n in names}

    plain = {n: weights[n] for n in names}

    def kappa():
        cv.along_difference(loss, plain, delta)

    def kappa_exact():
        _, grads = ia.gradient(loss, params, create_graph=True)
        cv.hessian_along(params, grads, delta)

    ours, ref = best(kappa, backward, args.rounds)
    print(f"curvature κ and shares, whole model {ours * 1e3:8.0f} ms = {ours / ref:5.2f} backwards "
          f"(goal ≤ 3: {'ok' if ours / ref <= 3 else 'OVER'})")
    ours, ref = best(kappa_exact, backward, args.rounds)
    print(f"… exactly, by double backward       {ours * 1e3:8.0f} ms = {ours / ref:5.2f} backwards (the check)")
    one = f"blocks.{last}.W_K"

    def own():
        cv.along_difference(loss, plain, delta, only=one)

    ours, ref = best(own, backward, args.rounds)
    print(f"curvature κ_W of {one:<17} {ours * 1e3:8.0f} ms = {ours / ref:5.2f} backwards")
    with torch.no_grad():
        forward = lambda: loss(weights)  # noqa: E731
        E0 = float(forward())
        used = []

        def search():
            used.append(cv.line_search(lambda t: float(loss({n: weights[n] + t * delta[n] for n in names})) - E0)[2])

        ours, ref = best(search, forward, args.rounds)
    print(f"critical sharpness line search      {ours * 1e3:8.0f} ms = {ours / ref:5.2f} forwards, {used[-1]} "
          f"evaluated (goal ≤ 10: {'ok' if used[-1] <= cv.FORWARDS else 'OVER'})")
    import tempfile

    from engine.ascode.generate import write_code

    with tempfile.TemporaryDirectory() as folder:
        for part in (None, "direct"):
            ours, ref = best(lambda: write_code(Path(folder) / "g.py", cfg, after, x, y, "blocks.0.W_Q", part, 1,
                                                "benchmark"), backward, args.rounds)
            print(f"code, blocks.0.W_Q {'whole G ' if part is None else 'one class'}         {ours * 1e3:8.0f} ms = "
                  f"{ours / ref:5.2f} backwards")


if __name__ == "__main__":
    main()
