"""Tokenizers, the deterministic split and seeded batches."""

import pytest
import torch

from engine.configs.config import DataConfig
from engine.text.corpus import CorpusError
from engine.text.data import Dataset, corpus_vocabulary
from engine.text.tokenizer import UNK, CharTokenizer, WordTokenizer, id_dtype, tokenizer_from_dict

TEXT = "To be, or not to be: that is the question.\n" * 40


def test_char_tokenizer_round_trips_and_refuses_unknown_characters():
    tok = CharTokenizer.fit(TEXT)
    assert tok.decode(tok.encode(TEXT)) == TEXT
    assert tok.vocab == sorted(set(TEXT))
    with pytest.raises(CorpusError):
        tok.encode("Z")


def test_word_tokenizer_caps_vocabulary_by_frequency_with_unk():
    tok = WordTokenizer.fit(TEXT + "rare", max_vocab=6)
    assert tok.vocab[0] == UNK and tok.vocab_size == 6
    ids = tok.encode("rare be")
    assert ids[0] == 0 and tok.vocab[ids[-1]] == "be"
    assert tok.decode(tok.encode("to be")) in ("to be", f"{UNK} be", f"to{UNK}be")


def test_tokenizers_survive_their_dict_form():
    for tok in (CharTokenizer.fit(TEXT), WordTokenizer.fit(TEXT, 50)):
        again = tokenizer_from_dict(tok.to_dict())
        assert again.vocab == tok.vocab and again.encode(TEXT) == tok.encode(TEXT)


def test_split_is_deterministic_ninety_ten():
    a = Dataset.build(DataConfig(), 8, text=TEXT)
    b = Dataset.build(DataConfig(), 8, text=TEXT)
    assert torch.equal(a.train, b.train) and torch.equal(a.val, b.val)
    assert len(a.val) == int(len(TEXT) * 0.1)
    assert a.tokenizer.decode(torch.cat([a.train, a.val])) == TEXT


def test_batches_are_seeded_next_token_windows():
    ds = Dataset.build(DataConfig(), 8, text=TEXT)
    x1, y1 = ds.get_batch("train", 5, 8, torch.Generator().manual_seed(3))
    x2, _ = ds.get_batch("train", 5, 8, torch.Generator().manual_seed(3))
    assert x1.shape == (5, 8) and torch.equal(x1, x2)
    assert torch.equal(x1[:, 1:], y1[:, :-1])


def test_a_corpus_is_kept_narrow_and_its_batches_are_the_same_int64_windows():
    ds = Dataset.build(DataConfig(), 8, text=TEXT)
    assert ds.train.dtype == torch.int16 and ds.val.dtype == torch.int16
    ids = torch.tensor(ds.tokenizer.encode(TEXT), dtype=torch.int64)
    g = torch.Generator().manual_seed(5)
    ix = torch.randint(len(ds.train) - 8, (4,), generator=torch.Generator().manual_seed(5))
    x, y = ds.get_batch("train", 4, 8, g)
    assert x.dtype == y.dtype == torch.int64
    assert torch.equal(x, torch.stack([ids[i:i + 8] for i in ix])) and torch.equal(y[:, -1], ids[ix + 8])
    assert [id_dtype(v).itemsize for v in (256, 32768, 32769, 50257)] == [2, 2, 4, 4]  # GPT-2's BPE: int32


def test_corpus_shorter_than_context_is_refused():
    with pytest.raises(CorpusError, match="too short"):
        Dataset.build(DataConfig(), 64, text="short text")


@pytest.mark.parametrize("tokenizer", ["char", "word", "bpe"])
def test_the_builders_vocabulary_is_the_datasets_without_encoding_the_corpus(tokenizer):
    text = "".join(f"{w} said the {w}, and went on.\nANOTHER:\n" for w in ("king", "queen", "fool", "dog") * 40)
    cfg = DataConfig(tokenizer=tokenizer, max_vocab=300)
    assert corpus_vocabulary(cfg, 16, text) == Dataset.build(cfg, 16, text).tokenizer.vocab_size
    for n_ctx in (len(text) // 2, len(text)):  # the same refusal as a Dataset's, at the same lengths
        with pytest.raises(CorpusError, match="too short") as built:
            Dataset.build(cfg, n_ctx, text)
        with pytest.raises(CorpusError, match="too short") as counted:
            corpus_vocabulary(cfg, n_ctx, text)
        assert str(counted.value) == str(built.value)
