"""The one table of the configs' fields: each field's label, help, unit, choices, bounds and the field it
depends on, stated once beside the dataclasses of engine/configs/config.py.

What reads it: `validate()` (choices and bounds; config.py adds the checks that relate two fields),
engine/configs/limits.py (the bounds a command-line option shares with a field), the builder's editors
(gui/widgets/fields.py), the command line's help and docs/config-fields.md, which
engine/configs/fields_markdown.py writes with the dataclasses' defaults (a test holds the file equal to it).
Defaults and types stay in the dataclasses. No torch and no Qt here: the GUI thread and the CLI's --help read it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .sizes import PROBE_TOKENS

# `train.device = auto` tries these in order (engine/training/device.py's pick_device walks this tuple).
AUTO_DEVICES = ("cuda", "mps", "cpu")
_DEVICE_NAMES = {"cuda": "CUDA", "mps": "Apple MPS", "cpu": "CPU"}

# Far beyond any model GPT Explorer trains, far below what would exhaust memory on the way to a refusal.
BIG, HUGE = 10 ** 9, 1 << 16
MAX_LR = 10.0  # AdamW with lr > 10 diverges on the first step


@dataclass(frozen=True)
class Field:
    """One config field (``section.name``). Numbers lie in [lo, hi] with `ends` saying which ends are
    open ("[)" : lo ≤ v < hi); `hi_why` explains the upper bound when it is a judgement, not a rule.
    `depends` = (other field, the values of it for which this field matters)."""

    key: str
    label: str
    help: str
    unit: str = ""
    choices: tuple[tuple[str, str], ...] = ()  # (value, the builder's words for it)
    lo: float | None = None
    hi: float | None = None
    ends: str = "[]"
    hi_why: str = ""
    depends: tuple[str, tuple[str, ...]] | None = None

    @property
    def section(self) -> str:
        return self.key.partition(".")[0]

    @property
    def name(self) -> str:
        return self.key.partition(".")[2]

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.choices)

    def choice_label(self, value: str) -> str:
        return dict(self.choices).get(value, value)

    def choices_text(self) -> str:
        """The choices in words: "auto (CUDA, then Apple MPS, then CPU), cpu, cuda, mps = Apple MPS"."""
        return ", ".join(w if w.lower().startswith(v.lower()) else f"{v} = {w}" for v, w in self.choices)

    def display_label(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def range_text(self) -> str:
        """The allowed numbers as an interval: "[1, 4,096]", "(0, 1)", "≥ 0"."""
        if self.hi is None:
            return f"{'>' if self.ends[0] == '(' else '≥'} {_num(self.lo)}"
        return f"{self.ends[0]}{_num(self.lo)}, {_num(self.hi)}{self.ends[1]}"

    def problem(self, value) -> str | None:
        """What is wrong with `value` for this field (choices and bounds), or None."""
        if self.choices:
            return None if value in self.values else f"{value!r} is not one of {', '.join(self.values)}"
        if self.lo is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if isinstance(value, float) and not math.isfinite(value):
            return "must be a finite number"
        low_ok = value > self.lo if self.ends[0] == "(" else value >= self.lo
        high_ok = self.hi is None or (value < self.hi if self.ends[1] == ")" else value <= self.hi)
        if low_ok and high_ok:
            return None
        why = f": {self.hi_why}" if not high_ok and self.hi_why else ""
        return f"must be in {self.range_text()}{why}" if self.hi is not None else f"must be {self.range_text()}"

    def matters(self, values: dict[str, object]) -> bool:
        """Whether the field counts, given the other fields' values by key."""
        return self.depends is None or values.get(self.depends[0]) in self.depends[1]


