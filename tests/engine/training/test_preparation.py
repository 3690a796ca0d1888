"""What is made ready in a child process before Train (engine/training/preparation.py): nothing for a character
vocabulary, the fit and the ids of a BPE or word vocabulary, and with a resumed run's own tokenizer."""

from __future__ import annotations

import dataclasses

from engine.configs.config import DataConfig
from engine.text.prepared import prepare_corpus
from engine.training.preparation import corpus_preparation


def test_a_character_vocabulary_needs_no_process():
    assert corpus_preparation(DataConfig(), 64) is None
    assert corpus_preparation(DataConfig(), 64, run_dir="runs/tiny") is None


def test_a_bpe_or_word_corpus_is_prepared_with_the_tokenizer_the_trainer_will_use():
    bpe = DataConfig(tokenizer="bpe", max_vocab=300)
    fresh = corpus_preparation(bpe, 64)
    assert fresh.func is prepare_corpus and fresh.args == (bpe, 64) and fresh.keywords == {"run_dir": None}
    assert corpus_preparation(bpe, 64, run_dir="runs/gpt2").keywords == {"run_dir": "runs/gpt2"}  # its own
    word = dataclasses.replace(bpe, tokenizer="word")
    assert corpus_preparation(word, 64, run_dir="runs/w").keywords == {"run_dir": "runs/w"}
