"""A nanoGPT `out_dir` (its `ckpt.pt` and the dataset's `meta.pkl`) turned into a run directory of ours.

nanoGPT (https://github.com/karpathy/nanoGPT, model.py and train.py) saves ``{'model': state_dict,
'model_args': {n_layer, n_head, n_embd, block_size, bias, vocab_size, dropout}, 'iter_num',
'best_val_loss', 'config': {...}}``. Its GPT is ours with learned positions, pre-LN with a final norm,
exact GELU, layer-norm ε 1e-5, an MLP of width 4·n_embd and the unembedding tied to the token embedding.
With ``bias=True`` (GPT-2's layout) every Linear and LayerNorm has a bias: the attention's become our
`attn_bias` b_Q, b_K, b_V (split from c_attn's like its weight) and b_O; with ``bias=False`` there are
none, and the layer norms' and MLP's biases, which our model always has, are zeros. Without flash
attention nanoGPT saves its causal mask as a buffer ``attn.bias``, which is not a weight and is skipped.
Its `nn.Linear` weights act on the left (y = x Wᵗ) and ours on the right (X W), so each is transposed;
`c_attn` holds W_Q, W_K, W_V stacked along its output rows, and within each the heads side by side, as
our W_Q's columns are. `torch.compile` prefixes keys with `_orig_mod.`, which is dropped. The checkpoint
is read with ``torch.load(weights_only=True)`` and meta.pkl with nanogpt_meta's refusing unpickler:
importing never runs the files' code. What cannot be mapped is one sentence (a NanoGPTImportError).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..rundir import integrity as integrity
from ..configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from ..configs.sizes import probe_sequences
from ..text.data import Dataset
from ..text.tokenizer import CharTokenizer
from ..errors import UserError, shown
from ..configs.limits import problems as limit_problems
from ..model.gpt import GPT
from .nanogpt_meta import read_meta
from .progress import Progress, stages
from ..rundir.create import check_loss, check_target, create_run, require_valid
from ..rundir.runs import Probe
from ..safe_io import RefusedPickle, load_weights_only

CKPT, META, VAL_BIN = "ckpt.pt", "meta.pkl", "val.bin"
_PREFIX = "_orig_mod."
# nanoGPT's train.py settings and the TrainConfig fields they mean (the rest keep our defaults)
_TRAIN_KEYS = {"batch_size": "batch_size", "learning_rate": "lr", "min_lr": "min_lr",
               "warmup_iters": "warmup_steps", "weight_decay": "weight_decay", "beta1": "beta1",
               "beta2": "beta2", "grad_clip": "grad_clip", "eval_interval": "eval_every",
               "eval_iters": "eval_batches", "seed": "seed"}


class NanoGPTImportError(UserError, ValueError):
    """A nanoGPT checkpoint that cannot become a run of ours; the message is one sentence."""


@dataclass(frozen=True)
class Imported:
    """What an import wrote, for the CLI's and the GUI's one-line summary."""

    run_dir: Path
    step: int
    config: ExperimentConfig
    meta: Path
    probe_source: str  # where the probe batch came from: the dataset's val.bin or the model's own text


def load_checkpoint(out_dir: Path) -> dict:
    path = out_dir / CKPT if out_dir.is_dir() else out_dir
    if not path.is_file():
        raise NanoGPTImportError(f"no nanoGPT checkpoint at {path}")
    try:
        ckpt = load_weights_only(path)
    except RefusedPickle as e:
        raise NanoGPTImportError(f"{path}: {e}") from None
    except Exception as e:  # weights_only refusals, zip and pickle errors: not a checkpoint we can read safely
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise NanoGPTImportError(f"{path} cannot be read as a weights-only checkpoint: {first}") from None
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model"), dict) \
            or not isinstance(ckpt.get("model_args"), dict):
        raise NanoGPTImportError(f"{path} is not a nanoGPT checkpoint (it has no 'model' and 'model_args')")
    return ckpt


def model_config(args: dict, vocab_size: int) -> ModelConfig:
    """Our ModelConfig for nanoGPT's model_args; unknown shapes and bad values are refused."""
    sizes = {k: args.get(k) for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size")}
    wrong = [k for k, v in sizes.items() if type(v) is not int]
    if wrong:
        raise NanoGPTImportError(f"the checkpoint's model_args.{wrong[0]} is {shown(sizes[wrong[0]])}, "
                                 "not a whole number")
    n_layer, n_head, d, n_ctx, v = sizes.values()
    if v != vocab_size:
        raise NanoGPTImportError(f"the checkpoint has {v} tokens but meta.pkl has {vocab_size} characters; "
                           "they must come from the same dataset")
    bias = args.get("bias", True)
    if type(bias) is not bool:
        raise NanoGPTImportError(f"the checkpoint's model_args.bias is {shown(bias)}, not true or false")
    dropout = args.get("dropout", 0.0)
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise NanoGPTImportError(f"the checkpoint's model_args.dropout is {shown(dropout)}, not a number in [0, 1)")
    cfg = ModelConfig(n_layer=n_layer, n_head=n_head, d_model=d, d_ff=4 * d, n_ctx=n_ctx, vocab_size=v,
                      dropout=float(dropout), pos_encoding="learned", mask="causal",
                      norm="pre", residual=True, activation="gelu", tied=True, loss="cross_entropy",
                      attn_bias=bias, ln_eps=1e-5)
    problems = cfg.validate() or limit_problems(ExperimentConfig(model=cfg))
    if problems:
        raise NanoGPTImportError(f"the checkpoint's shape does not make a model here: {problems[0]}")
    return cfg


def convert_weights(state: dict, cfg: ModelConfig) -> dict[str, torch.Tensor]:
    """nanoGPT's state dict → ours: transposed, c_attn split into W_Q, W_K, W_V, missing biases zeros."""
    sd = {k.removeprefix(_PREFIX): v for k, v in state.items() if not k.endswith(".attn.bias")}  # the mask
    biased = sorted(k for k in sd if k.endswith(".bias"))
    if biased and not cfg.attn_bias:
        raise NanoGPTImportError(f"this checkpoint has biases ({biased[0]}, …) but its model_args say bias=False")
    d, f = cfg.d_model, cfg.d_ff
    used = {"lm_head.weight"}  # tied to wte: compared with it below

    def get(key: str, shape: tuple[int, ...]) -> torch.Tensor:
        used.add(key)
        t = sd.get(key)
        if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape:
            found = "missing" if t is None else f"of shape {tuple(getattr(t, 'shape', ()))}"
            raise NanoGPTImportError(f"the checkpoint's {key} is {found}, expected shape {shape}")
        return floats(key, t)

    def bias(key: str, n: int) -> torch.Tensor:
        return get(key, (n,)) if cfg.attn_bias else torch.zeros(n)

    out = {"W_E": get("transformer.wte.weight", (cfg.vocab_size, d)),
           "W_P": get("transformer.wpe.weight", (cfg.n_ctx, d))}
    for i in range(cfg.n_layer):
        h, b = f"transformer.h.{i}.", f"blocks.{i}."
        q, k, v = get(h + "attn.c_attn.weight", (3 * d, d)).split(d, dim=0)  # each (d_out, d_in)
        out |= {b + "W_Q": q.t(), b + "W_K": k.t(), b + "W_V": v.t(),
                b + "W_O": get(h + "attn.c_proj.weight", (d, d)).t(),
                b + "ln1.g": get(h + "ln_1.weight", (d,)), b + "ln1.b": bias(h + "ln_1.bias", d),
                b + "W_in": get(h + "mlp.c_fc.weight", (f, d)).t(), b + "b_in": bias(h + "mlp.c_fc.bias", f),
                b + "W_out": get(h + "mlp.c_proj.weight", (d, f)).t(), b + "b_out": bias(h + "mlp.c_proj.bias", d),
                b + "ln2.g": get(h + "ln_2.weight", (d,)), b + "ln2.b": bias(h + "ln_2.bias", d)}
        if cfg.attn_bias:
            bq, bk, bv = get(h + "attn.c_attn.bias", (3 * d,)).split(d)
            out |= {b + "b_Q": bq, b + "b_K": bk, b + "b_V": bv, b + "b_O": get(h + "attn.c_proj.bias", (d,))}
    out |= {"ln_f.g": get("transformer.ln_f.weight", (d,)), "ln_f.b": bias("transformer.ln_f.bias", d),
            "b_U": torch.zeros(cfg.vocab_size)}
    extra = sorted(set(sd) - used)  # a layer more than model_args says, say: never dropped without a word
    if extra:
        more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
        raise NanoGPTImportError(f"the checkpoint holds {shown(extra[0])}{more}, which a nanoGPT model of "
                                 f"{cfg.n_layer} layers (its model_args) has no place for")
    head = sd.get("lm_head.weight")
    if isinstance(head, torch.Tensor) and not torch.equal(floats("lm_head.weight", head), out["W_E"]):
        raise NanoGPTImportError("the checkpoint's lm_head is not tied to its token embedding, as nanoGPT's always is")
    return {k: v.contiguous() for k, v in out.items()}


def floats(key: str, t: torch.Tensor) -> torch.Tensor:
    """A weight as float32; integers, booleans and complex numbers are not weights a model was trained with
    (a float16, bfloat16 or float64 one is, and is converted)."""
    if not t.is_floating_point():
        raise NanoGPTImportError(f"the checkpoint's {key} holds {str(t.dtype).removeprefix('torch.')} numbers, not "
                                 "floating-point weights")
    return t.detach().to(torch.float32)


def find_meta(out_dir: Path, dataset: str | None, meta: Path | None = None) -> Path:
    """meta.pkl: as given, else beside ckpt.pt, else at nanoGPT's data/<dataset>/meta.pkl."""
    if meta is not None:
        if not meta.is_file():
            raise NanoGPTImportError(f"no meta.pkl at {meta}")
        return meta
    tried = [out_dir / META]
    if dataset:
        tried += [out_dir.parent / "data" / dataset / META, Path("data") / dataset / META]
    for path in tried:
        if path.is_file():
            return path
    raise NanoGPTImportError(f"no character vocabulary found (looked for {', '.join(map(str, tried))}); pass --meta "
                       "PATH (GPT-2 BPE checkpoints, which have no meta.pkl, cannot be imported)")


def train_config(conf: dict, iter_num: int) -> TrainConfig:
    """nanoGPT's training settings where they fit ours (a fine-tune of the import starts with them); a value of
    the wrong kind, or one our config refuses, is refused naming nanoGPT's key."""
    defaults, values = TrainConfig(), {}
    for theirs, ours in _TRAIN_KEYS.items():
        v = conf.get(theirs)
        if v is None:
            continue
        want = type(getattr(defaults, ours))
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or (want is int and v != int(v)):
            raise NanoGPTImportError(f"the checkpoint's config has {theirs} = {shown(v)}, not a {want.__name__} "
                                     f"our train.{ours} can hold")
        values[ours] = want(v)
    max_iters = conf.get("max_iters", 0)
    t = dataclasses.replace(defaults, steps=max(iter_num, max_iters if type(max_iters) is int else 0, 1), **values)
    problems = t.validate() or limit_problems(ExperimentConfig(train=t))
    if problems:
        theirs = {ours: theirs for theirs, ours in _TRAIN_KEYS.items()}.get(problems[0].field.split(".")[-1])
        where = f" (nanoGPT's {theirs})" if theirs else ""
        raise NanoGPTImportError(f"the checkpoint's config cannot be ours: {problems[0]}{where}")
    return t


def _iter_num(ckpt: dict) -> int:
    step = ckpt.get("iter_num", 0)
    if step is None:
        return 0
    if type(step) is not int or step < 0:
        raise NanoGPTImportError(f"the checkpoint's iter_num is {shown(step)}, not a step (a whole number from 0)")
    return step


STAGES = ("reading the checkpoint", "converting the weights", "making the probe batch",
          "writing the run (a checkpoint and a snapshot)")


def import_nanogpt(out_dir: str | Path, run_dir: str | Path, meta: str | Path | None = None,
                   progress: Progress | None = None) -> Imported:
    """Write a run of ours at run_dir from a nanoGPT out_dir; returns what was written. Everything is
    checked before the run is written, in one piece, by `create_run`. `progress(done, total, stage)` is told
    each of STAGES as it starts."""
    say = stages(STAGES, progress)
    out_dir, run_dir = Path(out_dir), check_target(run_dir)
    say()
    ckpt = load_checkpoint(out_dir)
    conf = ckpt.get("config")
    conf = {} if conf is None else conf
    if not isinstance(conf, dict):  # nanoGPT saves its settings as a dict: this checkpoint is not one of its own
        raise NanoGPTImportError(f"the checkpoint's config is {shown(conf)}, not a table of nanoGPT's settings")
    dataset = conf.get("dataset") if isinstance(conf.get("dataset"), str) else None
    folder = out_dir if out_dir.is_dir() else out_dir.parent
    meta_path = find_meta(folder, dataset, Path(meta) if meta is not None else None)
    tokenizer = CharTokenizer(read_meta(meta_path))
    model_cfg = model_config(ckpt["model_args"], tokenizer.vocab_size)
    step = _iter_num(ckpt)
    data_dir = meta_path.parent
    corpus = str(data_dir / "input.txt") if (data_dir / "input.txt").is_file() else (dataset or "nanogpt")
    cfg = ExperimentConfig(name=f"nanogpt {dataset or folder.name}", model=model_cfg,
                           train=train_config(conf, step), data=DataConfig(corpus=corpus))
    require_valid(cfg)  # the memory a training of it would need, before a weight is converted
    say()
    weights = convert_weights(ckpt["model"], model_cfg)
    try:
        integrity.check_weights(weights, integrity.expected_shapes(model_cfg), "the checkpoint")
        best = check_loss(ckpt.get("best_val_loss"), "checkpoint's best_val_loss")
    except UserError as e:
        raise NanoGPTImportError(str(e)) from None
    say()
    probe, source = _probe(data_dir / VAL_BIN, cfg, tokenizer, weights)
    state = {"imported_from": str(out_dir.resolve()), "wall_s": 0.0}
    say()
    create_run(run_dir, cfg, tokenizer, probe, weights, step=step, state=state, best_val=best)
    return Imported(run_dir, step, cfg, meta_path, source)


def _probe(val_bin: Path, cfg: ExperimentConfig, tokenizer: CharTokenizer,
           weights: dict[str, torch.Tensor]) -> tuple[Probe, str]:
    """The probe batch from the dataset's val.bin (uint16 ids, as nanoGPT's prepare.py writes), or, when
    there is none, from text the model itself samples (seeded), so forms and heatmaps have tokens."""
    n, t = cfg.model.n_ctx, cfg.train
    ids = None
    if val_bin.is_file() and val_bin.stat().st_size >= 2 * (n + 2):
        ids = np.fromfile(val_bin, dtype=np.uint16, count=200_000).astype(np.int64)
        if ids.max() >= tokenizer.vocab_size:
            ids = None
    source = f"{val_bin}"
    if ids is None:
        model = GPT.from_weights(cfg.model, weights)
        gen = torch.Generator().manual_seed(t.seed)
        start = torch.zeros((1, 1), dtype=torch.long)
        ids = model.eval().generate(start, 4 * n + 1, 1.0, generator=gen)[0].numpy()
        source = "text sampled from the model (no val.bin beside meta.pkl)"
    stream = torch.from_numpy(ids)
    lines = tokenizer.decode(ids[:4 * n]).splitlines() or ["\n"]
    prompt = max(lines, key=len)[:min(48, n)] or "\n"  # the heatmap prompt: a line of the text, not a blank
    data = Dataset(tokenizer, stream, stream, prompt)
    x, y = data.fixed_batch(probe_sequences(n, t.probe_batch), n, t.seed)
    return Probe(x, y, data.text_head), source