def _num(x: float) -> str:
    """1,000,000 and 10 for whole numbers (every digit of an int), 0.5 and 1e-05 for the rest."""
    if isinstance(x, int) or (float(x).is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    return f"{x:g}"


def _auto_device() -> str:
    return f"auto ({', then '.join(_DEVICE_NAMES[d] for d in AUTO_DEVICES)})"


_ADAM = ("train.optimizer", ("adamw", "muon"))
_SGD = ("train.optimizer", ("sgd",))
_MUON = ("train.optimizer", ("muon",))
_NORM = ("model.norm", ("pre", "post"))

FIELDS: tuple[Field, ...] = (
    Field("model.n_layer", "Layers", "transformer blocks", lo=1, hi=4096),
    Field("model.n_head", "Heads", "attention heads per block; must divide d_model", lo=1, hi=4096),
    Field("model.d_model", "d_model (width)", "width of the residual stream", lo=1, hi=HUGE),
    Field("model.d_ff", "d_ff (MLP width)", "hidden width of the MLP", lo=1, hi=1 << 18),
    Field("model.n_ctx", "Context length", "tokens a sequence may hold", "tokens", lo=2, hi=HUGE),
    Field("model.vocab_size", "Vocabulary", "set from the tokenizer when an experiment is built", "tokens",
          lo=2, hi=1 << 22),
    Field("model.dropout", "Dropout", "on attention weights and block outputs while training; never in probes",
          lo=0, hi=1, ends="[)"),
    Field("model.pos_encoding", "Positions", "how a token's position enters the residual stream",
          choices=(("sinusoidal", "sinusoidal (Vaswani et al. 2017)"), ("learned", "learned"), ("none", "none"))),
    Field("model.mask", "Mask", "which earlier tokens a token's attention sees",
          choices=(("causal", "causal"), ("banded", "banded causal: itself and β earlier"), ("none", "none"))),
    Field("model.band", "Band β", "banded mask: how many earlier tokens each token sees", "tokens", lo=1, hi=HUGE,
          depends=("model.mask", ("banded",))),
    Field("model.norm", "Layer norm", "a layer norm before each sub-layer (GPT-2), after it (the 2017 paper) "
          "or none", choices=(("pre", "pre-LN (GPT-2)"), ("post", "post-LN (2017)"), ("none", "none"))),
    Field("model.ln_eps", "Layer-norm ε", "added to the variance inside every layer norm (GPT-2: 1e-5)",
          lo=0, hi=1, ends="(]", depends=_NORM),
    Field("model.residual", "Residual connections", "residual connections around attention and MLP"),
    Field("model.activation", "Activation", "the MLP's non-linearity",
          choices=(("relu", "ReLU"), ("gelu", "GELU (exact, erf)"), ("gelu_tanh", "GELU, tanh form (GPT-2)"))),
    Field("model.attn_bias", "Attention biases", "biases on the attention's Q, K, V and output projections "
          "(GPT-2 has them)"),
    Field("model.tied", "Tie embeddings", "the unembedding reuses the token embedding (W_U = W_Eᵗ)"),
    Field("model.loss", "Loss", "the training error", choices=(
        ("cross_entropy", "cross-entropy"), ("squared_error", "squared error ½‖onehot − logits‖² (Euler form)"))),

    Field("train.steps", "Steps", "optimizer steps in all", lo=1, hi=BIG),
    Field("train.batch_size", "Batch size", "sequences per step", lo=1, hi=HUGE),
    Field("train.optimizer", "Optimizer", "the step's geometry: diagonal, Euclidean or spectral (Muon on the "
          "blocks' matrices; AdamW with lr, the betas and adam_eps for the rest)",
          choices=(("adamw", "AdamW (diagonal metric)"), ("sgd", "SGD (Euclidean)"),
                   ("muon", "Muon (spectral; AdamW for the rest)"))),
    Field("train.lr", "Learning rate", "peak learning rate (AdamW, SGD; with Muon: its AdamW part)",
          lo=0, hi=MAX_LR, ends="(]", hi_why="a larger one only diverges"),
    Field("train.min_lr", "Final learning rate", "floor of the decay, at most lr (every group decays by "
          "the same factor)", lo=0, hi=MAX_LR),
    Field("train.warmup_steps", "Warm-up steps", "linear warm-up from 0 to lr", lo=0, hi=BIG),
    Field("train.schedule", "Schedule", "the learning rate after warm-up: a cosine decay to min_lr (nanoGPT), or "
          "held at lr and then decayed linearly to min_lr over the last cooldown_frac of the steps "
          "(modded-nanogpt's warm-up, stable, decay)",
          choices=(("cosine", "cosine (nanoGPT)"), ("wsd", "warm-up, stable, decay"))),
    Field("train.cooldown_frac", "Cooldown share of steps", "wsd: the share of the steps spent decaying",
          lo=0, hi=1, ends="(]", depends=("train.schedule", ("wsd",))),
    Field("train.weight_decay", "Weight decay", "on matrices only, never gains or biases: decoupled (AdamW, "
          "Muon) or L2 (SGD)", lo=0),
    Field("train.beta1", "Adam β₁", "AdamW: first-moment decay", lo=0, hi=1, ends="[)", depends=_ADAM),
    Field("train.beta2", "Adam β₂", "AdamW: second-moment decay", lo=0, hi=1, ends="[)", depends=_ADAM),
    Field("train.adam_eps", "Adam ε", "AdamW: ε of the diagonal metric √v̂ + ε (torch's default)",
          lo=0, ends="(]", depends=_ADAM),
    Field("train.momentum", "SGD momentum", "SGD: heavy-ball momentum; 0 is plain gradient descent",
          lo=0, hi=1, ends="[)", depends=_SGD),
    Field("train.muon_lr", "Muon learning rate", "Muon: peak learning rate of the blocks' matrices (Keller "
          "Jordan's value)", lo=0, hi=MAX_LR, ends="(]", hi_why="a larger one only diverges", depends=_MUON),
    Field("train.muon_momentum", "Muon momentum", "Muon: Nesterov momentum before orthogonalising (torch's "
          "default)", lo=0, hi=1, ends="[)", depends=_MUON),
    Field("train.muon_ns_steps", "Muon Newton–Schulz steps", "Muon: Newton–Schulz iterations that approximate "
          "U Vᵀ (torch's default)", lo=1, hi=99, hi_why="torch.optim.Muon refuses more", depends=_MUON),
    Field("train.muon_momentum_warmup", "Muon momentum warm-up", "Muon: steps over which its momentum rises "
          "from 0.85 to muon_momentum (modded-nanogpt)", lo=0, hi=BIG, depends=_MUON),
    Field("train.grad_clip", "Gradient clip (0 = off)", "clip the global gradient norm; 0 turns clipping off", lo=0),
    Field("train.eval_every", "Evaluate every", "steps between validation evaluations (and logged samples)",
          "steps", lo=1, hi=BIG),
    Field("train.eval_batches", "Validation batches", "batches averaged for a validation loss", lo=1, hi=HUGE),
    Field("train.report_every", "Report every", "steps between progress reports", "steps", lo=1, hi=BIG),
    Field("train.checkpoint_every", "Checkpoint every", "steps between checkpoints", "steps", lo=1, hi=BIG),
    Field("train.keep_checkpoints", "Checkpoints kept", "checkpoints kept besides latest and best", lo=1,
          hi=10 ** 4),
    Field("train.snapshot_every", "Snapshot every", "steps between weight snapshots (the Weight pane's "
          "timeline)", "steps", lo=1, hi=BIG),
    Field("train.snapshot_budget_mb", "Snapshot budget", "disk the snapshots may use; older ones are thinned, "
          "never lost silently", "MB", lo=0, hi=1e7, ends="(]"),
    Field("train.probe_batch", "Probe batch", "sequences in the fixed probe batch (forms, coefficients, head "
          f"scores), as many of them as {PROBE_TOKENS:,} tokens hold (at least one)",
          "sequences", lo=1, hi=1024),
    Field("train.sample_tokens", "Logged sample length", "length of the samples logged at evaluation steps",
          "tokens", lo=0, hi=100_000, hi_why="minutes of generation at most"),
    Field("train.seed", "Seed", "draws the initial weights, the batches and dropout", lo=0, hi=2 ** 63 - 1,
          hi_why="torch and numpy take 64-bit seeds"),
    Field("train.device", "Device", "where training runs", choices=(
        ("auto", _auto_device()), ("cpu", "CPU"), ("cuda", "CUDA"), ("mps", "Apple MPS"))),
    Field("train.torch_threads", "Torch threads (0 = all)", "CPU threads torch may use; 0 = every core (measured "
          "on 2 cores: with an idle GUI, 2 threads train 8 steps/s, 1 thread 5)", lo=0, hi=1024),
    Field("train.precision", "Precision", "the training step's number format: auto takes bf16 autocast where the "
          "hardware multiplies bf16 (a CUDA GPU that has it, a CPU with AVX512-BF16 or AMX), else float32; bf16 "
          "also works on other CPUs, where it is slower", choices=(
        ("auto", "auto (bf16 where the hardware has it)"), ("float32", "float32"),
        ("bf16", "bf16 (mixed precision)"))),
    Field("train.compile", "Compile (torch.compile)", "torch.compile the training step; trains eagerly, saying "
          "why, if it cannot"),

    Field("data.corpus", "Corpus", "\"shakespeare\" (the bundled plays), \"shakespeare-repeats\" (the plays with every "
          "span of 10-30 characters said twice: the induction lesson's) or the path of a UTF-8 text file"),
    Field("data.tokenizer", "Tokenizer", "how the text becomes tokens; byte-level BPE is GPT-2's kind, trained "
          "on the corpus (its losses compare with other tokenizers' in bits per character)",
          choices=(("char", "characters"), ("word", "words"), ("bpe", "byte-level BPE"))),
    Field("data.max_vocab", "Vocabulary size", "words: the most frequent words kept, the rest become <unk>; "
          "byte-level BPE: the vocabulary size, at least its 256 bytes", "tokens", lo=2, hi=1 << 22,
          depends=("data.tokenizer", ("word", "bpe"))),
    Field("data.val_fraction", "Validation fraction", "the last part of the tokens that is the validation split",
          lo=0, hi=1, ends="()"),
)

BY_KEY: dict[str, Field] = {f.key: f for f in FIELDS}


def section_fields(section: str) -> tuple[Field, ...]:
    return tuple(f for f in FIELDS if f.section == section)


def choices(key: str) -> tuple[str, ...]:
    return BY_KEY[key].values


def settings_help() -> str:
    """The fields `--set` may change, by section, for the command line's help."""
    parts = [f"[{s}] " + ", ".join(f.name for f in section_fields(s)) for s in ("model", "train", "data")]
    return "; ".join(parts)
