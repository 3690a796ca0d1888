"""A Hugging Face GPT-2-family folder (config.json, weights, tokenizer) turned into a run directory of ours.

The folder is what `save_pretrained` writes or what the hub serves for `gpt2`, `distilgpt2` and their kin:
``config.json``; the weights as ``model.safetensors`` or ``pytorch_model.bin`` (read with
``torch.load(weights_only=True)``: importing never runs the files' code); the tokenizer as ``tokenizer.json``
or as ``vocab.json`` + ``merges.txt``. Nothing is downloaded: only the folder is read.

GPT-2 (transformers' `modeling_gpt2.py`) is ours with learned positions, pre-LN with a final norm, the
attention's Q, K, V and output biases (`attn_bias`), GELU's tanh form (`gelu_new`), its layer-norm ε and the
unembedding tied to the token embedding; it has no unembedding bias, so our b_U starts at zero. Its weights
sit in two key layouts: `save_pretrained`'s, prefixed ``transformer.`` with ``lm_head.weight`` tied or
absent, and the hub's older one, unprefixed, with each layer's causal mask saved as the buffers
``h.N.attn.bias`` and ``h.N.attn.masked_bias`` (skipped: not weights). Its `Conv1D` weights are stored
(in, out); transposed they are nanoGPT's `nn.Linear` layout, whose conversion (c_attn split into W_Q, W_K,
W_V with the heads in our column order) engine/importers/nanogpt.py already states, and is used here.

Every field of config.json that changes what the model computes is checked before anything is written; what
cannot be mapped is refused in one sentence (an HFImportError). The result is a run at step 0 whose
checkpoint holds the pretrained weights and no optimizer state, so `train --run` fine-tunes it
(nanoGPT's `finetune_shakespeare` recipe: a small constant learning rate for a few steps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from ..configs.fields import BY_KEY
from ..configs.sizes import parameter_count, probe_sequences
from ..text.corpus import SHAKESPEARE, CorpusError, shakespeare_text
from ..errors import UserError, shown
from .progress import Progress, stages
from ..rundir.runs import Probe
from ..safe_io import (JSON_CAP, WEIGHTS_CAP, RefusedPickle, UnsafeFileError, check_regular, load_weights_only,
                       parse_json, read_text)

if TYPE_CHECKING:
    import torch
# torch, and what of ours imports it (the run's writer, the weights' conversion, the probe), is imported once
# config.json is read: a folder refused before (the wrong folder picked: not a folder, no config.json, not a
# GPT-2's) is told in the import's process before torch has loaded, ~1.5 s of CPU sooner.

CONFIG_JSON, SAFETENSORS, TORCH_BIN = "config.json", "model.safetensors", "pytorch_model.bin"
TOKENIZER_JSON, VOCAB_JSON, MERGES_TXT = "tokenizer.json", "vocab.json", "merges.txt"
ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
# The layer's weights under transformer.h.N (nanoGPT's names too); Conv1D's 2-D weights are stored (in, out).
_LAYER_KEYS = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
               "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
               "mlp.c_proj.weight", "mlp.c_proj.bias")
_CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
_MASK_BUFFERS = (".attn.bias", ".attn.masked_bias")
PROBE_CHARS = 400_000  # of the bundled plays: enough tokens for a probe batch at GPT-2's 1024 context


class HFImportError(UserError, ValueError):
    """A folder that cannot become a run of ours; the message is one sentence."""


@dataclass(frozen=True)
class Imported:
    """What an import wrote, for the CLI's and the GUI's one-line summary."""

    run_dir: Path
    config: ExperimentConfig
    weights_file: Path
    tokenizer_source: str
    ignored: tuple[str, ...] = ()  # the tokenizer file's settings left out (only its vocabulary is used)


def read_config(folder: Path) -> dict:
    path = folder / CONFIG_JSON
    try:
        conf = parse_json(read_text(path, JSON_CAP, CONFIG_JSON), CONFIG_JSON)
    except FileNotFoundError:
        raise HFImportError(f"{folder} has no {CONFIG_JSON}: not a Hugging Face model folder") from None
    except (UnsafeFileError, OSError, UnicodeDecodeError, ValueError) as e:  # ValueError: JSON, nesting
        raise HFImportError(f"{path} cannot be read as JSON: {str(e).splitlines()[0][:160]}") from None
    if not isinstance(conf, dict):
        raise HFImportError(f"{path} is not a JSON object")
    return conf


def model_config(conf: dict) -> ModelConfig:
    """Our ModelConfig for GPT-2's config.json; any field that would make the model compute otherwise is refused."""
    if conf.get("model_type") != "gpt2":
        raise HFImportError(f"config.json's model_type is {shown(conf.get('model_type'))}; only GPT-2-family models "
                            "(model_type \"gpt2\") can be imported")
    size = {k: _positive_int(conf, k) for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size")}
    n_inner = conf.get("n_inner")
    d_ff = 4 * size["n_embd"] if n_inner is None else _positive_int(conf, "n_inner")
    act = conf.get("activation_function", "gelu_new")
    if not isinstance(act, str) or act not in ACTIVATIONS:  # a list here was a TypeError, not a message
        raise HFImportError(f"config.json's activation_function {shown(act)} is not one of {', '.join(ACTIVATIONS)}")
    eps = conf.get("layer_norm_epsilon", 1e-5)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps <= 1:
        raise HFImportError(f"config.json's layer_norm_epsilon {shown(eps)} is not a number in (0, 1]")
    for key, want in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False),
                      ("tie_word_embeddings", True), ("add_cross_attention", False)):
        if conf.get(key, want) is not want:
            raise HFImportError(f"config.json sets {key} = {shown(conf.get(key))}; a model imported here needs {want}")
    cfg = ModelConfig(n_layer=size["n_layer"], n_head=size["n_head"], d_model=size["n_embd"], d_ff=d_ff,
                      n_ctx=size["n_positions"], vocab_size=size["vocab_size"], dropout=0.0,
                      pos_encoding="learned", mask="causal", norm="pre", ln_eps=float(eps), residual=True,
                      activation=ACTIVATIONS[act], attn_bias=True, tied=True, loss="cross_entropy")
    problems = cfg.validate()
    if problems:
        raise HFImportError(f"config.json describes a model that cannot be built here: {problems[0]}")
    return cfg


