"""Importing a Hugging Face GPT-2 folder (engine/importers/hugging_face.py): a small random GPT2LMHeadModel saved with
`save_pretrained`, and the same weights in the hub's older layout, give our model transformers' logits and
its greedy continuation; every config field that changes the model is checked; the run fine-tunes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from engine.text.bpe import BPETokenizer
from engine.text.corpus import shakespeare_text
from engine.importers.hugging_face import HFImportError, import_hf
from engine.rundir.runs import Run
from engine.training.trainer import Trainer

transformers = pytest.importorskip("transformers")

VOCAB = 320


@pytest.fixture(scope="module")
def hf_model():
    torch.manual_seed(3)
    conf = transformers.GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                                   activation_function="gelu_new", layer_norm_epsilon=1e-5,
                                   bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
    model = transformers.GPT2LMHeadModel(conf).eval()
    with torch.no_grad():  # random biases and gains, so that a bias put in the wrong place shows
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.normal_(1.0 if name.endswith("ln_1.weight") or "ln_2.weight" in name else 0.0, 0.1)
    return model


@pytest.fixture(scope="module")
def tokenizer():
    return BPETokenizer.fit(shakespeare_text()[:30_000], VOCAB)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, hf_model, tokenizer) -> Path:
    """save_pretrained's layout (model.safetensors, transformer.-prefixed keys) with a tokenizer.json."""
    folder = tmp_path_factory.mktemp("hf") / "pretrained"
    hf_model.save_pretrained(folder)
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer.to_dict()), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def hub(tmp_path_factory, hf_model, tokenizer, pretrained) -> Path:
    """The hub's layout: no prefix, no lm_head, causal-mask buffers, pytorch_model.bin, vocab.json + merges.txt."""
    folder = tmp_path_factory.mktemp("hf") / "hub"
    folder.mkdir()
    shutil.copy(pretrained / "config.json", folder / "config.json")
    state = {k.removeprefix("transformer."): v.clone() for k, v in hf_model.state_dict().items()
             if k != "lm_head.weight"}
    for i in range(hf_model.config.n_layer):
        state[f"h.{i}.attn.bias"] = torch.tril(torch.ones(32, 32, dtype=torch.bool)).view(1, 1, 32, 32)
        state[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    torch.save(state, folder / "pytorch_model.bin")
    model = tokenizer.to_dict()["model"]
    (folder / "vocab.json").write_text(json.dumps(model["vocab"]), encoding="utf-8")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    return folder


def greedy(step, ids: list[int], n: int) -> list[int]:
    for _ in range(n):
        ids = ids + [int(step(torch.tensor([ids]))[0, -1].argmax())]
    return ids


@pytest.mark.parametrize("layout", ["pretrained", "hub"])
def test_import_gives_transformers_logits_and_greedy_continuation(layout, request, hf_model, tokenizer, tmp_path):
    folder = request.getfixturevalue(layout)
    done = import_hf(folder, tmp_path / "run")
    run = Run(done.run_dir)
    m = run.config.model
    assert (m.n_layer, m.n_head, m.d_model, m.d_ff, m.n_ctx, m.vocab_size) == (2, 4, 32, 128, 32, VOCAB)
    assert (m.activation, m.attn_bias, m.tied, m.pos_encoding, m.norm) == ("gelu_tanh", True, True, "learned", "pre")
    assert run.tokenizer.vocab == tokenizer.vocab and run.checkpoint_steps() == [0] == run.snapshot_steps()
    ours = run.build_model(0).eval()
    ids = torch.tensor([tokenizer.encode("ROMEO: But soft, what light through yonder window")[:32]])
    with torch.no_grad():
        theirs_logits = hf_model(ids).logits
        our_logits, _ = ours(ids)
    assert torch.allclose(our_logits, theirs_logits, atol=1e-4, rtol=0)
    start = ids[0, :5].tolist()
    with torch.no_grad():
        assert greedy(lambda x: ours(x)[0], start, 20) == greedy(lambda x: hf_model(x).logits, start, 20)


def test_the_run_samples_shows_attention_and_fine_tunes_on_new_text(pretrained, tmp_path):
    from engine.analysis.run_analysis import RunAnalysis

    done = import_hf(pretrained, tmp_path / "run")
    analysis = RunAnalysis(done.run_dir)
    maps = analysis.attention(0, "KING: my lord").maps
    assert maps.weights.shape[:2] == (2, 4) and "".join(maps.tokens) == "KING:␣my␣lord"
    from engine.training.trainer import generate_text

    assert generate_text(analysis.model(0), analysis.tokenizer, "KING:", 8, seed=1)
    corpus = tmp_path / "new.txt"
    corpus.write_text(shakespeare_text()[200_000:240_000], encoding="utf-8")
    trainer = Trainer.resume(done.run_dir, corpus=str(corpus), steps=3)
    assert trainer.step == 0 and trainer.cfg.data.corpus == str(corpus)
    reports = list(trainer.steps())
    assert reports[-1].step == 3 and reports[-1].val_bpc is not None
    run = Run(done.run_dir)
    assert run.config.data.corpus == str(corpus) and run.tokenizer.vocab == trainer.tokenizer.vocab
    before, after = run.load_weights(0), run.load_weights(3)
    assert not torch.equal(before["blocks.0.W_Q"], after["blocks.0.W_Q"])
    again = Trainer.resume(done.run_dir, steps=4)  # a fine-tuned run resumes as any other
    assert again.step == 3
    again.writer.close()
    # and goes on fine-tuning on other text (a file: the bundled plays' 5 MB encoded with this module's own BPE, which
    # no other test's token cache holds, was most of this test's time)
    more = tmp_path / "more.txt"
    more.write_text(shakespeare_text()[300_000:340_000], encoding="utf-8")
    other = Trainer.resume(done.run_dir, corpus=str(more), steps=5)
    assert other.step == 3 and other.cfg.data.corpus == str(more) and other.tokenizer.vocab == run.tokenizer.vocab
    other.writer.close()
    assert [(c["step"], c["changed"]) for c in Run(done.run_dir).changes()] == [
        (0, {"train.steps": [20, 3], "data.corpus": ["shakespeare", str(corpus)]}), (3, {"train.steps": [3, 4]}),
        (3, {"train.steps": [4, 5], "data.corpus": [str(corpus), str(more)]})]


def edited(folder: Path, tmp_path: Path, **changes) -> Path:
    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    conf = json.loads((copy / "config.json").read_text())
    conf.update(changes)
    (copy / "config.json").write_text(json.dumps(conf))
    return copy


@pytest.mark.parametrize("changes, message", [
    ({"model_type": "llama"}, "only GPT-2-family"),
    ({"n_layer": 0}, "n_layer is 0"),
    ({"n_head": "4"}, "n_head is '4'"),
    ({"n_embd": 33}, "cannot be built here"),
    ({"activation_function": "swish"}, "activation_function 'swish'"),
    ({"layer_norm_epsilon": -1}, "layer_norm_epsilon"),
    ({"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx"),
    ({"tie_word_embeddings": False}, "tie_word_embeddings"),
    ({"vocab_size": VOCAB + 1}, "must belong together"),
    ({"n_layer": 3}, "h.2.attn.c_attn.weight is missing"),
    ({"n_layer": 4000, "n_embd": 4096}, "cannot be opened here: .*memory"),
])
def test_a_config_that_does_not_fit_is_refused_in_one_line_and_writes_nothing(pretrained, tmp_path, changes, message):
    with pytest.raises(HFImportError, match=message) as e:
        import_hf(edited(pretrained, tmp_path, **changes), tmp_path / "run")
    assert "\n" not in str(e.value) and not (tmp_path / "run").exists()


def test_missing_files_are_named(pretrained, tmp_path):
    folder = edited(pretrained, tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(HFImportError, match="no tokenizer"):
        import_hf(folder, tmp_path / "run")
    (folder / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": 3}}')
    with pytest.raises(HFImportError, match="tokenizer.json: the vocabulary is not a table"):
        import_hf(folder, tmp_path / "run")
    shutil.copy(pretrained / "tokenizer.json", folder)
    (folder / "model.safetensors").unlink()
    with pytest.raises(HFImportError, match="neither model.safetensors nor pytorch_model.bin"):
        import_hf(folder, tmp_path / "run")
    (folder / "pytorch_model.bin").write_bytes(b"not a pickle")
    with pytest.raises(HFImportError, match="cannot be read as weights"):
        import_hf(folder, tmp_path / "run")
    with pytest.raises(HFImportError, match="no config.json"):
        import_hf(tmp_path, tmp_path / "run")
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(HFImportError, match="cannot be read as JSON"):
        import_hf(folder, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_an_unknown_weight_is_refused_not_ignored(hub, tmp_path):
    folder = edited(hub, tmp_path)
    state = torch.load(folder / "pytorch_model.bin", weights_only=True)
    state["h.0.attn.q_norm.weight"] = torch.ones(32)
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(HFImportError, match="h.0.attn.q_norm.weight"):
        import_hf(folder, tmp_path / "run")


def test_cli_imports_and_refuses_in_one_line(pretrained, tmp_path, capsys):
    from engine.cli import main

    assert main(["import", "hf", str(pretrained), "--run", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "2 layers, 4 heads" in out and str(tmp_path / "run") in out
    assert main(["import", "hf", str(pretrained), "--run", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not empty" in err
    assert Run(tmp_path / "run").checkpoint_steps() == [0]


def test_cli_fine_tunes_an_import_on_a_corpus_with_its_own_tokenizer(pretrained, tmp_path, capsys):
    from engine.cli import main

    run_dir = tmp_path / "run"
    assert main(["import", "hf", str(pretrained), "--run", str(run_dir)]) == 0
    corpus = tmp_path / "sonnets.txt"
    corpus.write_text(shakespeare_text()[300_000:330_000], encoding="utf-8")
    capsys.readouterr()
    assert main(["train", "--run", str(run_dir), "--corpus", str(corpus), "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "step 2/2" in out and "bits/char" in out
    rows = Run(run_dir).metrics()
    assert [r["step"] for r in rows] == [1, 2] and rows[-1]["val_bpc"] > 0
    assert Run(run_dir).config.data.corpus == str(corpus.resolve())
