"""Hostile and unlucky model folders (issue 41's smaller doors): every config.json field of the wrong type, a
pytorch_model.bin or ckpt.pt that is a pickle asking for code, weights of a type no model trains in, a
vocab.json that gives two tokens one id. Each is one line naming the file, exit status 2, nothing written, and
nothing else on stderr (torch's warnings included)."""

from __future__ import annotations

import json
import pickle
import re
import shutil
from pathlib import Path

import pytest
import torch

from engine.importers.hugging_face import HFImportError, import_hf
from engine.importers.nanogpt import NanoGPTImportError, import_nanogpt
from tests import fresh_imports
from tests.engine.cli.test_cli_train import one_error_line, run_cli
from tests.engine.importers.test_hugging_face import hf_model, pretrained, tokenizer  # noqa: F401  (fixtures)
from tests.engine.importers.test_nanogpt import write_out_dir

ROOT = Path(__file__).resolve().parents[3]
pytest.importorskip("transformers")

FIELDS = ("model_type", "n_layer", "n_head", "n_embd", "n_positions", "vocab_size", "n_inner", "activation_function",
          "layer_norm_epsilon", "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "tie_word_embeddings",
          "add_cross_attention")
WRONG = {"a list": ["gelu_new"], "a table": {"a": 1}, "a long string": "x" * 100_000, "a float": 2.5, "a bool": True,
         "a negative number": -3, "a huge number": 10 ** 30}


def copy_of(folder: Path, tmp_path: Path) -> Path:
    shutil.copytree(folder, tmp_path / "folder")
    return tmp_path / "folder"


@pytest.mark.parametrize("field", FIELDS)
def test_each_config_field_of_the_wrong_type_is_one_line(field, pretrained, tmp_path, capsys):  # noqa: F811
    folder = copy_of(pretrained, tmp_path)
    conf = json.loads((folder / "config.json").read_text())
    for kind, value in WRONG.items():
        if (field, value) in (("n_inner", 10 ** 30), ("scale_attn_weights", True), ("tie_word_embeddings", True)):
            continue  # what a GPT-2 may say (a huge n_inner: the size limits refuse it, below)
        (folder / "config.json").write_text(json.dumps({**conf, field: value}))
        rc, _, err = run_cli(capsys, "import", "hf", folder, "--run", tmp_path / f"run-{len(kind)}")
        line = one_error_line(rc, err)
        assert "config.json" in line and len(line) < 400, (field, kind, line)
        assert not (tmp_path / f"run-{len(kind)}").exists()


def test_a_model_too_large_for_this_machine_is_refused_before_its_weights_are_read(pretrained, tmp_path):  # noqa: F811
    folder = copy_of(pretrained, tmp_path)
    conf = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**conf, "n_inner": 10 ** 12}))
    with pytest.raises(HFImportError, match="cannot be"):
        import_hf(folder, tmp_path / "run")


EVIL = {"a global": (b"cos\nsystem\n(S'echo pwned'\ntR.", "asks to load os.system; it was refused without running it"),
        "protocol 4 with a global": (pickle.dumps({"x": 1}, protocol=4).replace(b"}", b"cos\nsystem\n(S'id'\ntR}", 1),
                                     "stopped at an instruction it does not allow"),  # protocol 4's FRAME, first
        "a plain pickle of protocol 4": (pickle.dumps({"transformer.wte.weight": [1.0, 2.0]}, protocol=4),
                                         "not a file of tensors"),
        "garbage": (b"\x00\x01" * 1000, "not a file of tensors")}


@pytest.mark.parametrize("case", EVIL, ids=list(EVIL))
def test_a_pickled_weights_file_is_one_line_and_torch_says_nothing(case, pretrained, tmp_path):  # noqa: F811
    folder = copy_of(pretrained, tmp_path)
    (folder / "model.safetensors").unlink()
    data, said = EVIL[case]
    (folder / "pytorch_model.bin").write_bytes(data)
    code = "import sys; from engine.cli import main; sys.exit(main(sys.argv[1:]))"
    done = fresh_imports.run(code, "import", "hf", folder, "--run", tmp_path / "run", cwd=ROOT)
    line = one_error_line(done.returncode, done.stderr)  # exactly one line: no warning from torch before it
    assert done.returncode == 2 and "pytorch_model.bin" in line and said in line
    assert not (tmp_path / "run").exists()


