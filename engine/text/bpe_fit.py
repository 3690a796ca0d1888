"""Fitting a byte-level BPE with bounded work and memory, where Stop and Ctrl-C reach it.

The library's trainer counts every pair inside every distinct pre-token and updates them at each merge, so a
pre-token's cost grows with the square of its length: a corpus that is one long "word" (a megabyte of `a`, or
of ACGT on one line) was still fitting after 300 s, and the call cannot be interrupted, since the library
returns to Python only at its end. Three bounds make the work predictable (the first two are
engine/text/pieces.py's `fit_pieces` and `fit_sample`, which `BPETokenizer.fit` applies):

- **Pre-tokens of at most `MAX_PRETOKEN` + 1 characters.** Every pre-token of GPT-2's pattern is either a run of
  whitespace or holds no space or newline except one leading space, so the text is also cut inside any run of
  `MAX_PRETOKEN` whitespace characters (Python's `\\s`, which holds the pattern's) and inside any stretch of
  `MAX_PRETOKEN` characters with no space or newline. Ordinary text has no such stretch; a megabyte of `a` is
  fitted as 4,000 words of 256 letters, in a second.
- **At most `FIT_CHARS` characters fitted.** A longer corpus (up to 2 GB) is fitted on `SAMPLES` evenly spaced
  stretches of it that add up to `FIT_CHARS`, the same ones every time; the whole corpus is then encoded with
  the result. The bundled plays (4.96 M characters) are fitted whole.
- **A child process for any fit of more than `IN_PROCESS_CHARS` characters**, spawned, which `cancel` (the app's
  Stop) or Ctrl-C ends at once. Its memory is bounded with the text it is given: `FIT_MEMORY` is what the
  fit of `FIT_CHARS` of the worst text measured here asked for (docs/figures.md), stated by `fit_memory`.
  Smaller fits run in the caller's process; they take at most about a second.
"""

from __future__ import annotations

import multiprocessing
import signal

from .bpe import BPETokenizer
from .corpus import CorpusError
from .pieces import FIT_CHARS, Cancel, Cancelled, fit_sample

IN_PROCESS_CHARS = 1_000_000  # a fit of fewer characters runs in the caller's process
FIT_MEMORY = 2 << 30          # bytes: the most a fit of FIT_CHARS was measured to ask for, rounded up
POLL_S = 0.1                  # how often the waiting process looks at `cancel`


def fit_dict(text: str, vocab_size: int) -> dict:
    """The fitted tokenizer's dict (the library's JSON), fitted in this process within the bounds above."""
    return BPETokenizer.fit(text, vocab_size).to_dict()


def fit_memory(chars: int) -> int:
    """What a fit of `chars` characters may ask for, in bytes (FIT_MEMORY scaled; at least 256 MB)."""
    return max(256 << 20, FIT_MEMORY * min(chars, FIT_CHARS) // FIT_CHARS)


def fit(text: str, vocab_size: int, cancel: Cancel = None) -> dict:
    """The tokenizer dict a BPE of `vocab_size` fits on `text`, within the bounds above; `Cancelled` as soon as
    `cancel()` is true, and KeyboardInterrupt (Ctrl-C) ends the child too."""
    sample = fit_sample(text)
    if len(sample) <= IN_PROCESS_CHARS:
        if cancel is not None and cancel():
            raise Cancelled("stopped before the tokenizer was fitted")
        return fit_dict(sample, vocab_size)
    ctx = multiprocessing.get_context("spawn")  # never fork: the app has threads whose locks a fork would copy
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(sample, vocab_size, send), name="BPE fit", daemon=True)
    child.start()
    send.close()
    try:
        while not receive.poll(POLL_S):
            if cancel is not None and cancel():
                raise Cancelled("stopped while fitting the tokenizer")
            if not child.is_alive() and not receive.poll(0):
                raise CorpusError(f"fitting the tokenizer stopped unexpectedly (exit code {child.exitcode}); it may "
                                  f"have run out of memory (a fit of {len(sample):,} characters may ask for "
                                  f"{fit_memory(len(sample)) >> 20:,} MB)")
        ok, result = receive.recv()
    finally:
        if child.is_alive():
            child.terminate()
        child.join()
        receive.close()
    if not ok:
        raise CorpusError(result)
    return result


def _child(text: str, vocab_size: int, send) -> None:
    """In the child: fit and send (True, dict), or (False, one line). Ctrl-C is the parent's to act on."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        send.send((True, fit_dict(text, vocab_size)))
    except Exception as e:  # noqa: BLE001 — one line for the parent; the library's errors have no common type
        send.send((False, f"the tokenizer could not be fitted: {str(e).splitlines()[0][:160] if str(e) else type(e).__name__}"))
    finally:
        send.close()
