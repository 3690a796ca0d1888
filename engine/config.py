"""The experiment's description: model, training and data configs, their validation and parameter count.

`ModelConfig` is the single source of truth (DESIGN §3): the torch module, the symbolic form and every
evaluated term are built from it. Configs are frozen dataclasses that round-trip through TOML; `validate()`
returns every problem with the field it belongs to so the builder can show it beside that field.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import tomli_w

from .errors import UserError
from .safe_io import parse_toml

POS_ENCODINGS = ("sinusoidal", "learned", "none")
MASKS = ("causal", "banded", "none")
NORMS = ("pre", "post", "none")
ACTIVATIONS = ("relu", "gelu")
LOSSES = ("cross_entropy", "squared_error")
TOKENIZERS = ("char", "word")
DEVICES = ("auto", "cpu", "cuda", "mps")
PRECISIONS = ("auto", "float32", "bf16")
OPTIMIZERS = ("adamw", "sgd", "muon")  # the step's geometry (FORMS.md §8); built in engine/optimizers.py


class ConfigError(UserError, ValueError):
    """A config that cannot be read or built; the message is one line for the user."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config, attached to the field (``section.name``) it belongs to."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True)
class ModelConfig:
    n_layer: int = 2            # transformer blocks
    n_head: int = 4             # attention heads per block; must divide d_model
    d_model: int = 64           # width of the residual stream
    d_ff: int = 256             # hidden width of the MLP
    n_ctx: int = 64             # context length (tokens a sequence may hold)
    vocab_size: int = 65        # set from the tokenizer when an experiment is built
    dropout: float = 0.0        # on attention weights and block outputs while training; never in probes
    pos_encoding: str = "sinusoidal"  # sinusoidal (Vaswani et al. 2017) | learned | none
    mask: str = "causal"        # causal | banded (causal, each token sees itself and `band` earlier) | none
    band: int = 8               # β of the banded mask
    norm: str = "pre"           # layer norm before each sub-layer (GPT-2) | after it (2017 paper) | none
    residual: bool = True       # residual connections around attention and MLP
    activation: str = "gelu"    # MLP non-linearity: relu | gelu (tanh-free, exact erf form)
    tied: bool = False          # unembedding reuses the token embedding (W_U = W_E^t)
    loss: str = "cross_entropy"  # cross_entropy | squared_error (½‖onehot − logits‖², the note's Euler form)

    @property
    def d_head(self) -> int:
        """Width of one head's queries, keys and values (d_q = d_v = d_model / n_head)."""
        return self.d_model // self.n_head

    @property
    def has_final_norm(self) -> bool:
        """A pre-LN stack ends with a layer norm before the unembedding, as GPT-2 does."""
        return self.norm == "pre"

    def validate(self) -> list[Problem]:
        p: list[Problem] = []
        for name in ("n_layer", "n_head", "d_model", "d_ff"):
            if getattr(self, name) < 1:
                p.append(Problem(f"model.{name}", "must be at least 1"))
        if self.n_ctx < 2:
            p.append(Problem("model.n_ctx", "context length must be at least 2"))
        if self.vocab_size < 2:
            p.append(Problem("model.vocab_size", "vocabulary must hold at least 2 tokens"))
        if self.n_head >= 1 and self.d_model >= 1 and self.d_model % self.n_head:
            p.append(Problem("model.n_head", f"{self.n_head} heads do not divide d_model = {self.d_model}"))
        if not 0.0 <= self.dropout < 1.0:
            p.append(Problem("model.dropout", "must be in [0, 1)"))
        if self.band < 1:
            p.append(Problem("model.band", "band β must be at least 1"))
        p += _choice(self, "pos_encoding", POS_ENCODINGS, "model")
        p += _choice(self, "mask", MASKS, "model")
        p += _choice(self, "norm", NORMS, "model")
        p += _choice(self, "activation", ACTIVATIONS, "model")
        p += _choice(self, "loss", LOSSES, "model")
        if self.pos_encoding == "sinusoidal" and self.d_model % 2:
            p.append(Problem("model.d_model", "sinusoidal encoding needs an even d_model"))
        return p


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 2000           # optimizer steps in all
    batch_size: int = 12        # sequences per step
    # adamw: diagonal metric (torch AdamW) | sgd: Euclidean (torch SGD, momentum) | muon: spectral (torch Muon on
    # the blocks' matrices, AdamW with lr, betas and adam_eps on embeddings, unembedding, gains and biases)
    optimizer: str = "adamw"    # the step's geometry: adamw (diagonal) | sgd (Euclidean) | muon (spectral)
    lr: float = 1e-3            # peak learning rate (AdamW, SGD; with Muon: its AdamW part)
    min_lr: float = 1e-4        # floor of the cosine decay (every group decays by the same factor)
    warmup_steps: int = 100     # linear warm-up from 0 to lr
    weight_decay: float = 0.1   # on matrices only, never gains/biases: decoupled (AdamW, Muon) or L2 (SGD)
    beta1: float = 0.9          # AdamW: first-moment decay
    beta2: float = 0.99         # AdamW: second-moment decay
    adam_eps: float = 1e-8      # AdamW: ε of the diagonal metric √v̂ + ε (torch's default)
    momentum: float = 0.9       # SGD: heavy-ball momentum; 0 is plain gradient descent
    muon_lr: float = 0.02       # Muon: peak learning rate of the blocks' matrices (Keller Jordan's value)
    muon_momentum: float = 0.95  # Muon: Nesterov momentum before orthogonalising (torch's default)
    muon_ns_steps: int = 5      # Muon: Newton–Schulz iterations that approximate U Vᵀ (torch's default)
    grad_clip: float = 1.0      # clip the global gradient norm; 0 turns clipping off
    eval_every: int = 100       # steps between validation evaluations (and logged samples)
    eval_batches: int = 20      # batches averaged for a validation loss
    report_every: int = 1       # steps between StepReports
    checkpoint_every: int = 500  # steps between checkpoints
    keep_checkpoints: int = 3   # checkpoints kept besides latest and best
    snapshot_every: int = 100   # steps between weight snapshots (the timeline of the weight pane)
    snapshot_budget_mb: float = 200.0  # disk the snapshots may use; older ones are thinned, never lost silently
    probe_batch: int = 4        # sequences in the fixed probe batch (forms and coefficients)
    sample_tokens: int = 200    # length of samples logged at evaluation steps
    seed: int = 1337
    device: str = "auto"        # auto (CUDA, then MPS, then CPU) | cpu | cuda | mps
    # 0 = every core. Measured on 2 cores: with an idle GUI thread, 2 threads train 8 steps/s at
    # event-loop lag p99 5 ms, 1 thread 5 steps/s at p99 22–32 ms; so use every core and keep the GUI idle.
    torch_threads: int = 0
    precision: str = "auto"     # training step: auto (bf16 on a CUDA GPU that has it, else float32) | float32 | bf16
    compile: bool = False       # torch.compile the training step; trains eagerly, saying why, if it cannot

    def validate(self) -> list[Problem]:
        p: list[Problem] = []
        for name in ("steps", "batch_size", "eval_every", "eval_batches", "report_every",
                     "checkpoint_every", "keep_checkpoints", "snapshot_every", "probe_batch"):
            if getattr(self, name) < 1:
                p.append(Problem(f"train.{name}", "must be at least 1"))
        if not self.lr > 0:
            p.append(Problem("train.lr", "learning rate must be > 0"))
        if not 0 <= self.min_lr <= self.lr:
            p.append(Problem("train.min_lr", "must be in [0, lr]"))
        for name in ("warmup_steps", "weight_decay", "grad_clip", "sample_tokens", "torch_threads"):
            if getattr(self, name) < 0:
                p.append(Problem(f"train.{name}", "must not be negative"))
        for name in ("beta1", "beta2", "momentum", "muon_momentum"):
            if not 0 <= getattr(self, name) < 1:
                p.append(Problem(f"train.{name}", "must be in [0, 1)"))
        if not self.adam_eps > 0:
            p.append(Problem("train.adam_eps", "must be > 0"))
        if not self.muon_lr > 0:
            p.append(Problem("train.muon_lr", "learning rate must be > 0"))
        if not 1 <= self.muon_ns_steps < 100:  # torch.optim.Muon refuses 100 or more
            p.append(Problem("train.muon_ns_steps", "must be in [1, 99]"))
        p += _choice(self, "optimizer", OPTIMIZERS, "train")
        if not self.snapshot_budget_mb > 0:
            p.append(Problem("train.snapshot_budget_mb", "must be > 0"))
        p += _choice(self, "device", DEVICES, "train")
        p += _choice(self, "precision", PRECISIONS, "train")
        return p