def test_a_nanogpt_checkpoint_that_asks_for_code_is_refused_naming_it(tmp_path):
    write_out_dir(tmp_path / "out")
    (tmp_path / "out" / "ckpt.pt").write_bytes(EVIL["a global"][0])
    with pytest.raises(NanoGPTImportError, match="asks to load os.system; it was refused without running it"):
        import_nanogpt(tmp_path / "out", tmp_path / "run")


def _extra_layer(sd: dict) -> None:
    sd.update({k.replace("h.1.", "h.2."): v for k, v in sd.items() if ".h.1." in k})


NANOGPT_WRONG = {"a layer more than model_args says": (lambda c: _extra_layer(c["model"]),
                                                       "transformer.h.2.attn.c_attn.weight' and 5 more, which a "
                                                       "nanoGPT model of 2 layers"),
                 "a weight of no nanoGPT": (lambda c: c["model"].update({"transformer.h.0.adapter": torch.zeros(2)}),
                                            "'transformer.h.0.adapter', which"),
                 "bias that is not true or false": (lambda c: c["model_args"].update(bias="yes"),
                                                    "model_args.bias is 'yes', not true or false"),
                 "settings that are not a table": (lambda c: c.update(config=["lr", 1]),
                                                   "config is a list, not a table of nanoGPT's settings"),
                 "settings that are a tensor": (lambda c: c.update(config=torch.zeros(3)),
                                                "config is a Tensor, not a table")}


@pytest.mark.parametrize("case", NANOGPT_WRONG, ids=list(NANOGPT_WRONG))
def test_a_nanogpt_checkpoint_that_says_more_than_its_model_is_refused(case, tmp_path):
    """Weights its model_args leave no place for were dropped without a word (an n_layer edited down imported a
    truncated model); a bias flag of another type was read as Python's truth of it; settings that were not a
    table were left out silently (the fine-tune took ours)."""
    write_out_dir(tmp_path / "out")
    ckpt = torch.load(tmp_path / "out" / "ckpt.pt", weights_only=True)
    change, said = NANOGPT_WRONG[case]
    change(ckpt)
    torch.save(ckpt, tmp_path / "out" / "ckpt.pt")
    with pytest.raises(NanoGPTImportError, match=re.escape(said)):
        import_nanogpt(tmp_path / "out", tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool, torch.complex64])
def test_weights_of_a_type_no_model_trains_in_are_named(dtype, pretrained, tmp_path):  # noqa: F811
    from safetensors.torch import load_file, save_file

    folder = copy_of(pretrained, tmp_path)
    state = load_file(folder / "model.safetensors")
    key = next(k for k in state if k.endswith("h.0.mlp.c_fc.weight"))
    state[key] = state[key].to(dtype)
    save_file(state, folder / "model.safetensors")
    with pytest.raises(HFImportError, match=f"h.0.mlp.c_fc.weight holds {str(dtype).removeprefix('torch.')} numbers"):
        import_hf(folder, tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_weights_in_another_float_type_are_imported(dtype, pretrained, tmp_path):  # noqa: F811
    from safetensors.torch import load_file, save_file

    folder = copy_of(pretrained, tmp_path)
    state = {k: v.to(dtype) for k, v in load_file(folder / "model.safetensors").items()}
    save_file(state, folder / "model.safetensors")
    assert import_hf(folder, tmp_path / "run").config.model.n_layer == 2


def test_a_vocab_json_giving_two_tokens_one_id_is_refused(pretrained, tmp_path):  # noqa: F811
    folder = copy_of(pretrained, tmp_path)
    model = json.loads((folder / "tokenizer.json").read_text())["model"]
    (folder / "tokenizer.json").unlink()
    vocab = dict(model["vocab"])
    first, second = sorted(vocab, key=vocab.get)[5:7]
    vocab[second] = vocab[first]
    (folder / "vocab.json").write_text(json.dumps(vocab))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges))
    with pytest.raises(HFImportError, match=f"vocab.json \\+ merges.txt: two tokens have the id {vocab[first]}"):
        import_hf(folder, tmp_path / "run")


def test_import_nanogpt_s_help_says_what_imports(capsys):
    """It said only bias=False models import, after bias=True ones did (issue 41; test_nanogpt.py imports both)."""
    with pytest.raises(SystemExit):
        run_cli(capsys, "import", "nanogpt", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "bias=True" in text and "bias=False" in text and "Only bias=False" not in text
