"""What an edit of a run's config means for the run (issue 38: fine-tuning keeps its word).

A run continues from its own latest checkpoint whatever training settings are edited — the steps, the
learning rate and its schedule, the optimizer, the batch, the corpus (encoded with the run's own tokenizer),
the device: an imported GPT-2 given 200 steps instead of 20 fine-tunes from its weights, where it used to
start a new run from random weights without a word. Only an edit that the run's weights cannot follow starts a
new run: one that changes the shape of a weight (the model's sizes, or the vocabulary, which is W_E's shape),
a seed once the run has trained (the seed draws the initial weights and the batch order, and a trained run
keeps its generators' states), or fewer steps than it has trained. `plan_edit` says which, with every setting
changed and, for a new run, what it will not keep; the app asks before it starts one, and the command line
refuses it, naming the same. It reads only the two configs, the run's list of checkpoints and its import
record, and compares shapes without building a model (engine/model/weight_layout.py): the GUI thread may ask.

A continued run keeps its optimizer's moments when the optimizer keeps its kind, with the edited
hyperparameters (`adapt_optimizer`: the saved ones would otherwise come back on load), and records each edit
in `changes.jsonl` with the step it took effect at, so config.toml's values are never taken for the whole run's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..configs.config import ExperimentConfig
from ..configs.resolve import with_vocab
from ..model.weight_layout import weight_shapes
from ..rundir.runs import Run

CONTINUE, NEW = "continue", "new"
_VOCABULARY = ("data.tokenizer", "data.max_vocab")  # what decides a vocabulary fitted on the corpus


@dataclass(frozen=True)
class EditPlan:
    """What training a run with an edited config does: "continue" it from its latest checkpoint, or start a
    "new" run; `changed` holds every setting edited as [the run's, the edit's]; for a new run `reason` says why
    and `lost` what the new run does not keep (the run itself stays as it is)."""

    action: str
    changed: dict[str, list]
    reason: str | None = None
    lost: tuple[str, ...] = ()

    def refusal(self, run_dir: Path) -> str:
        """One line for the command line, which never starts a new run in place of the one named."""
        return (f"{run_dir} cannot continue with this edit: {self.reason}. A new run would not keep "
                f"{', '.join(self.lost) or 'anything of it'}; to start one, pass another --run DIR")


def changed_settings(a: ExperimentConfig, b: ExperimentConfig) -> dict[str, list]:
    """Every ``section.field`` whose value differs (and the name), with [a's, b's]."""
    da, db = a.to_dict(), b.to_dict()
    out = {"name": [a.name, b.name]} if a.name != b.name else {}
    for section in ("model", "train", "data"):
        out |= {f"{section}.{k}": [v, db[section][k]] for k, v in da[section].items() if v != db[section][k]}
    return out


def plan_edit(run: Run | str | Path, cfg: ExperimentConfig) -> EditPlan:
    """Whether `run` can train on with `cfg` (its config edited; the vocabulary size need not be set)."""
    run = run if isinstance(run, Run) else Run(run)
    old, steps = run.config, run.checkpoint_steps()
    trained = steps[-1] if steps else 0
    changed = {k: v for k, v in changed_settings(old, with_vocab(cfg, old.model.vocab_size)).items()
               if k != "model.vocab_size"}
    reason = _why_new(run, old, cfg, changed, trained)
    if reason is None:
        return EditPlan(CONTINUE, changed)
    return EditPlan(NEW, changed, reason, _lost(run, trained))


def _why_new(run: Run, old: ExperimentConfig, cfg: ExperimentConfig, changed: dict, trained: int) -> str | None:
    vocabulary = [k for k in _VOCABULARY if k in changed]
    if vocabulary:
        return f"{vocabulary[0]} makes another vocabulary, and so another shape of W_E"
    reshaped = _reshaped(old, cfg)
    if reshaped:
        return reshaped
    if "train.seed" in changed and not run_is_pretrained(run):
        return ("the seed draws a run's initial weights and batch order; a run that has trained keeps its "
                "generators' states, so a new seed needs a new run")
    if cfg.train.steps < trained:
        return f"train.steps {cfg.train.steps:,} is fewer than the {trained:,} steps the run has trained"
    return None


def _reshaped(old: ExperimentConfig, cfg: ExperimentConfig) -> str | None:
    """The first weight whose shape the edit changes, as a sentence (None when every shape stays)."""
    if cfg.model.validate():  # a config the builder would not train: its shapes cannot be asked
        return None
    before = weight_shapes(old.model)
    after = weight_shapes(with_vocab(cfg.model, old.model.vocab_size))
    if before == after:
        return None
    keys = ([k for k in before if k in after and before[k] != after[k]] + [k for k in after if k not in before]
            + [k for k in before if k not in after])  # in the model's order
    k = keys[0]
    what = (f"{k} changes from {before[k]} to {after[k]}" if k in before and k in after
            else f"{k} {'appears' if k in after else 'goes away'}")
    more = f", and {len(keys) - 1} more" if len(keys) > 1 else ""
    return f"the edit changes the shapes of the weights ({what}{more})"


def _lost(run: Run, trained: int) -> tuple[str, ...]:
    imported = run.import_record()
    if imported is None:
        return (f"the weights trained for {trained:,} steps",) if trained else ()
    tuned = trained - imported["step"]
    source = imported["source"] if len(imported["source"]) <= 80 else "…" + imported["source"][-79:]  # a path's end
    return (f"the imported weights (from {source})",
            *([f"their {tuned:,} step{'s' if tuned != 1 else ''} of fine-tuning"] if tuned > 0 else []))


def run_is_pretrained(run: Run) -> bool:
    """An import whose latest checkpoint is still the imported weights (no step trained here yet)."""
    record, steps = run.import_record(), run.checkpoint_steps()
    return record is not None and bool(steps) and steps[-1] == record.get("step")


def edited(run: Run, cfg: ExperimentConfig) -> ExperimentConfig:
    """`cfg` as the continued run's config: the run's vocabulary size, the edit's everything else."""
    return with_vocab(cfg, run.config.model.vocab_size)


def adapt_optimizer(state: dict, cfg: ExperimentConfig) -> str:
    """Keep the moments when the new optimizer is of the same kind, with the new hyperparameters (the
    saved ones would otherwise come back on load); else start the new optimizer fresh."""
    import torch

    from ..model.gpt import GPT
    from .optimizers import make_optimizer

    with torch.device("meta"):
        fresh = make_optimizer(GPT(cfg.model), cfg.train).state_dict()
    saved = state.get("optimizer")
    groups = saved.get("param_groups", []) if isinstance(saved, dict) else []
    same = len(groups) == len(fresh["param_groups"]) and all(
        set(g) == set(f) and g["params"] == f["params"] for g, f in zip(groups, fresh["param_groups"]))
    if not same:
        state["optimizer"] = fresh
        return "fresh"
    for g, f in zip(groups, fresh["param_groups"]):  # how the step is computed (fused or not) stays the run's
        g.update({k: v for k, v in f.items() if k not in ("params", "fused", "foreach")})
    return "carried"


__all__ = ["CONTINUE", "NEW", "EditPlan", "adapt_optimizer", "changed_settings", "edited", "plan_edit",
           "run_is_pretrained"]
