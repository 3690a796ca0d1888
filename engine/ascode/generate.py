"""A coefficient as code (issue 39; docs/readings.md#as-code): a standalone Python file that computes it from the
run's weights and probe batch, with the model written out in NumPy and its own checks, beside FILE.npz.

The file is three parts, each a module of this package copied verbatim: a header naming what it computes
(written here), numpy_gpt.py (the model and its backward pass by route class) and check.py (what it computes
and how it checks it), less the lines check.py marks as not in the generated file. It needs NumPy alone; where
torch is installed it checks against autograd too. FILE.npz holds the config, the weights at the step, the probe
batch and the number GPT Explorer's forms engine computed in float64, which the file compares with its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..configs.config import ModelConfig
from .inputs import config_dict, numpy_weights

HERE = Path(__file__).resolve().parent
DROP = "# not in the generated file"
CODE_FORMATS = ("py",)


def _body(module: str) -> str:
    """A module's source without its docstring and without the lines marked DROP."""
    text = (HERE / module).read_text(encoding="utf-8")
    doc_end = text.index('"""', text.index('"""') + 3) + 3
    lines = [line for line in text[doc_end:].splitlines() if not line.rstrip().endswith(DROP)]
    return "\n".join(lines).strip("\n") + "\n"


def header(weight: str, part: str | None, step: int, run: str, npz_name: str) -> str:
    what = f"route class {part} of" if part else "the whole"
    return f'''#!/usr/bin/env python3
"""{what} coefficient G = −∂L/∂W of {weight}, at step {step} of the run {run!r}, on its probe batch.

Written by GPT Explorer (`gpt-explorer export --what code`). Run it with NumPy installed:

    python {npz_name[:-4]}.py [--out G.npy]

It reads the config, the weights at step {step} and the probe batch from {npz_name} beside it, computes the
coefficient with the model written out in NumPy below (a forward pass, then a backward pass that keeps one
adjoint per route class: the classes add up to G), and checks it: against GPT Explorer's own number (in the
.npz, computed symbolically by its forms engine), against central finite differences of the loss along G and
along a random direction, and against torch autograd when torch is installed. It prints each agreement and
exits with 1 if one fails.

The model (rows are tokens, weights act on the right: X W) and the classes are GPT Explorer's: see its
docs/readings.md and docs/route-classes.md.
"""

WEIGHT, PART = {weight!r}, {part!r}

'''


def code_text(weight: str, part: str | None, step: int, run: str, npz_name: str) -> str:
    """The generated file's text."""
    return (header(weight, part, step, run, npz_name) + "# ---- the model, in NumPy ----\n\n" + _body("numpy_gpt.py")
            + "\n\n# ---- this coefficient and its checks ----\n\n" + _body("check.py"))


def expected_value(cfg: ModelConfig, weights: Mapping, x, y, weight: str, part: str | None) -> np.ndarray:
    """The forms engine's number for the part, in float64: the other implementation the file is checked with."""
    import torch

    from ..forms import Snapshot

    snap = Snapshot(cfg, weights, torch.as_tensor(x), torch.as_tensor(y), torch.float64)
    if part is None:
        return snap.total(weight)[weight].numpy()
    classes = snap.classes(weight)[weight]
    if part not in classes:
        from ..errors import UserError

        raise UserError(f"{weight} has no route class {part!r}; its classes: {', '.join(classes)}")
    return classes[part].numpy()


def write_code(path: str | Path, cfg: ModelConfig, weights: Mapping, x, y, weight: str, part: str | None,
               step: int, run: str, expected: np.ndarray | None = None) -> tuple[Path, Path]:
    """Write FILE.py and FILE.npz (`path` ends in .py); returns both paths. `expected`: the forms engine's
    number when the caller has it (else computed here)."""
    path = Path(path)
    npz = path.with_suffix(".npz")
    if expected is None:
        expected = expected_value(cfg, weights, x, y, weight, part)
    arrays = {f"w:{k}": v for k, v in numpy_weights(cfg, weights).items()}
    np.savez(npz, config=np.array(json.dumps(config_dict(cfg))), x=np.asarray(x), y=np.asarray(y),
             expected=expected, **arrays)
    path.write_text(code_text(weight, part, step, run, npz.name), encoding="utf-8")
    return path, npz


def export_run_code(path: str | Path, run_dir: str | Path, weight: str, step: int | None = None,
                    part: str | None = None) -> Path:
    """The command line's and the panes' export of a run's coefficient as code: FILE.py (returned) and FILE.npz
    beside it, at `step` (None: the newest intact saved step)."""
    from ..analysis.run_analysis import RunAnalysis
    from ..coefficients.export import check_step, check_weight

    a = RunAnalysis(run_dir)
    check_weight(a.coefficients, weight)
    step = check_step(a.coefficients, a.run.newest_intact_step() if step is None else step)
    probe = a.run.probe()
    return write_code(path, a.config.model, a.run.load_weights(step), probe.x, probe.y, weight, part, step,
                      a.config.name)[0]


__all__ = ["CODE_FORMATS", "code_text", "expected_value", "write_code", "export_run_code"]