@dataclass(frozen=True)
class DataConfig:
    corpus: str = "shakespeare"  # "shakespeare" (bundled plays) or the path of a UTF-8 text file
    tokenizer: str = "char"     # char | word
    max_vocab: int = 5000       # word tokenizer: most frequent words kept, the rest become <unk>
    val_fraction: float = 0.1   # the last tenth of the tokens is the validation split

    def validate(self) -> list[Problem]:
        p = _choice(self, "tokenizer", TOKENIZERS, "data")
        if not self.corpus.strip():
            p.append(Problem("data.corpus", "choose a corpus"))
        if self.max_vocab < 2:
            p.append(Problem("data.max_vocab", "must be at least 2"))
        if not 0 < self.val_fraction < 1:
            p.append(Problem("data.val_fraction", "must be in (0, 1)"))
        return p


@dataclass(frozen=True)
class ExperimentConfig:
    name: str = "new run"
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    data: DataConfig = field(default_factory=DataConfig)

    def validate(self) -> list[Problem]:
        problems = self.model.validate() + self.train.validate() + self.data.validate()
        if problems:
            return problems
        from .limits import problems as limit_problems  # sizes, memory, seeds, non-finite numbers

        return limit_problems(self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExperimentConfig:
        """Build from a (possibly partial) dict; unknown keys and wrong types are a ConfigError."""
        if not isinstance(d, dict):
            raise ConfigError("config must be a table")
        unknown = set(d) - {"name", "model", "train", "data"}
        if unknown:
            raise ConfigError(f"unknown config section(s): {', '.join(sorted(unknown))}")
        name = d.get("name", cls.name)
        if not isinstance(name, str):
            raise ConfigError("name must be a string")
        return cls(name=name,
                   model=_section(ModelConfig, d.get("model", {}), "model"),
                   train=_section(TrainConfig, d.get("train", {}), "train"),
                   data=_section(DataConfig, d.get("data", {}), "data"))

    def to_toml(self) -> str:
        return _HEADER + tomli_w.dumps(self.to_dict())

    @classmethod
    def from_toml(cls, text: str) -> ExperimentConfig:
        try:
            return cls.from_dict(parse_toml(text, "config"))
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"not valid TOML: {e}") from None
        except ValueError as e:  # nested too deeply
            raise ConfigError(str(e)) from None

    @classmethod
    def load(cls, path: str | Path) -> ExperimentConfig:
        from .safe_io import CONFIG_CAP, UnsafeFileError, read_text

        path = Path(path)
        try:
            text = read_text(path, CONFIG_CAP, "config")
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {path}") from None
        except UnsafeFileError as e:
            raise ConfigError(str(e)) from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot read config {path}: {e}") from None
        try:
            return cls.from_toml(text)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None

    def replace(self, **sections: Any) -> ExperimentConfig:
        return dataclasses.replace(self, **sections)


