"""nanoGPT checkpoints imported as runs: the test builds a nanoGPT-format checkpoint itself (keys and shapes
as nanoGPT's model.py names them, random weights) and a reference forward written here from nanoGPT's
equations (x Wᵗ linears, c_attn split in q, k, v, pre-LN, exact GELU, tied lm_head; with bias=True every
Linear but lm_head and every LayerNorm has a bias)."""

from __future__ import annotations

import math
import os
import pickle

import pytest
import torch
import torch.nn.functional as F

from engine.cli import main
from engine.importers.nanogpt import NanoGPTImportError, import_nanogpt
from engine.importers.nanogpt_meta import MetaError, read_meta
from engine.rundir.runs import Run
from engine.training.trainer import generate_text

CHARS = sorted(set("\n !',.:;?abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"))
ARGS = dict(n_layer=2, n_head=2, n_embd=16, block_size=12, bias=False, vocab_size=len(CHARS), dropout=0.0)


def nanogpt_state(args: dict, seed: int = 0, compiled: bool = False) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    C, V, L = args["n_embd"], args["vocab_size"], args["n_layer"]

    def r(*shape, scale=0.2):
        return torch.randn(*shape, generator=g) * scale

    sd = {"transformer.wte.weight": r(V, C), "transformer.wpe.weight": r(args["block_size"], C)}
    for i in range(L):
        h = f"transformer.h.{i}."
        sd |= {h + "ln_1.weight": 1 + r(C), h + "attn.c_attn.weight": r(3 * C, C),
               h + "attn.c_proj.weight": r(C, C), h + "ln_2.weight": 1 + r(C),
               h + "mlp.c_fc.weight": r(4 * C, C), h + "mlp.c_proj.weight": r(C, 4 * C)}
        if args["bias"]:
            sd |= {h + "attn.c_attn.bias": r(3 * C), h + "attn.c_proj.bias": r(C), h + "ln_1.bias": r(C),
                   h + "ln_2.bias": r(C), h + "mlp.c_fc.bias": r(4 * C), h + "mlp.c_proj.bias": r(C),
                   h + "attn.bias": torch.ones(1, 1, args["block_size"], args["block_size"]).tril()}  # the mask
    sd |= {"transformer.ln_f.weight": 1 + r(C), "lm_head.weight": sd["transformer.wte.weight"]}
    if args["bias"]:
        sd["transformer.ln_f.bias"] = r(C)
    return {("_orig_mod." + k if compiled else k): v for k, v in sd.items()}


