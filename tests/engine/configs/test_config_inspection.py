"""The builder's inspection and memory limits for long contexts: nothing is built to count a model, and a
32768-token context is refused beside n_ctx before anything is allocated."""

from __future__ import annotations

import pytest
import torch

from engine.configs import limits
from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.configs.inspection import inspect_config
from engine.configs.sizes import memory_estimate_bytes


def long_context(n_ctx: int, batch_size: int = 4) -> ExperimentConfig:
    return ExperimentConfig(model=ModelConfig(n_layer=1, n_head=2, d_model=16, d_ff=32, n_ctx=n_ctx),
                            train=TrainConfig(batch_size=batch_size), data=DataConfig(corpus="shakespeare"))


@pytest.fixture
def no_modules(monkeypatch):
    """Building any torch module fails: what runs under it allocates no model."""
    def refuse(*_args, **_kwargs):
        raise AssertionError("a torch module was built")
    monkeypatch.setattr(torch.nn.Module, "__init__", refuse)


def test_a_32768_context_is_inspected_without_building_a_model(no_modules):
    inspection = inspect_config(long_context(32768))
    assert inspection.corpus_problem is None and inspection.vocab_size == inspection.model.vocab_size > 0
    assert inspection.model.n_ctx == 32768


@pytest.mark.parametrize("n_ctx", [32768, 100_000])
def test_a_long_context_is_refused_beside_n_ctx_on_a_16_gib_machine(monkeypatch, no_modules, n_ctx):
    monkeypatch.setattr(limits, "machine_memory", lambda: 16 << 30)
    cfg = long_context(n_ctx)
    problems = cfg.validate() or limits.training_problems(cfg)
    assert problems and problems[0].field == "model.n_ctx", problems


def test_the_estimates_grow_with_the_square_of_the_context():
    small, large = long_context(32768), long_context(65536)
    # masks and attention maps are T²: doubling T nearly quadruples both estimates
    assert memory_estimate_bytes(large) > 3.9 * memory_estimate_bytes(small)
    assert limits.model_memory_bytes(large.model) > 3.9 * limits.model_memory_bytes(small.model)
    # the masks alone of a 32768 context (what the builder once allocated to count): over 5 GiB
    assert limits.model_memory_bytes(small.model) > 5 * 2 ** 30


def test_the_masks_a_model_keeps_are_within_what_the_limit_counts():
    n = 512
    model = long_context(n).model
    from engine.model.gpt import GPT

    gpt = GPT(model)
    kept = sum(b.numel() * b.element_size() for name, b in gpt.named_buffers() if name.startswith("mask"))
    assert kept == 5 * n * n <= limits.MASK_PEAK_BYTES * n * n


def test_training_that_fits_in_more_than_half_the_memory_is_a_warning_not_a_problem():
    cfg = long_context(16)
    need = memory_estimate_bytes(cfg)
    warning = limits.memory_warning(cfg, device_memory=int(need * 1.5))
    assert warning is not None and "67%" in warning
    assert limits.training_problems(cfg, device_memory=int(need * 1.5)) == []
    assert limits.memory_warning(cfg, device_memory=4 * need) is None
    assert limits.memory_warning(cfg, device_memory=need - 1) is None  # over it, a problem instead
    assert limits.training_problems(cfg, device_memory=need - 1)[0].field in {
        "model.n_ctx", "train.batch_size", "model.d_model"}


def test_a_run_shown_gives_the_builder_its_own_vocabulary_and_parameter_count(tmp_path):
    """Issue 38: an imported GPT-2 showed the vocabulary a BPE fitted on the draft's corpus would give (46,455 on
    the plays) and its parameter count, not its own 50,257 tokens."""
    import dataclasses
    import json

    transformers = pytest.importorskip("transformers")
    from engine.configs.sizes import parameter_count
    from engine.importers.hugging_face import import_hf
    from engine.rundir.runs import Run
    from engine.text.bpe import BPETokenizer
    from engine.text.corpus import shakespeare_text

    tok = BPETokenizer.fit(shakespeare_text()[:50_000], 400)
    transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=400, n_positions=16, n_embd=16, n_layer=1,
                                                         n_head=2)).save_pretrained(tmp_path / "gpt2")
    (tmp_path / "gpt2" / "tokenizer.json").write_text(json.dumps(tok.to_dict()), encoding="utf-8")
    run = import_hf(tmp_path / "gpt2", tmp_path / "run").run_dir
    small = tmp_path / "small.txt"  # too little text for a fit to reach 400 tokens
    small.write_text("to be, or not to be: that is the question.\n" * 60, encoding="utf-8")
    cfg = Run(run).config
    cfg = cfg.replace(data=dataclasses.replace(cfg.data, corpus=str(small)))
    fitted = inspect_config(cfg)
    assert fitted.vocab_size < 400
    own = inspect_config(cfg, run)
    assert own.vocab_size == 400 and own.corpus_problem is None
    assert parameter_count(own.model) == parameter_count(Run(run).config.model)
    another = cfg.replace(data=dataclasses.replace(cfg.data, tokenizer="char"))  # a new vocabulary: fitted
    assert inspect_config(another, run).vocab_size == len(set(small.read_text(encoding="utf-8")))


def test_an_inspection_whose_process_the_exiting_app_ends_is_one_line(monkeypatch):
    """inspect_apart waits on a child; the app's exit ends every child (child_job._end_all), and the waiting
    thread then says so in one line (it raised IndexError from an empty outcome)."""
    import threading

    from engine import child_job
    from engine.configs.inspection import inspect_apart
    from engine.errors import UserError

    started = threading.Event()
    real_init = child_job.ChildJob.__init__

    def noted(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        started.set()

    monkeypatch.setattr(child_job.ChildJob, "__init__", noted)
    got = []

    def inspect():
        try:
            got.append(inspect_apart(long_context(64).replace(data=DataConfig(corpus="shakespeare", tokenizer="bpe",
                                                                               max_vocab=300))))
        except UserError as e:
            got.append(e)

    waiting = threading.Thread(target=inspect)
    waiting.start()
    assert started.wait(120)
    child_job._end_all()
    waiting.join(120)
    assert len(got) == 1 and isinstance(got[0], UserError) and "was ended" in str(got[0])