_HEADER = "# GPT Explorer experiment: [model], [train] and [data]; see engine/config.py for every field.\n"


def _choice(cfg: Any, name: str, allowed: tuple[str, ...], section: str) -> list[Problem]:
    value = getattr(cfg, name)
    if value in allowed:
        return []
    return [Problem(f"{section}.{name}", f"{value!r} is not one of {', '.join(allowed)}")]


def _section(cls: type, d: Any, section: str) -> Any:
    if not isinstance(d, dict):
        raise ConfigError(f"[{section}] must be a table")
    known = {f.name: f for f in fields(cls)}
    unknown = set(d) - set(known)
    if unknown:
        raise ConfigError(f"unknown field(s) in [{section}]: {', '.join(sorted(unknown))}")
    values = {}
    for key, value in d.items():
        want = type(getattr(cls(), key))
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not want:
            raise ConfigError(f"{section}.{key} must be {want.__name__}, got {value!r}")
        values[key] = value
    return cls(**values)


def parameter_count(m: ModelConfig) -> int:
    """Closed formula for the number of trained parameters (equals torch's count; tests check it).

    Per block (the tutorial's formula): attention 2·n_h·d·(d_v + d_q) with d_q = d_v = d/n_h and no
    biases, MLP 2·d·d_f + d_f + d (weights and biases), and 2·d per layer norm (gain and bias), two per
    block. Embeddings d·n_vocab, plus d·n_ctx when positions are learned; a final layer norm (pre-LN);
    unembedding d·n_vocab + n_vocab, or only its bias n_vocab when tied to the embedding.
    """
    d, h, v = m.d_model, m.n_head, m.vocab_size
    dq = dv = d // h
    norms = 2 * (2 * d) if m.norm != "none" else 0
    block = 2 * h * d * (dv + dq) + 2 * d * m.d_ff + d + m.d_ff + norms
    embed = d * v + (d * m.n_ctx if m.pos_encoding == "learned" else 0)
    final = 2 * d if m.has_final_norm else 0
    unembed = v if m.tied else d * v + v
    return m.n_layer * block + embed + final + unembed


