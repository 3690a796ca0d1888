"""Next-token probabilities at one position of a text (the Training pane's Generate, issue 26): the
model's distribution over the token after position p, given the tokens up to p (at most the last n_ctx),
and the distribution Generate draws from at the chosen temperature and top-k (engine/model/sampling.py), for the
tokens most likely under either. Pure function of a model; RunAnalysis and the live question
(engine/analysis/questions.py) call it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UserError

SHOWN = 8  # tokens listed: the model's most likely and what temperature and top-k make likely


@dataclass(frozen=True)
class NextTokens:
    step: int
    tokens: tuple[str, ...]      # every token of the text, visible (␣, ↵), the chosen one at `position`
    position: int                # the distribution is of the token after this one
    temperature: float
    top_k: int | None
    candidates: tuple[str, ...]  # the tokens shown, most likely under the model (temperature 1) first
    model: np.ndarray            # their probabilities under the model's softmax, temperature 1, every token
    sampled: np.ndarray          # their probabilities of being drawn at `temperature` and `top_k`
    rest_model: float            # the model's mass on every token not shown
    rest_sampled: float          # the same when sampling


def next_tokens(model, tokenizer, text: str, position: int, temperature: float, top_k: int | None,
                step: int, shown: int = SHOWN) -> NextTokens:
    """The distributions after token `position` of `text` (negative counts from the end, as in Python)."""
    import torch  # here, not at import: the analysis modules load without torch until asked

    from ..model import probes
    from ..model.sampling import sampling_probabilities

    ids = np.asarray(tokenizer.encode(text), dtype=np.int64)
    if ids.size == 0:
        raise UserError("the text is empty: generate, or type a prompt, first")
    if not -ids.size <= position < ids.size:
        raise UserError(f"position {position} is outside the text's {ids.size} tokens")
    position %= ids.size
    context = ids[max(0, position + 1 - model.cfg.n_ctx): position + 1]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            device = next(model.parameters()).device
            logits, _ = model(torch.as_tensor(context, device=device)[None])
    finally:
        model.train(was_training)
    last = logits[0, -1].double().cpu()
    p_model = torch.softmax(last, dim=-1).numpy()
    p_sampled = sampling_probabilities(last, temperature, top_k).numpy()
    order = _shown(p_model, p_sampled, shown)
    names = probes.visible_tokens(tokenizer, order)
    return NextTokens(step, probes.visible_tokens(tokenizer, ids), position, float(temperature), top_k,
                      names, p_model[order], p_sampled[order], float(1 - p_model[order].sum()),
                      float(max(0.0, 1 - p_sampled[order].sum())))


def _shown(p_model: np.ndarray, p_sampled: np.ndarray, shown: int) -> np.ndarray:
    """The `shown` tokens most likely under either distribution (so a token temperature lifts is seen),
    ordered by the model's probability."""
    by_model, by_sampled, half = np.argsort(-p_model), np.argsort(-p_sampled), max(1, shown // 2)
    # the model's most likely, then those sampling makes most likely, then the model's next ones
    pick = list(dict.fromkeys([*by_model[:shown - half], *by_sampled[:half], *by_model[shown - half:]]))[:shown]
    return np.array(sorted(pick, key=lambda i: -p_model[i]), dtype=np.int64)
