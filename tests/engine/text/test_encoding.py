"""Tokenising a corpus at the library's speed (issue 38): cut into pieces that tokenize as the whole does,
encoded in parallel, kept in the token cache in the narrowest integer type, so the second time reads it back
(engine/text/pieces.py, engine/text/bpe.py, engine/text/encoded.py, engine/text/token_cache.py,
engine/text/prepared.py)."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from engine.configs.config import DataConfig
from engine.text import token_cache
from engine.text.bpe import END_OF_TEXT, BPETokenizer
from engine.text.corpus import CorpusError, shakespeare_text
from engine.text.data import Dataset
from engine.text.encoded import fitted_tokenizer, token_ids
from engine.text.pieces import Cancelled, cut_points, pieces
from engine.text.prepared import CorpusFacts, check_corpus, prepare_corpus
from engine.text.tokenizer import CharTokenizer, WordTokenizer, id_dtype

# what GPT-2's pattern treats differently: runs of spaces, newlines after spaces, other whitespace, letters
# outside ASCII, digits, contractions, marks, and a special token
HARD = [*"ab c\n\n  \t's", "é", "日", "\u00a0", "\u2028", "\u0085", "\r", "7", "'ll", " \n", "\r\n", ".!?", "<|", "|>",
        END_OF_TEXT, "\n", "\n", "Z"]


def random_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(HARD) for _ in range(n))


@pytest.fixture(scope="module")
def bpe() -> BPETokenizer:
    tok = BPETokenizer.fit(shakespeare_text()[:100_000], 500)
    tok._tok.add_special_tokens([END_OF_TEXT])
    return BPETokenizer(tok._tok)


@pytest.mark.parametrize("seed", range(6))
def test_pieces_tokenize_as_the_whole_text_does(bpe, seed):
    rng = random.Random(seed)
    for _ in range(40):
        text = random_text(rng, rng.randint(0, 2000))
        whole = bpe._tok.encode(text).ids
        cut = pieces(text, every=rng.randint(1, 64))
        assert "".join(cut) == text
        assert [i for p in cut for i in bpe._tok.encode(p).ids] == whole
        assert bpe.encode_corpus(text, np.int16).tolist() == whole


def test_a_cut_falls_only_between_a_newline_and_visible_characters():
    text = "a\nb  \nc \n d\n\ne!\n?x"
    assert [text[c - 2:c + 1] for c in cut_points(text, every=1)] == ["a\nb", "!\n?"]


def test_the_bundled_plays_encode_as_one_library_call_does_in_the_narrowest_type(bpe):
    text = shakespeare_text()[:400_000]
    ids = bpe.encode_corpus(text, id_dtype(bpe.vocab_size))
    assert ids.dtype == np.int16 and len(pieces(text)) > 4
    assert ids.tolist() == bpe._tok.encode(text).ids
    assert id_dtype(50_257) == np.int32 and id_dtype(32_768) == np.int16


def test_a_stop_ends_the_encoding(bpe):
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 1
    with pytest.raises(Cancelled):
        bpe.encode_corpus(shakespeare_text()[:2_000_000], np.int16, cancel)


# ---- the cache: once per (corpus, tokenizer) -------------------------------------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(token_cache.ENV, str(tmp_path / "cache"))
    return tmp_path / "cache" / "tokens"


def test_the_second_time_reads_the_fit_and_the_ids_back(cache, monkeypatch):
    text = shakespeare_text()[:50_000]
    cfg = DataConfig(tokenizer="bpe", max_vocab=400)
    first = Dataset.build(cfg, 16, text)

    def never(*a, **k):
        raise AssertionError("fitted or encoded again")
    monkeypatch.setattr(BPETokenizer, "fit", never)
    monkeypatch.setattr(BPETokenizer, "encode_corpus", never)
    again = Dataset.build(cfg, 16, text)
    assert again.tokenizer.vocab == first.tokenizer.vocab and again.chars_per_token == first.chars_per_token
    assert again.train.equal(first.train) and again.val.equal(first.val) and again.train.dtype == first.train.dtype
    assert sorted(p.name.split("-")[0] for p in cache.iterdir()) == ["ids", "tokenizer"]
    with pytest.raises(AssertionError, match="again"):  # another corpus is another entry
        Dataset.build(cfg, 16, text + "x")


@pytest.mark.parametrize("damage", ["truncated", "another dtype", "an id outside", "not an array"])
def test_a_damaged_entry_is_computed_again(cache, damage):
    text = shakespeare_text()[:30_000]
    tok = CharTokenizer.fit(text)
    want = token_ids(tok, text)
    (path,) = cache.glob("ids-*.npy")
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "another dtype":
        np.save(path, want.astype(np.int64))
    elif damage == "an id outside":
        np.save(path, np.full_like(want, tok.vocab_size))
    else:
        path.write_bytes(b"\x00" * 100)
    assert np.array_equal(token_ids(tok, text), want) and np.array_equal(np.load(path), want)


def test_a_damaged_fit_is_fitted_again(cache):
    text = shakespeare_text()[:30_000]
    cfg = DataConfig(tokenizer="word", max_vocab=300)
    want = fitted_tokenizer(text, cfg).vocab
    (path,) = cache.glob("tokenizer-*.json")
    path.write_text('{"kind": "word", "vocab": ["<unk>", "x", "x"]}', encoding="utf-8")
    assert fitted_tokenizer(text, cfg).vocab == want


def test_the_cache_keeps_the_entries_read_last_within_its_budget(cache):
    text = shakespeare_text()[:20_000]
    toks = [WordTokenizer.fit(text, n) for n in (100, 200, 300)]
    for tok in toks:
        token_ids(tok, text)
    sizes = sorted(p.stat().st_size for p in cache.iterdir())
    token_ids(toks[0], text)  # read: now the newest
    token_cache.prune(budget=sizes[0] + sizes[1])
    assert len(list(cache.iterdir())) == 2
    assert token_cache.load_ids(token_cache.text_digest(text), toks[0].digest, toks[0].vocab_size, np.int16) is not None


def test_a_write_cut_short_leaves_nothing_the_cache_keeps(cache):
    """A process killed while it wrote an entry leaves its temporary file; the next write deletes it once it is
    older than any write takes (STALE_WRITE), and leaves a younger one, being written now, alone."""
    text = shakespeare_text()[:20_000]
    cache.mkdir(parents=True)
    stale, writing = cache / ".ids-x.npy.tmp123", cache / ".ids-y.npy.tmp456"
    for path in (stale, writing):
        path.write_bytes(b"\x93NUMPY" + b"\x00" * 1000)
    old = stale.stat().st_mtime - token_cache.STALE_WRITE - 60
    os.utime(stale, (old, old))
    token_ids(CharTokenizer.fit(text), text)
    assert not stale.exists() and writing.exists()


def test_an_unwritable_cache_only_means_the_work_is_done_again(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(token_cache.ENV, str(blocked))
    text = shakespeare_text()[:20_000]
    assert len(token_ids(CharTokenizer.fit(text), text)) == len(text)


# ---- prepare_corpus: the app's one call, off its GUI process -----------------------------------------------------

def test_prepare_corpus_leaves_what_training_reads_in_the_cache(cache, tmp_path, monkeypatch):
    corpus = tmp_path / "plays.txt"
    corpus.write_text(shakespeare_text()[:40_000], encoding="utf-8")
    cfg = DataConfig(corpus=str(corpus), tokenizer="bpe", max_vocab=350)
    facts = prepare_corpus(cfg, 32)
    assert isinstance(facts, CorpusFacts) and (facts.vocab_size, facts.kind) == (350, "bpe") and facts.n_tokens > 1000

    def never(*a, **k):
        raise AssertionError("fitted or encoded again")
    monkeypatch.setattr(BPETokenizer, "fit", never)
    monkeypatch.setattr(BPETokenizer, "encode_corpus", never)
    data = Dataset.build(cfg, 32)
    assert len(data.train) + len(data.val) == facts.n_tokens
    with pytest.raises(CorpusError, match="too short"):
        prepare_corpus(cfg, 100_000)


def test_the_builders_check_encodes_only_the_pieces_it_needs_and_agrees_with_preparing(cache, tmp_path, monkeypatch):
    """The builder's check of a corpus (engine/configs/inspection.py) fits the tokenizer but encodes only the first
    pieces of a long corpus: after an import, all the plays in the run's tokens were seconds of CPU before the
    parameter count showed. It refuses exactly the contexts that preparing the corpus for Train refuses, with
    the same line, and a corpus it had to encode whole leaves its ids where Train reads them."""
    corpus = tmp_path / "plays.txt"
    corpus.write_text(shakespeare_text()[:140_000], encoding="utf-8")
    text = corpus.read_text(encoding="utf-8")
    cfg = DataConfig(corpus=str(corpus), tokenizer="bpe", max_vocab=300)
    encoded: list[int] = []
    real = BPETokenizer.encode_corpus

    def counted(self, piece, dtype, cancel=None):
        encoded.append(len(piece))
        return real(self, piece, dtype, cancel)
    monkeypatch.setattr(BPETokenizer, "encode_corpus", counted)
    assert check_corpus(cfg, 64) == 300
    assert len(pieces(text)) == 3 and encoded == [len(pieces(text)[0])]
    tok = fitted_tokenizer(text, cfg)
    assert token_cache.load_ids(token_cache.text_digest(text), tok.digest, 300, id_dtype(300)) is None  # Train's to do
    n_tokens = len(real(tok, text, id_dtype(300)))
    most = next(n for n in range(n_tokens, 0, -1) if n_tokens - max(int(n_tokens * 0.1), n + 1) >= n + 1)
    checked = {}
    for n_ctx in (most // 4, most, most + 1):  # the first piece, all of them, too long: encoded whole
        encoded.clear()
        try:
            check_corpus(cfg, n_ctx)
        except CorpusError as e:
            checked[n_ctx] = str(e)
        else:
            checked[n_ctx] = None
        assert sum(encoded) <= len(text) and (sum(encoded) < len(text)) == (n_ctx < most)
        kept = token_cache.load_ids(token_cache.text_digest(text), tok.digest, 300, id_dtype(300))
        assert (kept is not None) == (n_ctx > most)  # encoded whole: its ids are kept, as preparing keeps them
    assert list(checked.values()) == [None, None, f"corpus is too short: {n_tokens} tokens, but a context of "
                                      f"{most + 1} needs at least {2 * (most + 2)} (train and validation)"]
    for n_ctx, said in checked.items():
        try:
            prepared = prepare_corpus(cfg, n_ctx).vocab_size
        except CorpusError as e:
            prepared = str(e)
        assert prepared == (300 if said is None else said)


def test_preparing_a_corpus_loads_no_torch(tmp_path):
    """The builder and Train make a corpus ready in a child process of its own (engine/child_job.py); importing
    torch there cost ~1.2 s of CPU per child, ten times the work of a small corpus."""
    from tests.fresh_imports import loaded_by

    corpus = tmp_path / "plays.txt"
    corpus.write_text(shakespeare_text()[:20_000], encoding="utf-8")
    code = ("from engine.configs.config import DataConfig\nfrom engine.text.prepared import prepare_corpus\n"
            f"prepare_corpus(DataConfig(corpus={str(corpus)!r}, tokenizer='bpe', max_vocab=300), 16)")
    assert loaded_by(code, ("torch",), tmp_path) == []
