"""The part of a generated file that computes its coefficient and checks it (docs/readings.md#as-code).

Like numpy_gpt.py it imports nothing but the standard library and NumPy, and it is copied into the generated
file verbatim, below the model; the lines marked "# not in the generated file" are left out there (in the file,
numpy_gpt's functions are its own). It reads FILE.npz beside the file: the config, the weights at the step, the
probe batch and the number GPT Explorer's forms engine computed (`expected`). WEIGHT and PART are set at the top
of the generated file: PART is None for the whole G, or a route class.
"""

import argparse
import json
import sys

import numpy as np

from .numpy_gpt import backward, forward, loss, torch_loss, use_G  # not in the generated file

WEIGHT, PART = "W_E", None  # not in the generated file
TOLERANCE = 1e-10   # against autograd and the forms engine (float64)
FD_TOLERANCE = 1e-6  # against finite differences of the loss, which keep ~1e-9 of round-off and truncation …
ROUND_OFF = 10       # … where ⟨G, M⟩ is not small against the loss: else their round-off, ~3 ε |L| / h, is more,
#                      and the tolerance adds it tenfold (a fresh model's W_Q, ‖G‖ 3.5e-6 against a loss of 6:
#                      1.1e-3 of ⟨G, M⟩ along a random M, estimated 1.6e-3, which read as FAILED for a G exact
#                      to 1e-15)


def load(path):
    """(cfg, W, x, y, expected) from the .npz written beside this file."""
    data = np.load(path)
    cfg = json.loads(str(data["config"]))
    W = {k[2:]: data[k].astype(np.float64) for k in data.files if k.startswith("w:")}
    return cfg, W, data["x"], data["y"], data["expected"]


def coefficient(cfg, W, x, y, part=None):
    """The part asked for (None: the whole G = −∂L/∂W), and every class when it is a class."""
    _, cache = forward(cfg, W, x, y)
    uses = backward(cfg, W, cache, [WEIGHT], classes=part is not None)[WEIGHT]
    parts = use_G(uses, W[WEIGHT].shape)
    return (sum(parts.values()) if part is None else parts[part]), parts


def directional(cfg, W, x, y, M):
    """(−dL along M on WEIGHT by central differences at steps h and h/2, extrapolated (Richardson): what
    ⟨G, M⟩ must be, to about 1e-9 of it; the round-off it may carry besides, ROUND_OFF · ε · |L| / h: the losses'
    own rounding, ε |L|, divided by the steps and weighed by Richardson's (4 · 2 + 1) / 3, about 3 ε |L| / h)."""
    h = 1e-4 * max(1.0, float(np.abs(W[WEIGHT]).max())) / float(np.abs(M).max())
    seen = []

    def central(step):
        up, down = dict(W), dict(W)
        up[WEIGHT], down[WEIGHT] = W[WEIGHT] + step * M, W[WEIGHT] - step * M
        a, b = loss(cfg, up, x, y), loss(cfg, down, x, y)
        seen.extend((abs(a), abs(b)))
        return -(a - b) / (2 * step)

    value = (4 * central(h / 2) - central(h)) / 3
    return value, ROUND_OFF * float(np.finfo(np.float64).eps) * max(seen) / h


def relative(a, b):
    scale = float(np.abs(b).max())
    return float(np.abs(a - b).max()) / scale if scale > 0 else float(np.abs(a - b).max())


def main(argv=None):
    ap = argparse.ArgumentParser(description="compute the coefficient and check it")
    ap.add_argument("--npz", default=None, help="the weights and probe batch (default: this file's .npz)")
    ap.add_argument("--out", default=None, help="also write the coefficient to this .npy")
    ap.add_argument("--no-differences", action="store_true",
                    help="skip the finite differences (eight more forward passes)")
    args = ap.parse_args(argv)
    path = args.npz or __file__[: -len(".py")] + ".npz"
    cfg, W, x, y, expected = load(path)
    value, parts = coefficient(cfg, W, x, y, PART)
    name = "G" if PART is None else f"route class {PART} of G"
    print(f"{name} of {WEIGHT}: shape {value.shape}, norm {float(np.sqrt((value * value).sum())):.6g}")
    ok = True

    def report(what, err, tol):
        nonlocal ok
        ok = ok and err <= tol
        print(f"  {what}: relative error {err:.2e} ({'ok' if err <= tol else 'FAILED'}, tolerance {tol:.2g})")

    whole = sum(parts.values())
    if PART is not None:
        alone, _ = coefficient(cfg, W, x, y)
        report("the classes add up to the whole G", relative(whole, alone), TOLERANCE)
    report("against GPT Explorer's forms engine (.npz)", relative(value, expected), TOLERANCE)
    rng = np.random.default_rng(0)
    directions = () if args.no_differences else (("along G", whole),
                                                   ("along a random direction", rng.standard_normal(whole.shape)))
    for label, M in directions:
        want = float((whole * M).sum())
        got, noise = directional(cfg, W, x, y, M)
        report(f"G {label} against finite differences of the loss", abs(got - want) / abs(want),
               FD_TOLERANCE + noise / abs(want))
    try:
        import torch
    except ImportError:
        print("  against torch autograd: torch is not installed, skipped")
    else:
        Wt = {k: torch.tensor(v, requires_grad=(k == WEIGHT)) for k, v in W.items()}
        grad = torch.autograd.grad(torch_loss(cfg, Wt, x, y), Wt[WEIGHT])[0]
        report("the whole G against torch autograd", relative(whole, -grad.numpy()), TOLERANCE)
    if args.out:
        np.save(args.out, value)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
