"""A run continues on its own tokenizer and keeps its word when its settings are edited (issue 41, issue 38;
engine/training/continuation.py, Trainer.resume): an edit of training settings continues the run from its
weights, only a new shape or vocabulary needs a new run (and says what it would not keep); a fine-tuned
character import, whose corpus does not hold exactly the model's characters, is extended and resumed to the
bit at the default thread count."""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path

import pytest
import torch

from engine.importers.nanogpt import import_nanogpt
from engine.rundir.runs import Run, RunError
from engine.text.corpus import shakespeare_text
from engine.text.data import Dataset
from engine.training.acceleration import autocast
from engine.training.continuation import CONTINUE, NEW, plan_edit
from engine.training.trainer import Trainer
from tests.engine.importers.test_nanogpt import ARGS, CHARS, write_out_dir
from tests.engine.training.test_determinism import logged
from tests.engine.training.test_trainer import small_config

IMPORTED_AT = 250


@pytest.fixture(scope="module")
def char_import(tmp_path_factory) -> tuple[Path, Path]:
    """A nanoGPT character model imported at step 250, and a corpus that uses only some of its characters."""
    base = tmp_path_factory.mktemp("nanogpt")
    write_out_dir(base / "out", iter_num=IMPORTED_AT)
    import_nanogpt(base / "out", base / "import")
    keep = set(CHARS) - {"Z", "?", ";"}
    text = "".join(c if c in keep else " " for c in shakespeare_text()[:30_000])
    assert set(text) < set(CHARS)
    (base / "corpus.txt").write_text(text, encoding="utf-8")
    return base / "import", base / "corpus.txt"


def copy_of(run: Path, tmp_path: Path, name: str) -> Path:
    shutil.copytree(run, tmp_path / name)
    return tmp_path / name


def interrupted(run: Path, after: int, **edits) -> None:
    """Train `run` (with `edits`) for `after` steps and stop as Ctrl-C does: the generator closed, a checkpoint."""
    gen = Trainer.resume(run, **edits).steps()
    for report in gen:
        if report.step == after:
            break
    gen.close()


def assert_same(a: Path, b: Path, step: int) -> None:
    wa, wb = Run(a).load_weights(step), Run(b).load_weights(step)
    assert [k for k in wa if not torch.equal(wa[k], wb[k])] == []
    assert logged(a) == logged(b)


def test_a_fine_tuned_character_import_is_extended_and_resumed_to_the_bit(char_import, tmp_path):
    imported, corpus = char_import
    assert Run(imported).config.train.torch_threads == 0  # the default: every core
    straight, stopped = copy_of(imported, tmp_path, "straight"), copy_of(imported, tmp_path, "stopped")
    end = IMPORTED_AT + 6
    # each end of training evaluates and samples: 4 batches and 20 characters, not the import's 20 and 200
    short = edit(Run(imported).config, "train", eval_batches=4, sample_tokens=20)
    list(Trainer.resume(straight, config=short, corpus=str(corpus), steps=end).steps())
    interrupted(stopped, IMPORTED_AT + 2, config=short, corpus=str(corpus), steps=end)  # a Ctrl-C'd fine-tune
    resumed = Trainer.resume(stopped)  # its own tokenizer: the corpus lacks three of its characters
    assert resumed.step == IMPORTED_AT + 2 and resumed.tokenizer.vocab == CHARS
    list(resumed.steps())
    assert_same(straight, stopped, end)
    list(Trainer.resume(straight, steps=end + 4).steps())  # extended, straight through
    interrupted(stopped, end + 1, steps=end + 4)  # extended, stopped and resumed
    list(Trainer.resume(stopped).steps())
    assert_same(straight, stopped, end + 4)


def test_a_corpus_the_run_s_vocabulary_cannot_encode_is_named(char_import, tmp_path):
    imported, _ = char_import
    other = tmp_path / "other.txt"
    other.write_text("to be, or not to be: 日本\n" * 2000, encoding="utf-8")
    with pytest.raises(Exception, match="characters not in the vocabulary: '日本'"):
        Trainer.resume(copy_of(imported, tmp_path, "run"), corpus=str(other), steps=IMPORTED_AT + 2)


# ---- what an edit means ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("trained") / "run"
    list(Trainer(small_config(steps=6, checkpoint_every=3), path, text=shakespeare_text()[:20_000]).steps())
    return path


def edit(cfg, section: str, **changes):
    return cfg.replace(**{section: dataclasses.replace(getattr(cfg, section), **changes)})


CONTINUING = {"the learning rate": ("train", {"lr": 1e-4}), "more steps": ("train", {"steps": 60}),
              "another optimizer": ("train", {"optimizer": "sgd"}), "the batch": ("train", {"batch_size": 3}),
              "dropout": ("model", {"dropout": 0.2}), "the corpus": ("data", {"corpus": "shakespeare"}),
              "the device": ("train", {"device": "cpu"})}
NEEDING_A_NEW_RUN = {"a wider model": ("model", {"d_model": 48}, "W_E changes from (59, 32) to (59, 48), and "),
                     "a layer more": ("model", {"n_layer": 2}, "appears, and 11 more"),
                     "another vocabulary": ("data", {"tokenizer": "word"}, "data.tokenizer makes another vocabulary"),
                     "a seed": ("train", {"seed": 5}, "the seed draws"),
                     "fewer steps": ("train", {"steps": 3}, "fewer than the 6 steps")}


@pytest.mark.parametrize("case", CONTINUING, ids=list(CONTINUING))
def test_an_edit_of_training_continues_the_run(case, trained):
    section, changes = CONTINUING[case]
    plan = plan_edit(trained, edit(Run(trained).config, section, **changes))
    assert plan.action == CONTINUE and set(plan.changed) == {f"{section}.{k}" for k in changes}


