"""Route classes at scale: every weight's coefficient split into its route classes (docs/route-classes.md) with
autograd on the GPT module itself, a sub-block at a time, so that each of GPT-2 small's weights splits within
memory and minutes (the forms' network held 4.5 GB bound to its probe, and blocks.0.W_Q's split 9.5 GB).

A route's class is the first branch it takes off the residual stream after its weight: block i's attention, by
the side that reads the stream (L<i>.q, L<i>.k, L<i>.v), block i's MLP (L<i>.mlp), the tied unembedding
(unembed), or none (direct). So the adjoint of the loss at a point of the stream splits by class: what arrives
along the stream keeps its class (through a post-LN block's norms, which decide nothing), and each branch that
reads the point adds one class, its side's pull-back of the whole adjoint at the branch's output. One backward
pass carries that stack of class adjoints, each (B, T, d), down the stream a sub-block (attention or MLP) at a
time (`ClassFlow`). A weight inside a sub-block has, for each class of the stack at the sub-block's output, the
pull-back of that class's adjoint: one vector–Jacobian product per class, one class held at a time
(`weight_classes`; `model_classes`: several weights in one pass). A pre-LN attention reads the stream through its
own norm, whose output its three sides read, so that norm's classes are the sides; the MLP's norm has one reader, no branch, and the output's classes. The embedding's classes are zero outside the rows of the probe's tokens and are kept as those
rows (`RowSparse`); the tied unembedding's class is dense.

The whole model's shares of an update, Σ_W ⟨G_W,c, D_W⟩ for each class c, need no class's matrix: a
sub-block's part is −⟨adjoint_c, J D⟩, J D the change of its output along the update of all its weights at
once, one forward-mode product (`model_shares`).

Coefficients are −∂L/∂W, as everywhere (engine/coefficients/__init__.py). They equal the forms engine's classes
(`engine.forms.evaluate.classes`) in float64 for every option of ModelConfig and sum to autograd's −∂L/∂W
(tests/engine/coefficients/test_class_split.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import torch
from torch import nn

from ..model.gpt import GPT
from .rows import RowSparse

SIDES = {"attention": ("q", "k", "v"), "mlp": ("mlp",)}
DIRECT, UNEMBED = "direct", "unembed"
_READOUT = ("ln_f.g", "ln_f.b", "W_U", "b_U")  # read after the last block: their routes take no branch
_BRANCH = {"attention": ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"),
           "mlp": ("W_in", "b_in", "W_out", "b_out")}


def class_order(name: str) -> tuple:
    """Classes in the order a reader walks the model: by layer, the sides then the MLP; unembed and direct last."""
    if name in (UNEMBED, DIRECT):
        return (1 << 30, name == DIRECT)
    layer, side = name.split(".")[:2]
    return (int(layer[1:]), ("q", "k", "v", "mlp").index(side))


class _Discard(list):
    """A trace that keeps nothing: it selects the model's explicit attention path, since forward-mode products
    have no rule for the fused kernel."""

    def append(self, _layer) -> None:
        pass


class SubBlock(nn.Module):
    """One sub-block (a block's attention or MLP with its residual path and norms) as a module of its own, so
    that its weights can be swapped (torch.func.functional_call) and its input given once per use: to the
    residual path and to each side of the branch."""

    def __init__(self, model: GPT, layer: int, kind: str):
        super().__init__()
        self.block, self.kind, self.layer = model.blocks[layer], kind, layer
        self.masks = (model.mask_add, model.mask_ok)
        norm = getattr(self.block, "ln1" if kind == "attention" else "ln2", None)
        norm_name = f"blocks.{layer}.{'ln1' if kind == 'attention' else 'ln2'}"
        style = self.block.cfg.norm
        # (the norm the branch reads the stream through, the norm after the sum), kept out of the module's own
        # registry: registered twice, a swap of the block's weights (functional_call) did not swap them back
        self._norms = (norm if style == "pre" else None, norm if style == "post" else None)
        # state-dict name -> its name in this module (the branch's and the post-norm's weights) or in the pre-norm
        self.weights = {f"blocks.{layer}.{n}": f"block.{n}" for n in _BRANCH[kind] if hasattr(self.block, n)}
        self.pre_weights = {}
        if norm is not None:
            local = f"block.{'ln1' if kind == 'attention' else 'ln2'}."
            if self.pre is not None and kind == "attention":  # read by three sides: each a class of its own
                self.pre_weights = {f"{norm_name}.{n}": n for n in ("g", "b")}
            else:  # a route from the MLP's pre-norm has one way on, and no branch before the MLP's output
                self.weights.update({f"{norm_name}.{n}": local + n for n in ("g", "b")})

    @property
    def pre(self) -> nn.Module | None:
        return self._norms[0]

    @property
    def post(self) -> nn.Module | None:
        return self._norms[1]

    def forward(self, u_res: torch.Tensor | None, u_sides: tuple[torch.Tensor, ...], explicit: bool = False):
        """Its output, and its branch's inputs (after the pre-norm), one per side."""
        a = tuple(self.pre(u) if self.pre is not None else u for u in u_sides)
        if self.kind == "attention":
            y = self.block.attention(None, *self.masks, _Discard() if explicit else None, sides=a)
        else:
            y = self.block.mlp(a[0])
        h = y if u_res is None else u_res + y
        return (self.post(h) if self.post is not None else h), a


class Stage:
    """One sub-block as the backward pass meets it: its input `u`, the class adjoints at its output (`out`) and
    the new classes' adjoints at its branch's inputs (`sides`, after the pre-norm), with the sub-block's graph
    alive until the pass moves on."""

    def __init__(self, part: SubBlock, u: torch.Tensor, out: dict[str, torch.Tensor], residual: bool):
        self.part, self.u, self.out = part, u, out
        names = [f"L{part.layer}.{s}" for s in SIDES[part.kind]]
        # a branch decides a class where the stream's point has other readers: the attention's three sides
        # always; the MLP's one input only beside the residual path (else its routes pass on, classes and all)
        self.deciding = part.kind == "attention" or residual
        with torch.enable_grad():
            self.u_res = u.detach().requires_grad_() if residual else None
            self.u_sides = tuple(u.detach().requires_grad_() for _ in names)
            self.y, self.a = part(self.u_res, self.u_sides)
            got = ()
            if self.deciding:
                got = torch.autograd.grad(self.y, [*self.u_sides, *self.a], sum(out.values()), retain_graph=True)
        self.new = dict(zip(names, got[:len(names)]))    # each side's pull-back to the stream: a new class
        self.sides = dict(zip(names, got[len(names):]))  # the same at the branch's input (after the pre-norm)

    def classes(self, weight: str) -> dict[str, torch.Tensor]:
        """class -> −∂L/∂W along that class's routes, for one of this sub-block's weights."""
        if weight in self.part.weights:
            p = self.part.get_parameter(self.part.weights[weight])
        else:
            p = self.part.pre.get_parameter(self.part.pre_weights[weight])
        with torch.enable_grad():
            if weight in self.part.weights:
                return {c: -torch.autograd.grad(self.y, p, g, retain_graph=True)[0] for c, g in self.out.items()}
            # the pre-norm's output is read by each side alone (self.a: one per side)
            return {c: -torch.autograd.grad(a, p, self.sides[c], retain_graph=True)[0]
                    for c, a in zip(self.sides, self.a)}

    def shares(self, directions: Mapping[str, torch.Tensor]) -> dict[str, float]:
        """class -> Σ ⟨G_W,c, D_W⟩ over this sub-block's weights W given in `directions` (weight -> D_W)."""
        out: dict[str, float] = {}
        moved = {n: d for n, d in directions.items() if n in self.part.weights}
        if moved:
            u_res = None if self.u_res is None else self.u_res.detach()
            t = _jvp(self.part, {self.part.weights[n]: d for n, d in moved.items()},
                     (u_res, tuple(u.detach() for u in self.u_sides), True))
            out.update({c: -_inner(g, t) for c, g in self.out.items()})
        moved = {n: d for n, d in directions.items() if n in self.part.pre_weights}
        if moved:  # each side reads the pre-norm's output alone: the same change, its own adjoint
            t = _jvp(self.part.pre, {self.part.pre_weights[n]: d for n, d in moved.items()}, (self.u,))
            out.update({c: -_inner(g, t) for c, g in self.sides.items()})
        return out

    def below(self) -> dict[str, torch.Tensor]:
        """The class adjoints at the sub-block's input: the stream's carried through, then the branch's new ones;
        the sub-block's graph is let go."""
        below: dict[str, torch.Tensor] = {}
        if not self.deciding:  # every route passes through the branch, keeping its class
            with torch.enable_grad():
                for c, g in self.out.items():
                    below[c] = torch.autograd.grad(self.y, self.u_sides[0], g, retain_graph=True)[0]
        elif self.u_res is not None:
            if self.part.post is None:  # the stream passes through unchanged
                below.update(self.out)
            else:
                with torch.enable_grad():
                    for c, g in self.out.items():
                        below[c] = torch.autograd.grad(self.y, self.u_res, g, retain_graph=True)[0]
        below.update(self.new)
        self.y = self.a = None
        return below


def _jvp(module: nn.Module, tangents: dict[str, torch.Tensor], args: tuple) -> torch.Tensor:
    """The change of module(*args) (its first output) along `tangents` (its weights' local names -> directions),
    a forward-mode product."""
    names = list(tangents)
    primals = tuple(module.get_parameter(n).detach() for n in names)

    def moved(*values):
        out = torch.func.functional_call(module, dict(zip(names, values)), args)
        return out[0] if isinstance(out, tuple) else out

    return torch.func.jvp(moved, primals, tuple(tangents[n].to(p) for n, p in zip(names, primals)))[1]


def _inner(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.sum(a.detach().double() * b.detach().to(a.device).double()))


class ClassFlow:
    """The backward pass with one adjoint per route class (module docstring) on the batch (x, y): `stages()`
    yields each sub-block's Stage, from the last to the first, its graph alive while the caller reads it; then
    `readout` holds ∂L/∂W of the weights read after the last block (W_E's: its unembedding's) and `embedded`
    the class adjoints at the embedding. Eval mode; the model's dtype and device."""

    def __init__(self, model: GPT, x, y):
        self.model = model
        dev = next(model.parameters()).device
        self.idx = torch.as_tensor(np.asarray(x), dtype=torch.long, device=dev)
        self.tgt = torch.as_tensor(np.asarray(y), dtype=torch.long, device=dev)
        self.readout: dict[str, torch.Tensor] = {}
        self.embedded: dict[str, torch.Tensor] = {}

    def read_out(self) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        """The stream's points (X_0, then each block's H_i and X_{i+1}) and the class adjoints at the last one (all
        direct); sets `readout`."""
        model = self.model
        points = self._points()
        params = {n: p for n, p in model.named_parameters() if n in _READOUT}
        if model.cfg.tied:
            params["W_E"] = model.W_E
        with torch.enable_grad():
            end = points[-1].detach().requires_grad_()
            loss = model.loss(model.readout(end), self.tgt)
            grads = torch.autograd.grad(loss, [end, *params.values()])
        self.readout = dict(zip(params, grads[1:]))
        return points, {DIRECT: grads[0]}

    def stages(self) -> Iterator[Stage]:
        cfg = self.model.cfg
        points, stack = self.read_out()
        for layer in reversed(range(cfg.n_layer)):
            for k, kind in ((1, "mlp"), (0, "attention")):
                stage = Stage(SubBlock(self.model, layer, kind), points[2 * layer + k], stack, cfg.residual)
                yield stage
                stack = stage.below()
        self.embedded = stack

    def _points(self) -> list[torch.Tensor]:
        model = self.model
        with torch.no_grad():
            x = model.drop(torch.nn.functional.embedding(self.idx, model.W_E) + model.W_P[:self.idx.shape[1]])
            points = [x]
            for layer in range(model.cfg.n_layer):
                for kind in ("attention", "mlp"):
                    part = SubBlock(model, layer, kind)
                    x = part(x if model.cfg.residual else None, (x,) * len(SIDES[kind]))[0]
                    points.append(x)
        return points

    def embedding_classes(self, weight: str) -> dict[str, torch.Tensor | RowSparse]:
        """W_E's classes (its embedding's as the probe tokens' rows, its tied unembedding's dense) or W_P's."""
        if weight == "W_P":
            out = {}
            for c, g in self.embedded.items():
                full = torch.zeros_like(self.model.W_P)
                full[:g.shape[1]] = -g.sum(dim=0)
                out[c] = full
            return out
        rows, where = torch.unique(self.idx, return_inverse=True)
        out: dict = {}
        for c, g in self.embedded.items():
            values = torch.zeros(len(rows), g.shape[-1], dtype=g.dtype, device=g.device)
            values.index_add_(0, where.reshape(-1), -g.reshape(-1, g.shape[-1]))
            out[c] = RowSparse(rows.cpu().numpy(), values.cpu().numpy(), tuple(self.model.W_E.shape))
        if "W_E" in self.readout:
            out[UNEMBED] = -self.readout["W_E"]
        return out

    def embedding_shares(self, directions: Mapping[str, torch.Tensor]) -> dict[str, float]:
        """class -> Σ ⟨G_W,c, D_W⟩ over W_E's embedding and W_P, for those given in `directions`."""
        change = 0
        if "W_E" in directions:
            change = change + torch.nn.functional.embedding(self.idx, directions["W_E"].to(self.model.W_E))
        if "W_P" in directions and self.model.cfg.pos_encoding == "learned":
            change = change + directions["W_P"].to(self.model.W_P)[:self.idx.shape[1]]
        if isinstance(change, int):
            return {}
        return {c: -_inner(g, change) for c, g in self.embedded.items()}

    def readout_shares(self, directions: Mapping[str, torch.Tensor]) -> dict[str, float]:
        """class -> ⟨G_W, D_W⟩ summed over the readout's weights given (W_E: its unembedding's class)."""
        out: dict[str, float] = {}
        for name, g in self.readout.items():
            if name in directions:
                c = UNEMBED if name == "W_E" else DIRECT
                out[c] = out.get(c, 0.0) - _inner(g, directions[name])
        return out


def weight_classes(model: GPT, x, y, weight: str) -> dict[str, np.ndarray | RowSparse]:
    """Every route class of `weight` (a state-dict name), −∂L/∂W along its routes on the batch (x, y), in the
    weight's shape (W_E's embedding classes as its probe tokens' rows), ordered by `class_order`. The pass stops
    at the weight's sub-block."""
    return model_classes(model, x, y, [weight])[weight]


def model_classes(model: GPT, x, y, weights) -> dict[str, dict[str, np.ndarray | RowSparse]]:
    """`weight_classes` of each of `weights` from one backward pass with its class adjoints, which stops at the
    last sub-block holding one of them (it goes on to the embedding for W_E and W_P). A name the model does not
    have gets no classes."""
    flow = ClassFlow(model, x, y)
    wanted = list(dict.fromkeys(weights))
    ends = [w for w in wanted if w in ("W_E", "W_P")]
    inside = {w for w in wanted if w not in _READOUT and w not in ends}
    got: dict[str, dict] = {w: {} for w in wanted}
    if not inside and not ends:
        flow.read_out()
    else:
        left = set(inside)
        for stage in flow.stages():
            for w in [w for w in left if w in stage.part.weights or w in stage.part.pre_weights]:
                got[w] = stage.classes(w)
                left.discard(w)
            if not left and not ends:
                break
        for w in ends:
            got[w] = flow.embedding_classes(w)
    for w in wanted:
        if w in _READOUT:
            got[w] = {DIRECT: -flow.readout[w]}
    return {w: {c: (v if isinstance(v, RowSparse) else v.detach().cpu().numpy()) for c, v in
                sorted(classes.items(), key=lambda kv: class_order(kv[0]))} for w, classes in got.items()}


def model_shares(model: GPT, x, y, weights, directions) -> dict[str, dict[str, float]]:
    """direction -> class -> Σ_W ⟨G_W,c, D_W⟩ over `weights` (state-dict names), G_W,c on the batch (x, y):
    every weight's first-order part of each direction, split by class, without any class's matrix (module
    docstring). `directions(weight)` gives that weight's {direction name: D_W}, asked once per weight when
    its sub-block is reached, so that GPT-2 small's 148 weights' directions are never all held at once."""
    flow, wanted = ClassFlow(model, x, y), set(weights)
    totals: dict[str, dict[str, float]] = {}

    def add(parts: dict[str, dict[str, float]]) -> None:
        for name, by_class in parts.items():
            into = totals.setdefault(name, {})
            for c, v in by_class.items():
                into[c] = into.get(c, 0.0) + v

    def by_direction(names) -> dict[str, dict[str, torch.Tensor]]:
        out: dict[str, dict[str, torch.Tensor]] = {}
        for w in names:
            for name, d in directions(w).items():
                out.setdefault(name, {})[w] = torch.as_tensor(d)
        return out

    for stage in flow.stages():
        mine = [w for w in (*stage.part.weights, *stage.part.pre_weights) if w in wanted]
        add({name: stage.shares(ds) for name, ds in by_direction(mine).items()})
    ends = by_direction([w for w in dict.fromkeys((*flow.readout, "W_E", "W_P")) if w in wanted])
    add({name: flow.readout_shares(ds) for name, ds in ends.items()})
    add({name: flow.embedding_shares(ds) for name, ds in ends.items()})
    return {name: dict(sorted(t.items(), key=lambda kv: class_order(kv[0]))) for name, t in totals.items()}
