"""Tokenizer files are data, not configuration (issue 41; engine/text/bpe_file.py, engine/text/data.py): every
setting a tokenizer.json may carry, fed to every command that reads one. A run's own file with a setting that
is not ours is refused in one line naming the file and the setting, by every command, and the process goes on
(the library never sees the file); an import leaves such settings out and says so; the settings that change
no token id are accepted; a vocabulary that cannot be the model's is refused before anything is built."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.text.bpe import BPETokenizer
from engine.text.bpe_file import read_tokenizer_json
from engine.text.corpus import CorpusError, shakespeare_text
from engine.text.tokenizer import tokenizer_from_dict
from engine.rundir.runs import Run
from engine.training.trainer import Trainer
from tests import fresh_imports
from tests.engine.cli.test_cli_train import one_error_line, run_cli

ROOT = Path(__file__).resolve().parents[3]
VOCAB = 300

# each setting a tokenizer.json can hold that is not ours: (where in the file, its value, the name a message uses)
REFUSED = {
    "truncation to one token": (("truncation",), {"direction": "Right", "max_length": 1, "strategy": "LongestFirst",
                                                 "stride": 0}, "truncation"),
    "padding to 10^9": (("padding",), {"strategy": {"Fixed": 1_000_000_000}, "direction": "Right", "pad_id": 0,
                                        "pad_type_id": 0, "pad_token": "!", "pad_to_multiple_of": None}, "padding"),
    "a normalizer that multiplies the text": (("normalizer",), {"type": "Replace", "pattern": {"String": "e"},
                                                                "content": "e" * 10_000}, "normalizer"),
    "a lowercasing normalizer": (("normalizer",), {"type": "Lowercase"}, "normalizer"),
    "a prefix space": (("pre_tokenizer",), {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                            "use_regex": True}, "pre_tokenizer"),
    "another pre-tokenizer": (("pre_tokenizer",), {"type": "Whitespace"}, "pre_tokenizer"),
    "a template post-processor": (("post_processor",), {"type": "TemplateProcessing", "single": [], "pair": [],
                                                        "special_tokens": {}}, "post_processor"),
    "another decoder": (("decoder",), {"type": "WordPiece", "prefix": "##", "cleanup": True}, "decoder"),
    "BPE dropout": (("model", "dropout"), 0.5, "model.dropout"),
    "an unknown token": (("model", "unk_token"), "!", "model.unk_token"),
    "a subword prefix": (("model", "continuing_subword_prefix"), "##", "model.continuing_subword_prefix"),
    "a word suffix": (("model", "end_of_word_suffix"), "</w>", "model.end_of_word_suffix"),
    "byte fallback": (("model", "byte_fallback"), True, "model.byte_fallback"),
    "ignored merges": (("model", "ignore_merges"), True, "model.ignore_merges"),
    "an option we do not know": (("model", "cache_capacity"), 10 ** 12, "model.cache_capacity"),
    "a setting we do not know": (("extra",), {"anything": 1}, "extra"),
    "a special token that strips spaces": (("added_tokens", 0, "lstrip"), True, "lstrip"),
    "a special token for whole words": (("added_tokens", 0, "single_word"), True, "single_word"),
}
# settings that change no token id, as GPT-2's own file and older releases of the library write them
ALLOWED = {
    "GPT-2's post-processor": (("post_processor",), {"type": "ByteLevel", "add_prefix_space": True,
                                                      "trim_offsets": False, "use_regex": True}),
    "GPT-2's decoder flags": (("decoder",), {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False}),
    "no decoder": (("decoder",), None),
    "offsets not trimmed": (("pre_tokenizer", "trim_offsets"), False),
    "empty affixes": (("model", "end_of_word_suffix"), ""),
    "an older file without byte_fallback": (("model", "byte_fallback"), ...),
    "a normalized special token": (("added_tokens", 0, "normalized"), True),
}
# vocabularies that cannot be a model's, refused before the library builds anything
BROKEN = {
    "two tokens, one id": (lambda d: _set_id(d, 7, 5), "two tokens have the id 5"),
    "ids with a gap": (lambda d: _set_id(d, VOCAB - 1, 10 ** 6), "ids are not 0"),
    "a token outside the byte alphabet": (lambda d: _rename(d, VOCAB - 1, "日本"), "byte-level alphabet"),
    "a byte missing": (lambda d: _rename(d, 0, "Ġ!!"), "lacks the byte 0x21"),
    "a merge of unknown tokens": (lambda d: d["model"]["merges"].append(["Ġq", "zz"]), "not in the vocabulary"),
    "a merge of three": (lambda d: d["model"]["merges"].append("a b c"), "is not two tokens"),
    "a merge twice": (lambda d: d["model"]["merges"].append(d["model"]["merges"][0]), "listed twice"),
    "another model": (lambda d: d["model"].update({"type": "WordPiece"}), "model.type is"),
    "vocabulary not a table": (lambda d: d["model"].update({"vocab": [1, 2]}), "not a table of token"),
}


def _token(d: dict, i: int) -> str:
    return next(t for t, j in d["model"]["vocab"].items() if j == i)


def _set_id(d: dict, old: int, new: int) -> None:
    d["model"]["vocab"][_token(d, old)] = new


def _rename(d: dict, i: int, new: str) -> None:
    vocab = d["model"]["vocab"]
    vocab[new] = vocab.pop(_token(d, i))


def edited(d: dict, path: tuple, value) -> dict:
    d = copy.deepcopy(d)
    *parents, last = path
    node = d
    for p in parents:
        node = node[p]
    if value is ...:
        node.pop(last, None)
    else:
        node[last] = value
    return d


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "plays.txt"
    path.write_text(shakespeare_text()[:30_000], encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def bpe_run(tmp_path_factory, corpus) -> Path:
    """A BPE run of 4 steps with a special token, on a corpus file (so train --run can resume it)."""
    cfg = ExperimentConfig(name="bpe", model=ModelConfig(n_layer=1, n_head=2, d_model=16, d_ff=32, n_ctx=8),
                           train=TrainConfig(steps=4, batch_size=2, eval_every=4, eval_batches=1, checkpoint_every=2,
                                             snapshot_every=2, sample_tokens=0, torch_threads=1),
                           data=DataConfig(corpus=str(corpus), tokenizer="bpe", max_vocab=VOCAB))
    path = tmp_path_factory.mktemp("bpe") / "run"
    gen = Trainer(cfg, path).steps()
    for report in gen:
        if report.step == 2:
            break
    gen.close()
    d = json.loads((path / "tokenizer.json").read_text(encoding="utf-8"))
    assert d["added_tokens"] == []  # give it one, at the next id, as GPT-2's <|endoftext|> is
    return path


@pytest.fixture(scope="module")
def tokenizer_dict(bpe_run) -> dict:
    return json.loads((bpe_run / "tokenizer.json").read_text(encoding="utf-8"))


def with_special(d: dict) -> dict:
    """`d` with one special token appended (the run's model then has one more id: only for reading tests)."""
    d = copy.deepcopy(d)
    n = len(d["model"]["vocab"])
    d["added_tokens"] = [{"id": n, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}]
    return d


def commands(run: Path, tmp: Path) -> dict[str, list]:
    """Every command that reads a run's tokenizer.json, each as argv."""
    return {"sample": ["sample", "--run", run, "--tokens", 3, "--seed", 1],
            "export": ["export", "--run", run, "--what", "attention", "--out", tmp / "attention.npy"],
            "heads": ["heads", "--run", run, "--format", "csv"],
            "train": ["train", "--run", run, "--steps", 4],
            "fork": ["train", "--fork", run, "--set", "train.lr=2e-3", "--run", tmp / "fork"]}


def damaged_copy(bpe_run: Path, tmp: Path, d: dict) -> Path:
    run = tmp / "run"
    shutil.copytree(bpe_run, run)
    (run / "tokenizer.json").write_text(json.dumps(d), encoding="utf-8")
    return run


# ---- a run's own file: refused, by every command, naming the file and the setting -------------------------

@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_every_command_refuses_a_setting_that_is_not_ours_naming_file_and_setting(case, bpe_run, tokenizer_dict,
                                                                                  tmp_path, capsys):
    path, value, name = REFUSED[case]
    d = edited(with_special(tokenizer_dict) if path[0] == "added_tokens" else tokenizer_dict, path, value)
    run = damaged_copy(bpe_run, tmp_path, d)
    if path[0] == "added_tokens":  # the model has the special token's row too
        toml = (run / "config.toml").read_text(encoding="utf-8")
        (run / "config.toml").write_text(toml.replace(f"vocab_size = {VOCAB}", f"vocab_size = {VOCAB + 1}"),
                                         encoding="utf-8")
    for command, argv in commands(run, tmp_path).items():
        rc, _, err = run_cli(capsys, *argv)
        line = one_error_line(rc, err)
        assert str(run / "tokenizer.json") in line and name in line, (command, line)
    assert not (tmp_path / "fork").exists() and not (tmp_path / "attention.npy").exists()


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_a_vocabulary_that_cannot_be_the_models_is_refused_naming_the_file(case, bpe_run, tokenizer_dict, tmp_path,
                                                                           capsys):
    change, message = BROKEN[case]
    d = copy.deepcopy(tokenizer_dict)
    change(d)
    run = damaged_copy(bpe_run, tmp_path, d)
    for command, argv in commands(run, tmp_path).items():
        line = one_error_line(*run_cli(capsys, *argv)[::2])
        assert str(run / "tokenizer.json") in line and message in line, (command, line)


def test_the_size_is_checked_before_the_vocabulary_is_built(bpe_run, tokenizer_dict, tmp_path, capsys, monkeypatch):
    import engine.text.bpe

    def never(*a, **k):
        raise AssertionError("a vocabulary of the wrong size was built")
    monkeypatch.setattr(engine.text.bpe.BPETokenizer, "from_parts", never)
    d = copy.deepcopy(tokenizer_dict)
    d["model"]["vocab"].update({f"Ġ{'a' * k}x": VOCAB + k for k in range(5000)})
    run = damaged_copy(bpe_run, tmp_path, d)
    line = one_error_line(*run_cli(capsys, "sample", "--run", run)[::2])
    assert f"has {VOCAB + 5000:,} tokens but the model has {VOCAB}" in line


@pytest.mark.parametrize("kind", ["char", "word"])
def test_a_run_s_data_tokenizer_is_checked_against_the_file_s_kind(kind, bpe_run, tmp_path, capsys):
    vocab = [chr(0x100 + i) for i in range(VOCAB)] if kind == "char" else ["<unk>", *(f"w{i}" for i in range(VOCAB - 1))]
    run = damaged_copy(bpe_run, tmp_path, {"kind": kind, "vocab": vocab})
    for command, argv in commands(run, tmp_path).items():
        line = one_error_line(*run_cli(capsys, *argv)[::2])
        assert str(run / "tokenizer.json") in line and f"data.tokenizer is 'bpe'" in line, (command, line)
    toml = (run / "config.toml").read_text(encoding="utf-8").replace('tokenizer = "bpe"', f'tokenizer = "{kind}"')
    (run / "config.toml").write_text(toml, encoding="utf-8")
    (run / "tokenizer.json").write_text(json.dumps({"kind": kind, "vocab": vocab, "extra": 1}), encoding="utf-8")
    line = one_error_line(*run_cli(capsys, "sample", "--run", run)[::2])
    assert str(run / "tokenizer.json") in line and "extra" in line


@pytest.mark.parametrize("case", ALLOWED, ids=list(ALLOWED))
def test_settings_that_change_no_token_are_accepted_and_encode_as_ours(case, bpe_run, tokenizer_dict, tmp_path, capsys):
    path, value = ALLOWED[case]
    d = edited(with_special(tokenizer_dict) if path[0] == "added_tokens" else tokenizer_dict, path, value)
    ours = tokenizer_from_dict(tokenizer_dict)
    theirs = tokenizer_from_dict(d, "x", kind="bpe")
    text = "ROMEO: But soft, what light\n  through yonder window breaks? 日本"
    assert theirs.encode(text) == ours.encode(text) and theirs.decode(theirs.encode(text)) == text
    if path[0] != "added_tokens":  # every command reads the run (its model has no row for an added token)
        run = damaged_copy(bpe_run, tmp_path, d)
        for command, argv in commands(run, tmp_path).items():
            rc, out, err = run_cli(capsys, *argv)
            assert rc == 0, (command, err)


def test_merges_in_the_older_string_form_read_the_same(tokenizer_dict):
    d = copy.deepcopy(tokenizer_dict)
    d["model"]["merges"] = [" ".join(m) for m in d["model"]["merges"]]
    assert tokenizer_from_dict(d).encode("my lord the king") == tokenizer_from_dict(tokenizer_dict).encode(
        "my lord the king")


# ---- an import: the other settings left out, and said -------------------------------------------------------

@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_an_import_leaves_out_each_other_setting_and_names_it(case, tokenizer_dict):
    path, value, name = REFUSED[case]
    d = edited(with_special(tokenizer_dict) if path[0] == "added_tokens" else tokenizer_dict, path, value)
    parts = read_tokenizer_json(d, "folder/tokenizer.json", lenient=True)
    assert any(name in note for note in parts.ignored), parts.ignored
    tok = BPETokenizer.from_parts(parts)
    text = "KING: O, my lord!"
    assert tok.encode(text) == tokenizer_from_dict(tokenizer_dict).encode(text)  # only the vocabulary is used
    with pytest.raises(CorpusError, match=rf"folder/tokenizer.json: the setting \S*{re.escape(name)}"):
        read_tokenizer_json(d, "folder/tokenizer.json")


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory, tokenizer_dict) -> Path:
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    conf = transformers.GPT2Config(vocab_size=VOCAB + 1, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    folder = tmp_path_factory.mktemp("hf") / "gpt2"
    transformers.GPT2LMHeadModel(conf).save_pretrained(folder)
    d = with_special(tokenizer_dict)
    for path, value, _ in REFUSED.values():
        d = edited(d, path, value)
    (folder / "tokenizer.json").write_text(json.dumps(d), encoding="utf-8")
    return folder


def test_importing_a_file_with_every_other_setting_says_each_and_writes_ours(hf_folder, tmp_path, capsys):
    d = json.loads((hf_folder / "tokenizer.json").read_text(encoding="utf-8"))
    ignored = read_tokenizer_json(d, "tokenizer.json", lenient=True).ignored
    assert len(ignored) >= len(REFUSED) - 2  # two pairs of cases set the same key
    rc, out, err = run_cli(capsys, "import", "hf", hf_folder, "--run", tmp_path / "run")
    assert rc == 0, err
    said = next(line for line in out.splitlines() if line.startswith("ignored in tokenizer.json"))
    assert ignored[0] in said and f"and {len(ignored) - 4} more" in said
    written = json.loads((tmp_path / "run" / "tokenizer.json").read_text(encoding="utf-8"))
    assert (written["truncation"], written["padding"], written["normalizer"], written["post_processor"]) == (None,) * 4
    rc, out, err = run_cli(capsys, "sample", "--run", tmp_path / "run", "--tokens", 3, "--prompt", "KING")
    assert rc == 0 and out.startswith("KING"), err


# ---- the process survives: a file that would make the library ask for gigabytes ------------------------------

def test_padding_to_a_billion_tokens_is_one_line_in_a_process_that_exits_normally(bpe_run, tokenizer_dict, tmp_path):
    d = edited(tokenizer_dict, *REFUSED["padding to 10^9"][:2])
    run = damaged_copy(bpe_run, tmp_path, d)
    code = "import sys; from engine.cli import main; sys.exit(main(sys.argv[1:]))"
    done = fresh_imports.run(code, "sample", "--run", run, "--tokens", "2", cwd=ROOT)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.returncode, done.stderr)
    assert str(run / "tokenizer.json") in line and "padding" in line