def reference_logits(sd: dict, args: dict, idx: torch.Tensor) -> torch.Tensor:
    """nanoGPT's forward, float64: y = x Wᵗ + b, heads of width C/nh, causal softmax, pre-LN, GELU, tied head."""
    sd = {k.removeprefix("_orig_mod."): v.double() for k, v in sd.items()}
    C, nh = args["n_embd"], args["n_head"]
    B, T = idx.shape

    def ln(x, key):
        return F.layer_norm(x, (C,), sd[key + ".weight"], sd.get(key + ".bias"), 1e-5)

    def linear(x, key):
        return F.linear(x, sd[key + ".weight"], sd.get(key + ".bias"))

    x = sd["transformer.wte.weight"][idx] + sd["transformer.wpe.weight"][:T]
    for i in range(args["n_layer"]):
        h = f"transformer.h.{i}."
        q, k, v = linear(ln(x, h + "ln_1"), h + "attn.c_attn").split(C, dim=2)
        q, k, v = (t.view(B, T, nh, C // nh).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // nh)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + linear(y, h + "attn.c_proj")
        x = x + linear(F.gelu(linear(ln(x, h + "ln_2"), h + "mlp.c_fc")), h + "mlp.c_proj")
    return ln(x, "transformer.ln_f") @ sd["lm_head.weight"].t()


def write_out_dir(folder, args=ARGS, compiled=False, meta=None, iter_num=250):
    folder.mkdir(parents=True, exist_ok=True)
    sd = nanogpt_state(args, compiled=compiled)
    torch.save({"model": sd, "model_args": dict(args), "iter_num": iter_num,
                "best_val_loss": torch.tensor(1.75), "optimizer": {},
                "config": {"dataset": "shakespeare_char", "batch_size": 8, "learning_rate": 1e-3,
                           "max_iters": 5000}}, folder / "ckpt.pt")
    if meta is None:
        meta = {"vocab_size": len(CHARS), "itos": dict(enumerate(CHARS)),
                "stoi": {c: i for i, c in enumerate(CHARS)}}
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump(meta, f)
    return sd


@pytest.mark.parametrize("compiled, bias", [(False, False), (True, False), (False, True)])
def test_imported_logits_equal_the_reference_forward(tmp_path, compiled, bias):
    args = dict(ARGS, bias=bias)
    sd = write_out_dir(tmp_path / "out", args=args, compiled=compiled)
    done = import_nanogpt(tmp_path / "out", tmp_path / "run")
    run = Run(tmp_path / "run")
    assert run.tokenizer.vocab == CHARS and run.checkpoint_steps() == [250] and run.snapshot_steps() == [250]
    assert done.config.model.tied and done.config.model.pos_encoding == "learned"
    assert done.config.model.attn_bias == bias
    idx = torch.tensor(run.tokenizer.encode("to be, or not"[:12])).view(1, -1)
    ours, _ = run.build_model(dtype=torch.float64)(idx)
    torch.testing.assert_close(ours, reference_logits(sd, args, idx), rtol=1e-10, atol=1e-10)
    assert run.probe().x.shape == (4, ARGS["block_size"]) and run.best_step() == 250


def test_greedy_samples_equal_the_references(tmp_path):
    sd = write_out_dir(tmp_path / "out")
    import_nanogpt(tmp_path / "out", tmp_path / "run")
    run = Run(tmp_path / "run")
    prompt = "Romeo"
    ids = run.tokenizer.encode(prompt)
    for _ in range(20):
        logits = reference_logits(sd, ARGS, torch.tensor([ids[-ARGS["block_size"]:]]))
        ids.append(int(logits[0, -1].argmax()))
    want = run.tokenizer.decode(ids[len(prompt):])
    assert generate_text(run.build_model(dtype=torch.float64), run.tokenizer, prompt, 20, temperature=0) == want


def test_meta_is_found_at_nanogpts_data_folder_or_given(tmp_path):
    write_out_dir(tmp_path / "out")
    data = tmp_path / "data" / "shakespeare_char"
    data.mkdir(parents=True)
    (tmp_path / "out" / "meta.pkl").rename(data / "meta.pkl")
    assert import_nanogpt(tmp_path / "out", tmp_path / "run1").meta == data / "meta.pkl"
    (data / "meta.pkl").rename(tmp_path / "elsewhere.pkl")
    with pytest.raises(NanoGPTImportError, match="--meta"):
        import_nanogpt(tmp_path / "out", tmp_path / "run2")
    assert import_nanogpt(tmp_path / "out", tmp_path / "run3", meta=tmp_path / "elsewhere.pkl").step == 250


def test_biases_in_a_bias_false_checkpoint_are_refused_in_one_sentence(tmp_path):
    sd = nanogpt_state(dict(ARGS, bias=True))
    (tmp_path / "out").mkdir()
    torch.save({"model": sd, "model_args": ARGS}, tmp_path / "out" / "ckpt.pt")
    write_out_dir(tmp_path / "other")  # its meta.pkl
    with pytest.raises(NanoGPTImportError, match="bias=False") as e:
        import_nanogpt(tmp_path / "out", tmp_path / "run", meta=tmp_path / "other" / "meta.pkl")
    assert "\n" not in str(e.value) and not (tmp_path / "run").exists()


class _Shell:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


def test_a_meta_pkl_that_would_run_code_is_refused_without_running_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_out_dir(tmp_path / "out", meta={"vocab_size": 3, "itos": _Shell(), "stoi": {}})
    with pytest.raises(MetaError, match="refused without running it: it asks to load posix.system"):
        import_nanogpt(tmp_path / "out", tmp_path / "run")
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("meta", [["a", "b"], {"itos": {0: "a", 1: 2.5}}, {"itos": {0: "ab", 1: "c"}},
                                  {"itos": {0: "a", 1: "b"}, "stoi": {"a": 1, "b": 0}}])
def test_a_meta_pkl_that_is_not_a_plain_character_vocabulary_is_refused(tmp_path, meta):
    with open(tmp_path / "meta.pkl", "wb") as f:
        pickle.dump(meta, f)
    with pytest.raises(MetaError):
        read_meta(tmp_path / "meta.pkl")


def test_the_command_line_imports_and_refuses_in_one_line(tmp_path, capsys):
    write_out_dir(tmp_path / "out")
    assert main(["import", "nanogpt", str(tmp_path / "out"), "--run", str(tmp_path / "run")]) == 0
    assert "at step 250" in capsys.readouterr().out
    assert main(["import", "nanogpt", str(tmp_path / "nowhere"), "--run", str(tmp_path / "r2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no nanoGPT checkpoint" in err


def test_the_probe_batch_comes_from_the_datasets_val_bin_when_there_is_one(tmp_path):
    import numpy as np

    write_out_dir(tmp_path / "out")
    text = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" * 3
    ids = np.array([CHARS.index(c) for c in text], dtype=np.uint16)
    ids.tofile(tmp_path / "out" / "val.bin")  # nanoGPT's prepare.py format: uint16 token ids
    done = import_nanogpt(tmp_path / "out", tmp_path / "run")
    probe = Run(tmp_path / "run").probe()
    assert done.probe_source.endswith("val.bin") and probe.prompt in text
    for row in probe.x:
        assert "".join(CHARS[i] for i in row) in text
