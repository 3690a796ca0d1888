"""Next-token probabilities (the Training pane's Generate): the model's softmax after a position and the
distribution Generate draws from at a temperature and top-k, checked against the model's own logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.analysis.next_tokens import next_tokens
from engine.analysis.run_analysis import RunAnalysis
from engine.configs.config import ModelConfig
from engine.text.tokenizer import CharTokenizer
from engine.errors import UserError
from engine.model.gpt import GPT
from engine.model.sampling import sampling_probabilities
from tests.engine.coefficients.test_coefficients import run  # noqa: F401  (the tiny run)

TEXT = "To be, or not to be, that is the question"


@pytest.fixture
def model_and_tokenizer():
    tok = CharTokenizer.fit(TEXT)
    torch.manual_seed(0)
    return GPT(ModelConfig(n_layer=1, n_head=2, d_model=16, d_ff=32, n_ctx=16, vocab_size=tok.vocab_size)), tok


def logits_after(model, tok, position):
    ids = tok.encode(TEXT)[: position + 1][-model.cfg.n_ctx:]
    with torch.no_grad():
        return model.eval()(torch.tensor([ids]))[0][0, -1].double()


@pytest.mark.parametrize("position", [3, 20, -1])
def test_the_model_bars_are_its_softmax_after_the_position(model_and_tokenizer, position):
    model, tok = model_and_tokenizer
    got = next_tokens(model, tok, TEXT, position, 1.0, None, step=7)
    p = torch.softmax(logits_after(model, tok, position % len(TEXT)), -1).numpy()
    want = np.sort(p)[::-1][: len(got.candidates)]
    np.testing.assert_allclose(np.sort(got.model)[::-1][:3], want[:3], rtol=1e-12)
    assert got.position == position % len(TEXT) and got.step == 7 and len(got.tokens) == len(TEXT)
    np.testing.assert_allclose(got.sampled, got.model, rtol=1e-12)  # temperature 1, no top-k: the same
    assert got.rest_model == pytest.approx(1 - got.model.sum())


def test_temperature_and_top_k_change_what_generate_draws(model_and_tokenizer):
    model, tok = model_and_tokenizer
    cold = next_tokens(model, tok, TEXT, 10, 0.5, 3, step=0)
    want = sampling_probabilities(logits_after(model, tok, 10), 0.5, 3).numpy()
    assert (cold.sampled > 0).sum() == 3 and cold.sampled.sum() == pytest.approx(1.0)
    assert sorted(cold.sampled[cold.sampled > 0]) == pytest.approx(sorted(want[want > 0]))
    assert cold.rest_sampled == pytest.approx(0.0, abs=1e-12)
    greedy = next_tokens(model, tok, TEXT, 10, 0.0, None, step=0)
    assert greedy.sampled.max() == 1.0 and greedy.sampled[0] == 1.0  # the model's most likely, always


def test_a_position_outside_the_text_is_one_line(model_and_tokenizer):
    model, tok = model_and_tokenizer
    with pytest.raises(UserError, match="outside the text"):
        next_tokens(model, tok, TEXT, len(TEXT), 1.0, None, step=0)


def test_run_analysis_answers_at_a_saved_step(run):  # noqa: F811
    a = RunAnalysis(run.path)
    step = a.saved_steps()[-1]
    text = a.prompt[:12]
    got = a.next_tokens(step, text, 5, 0.8, 4)
    assert got.step == step and got.candidates and (got.sampled > 0).sum() <= 4
    assert a.next_tokens(step, text, 5, 0.8, 4) is got  # cached
