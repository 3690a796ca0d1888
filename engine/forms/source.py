"""What the Forms pane derives: the note's encoder chain (depth 1–6 and its options) or a model config
(docs/design.md#the-forms-pane). Plain frozen values, so the pane can name a derivation to the symbolic process
and the process (or an export) can derive it again from the name alone."""

from __future__ import annotations

from dataclasses import dataclass

from ..configs.config import ModelConfig
from .chain import encoder
from .derive import Forms
from .gpt import derive

KINDS = ("chain", "model")
MAX_DEPTH = 6
MAX_HEADS = 4


@dataclass(frozen=True)
class SourceChoice:
    kind: str = "chain"          # "chain": the note's encoder(n); "model": the Architecture pane's model
    depth: int = 2
    residual: bool = False
    heads: int = 1
    layer_norm: bool = False
    cross_entropy: bool = False
    causal: bool = False

    def chain_options(self) -> dict:
        return dict(residual=self.residual, heads=self.heads, layer_norm=self.layer_norm,
                    cross_entropy=self.cross_entropy, causal=self.causal)


@dataclass(frozen=True)
class Source:
    """A choice and, when it is the model, the model's config: everything a derivation depends on."""

    choice: SourceChoice
    model: ModelConfig | None = None

    @classmethod
    def of(cls, choice: SourceChoice, model: ModelConfig | None) -> Source:
        """The source of `choice`: the model is kept only when the choice is the model (a chain's derivation
        does not change with the builder's draft)."""
        return cls(choice, model if choice.kind == "model" else None)

    def derive(self) -> Forms:
        if self.choice.kind == "model":
            if self.model is None:
                raise ValueError("the model source needs a model config")
            return derive(self.model)
        return Forms(encoder(self.choice.depth, **self.choice.chain_options()))
