"""Forms engine scaling (issue 3; docs/figures.md#goals), printed as two tables.

1. Derivation of the note's chain, depth 1–6: words (the network and its Leibniz monomials), rules (every
   term pulled back, docs/rules.md), LaTeX (every coefficient printed). Each depth runs cold in its own
   interpreter, since words are interned process-wide. Goal: ≤ 1 s at depth 6 (2184 terms).
2. Evaluation as a multiple of one autograd backward on the same batch (the backward alone, its forward
   not timed; likewise our forward cache is built outside the timing and shown apart). Goals: every term of
   the depth-4 chain on a 64-token probe ≤ 20×; route classes of a GPT weight ≤ 10×. Runs alternate with
   the backward they are compared with, and the best of each is taken, so a busy neighbour weighs on both.

    python benchmarks/forms_scaling.py [--rounds 7] [--dtype float32|float64] [--threads 1]
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

from engine.forms import chain, evaluate, gpt, verify  # noqa: E402
from engine.forms.derive import Forms  # noqa: E402
from engine.forms.printing import latex  # noqa: E402
from engine.model.gpt import GPT  # noqa: E402
from engine.configs.presets import load_preset  # noqa: E402


def derive_once(depth: int) -> dict:
    t0 = time.perf_counter()
    net = chain.encoder(depth)
    f = Forms(net)
    for df in net.definitions:
        if df.differentiate:
            net.monomials(df.atom.name)
    t1 = time.perf_counter()
    terms = f.terms(limit=None)
    t2 = time.perf_counter()
    chars = sum(len(latex(t.G)) for t in terms)
    t3 = time.perf_counter()
    return {"depth": depth, "terms": len(terms), "words": t1 - t0, "rules": t2 - t1, "latex": t3 - t2,
            "chars": chars}


def derivation_table() -> list[dict]:
    rows = []
    for depth in range(1, 7):
        out = subprocess.run([sys.executable, __file__, "--derive-once", str(depth)], capture_output=True,
                             text=True, check=True)
        rows.append(json.loads(out.stdout))
    return rows


def best_ratio(ours, reference, rounds: int) -> tuple[float, float]:
    """(best time of ours, best time of the reference), alternating."""
    a, b = [], []
    for _ in range(rounds):
        gc.collect()
        b.append(reference())
        t = time.perf_counter()
        ours()
        a.append(time.perf_counter() - t)
    return min(a), min(b)


def chain_rows(rounds: int, dtype, d: int) -> list[tuple]:
    net = chain.encoder(4, d=d, d_k=d // 2, d_v=d)
    f = Forms(net)
    f.terms(limit=None)  # the derivation runs once per architecture, not per snapshot
    w = {k: v.to(dtype) for k, v in chain.random_weights(net, 0).items()}
    x0, target = chain.random_batch(net, batch=1, n=64, seed=1, dtype=dtype)

    def backward():
        ww = {k: v.clone().requires_grad_(True) for k, v in w.items()}
        loss = verify.chain_loss(net.spec, ww, x0, target)
        t = time.perf_counter()
        loss.backward()
        return time.perf_counter() - t

    t = time.perf_counter()
    bound = evaluate.Bound(net, *chain.leaves(net, w, x0, target, dtype))
    fwd = time.perf_counter() - t
    what = f"chain depth 4, d={d}, 1×64 tokens"
    rows = []
    for label, fn, goal in (("every term (240)", lambda: evaluate.terms(bound, f, limit=None), 20),
                            ("route classes", lambda: evaluate.classes(bound, f), None),
                            ("total", lambda: evaluate.total(bound, f), None)):
        ours, ref = best_ratio(fn, backward, rounds)
        rows.append((what, label, ours, ref, goal, fwd))
    return rows


def gpt_rows(preset: str, rounds: int, dtype, weight: str) -> list[tuple]:
    exp = load_preset(preset)
    cfg = exp.model
    B, T = exp.train.probe_batch, cfg.n_ctx
    w = {k: v.to(dtype) for k, v in verify.random_gpt_weights(cfg, 0).items()}
    x, y = verify.random_probe(cfg, B, T, 2)
    model = GPT(cfg).to(dtype).eval()
    model.load_state_dict(w)

    def backward():
        model.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        t = time.perf_counter()
        loss.backward()
        return time.perf_counter() - t

    f = gpt.derive(cfg)
    t = time.perf_counter()
    bound = gpt.bind(f.net, w, x, y, dtype)
    fwd = time.perf_counter() - t
    what = f"{preset}, {B}×{T} tokens"
    cases = [(f"route classes of {weight}", lambda: evaluate.classes(bound, f, weight), 10),
             ("route classes of every weight", lambda: evaluate.classes(bound, f), None),
             ("total", lambda: evaluate.total(bound, f), None)]
    if f.count() <= 2500:
        cases.insert(0, (f"every term ({f.count()})", lambda: evaluate.terms(bound, f), None))
    rows = []
    for label, fn, goal in cases:
        ours, ref = best_ratio(fn, backward, rounds)
        rows.append((what, label, ours, ref, goal, fwd))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=7, help="alternating timings of each case (best is kept)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--threads", type=int, default=1, help="torch threads for both sides (default 1)")
    p.add_argument("--derive-once", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.derive_once is not None:
        print(json.dumps(derive_once(args.derive_once)))
        return 0
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)

    print("Derivation of the note's chain (cold, one interpreter per depth); goal ≤ 1 s at depth 6")
    print(f"{'depth':>5} {'terms':>6} {'words':>8} {'rules':>8} {'LaTeX':>8} {'total':>8} {'LaTeX chars':>12}")
    ok = True
    for r in derivation_table():
        total = r["words"] + r["rules"] + r["latex"]
        print(f"{r['depth']:>5} {r['terms']:>6} {r['words']:>7.3f}s {r['rules']:>7.3f}s {r['latex']:>7.3f}s "
              f"{total:>7.3f}s {r['chars']:>12}")
        if r["depth"] == 6:
            ok &= total <= 1.0

    print()
    print(f"Evaluation vs one autograd backward ({args.dtype}, {args.threads} thread(s), best of {args.rounds})")
    print(f"{'case':<34} {'what':<34} {'ours':>9} {'backward':>9} {'ratio':>7} {'goal':>6} {'fwd cache':>10}")
    rows = chain_rows(args.rounds, dtype, 16) + chain_rows(args.rounds, dtype, 64)
    rows += gpt_rows("seed-chain", args.rounds, dtype, "blocks.0.W_Q")
    rows += gpt_rows("tiny", args.rounds, dtype, "blocks.0.W_Q")
    rows += gpt_rows("nanogpt-cpu", args.rounds, dtype, "blocks.0.W_Q")
    for what, label, ours, ref, goal, fwd in rows:
        ratio = ours / ref
        if goal is not None:
            ok &= ratio <= goal
        print(f"{what:<34} {label:<34} {ours * 1e3:>7.1f}ms {ref * 1e3:>7.2f}ms {ratio:>6.1f}× "
              f"{('≤' + str(goal) + '×') if goal else '':>6} {fwd * 1e3:>8.1f}ms")
    print()
    print("all goals met" if ok else "SOME GOALS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