def _positive_int(conf: dict, key: str) -> int:
    value = conf.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HFImportError(f"config.json's {key} is {shown(value)}, not a positive whole number")
    return value


def load_state(folder: Path) -> tuple[dict[str, torch.Tensor], Path]:
    """The folder's weights, from model.safetensors or else pytorch_model.bin (weights only)."""
    import torch

    for name in (SAFETENSORS, TORCH_BIN):
        path = folder / name
        if not path.exists():
            continue
        try:
            check_regular(path, WEIGHTS_CAP, name)
            if name == SAFETENSORS:
                from safetensors.torch import load_file

                state = load_file(str(path), device="cpu")
            else:
                state = load_weights_only(path)
        except (UnsafeFileError, OSError) as e:
            raise HFImportError(str(e)) from None
        except RefusedPickle as e:
            raise HFImportError(f"{path}: {e}") from None
        except Exception as e:  # safetensors' and pickle's own errors, weights_only refusals
            raise HFImportError(f"{path} cannot be read as weights: {str(e).strip().splitlines()[0][:160]}") from None
        if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise HFImportError(f"{path} does not hold a state dict of tensors")
        return state, path
    sharded = " (sharded checkpoints, *.index.json, are not supported)" if any(folder.glob("*.index.json")) else ""
    raise HFImportError(f"{folder} has neither {SAFETENSORS} nor {TORCH_BIN}{sharded}")


def nanogpt_layout(state: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """Either key layout → ``transformer.``-prefixed keys with (out, in) weights, as nanoGPT saves them.
    Mask buffers are dropped; any other key this model has no place for is refused, never ignored."""
    out: dict[str, torch.Tensor] = {}
    for key, t in state.items():
        if key.endswith(_MASK_BUFFERS):
            continue
        key = key if key.startswith(("transformer.", "lm_head.")) else "transformer." + key
        out[key] = t.t() if key.endswith(_CONV1D) and t.dim() == 2 else t
    known = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight",
             "transformer.ln_f.bias", "lm_head.weight"}
    known |= {f"transformer.h.{i}.{k}" for i in range(cfg.n_layer) for k in _LAYER_KEYS}
    extra = sorted(set(out) - known)
    if extra:
        raise HFImportError(f"the weights hold {extra[0]}{', …' if len(extra) > 1 else ''}, which a GPT-2 of "
                            f"{cfg.n_layer} layers has no place for")
    return out


