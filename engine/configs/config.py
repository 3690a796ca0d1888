"""The experiment's description: model, training and data configs, their validation and their TOML form.

`ModelConfig` is the single source of truth (docs/design.md): the torch module, the symbolic form and every
evaluated term are built from it. Configs are frozen dataclasses that round-trip through TOML; each field's
label, meaning, choices and bounds are in engine/configs/fields.py's table. `validate()` returns every
problem with the field it belongs to so the builder can show it beside that field: the table's choices and
bounds, then the checks that relate two fields, written here, then what this machine allows
(engine/configs/limits.py). What a config costs (parameters, memory) is engine/configs/sizes.py's.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import tomli_w

from .fields import choices, section_fields
from .limits import problems as limit_problems  # sizes, memory, seeds, non-finite numbers
from .problem import Problem
from ..errors import UserError
from ..safe_io import parse_toml

DEVICES = choices("train.device")
OPTIMIZERS = choices("train.optimizer")  # the step's geometry (docs/geometries.md); built in engine/training/optimizers.py
BPE_MIN_VOCAB = 256  # a byte-level BPE vocabulary holds every byte before its first merge
SCHEDULES = choices("train.schedule")  # the learning rate's curve after warm-up (engine/training/schedule.py)


class ConfigError(UserError, ValueError):
    """A config that cannot be read or built; the message is one line for the user."""


@dataclass(frozen=True)
class ModelConfig:
    """The model's architecture (each field's meaning, choices and bounds: engine/configs/fields.py)."""

    n_layer: int = 2
    n_head: int = 4
    d_model: int = 64
    d_ff: int = 256
    n_ctx: int = 64
    vocab_size: int = 65
    dropout: float = 0.0
    pos_encoding: str = "sinusoidal"
    mask: str = "causal"
    band: int = 8
    norm: str = "pre"
    ln_eps: float = 1e-5
    residual: bool = True
    activation: str = "gelu"
    attn_bias: bool = False
    tied: bool = False
    loss: str = "cross_entropy"

    @property
    def d_head(self) -> int:
        """Width of one head's queries, keys and values (d_q = d_v = d_model / n_head)."""
        return self.d_model // self.n_head

    @property
    def has_final_norm(self) -> bool:
        """A pre-LN stack ends with a layer norm before the unembedding, as GPT-2 does."""
        return self.norm == "pre"

    def validate(self) -> list[Problem]:
        p = table_problems(self, "model")
        if self.n_head >= 1 and self.d_model >= 1 and self.d_model % self.n_head:
            p.append(Problem("model.n_head", f"{self.n_head} heads do not divide d_model = {self.d_model}"))
        if self.pos_encoding == "sinusoidal" and self.d_model % 2:
            p.append(Problem("model.d_model", "sinusoidal encoding needs an even d_model"))
        return p


@dataclass(frozen=True)
class TrainConfig:
    """How the model is trained (each field's meaning, choices and bounds: engine/configs/fields.py)."""

    steps: int = 2000
    batch_size: int = 12
    optimizer: str = "adamw"
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_steps: int = 100
    schedule: str = "cosine"
    cooldown_frac: float = 0.4
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    adam_eps: float = 1e-8
    momentum: float = 0.9
    muon_lr: float = 0.02
    muon_momentum: float = 0.95
    muon_ns_steps: int = 5
    muon_momentum_warmup: int = 0
    grad_clip: float = 1.0
    eval_every: int = 100
    eval_batches: int = 20
    report_every: int = 1
    checkpoint_every: int = 500
    keep_checkpoints: int = 3
    snapshot_every: int = 100
    snapshot_budget_mb: float = 200.0
    probe_batch: int = 4
    sample_tokens: int = 200
    seed: int = 1337
    device: str = "auto"
    torch_threads: int = 0
    precision: str = "auto"
    compile: bool = False

    def validate(self) -> list[Problem]:
        p = table_problems(self, "train")
        if "train.min_lr" not in {q.field for q in p} and self.min_lr > self.lr:
            p.append(Problem("train.min_lr", "must be in [0, lr]"))
        return p


@dataclass(frozen=True)
class DataConfig:
    """What it is trained on (each field's meaning, choices and bounds: engine/configs/fields.py)."""

    corpus: str = "shakespeare"
    tokenizer: str = "char"
    max_vocab: int = 5000
    val_fraction: float = 0.1

    def validate(self) -> list[Problem]:
        p = table_problems(self, "data")
        if not self.corpus.strip():
            p.append(Problem("data.corpus", "choose a corpus"))
        if self.tokenizer == "bpe" and 2 <= self.max_vocab < BPE_MIN_VOCAB:
            p.append(Problem("data.max_vocab", f"byte-level BPE starts from the {BPE_MIN_VOCAB} bytes: "
                                               f"at least {BPE_MIN_VOCAB}"))
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
        from ..safe_io import CONFIG_CAP, UnsafeFileError, read_text

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


def parse_setting(text: str, cfg: ExperimentConfig) -> ExperimentConfig:
    """Apply one ``section.field=value`` (value in TOML syntax; a bare word is a string) to cfg."""
    key, sep, raw = text.partition("=")
    section, _, name = key.strip().partition(".")
    if not sep or section not in ("model", "train", "data") or not name:
        raise ConfigError(f"{text!r} is not SECTION.FIELD=VALUE (e.g. train.lr=3e-4)")
    try:
        value = parse_toml(f"v = {raw.strip()}", f"the value of {key.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    except ValueError as e:  # nested too deeply
        raise ConfigError(str(e)) from None
    d = cfg.to_dict()
    d[section][name] = value
    return ExperimentConfig.from_dict(d)


_HEADER = "# GPT Explorer experiment: [model], [train] and [data]; docs/config-fields.md explains every field.\n"


def table_problems(cfg: Any, section: str) -> list[Problem]:
    """The choices and bounds of engine/configs/fields.py's table, for one section's dataclass."""
    p = []
    for f in section_fields(section):
        message = f.problem(getattr(cfg, f.name))
        if message:
            p.append(Problem(f.key, message))
    return p


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
