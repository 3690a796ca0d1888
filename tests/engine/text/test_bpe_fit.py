"""Fitting a BPE with bounded work, where Stop and Ctrl-C reach it (issue 41; engine/text/pieces.py's
`fit_pieces` and `fit_sample`, engine/text/bpe_fit.py). The bound is on the work, not the clock: no
pre-token the library sees in a fit is longer than MAX_PRETOKEN + 1 characters, and no fit sees more than
FIT_CHARS characters, whatever the corpus; a fit in a child process ends when it is cancelled."""

from __future__ import annotations

import multiprocessing
import random

import pytest
from tokenizers import pre_tokenizers

from engine.configs.config import DataConfig
from engine.text import bpe_fit
from engine.text.bpe import BPETokenizer
from engine.text.corpus import shakespeare_text
from engine.text.pieces import FIT_CHARS, MAX_PRETOKEN, Cancelled, fit_pieces, fit_sample, pieces
from engine.text.tokenizer import fit_tokenizer

_RNG = random.Random(41)


def _random(alphabet: str, n: int) -> str:
    # one `choices` call, not a `choice` per character: LONG_WORDS is built when the module is collected, in
    # every worker, and 400,000 `choice` calls took 0.22 s there (load 13 on 2 cores), `choices` 0.06 s
    return "".join(_RNG.choices(alphabet, k=n))


# texts whose pre-tokens (GPT-2's pattern) are as long as the text: one long word of each kind
LONG_WORDS = {
    "one letter": "a" * 200_000,
    "DNA on one line": _random("ACGT", 200_000),
    "a number": _random("0123456789", 100_000),
    "punctuation": "!?" * 50_000,
    "spaces": " " * 100_000,
    "spaces and tabs": " \t" * 50_000,
    "newlines after spaces": " \n" * 50_000,
    "letters with no space": _random("日本語の文字", 100_000),
    "emoji": "🙂🙃" * 30_000,
    "a word between lines": "word\n" + "x" * 100_000 + "\nword",
}


def longest_pretoken(piece: str) -> int:
    return max((b - a for _, (a, b) in pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str(piece)),
               default=0)


@pytest.mark.parametrize("case", LONG_WORDS, ids=list(LONG_WORDS))
def test_no_pretoken_a_fit_sees_is_longer_than_the_bound(case):
    text = LONG_WORDS[case]
    cut = fit_pieces(text)
    assert "".join(cut) == text
    assert max(longest_pretoken(p) for p in cut) <= MAX_PRETOKEN + 1


def test_ordinary_text_is_fitted_on_the_pieces_that_encode_it():
    text = shakespeare_text()[:300_000]
    assert fit_pieces(text) == pieces(text)


def test_a_long_corpus_is_fitted_on_a_bounded_sample_the_same_every_time():
    text = "to be or not to be\n" * (FIT_CHARS // 10)
    sample = fit_sample(text)
    assert len(sample) == FIT_CHARS and sample == fit_sample(text) and fit_sample(text[:1000]) == text[:1000]


@pytest.mark.parametrize("case", ["one letter", "DNA on one line", "spaces and tabs", "letters with no space"])
def test_a_long_word_corpus_is_fitted(case):
    tok = BPETokenizer.fit(LONG_WORDS[case], 300)
    sample = LONG_WORDS[case][:5000]
    assert tok.decode(tok.encode(sample)) == sample


def test_fitting_in_pieces_gives_the_merges_the_whole_text_gives():
    """Ordinary text is cut only where it tokenizes as the whole: the same word counts, the same merges."""
    from tokenizers import Tokenizer, decoders, models, trainers

    text = shakespeare_text()[:200_000]
    whole = Tokenizer(models.BPE())
    whole.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    whole.decoder = decoders.ByteLevel()
    whole.train_from_iterator([text], trainers.BpeTrainer(vocab_size=400, show_progress=False, special_tokens=[],
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    assert BPETokenizer.fit(text, 400).vocab == BPETokenizer(whole).vocab


# ---- where Stop and Ctrl-C reach it --------------------------------------------------------------------------

@pytest.fixture
def large() -> str:
    """More than a fit in the caller's process may take: it goes to a child process."""
    text = _random("ACGT \n", bpe_fit.IN_PROCESS_CHARS + 1000)
    assert len(fit_sample(text)) > bpe_fit.IN_PROCESS_CHARS
    return text


def children() -> set[int]:
    """This process's live children: a worker that ran GUI tests before keeps its analysis and forms
    processes, so a fit is checked by the children it adds, not by there being none."""
    return {p.pid for p in multiprocessing.active_children()}


def test_a_fit_in_a_child_process_gives_the_same_tokenizer(monkeypatch):
    """With the bound lowered, so that a short text goes to the child: the text's size is not the point here, and
    each of the two fits of `large` took ~0.7 s of CPU."""
    monkeypatch.setattr(bpe_fit, "IN_PROCESS_CHARS", 50_000)
    text = _random("ACGT \n", bpe_fit.IN_PROCESS_CHARS + 1000)
    assert len(fit_sample(text)) > bpe_fit.IN_PROCESS_CHARS
    before = children()
    assert bpe_fit.fit(text, 300) == bpe_fit.fit_dict(text, 300)
    assert children() <= before


def test_stop_ends_a_fit_and_its_process(large):
    asked = []

    def cancel() -> bool:
        asked.append(1)
        return len(asked) >= 2  # once the child has started
    before = children()
    with pytest.raises(Cancelled):
        bpe_fit.fit(large, 50_000, cancel)
    assert children() <= before


def test_ctrl_c_ends_the_fit_s_process_too(large):
    def interrupt() -> bool:
        raise KeyboardInterrupt  # what Ctrl-C raises in the waiting process
    before = children()
    with pytest.raises(KeyboardInterrupt):
        bpe_fit.fit(large, 50_000, interrupt)
    assert children() <= before


def test_a_config_s_fit_reaches_stop_through_fit_tokenizer(large):
    with pytest.raises(Cancelled):
        fit_tokenizer(large, DataConfig(tokenizer="bpe", max_vocab=5000), cancel=lambda: True)


def test_a_fit_s_memory_is_stated_for_its_size():
    assert bpe_fit.fit_memory(100) == 256 << 20
    assert bpe_fit.fit_memory(FIT_CHARS) == bpe_fit.fit_memory(10 * FIT_CHARS) == bpe_fit.FIT_MEMORY
