"""resolve: the corpus's tokenizer sets the vocabulary, and configs compare without it."""

from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig
from engine.text.data import Dataset
from engine.configs.resolve import resolve, unresolved, with_vocab


def test_resolve_takes_the_vocabulary_from_the_tokenizer():
    cfg = ExperimentConfig(model=ModelConfig(vocab_size=65, n_ctx=4), data=DataConfig(corpus="unused"))
    dataset = Dataset.build(cfg.data, 4, "abcabcabd " * 40)
    resolved = resolve(cfg, dataset)
    assert resolved.model.vocab_size == dataset.tokenizer.vocab_size == 5
    assert unresolved(resolved) == unresolved(cfg) and resolved != cfg


def test_with_vocab_takes_an_experiment_or_a_model():
    cfg = ExperimentConfig()
    assert with_vocab(cfg, 7).model.vocab_size == 7
    assert with_vocab(cfg.model, 7) == with_vocab(cfg, 7).model
    assert unresolved(cfg.model).vocab_size == 0
