"""`gpt-explorer import hf FOLDER --run DIR`: a Hugging Face GPT-2-family folder opened as a run.

The work is engine.importers.hugging_face's; this module only parses the command line and prints what was written. It
is one kind of the `import` command, which engine/cli/import_nanogpt.py declares.
"""

from __future__ import annotations

import argparse


def add_kind(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser(
        "hf", help="a Hugging Face GPT-2-family folder (config.json, weights, tokenizer)",
        description="Import a GPT-2-family model folder as written by save_pretrained or served by the hub: "
                    "config.json, model.safetensors or pytorch_model.bin (read with weights_only=True), and "
                    "tokenizer.json or vocab.json + merges.txt. Nothing is downloaded. The run starts at step 0 "
                    "with the pretrained weights; fine-tune it with: gpt-explorer train --run DIR [--corpus FILE].")
    p.add_argument("folder", metavar="FOLDER", help="the model folder on disk")
    p.add_argument("--run", metavar="DIR", required=True, help="the run directory to write (new or empty)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..configs.sizes import human_count, parameter_count
    from ..importers.hugging_face import import_hf

    done = import_hf(args.folder, args.run)
    m = done.config.model
    print(f"imported {args.folder}: {m.n_layer} layers, {m.n_head} heads, d_model {m.d_model}, context "
          f"{m.n_ctx}, {m.vocab_size:,} BPE tokens, {human_count(parameter_count(m))} parameters")
    print(f"weights from {done.weights_file.name}, tokenizer from {done.tokenizer_source}")
    if done.ignored:  # only the vocabulary, merges and special tokens of a tokenizer file are used
        print(f"ignored in {done.tokenizer_source}: {'; '.join(done.ignored[:4])}"
              f"{f' and {len(done.ignored) - 4} more' if len(done.ignored) > 4 else ''}")
    print(f"run written to {done.run_dir} (sample with: gpt-explorer sample --run {done.run_dir}; fine-tune "
          f"with: gpt-explorer train --run {done.run_dir} --corpus FILE)")
    return 0