@pytest.mark.parametrize("case", NEEDING_A_NEW_RUN, ids=list(NEEDING_A_NEW_RUN))
def test_an_edit_the_weights_cannot_follow_needs_a_new_run_and_says_what_it_loses(case, trained):
    section, changes, why = NEEDING_A_NEW_RUN[case]
    plan = plan_edit(trained, edit(Run(trained).config, section, **changes))
    assert plan.action == NEW and why in plan.reason and plan.lost == ("the weights trained for 6 steps",)
    with pytest.raises(RunError, match="cannot continue with this edit"):
        Trainer.resume(trained, config=edit(Run(trained).config, section, **changes))


def test_an_import_s_seed_may_change_until_it_trains_and_a_new_run_would_lose_its_weights(char_import, tmp_path):
    imported, corpus = char_import
    cfg = Run(imported).config
    assert plan_edit(imported, edit(cfg, "train", seed=9)).action == CONTINUE
    plan = plan_edit(imported, edit(cfg, "model", n_layer=3))
    assert plan.action == NEW and plan.lost == (f"the imported weights (from {(imported.parent / 'out').resolve()})",)
    run = copy_of(imported, tmp_path, "run")
    interrupted(run, IMPORTED_AT + 1, corpus=str(corpus), steps=IMPORTED_AT + 3)
    plan = plan_edit(run, edit(Run(run).config, "train", seed=9))
    assert plan.action == NEW and plan.lost[1] == "their 1 step of fine-tuning"


def test_edited_hyperparameters_reach_the_optimizer_and_are_recorded(trained, tmp_path):
    run = copy_of(trained, tmp_path, "run")
    cfg = edit(Run(run).config, "train", steps=8, weight_decay=0.3, beta2=0.9)
    trainer = Trainer.resume(run, config=cfg, text=shakespeare_text()[:20_000])
    groups = trainer.optimizer.param_groups
    assert {g["betas"][1] for g in groups} == {0.9} and 0.3 in {g["weight_decay"] for g in groups}
    list(trainer.steps())
    changes = Run(run).changes()
    assert changes == [{"step": 6, "changed": {"train.steps": [6, 8], "train.weight_decay": [0.1, 0.3],
                                               "train.beta2": [0.99, 0.9]}}]


# ---- an imported GPT-2, edited, fine-tunes from its weights ------------------------------------------------------

@pytest.fixture(scope="module")
def gpt2_import(tmp_path_factory) -> Path:
    """A one-layer GPT-2-family folder with a 300-token BPE of its own, imported (step 0)."""
    transformers = pytest.importorskip("transformers")
    from engine.importers.hugging_face import import_hf
    from engine.text.bpe import BPETokenizer

    base = tmp_path_factory.mktemp("gpt2")
    tok = BPETokenizer.fit(shakespeare_text()[:30_000], 300)
    torch.manual_seed(1)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=300, n_positions=32, n_embd=32, n_layer=1,
                                                                 n_head=2))
    with torch.no_grad():  # far from a fresh model's ln V: a fine-tune from random weights would show at once
        model.transformer.wte.weight.mul_(30)
    model.save_pretrained(base / "gpt2")
    (base / "gpt2" / "tokenizer.json").write_text(__import__("json").dumps(tok.to_dict()), encoding="utf-8")
    return import_hf(base / "gpt2", base / "run").run_dir


def test_an_imported_gpt2_edited_and_trained_starts_from_its_weights(gpt2_import, tmp_path):
    run = copy_of(gpt2_import, tmp_path, "run")
    cfg = Run(run).config
    cfg = edit(cfg, "train", steps=30, report_every=1, lr=1e-4)  # Steps 20 -> 30, as a user would in the builder
    corpus = tmp_path / "corpus.txt"  # a short text: encoding the whole plays (in processes) was 3 s of the test's 3
    corpus.write_text(shakespeare_text()[:20_000], encoding="utf-8")
    cfg = edit(cfg, "data", corpus=str(corpus))
    assert plan_edit(run, cfg).action == CONTINUE
    trainer = Trainer.resume(run, config=cfg)
    first = next(trainer.steps())
    data = Dataset.build(cfg.data, cfg.model.n_ctx, tokenizer=Run(run).tokenizer)
    x, y = data.get_batch("train", cfg.train.batch_size, cfg.model.n_ctx, torch.Generator().manual_seed(cfg.train.seed))
    with torch.no_grad(), autocast(trainer.device, trainer.autocast_dtype):  # bf16 where `auto` takes it
        imported_loss = float(Run(run).build_model(0)(x, y)[1])
    assert first.step == 1 and first.train_loss == pytest.approx(imported_loss, rel=1e-5)
    assert abs(first.train_loss - math.log(300)) > 1.0


def test_a_fine_tuned_bpe_import_is_resumed_to_the_bit(gpt2_import, tmp_path):
    """As the character import above, with an imported byte-level BPE: its fine-tune's checkpoints name the
    import's tokenizer, which every resume reads back and holds them to."""
    straight, stopped = copy_of(gpt2_import, tmp_path, "straight"), copy_of(gpt2_import, tmp_path, "stopped")
    corpus = tmp_path / "corpus.txt"  # a short text: encoding the whole plays is not the point here
    corpus.write_text(shakespeare_text()[:20_000], encoding="utf-8")
    list(Trainer.resume(straight, steps=4, corpus=str(corpus)).steps())
    interrupted(stopped, 2, steps=4, corpus=str(corpus))  # a Ctrl-C'd fine-tune
    resumed = Trainer.resume(stopped)
    assert resumed.step == 2 and resumed.tokenizer.digest == Run(gpt2_import).tokenizer.digest
    list(resumed.steps())
    assert_same(straight, stopped, 4)
