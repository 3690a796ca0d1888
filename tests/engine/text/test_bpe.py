"""Byte-level BPE tokens: the tokenizer itself, bits per character, and a BPE run that trains, samples,
resumes exactly and opens with its saved tokenizer.json (engine/text/bpe.py, engine/text/data.py, engine/training/trainer.py)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, pre_tokenizers

from engine.text.bpe import _BYTES, BPETokenizer
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.text.corpus import CorpusError, shakespeare_text
from engine.text.data import Dataset
from engine.text.tokenizer import tokenizer_from_dict
from engine.model.probes import visible_tokens
from engine.figures.run_curves import load_curves
from engine.rundir.runs import Run
from engine.training.trainer import Trainer, generate_text


@pytest.fixture(scope="module")
def text() -> str:
    return shakespeare_text()[:60_000]


@pytest.fixture(scope="module")
def bpe(text) -> BPETokenizer:
    return BPETokenizer.fit(text, 400)


def bpe_config(**train) -> ExperimentConfig:
    t = dict(steps=16, batch_size=4, lr=3e-3, min_lr=3e-4, warmup_steps=2, eval_every=8, eval_batches=2,
             checkpoint_every=100, snapshot_every=8, sample_tokens=12, torch_threads=1)
    t.update(train)
    return ExperimentConfig(name="bpe", model=ModelConfig(n_layer=1, n_head=2, d_model=32, d_ff=64, n_ctx=16,
                                                          dropout=0.1),
                            train=TrainConfig(**t), data=DataConfig(corpus="test text", tokenizer="bpe", max_vocab=400))


def test_byte_table_is_the_librarys_alphabet():
    assert set(_BYTES) == set(pre_tokenizers.ByteLevel.alphabet()) and sorted(_BYTES.values()) == list(range(256))


def test_fit_gives_the_vocabulary_size_asked_for_and_round_trips_any_text(bpe):
    assert bpe.vocab_size == 400 and len(set(bpe.vocab)) == 400
    for s in ("ROMEO: But soft!", "naïve café — ünïcode ✓ 日本", "\n\n  tabs\tand\r\nreturns"):
        assert bpe.decode(bpe.encode(s)) == s


def test_fitting_twice_gives_the_same_merges(text, bpe):
    assert BPETokenizer.fit(text, 400).to_dict() == bpe.to_dict()


def test_labels_show_the_text_a_token_stands_for_with_a_visible_space(bpe):
    ids = bpe.encode("the king\n")
    labels = visible_tokens(bpe, ids)
    assert "".join(labels) == "the␣king↵" and not any("Ġ" in s or "Ċ" in s for s in labels)
    assert bpe.token_strings(bpe.encode("日")) == ["\\xe6", "\\x97", "\\xa5"]  # a character's bytes
    cafe = BPETokenizer.fit("café " * 50, 300)
    assert cafe.token_strings(cafe.encode("café café")) == ["café", " café"]
    # the base vocabulary's control bytes print nothing (a box in the Tokens tab's bars): drawn as their escape
    controls = [i for i in range(bpe.vocab_size) if not any(c.isprintable() for c in bpe.token_strings([i])[0])]
    labels = visible_tokens(bpe, controls)
    assert len(controls) > 20 and all(s.isprintable() for s in labels)
    assert visible_tokens(bpe, bpe.encode("\x03\x7f\n")) == ("\\x03", "\\x7f", "↵")


def test_saved_dict_is_the_librarys_json_and_loads_back(bpe):
    d = json.loads(json.dumps(bpe.to_dict()))
    assert Tokenizer.from_str(json.dumps(d)).encode("my lord").ids == bpe.encode("my lord")
    again = tokenizer_from_dict(d)
    assert again.kind == "bpe" and again.vocab == bpe.vocab
    with pytest.raises(CorpusError):
        tokenizer_from_dict({"model": {"type": "nonsense"}})


def test_a_tokenizer_built_from_its_file_lists_the_librarys_tokens_with_a_special_one(bpe):
    d = bpe.to_dict()
    d["added_tokens"] = [{"id": 400, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}]
    built = BPETokenizer.from_dict(d)  # its tokens come from the checked file, not from the library's table
    assert built.vocab == BPETokenizer(built._tok).vocab and built.vocab[400] == "<|endoftext|>"


def test_the_digest_is_the_json_it_always_hashed_written_a_slice_at_a_time(bpe, monkeypatch):
    """Runs keep the digest in their weights' headers, so the text hashed is what one json.dumps wrote; it is
    written a few items at a time (one dumps of GPT-2's merges held the interpreter lock ~0.1 s)."""
    import hashlib

    from engine.text import bpe_file
    from engine.text.bpe_file import read_tokenizer_json

    parts = read_tokenizer_json(bpe.to_dict(), "x")
    tokens = [t for t, _ in sorted(parts.vocab.items(), key=lambda kv: kv[1])]
    body = {"kind": "bpe", "vocab": tokens, "special": [], "merges": [list(m) for m in parts.merges]}
    whole = hashlib.sha256(json.dumps(body, ensure_ascii=False).encode("utf-8")).hexdigest()
    dumped, dumps = [], json.dumps

    def counted(value, **kw):
        dumped.append(len(value) if isinstance(value, list) else 0)
        return dumps(value, **kw)
    monkeypatch.setattr(bpe_file, "DIGEST_ITEMS", 7)
    monkeypatch.setattr(bpe_file.json, "dumps", counted)
    assert parts.digest == whole
    assert max(dumped) == 7


def test_char_offset_is_where_each_token_starts(bpe):
    s = "QUEEN: O, my lord!\nKING: Ay. café 日本"
    ids = bpe.encode_corpus(s, np.int16)
    starts = [bpe.char_offset(s, ids, k) for k in range(len(ids))]
    assert starts == [a for a, _ in bpe._tok.encode(s).offsets]
    pieces = [s[a:b] for a, b in zip(starts, [*starts[1:], len(s)]) if a < b]
    assert "".join(pieces) == s


def test_bits_per_character_use_each_splits_characters_per_token(text):
    data = Dataset.build(DataConfig(tokenizer="bpe", max_vocab=400), 16, text)
    n_train = len(data.train)
    cut = int(data.tokenizer._tok.encode(text).offsets[n_train][0])
    assert data.chars_per_token == pytest.approx((cut / n_train, (len(text) - cut) / len(data.val)))
    assert data.chars_per_token[0] > 1.5  # 400 BPE tokens already cover nearly two characters each
    assert data.bits_per_char(math.log(2), "train") == pytest.approx(1 / data.chars_per_token[0])
    chars = Dataset.build(DataConfig(tokenizer="char"), 16, text)
    assert chars.chars_per_token == (1.0, 1.0)
    assert chars.bits_per_char(1.0, "val") == pytest.approx(1 / math.log(2))


def test_a_vocabulary_smaller_than_the_bytes_is_refused_for_bpe():
    problems = DataConfig(tokenizer="bpe", max_vocab=100).validate()
    assert [p.field for p in problems] == ["data.max_vocab"]


def test_a_bpe_run_trains_logs_bits_per_character_and_samples(text, tmp_path):
    trainer = Trainer(bpe_config(), tmp_path / "run", text=text)
    reports = list(trainer.steps())
    assert trainer.cfg.model.vocab_size == 400
    ratio = trainer.dataset.chars_per_token
    last = reports[-1]
    assert last.train_bpc == pytest.approx(last.train_loss / math.log(2) / ratio[0])
    assert last.val_bpc == pytest.approx(last.val_loss / math.log(2) / ratio[1])
    rows = Run(tmp_path / "run").metrics()
    assert all(r["train_bpc"] == pytest.approx(r["train_loss"] / math.log(2) / ratio[0]) for r in rows)
    assert [r["step"] for r in rows if r["val_bpc"] is not None] == [8, 16]
    run = Run(tmp_path / "run")
    assert run.tokenizer.kind == "bpe" and run.tokenizer.vocab == trainer.tokenizer.vocab
    assert Tokenizer.from_file(str(tmp_path / "run" / "tokenizer.json")).get_vocab_size() == 400
    sample = trainer.sample("KING:", 20, seed=1)
    assert sample and isinstance(sample, str)
    from_nothing = trainer.sample("", 20, seed=1)  # starts after a newline, as a character run's does
    assert from_nothing == generate_text(trainer.model, trainer.tokenizer, "\n", 20, seed=1)
    steps, bpc = load_curves(tmp_path / "run").series("val_bpc")  # Run curves plots it
    assert steps.tolist() == [8, 16] and bpc[-1] == pytest.approx(last.val_bpc)


def test_a_bpe_run_resumes_exactly_with_its_saved_tokenizer(text, tmp_path, monkeypatch):
    cfg = bpe_config()
    whole = Trainer(cfg, tmp_path / "whole", text=text)
    expected = [r.train_loss for r in whole.steps()]
    first = Trainer(cfg, tmp_path / "split", text=text)
    gen = first.steps()
    head = list(itertools.islice(gen, 7))
    gen.close()
    del first
    import engine.text.bpe

    def refit(*a, **k):
        raise AssertionError("a BPE run resumes with the tokenizer it saved, not a new fit")
    monkeypatch.setattr(engine.text.bpe.BPETokenizer, "fit", refit)
    torch.manual_seed(0)
    resumed = Trainer.resume(tmp_path / "split", text=text)
    tail = list(resumed.steps())
    assert [r.train_loss for r in head + tail] == expected
    a, b = whole.weights_copy(), resumed.weights_copy()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_squared_error_runs_log_no_bits_per_character(text, tmp_path):
    cfg = bpe_config(steps=2, eval_every=2)
    cfg = cfg.replace(model=dataclasses.replace(cfg.model, loss="squared_error"))
    last = list(Trainer(cfg, text=text).steps())[-1]
    assert last.train_bpc is None and last.val_bpc is None and np.isfinite(last.train_loss)