# ---- another tokenizer of the same size: the weights' header names the one they were trained with ---------

def test_another_runs_tokenizer_of_the_same_size_is_refused_by_every_command(bpe_run, corpus, tmp_path, capsys):
    other = BPETokenizer.fit(shakespeare_text()[100_000:130_000], VOCAB)
    assert other.vocab_size == VOCAB and other.vocab != Run(bpe_run).tokenizer.vocab
    run = damaged_copy(bpe_run, tmp_path, other.to_dict())
    for command, argv in commands(run, tmp_path).items():
        line = one_error_line(*run_cli(capsys, *argv)[::2])
        assert f"{run / 'tokenizer.json'} is not the tokenizer this run's weights were trained with" in line, command


def test_a_character_vocabulary_with_two_characters_swapped_is_refused(tmp_path, capsys):
    from tests.engine.training.test_trainer import small_config

    run = tmp_path / "chars"
    list(Trainer(small_config(steps=2, checkpoint_every=2), run, text=shakespeare_text()[:20_000]).steps())
    d = json.loads((run / "tokenizer.json").read_text(encoding="utf-8"))
    d["vocab"][10], d["vocab"][11] = d["vocab"][11], d["vocab"][10]
    (run / "tokenizer.json").write_text(json.dumps(d), encoding="utf-8")
    line = one_error_line(*run_cli(capsys, "sample", "--run", run)[::2])
    assert "is not the tokenizer this run's weights were trained with" in line


def test_a_tokenizer_s_digest_is_its_content_whatever_it_was_read_from(tokenizer_dict):
    from engine.text.bpe_file import read_tokenizer_json

    d = with_special(tokenizer_dict)
    built = BPETokenizer.from_dict(d)
    again = BPETokenizer(built._tok)  # as a fit makes one: no parts to read the digest from
    older = copy.deepcopy(d)
    older["model"]["merges"] = [" ".join(m) for m in older["model"]["merges"]]  # the older string form
    older["post_processor"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False}
    assert built.digest == again.digest == BPETokenizer.from_dict(older).digest
    assert built.digest == read_tokenizer_json(built.to_dict(), "x").digest != BPETokenizer.from_dict(tokenizer_dict).digest
