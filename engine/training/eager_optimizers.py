"""torch's optimizers without torch's compiler stack: the same updates, bit for bit, 71 MB lighter.

torch wraps four methods of every optimizer (add_param_group, zero_grad, state_dict, load_state_dict) in
`torch._disable_dynamo`, and Adam's and SGD's `step` in a wrapper that marks graph breaks and sets the gradient
mode. Both wrappers import `torch._dynamo` on first use, to tell `torch.compile` to leave the optimizer alone,
and that import brings torch's compiler and sympy: 71 MB in the process that trains, which for the app is the
app itself (docs/figures.md, "Memory"). We never compile an optimizer (`train.compile` compiles the model), so
`Eager` calls the functions those wrappers wrap, and the steps below keep the one thing the step wrapper does
outside a compiled graph, setting the gradient mode. The arithmetic is torch's own: tests compare the weights
with those of torch's classes to the bit, and check that training imports no `torch._dynamo`.
"""

from __future__ import annotations

import inspect

import torch


class Eager:
    """The optimizer methods torch wraps for its compiler, unwrapped; a base before a torch optimizer class."""

    add_param_group = inspect.unwrap(torch.optim.Optimizer.add_param_group)
    zero_grad = inspect.unwrap(torch.optim.Optimizer.zero_grad)
    state_dict = inspect.unwrap(torch.optim.Optimizer.state_dict)
    load_state_dict = inspect.unwrap(torch.optim.Optimizer.load_state_dict)


def _step_of(optimizer: type[torch.optim.Optimizer]):
    step = inspect.unwrap(optimizer.step)

    def eager_step(self, closure=None):
        with torch.set_grad_enabled(self.defaults["differentiable"]):
            return step(self, closure)

    return eager_step


class AdamW(Eager, torch.optim.AdamW):
    step = _step_of(torch.optim.AdamW)


class SGD(Eager, torch.optim.SGD):
    step = _step_of(torch.optim.SGD)
