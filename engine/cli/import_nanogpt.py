"""`gpt-explorer import nanogpt OUT_DIR --run DIR [--meta PATH]`: a nanoGPT checkpoint opened as a run; the
`import` command itself, whose `hf` kind lives in engine/cli/_import_hf.py.

The work is engine.importers.nanogpt's; this module only parses the command line and prints what was written.
"""

from __future__ import annotations

import argparse

from ._import_hf import add_kind as add_hf_kind


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import", help="turn another program's checkpoint into a run directory",
        description="Write a run directory of ours from another program's checkpoint, so that its heatmaps, "
                    "forms, coefficients and samples can be looked at here.")
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    n = kinds.add_parser(
        "nanogpt", help="a nanoGPT out_dir (ckpt.pt and its dataset's meta.pkl)",
        description="Import a nanoGPT out_dir: ckpt.pt is read with torch.load(weights_only=True) and the "
                    "character vocabulary from meta.pkl without running pickled code. Character-level models "
                    "import, with biases (bias=True, GPT-2's layout) or without (bias=False); a BPE checkpoint, "
                    "which has no meta.pkl, does not (import a GPT-2 folder with: gpt-explorer import hf).")
    n.add_argument("out_dir", metavar="OUT_DIR", help="nanoGPT's out_dir (holding ckpt.pt), or the ckpt.pt itself")
    n.add_argument("--run", metavar="DIR", required=True, help="the run directory to write (must not exist yet)")
    n.add_argument("--meta", metavar="PATH",
                   help="the dataset's meta.pkl; default: beside ckpt.pt, then data/<dataset>/meta.pkl")
    n.set_defaults(func=run)
    add_hf_kind(kinds)


def run(args: argparse.Namespace) -> int:
    from ..configs.sizes import human_count, parameter_count
    from ..importers.nanogpt import import_nanogpt

    done = import_nanogpt(args.out_dir, args.run, args.meta)
    m = done.config.model
    print(f"imported {args.out_dir} at step {done.step}: {m.n_layer} layers, {m.n_head} heads, d_model "
          f"{m.d_model}, context {m.n_ctx}, {m.vocab_size} characters, "
          f"{human_count(parameter_count(m))} parameters")
    print(f"vocabulary from {done.meta}; probe batch from {done.probe_source}")
    print(f"run written to {done.run_dir} (sample with: gpt-explorer sample --run {done.run_dir})")
    return 0