def convert(state: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """The folder's state dict as our weights (names of engine/model/gpt.py)."""
    from .nanogpt import NanoGPTImportError, convert_weights

    try:
        return convert_weights(nanogpt_layout(state, cfg), cfg)
    except NanoGPTImportError as e:
        raise HFImportError(str(e).replace("the checkpoint's", "the weights'")) from None


def load_tokenizer(folder: Path, vocab_size: int):
    """The folder's byte-level BPE: tokenizer.json, else vocab.json + merges.txt, read as data
    (engine/text/bpe_file.py): its size is checked against config.json's before it is built, and any setting
    but its vocabulary, merges and special tokens is left out and listed in the tokenizer's `ignored`."""
    from ..text.bpe import BPETokenizer

    if (folder / TOKENIZER_JSON).exists():
        source = TOKENIZER_JSON
    elif (folder / VOCAB_JSON).exists() and (folder / MERGES_TXT).exists():
        source = f"{VOCAB_JSON} + {MERGES_TXT}"
    else:
        raise HFImportError(f"{folder} has no tokenizer: neither {TOKENIZER_JSON} nor {VOCAB_JSON} and {MERGES_TXT}")
    try:
        if source == TOKENIZER_JSON:
            text = read_text(folder / TOKENIZER_JSON, JSON_CAP, TOKENIZER_JSON)
            tok = BPETokenizer.from_dict(parse_json(text, TOKENIZER_JSON), str(folder / TOKENIZER_JSON),
                                         vocab_size, lenient=True)
        else:
            vocab = parse_json(read_text(folder / VOCAB_JSON, JSON_CAP, VOCAB_JSON), VOCAB_JSON)
            merges = read_text(folder / MERGES_TXT, JSON_CAP, MERGES_TXT).splitlines()
            tok = BPETokenizer.from_vocab_merges(vocab, merges, f"{folder / VOCAB_JSON} + {MERGES_TXT}", vocab_size)
    except CorpusError as e:  # names the file already
        raise HFImportError(f"the tokenizer cannot be used: {e}") from None
    except (UnsafeFileError, OSError, UnicodeDecodeError, ValueError) as e:  # ValueError: JSON
        raise HFImportError(f"the tokenizer in {folder} cannot be read: {str(e).splitlines()[0][:160]}") from None
    return tok, source


def finetune_config(model: ModelConfig) -> TrainConfig:
    """nanoGPT's finetune_shakespeare recipe scaled to a laptop: 20 steps at a constant 3e-5, evaluating
    every 5, on sequences of the model's full context. nanoGPT accumulates 32 sequences a step; we take one
    (no accumulation here), so that fine-tuning fits: the training-memory estimate for GPT-2 small is
    5.0 GiB at one sequence, 14.3 GiB at four. One checkpoint kept (GPT-2 small's is ~1.5 GB with its
    optimizer state) and room for the 5 snapshots."""
    snapshot_mb = min(4 * parameter_count(model) / 1e6, BY_KEY["train.snapshot_budget_mb"].hi / 5.5)
    return TrainConfig(steps=20, batch_size=1, lr=3e-5, min_lr=3e-5, warmup_steps=0, eval_every=5,
                       eval_batches=4, checkpoint_every=20, keep_checkpoints=1, snapshot_every=5,
                       snapshot_budget_mb=max(math.ceil(5.5 * snapshot_mb), TrainConfig.snapshot_budget_mb),
                       sample_tokens=64)


def probe(cfg: ExperimentConfig, tokenizer) -> Probe:
    """The probe batch and heatmap prompt from the start of the bundled plays, in the model's own tokens."""
    from ..model.probes import induction_probe
    from ..text.data import Dataset

    m, t = cfg.model, cfg.train
    data = Dataset.build(cfg.data, m.n_ctx, shakespeare_text()[:PROBE_CHARS], tokenizer)
    sequences = probe_sequences(m.n_ctx, t.probe_batch)  # one sequence of GPT-2's 1024 tokens
    x, y = data.fixed_batch(sequences, m.n_ctx, t.seed)
    return Probe(x, y, data.text_head, induction_probe(m.vocab_size, m.n_ctx, t.seed, sequences))


STAGES = ("reading config.json", "reading the tokenizer", "reading the weights", "converting the weights",
          "tokenizing the probe batch", "writing the run (a checkpoint and a snapshot)")


def import_hf(folder: str | Path, run_dir: str | Path, progress: Progress | None = None
              ) -> Imported:
    """Write a run of ours at run_dir from a GPT-2-family folder; everything is checked before the run is
    written, in one piece, by `create_run`. `progress(done, total, stage)` is told each of STAGES as it
    starts (the app shows it: GPT-2 small takes half a minute)."""
    say = stages(STAGES, progress)
    folder = Path(folder)
    if not folder.is_dir():
        raise HFImportError(f"{folder} is not a folder")
    say()
    model = model_config(read_config(folder))
    cfg = ExperimentConfig(name=f"hf {folder.resolve().name}", model=model, train=finetune_config(model),
                           data=DataConfig(corpus=SHAKESPEARE, tokenizer="bpe", max_vocab=model.vocab_size))
    from ..rundir.create import check_target, create_run, require_valid  # imports torch: see the imports above

    run_dir = check_target(run_dir)
    try:  # sizes, memory: refused before the weights are read
        require_valid(cfg)
    except UserError as e:
        raise HFImportError(f"the imported model cannot be opened here: {e}") from None
    say()
    tokenizer, source = load_tokenizer(folder, model.vocab_size)
    say()
    state, weights_file = load_state(folder)
    say()
    weights = convert(state, model)
    del state
    say()
    run_probe = probe(cfg, tokenizer)
    say()
    create_run(run_dir, cfg, tokenizer, run_probe, weights,
               state={"imported_from": str(folder.resolve()), "wall_s": 0.0})
    return Imported(run_dir, cfg, weights_file, source, tokenizer.ignored)