def optimizer_state_floats(cfg: ExperimentConfig) -> int:
    """Floats the optimizer keeps: AdamW two moments per parameter; SGD one momentum buffer (none without
    momentum); Muon one momentum buffer per block matrix and AdamW's two moments for the rest
    (engine/optimizers.py)."""
    from .weight_layout import weight_shapes

    params, t = parameter_count(cfg.model), cfg.train
    if t.optimizer == "sgd":
        return params if t.momentum else 0
    if t.optimizer == "muon":
        matrices = sum(math.prod(s) for n, s in weight_shapes(cfg.model).items()
                       if n.startswith("blocks.") and len(s) == 2)
        return matrices + 2 * (params - matrices)
    return 2 * params


def memory_estimate_bytes(cfg: ExperimentConfig, bytes_per_float: int = 4) -> int:
    """Rough training memory: weights, gradients and the optimizer's state (optimizer_state_floats), plus
    the activations kept for the backward pass (about 16 tensors of B·T·d per block and the attention maps
    B·h·T·T)."""
    m, t = cfg.model, cfg.train
    params = parameter_count(m)
    b, n = t.batch_size, m.n_ctx
    per_block = 16 * b * n * m.d_model + 2 * b * n * m.d_ff + 3 * b * m.n_head * n * n
    acts = m.n_layer * per_block + 3 * b * n * m.vocab_size
    return bytes_per_float * (2 * params + optimizer_state_floats(cfg) + acts)


def human_count(n: int) -> str:
    """12_345 -> '12.3k'; used by the CLI and the builder."""
    if n < 1000:
        return str(n)
    exp = min(int(math.log10(n) // 3), 3)
    return f"{n / 10 ** (3 * exp):.3g}{'kMG'[exp - 1]}"
