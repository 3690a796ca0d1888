"""Tokenising the bundled plays with a 50,257-token byte-level BPE: the library's one call, our first time (an
empty token cache) and our second time (the ids read back), alternating in one process.

    python -m benchmarks.tokenize [--rounds 3] [--tokenizer FOLDER_OR_FILE]

Goal (issue 38): the first time ≤ 10 s on 2 cores, the second ≤ 1 s. The tokenizer is a GPT-2-sized folder's
tokenizer.json (`benchmarks/gpt2_small.py --keep DIR` makes one) or, without --tokenizer, a BPE fitted here on
the plays and padded with special tokens to GPT-2's 50,257 ids, as that script does. The reference is one
`tokenizers` call on the whole text, what the trainer did before (the issue saw 143.7 s at load 20). Each
round runs the three in turn (the cache emptied before "first"); the script prints each one's median wall and
CPU seconds, the ratios of the medians to the reference, and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

GPT2_VOCAB = 50_257


def load_tokenizer(path: str | None):
    from engine.text.bpe import END_OF_TEXT, BPETokenizer
    from engine.text.corpus import shakespeare_text
    from engine.text.tokenizer import tokenizer_from_dict

    if path:
        file = Path(path) / "tokenizer.json" if Path(path).is_dir() else Path(path)
        return tokenizer_from_dict(json.loads(file.read_text(encoding="utf-8")), str(file), lenient=True)
    tok = BPETokenizer.fit(shakespeare_text(), GPT2_VOCAB - 1)
    unused = [f"<|unused{i}|>" for i in range(GPT2_VOCAB - 1 - tok.vocab_size)]
    tok._tok.add_special_tokens([*unused, END_OF_TEXT])  # GPT-2's size; no text encodes to them
    return BPETokenizer(tok._tok)


def timed(fn) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokenizer", metavar="PATH", help="a tokenizer.json, or a folder holding one")
    args = ap.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="token-cache-"))
    os.environ["GPT_EXPLORER_CACHE"] = str(cache)
    from engine.text.corpus import shakespeare_text
    from engine.text.encoded import token_ids
    from engine.training.thread_policy import usable_cores

    text = shakespeare_text()
    tok = load_tokenizer(args.tokenizer)
    print(f"{len(text):,} characters, {tok.vocab_size:,} tokens in the vocabulary, {usable_cores()} cores; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    runs: dict[str, list[tuple[float, float]]] = {"library, one call": [], "first": [], "second": []}
    try:
        for r in range(args.rounds):
            wall, cpu, whole = timed(lambda: tok._tok.encode(text).ids)
            runs["library, one call"].append((wall, cpu))
            shutil.rmtree(cache / "tokens", ignore_errors=True)
            wall, cpu, ids = timed(lambda: token_ids(tok, text))
            runs["first"].append((wall, cpu))
            assert ids.tolist() == whole, "the ids differ from the library's"
            del whole
            wall, cpu, again = timed(lambda: token_ids(tok, text))
            runs["second"].append((wall, cpu))
            assert (again == ids).all()
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1][0]:.2f} s" for k, v in runs.items())
                  + f"; load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    ref = statistics.median(w for w, _ in runs["library, one call"])
    for name, times in runs.items():
        wall, cpu = statistics.median(w for w, _ in times), statistics.median(c for _, c in times)
        print(f"{name}: {wall:.2f} s wall, {cpu:.2f} s CPU, {wall / ref:.3f}x the library's one call")
    print(f"ids: {len(ids):,} of {ids.dtype} ({ids.nbytes / 1e6:.1f} MB); load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
