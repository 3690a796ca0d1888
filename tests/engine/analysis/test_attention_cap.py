"""A prompt's attention is cut, before anything is allocated, to what ATTENTION_BYTES allows, and says so in
one line: on GPT-2 small a 1024-token prompt asked for ~8.75 GB."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.analysis import attention as attn
from engine.configs.config import ModelConfig
from engine.model import probes
from engine.model.gpt import GPT
from engine.text.tokenizer import CharTokenizer

TEXT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer"


def test_gpt2_small_keeps_at_most_386_tokens_of_a_prompt_and_its_masks_305():
    assert attn.token_cap(12, 12, 1024) == 386
    assert attn.token_cap(12, 12, 1024, "masks") == 305
    assert attn.token_cap(1, 1, 64) == 64  # a small model's whole context fits


def test_a_prompt_over_the_budget_is_cut_and_the_result_says_so(monkeypatch):
    tok = CharTokenizer.fit(TEXT)
    cfg = ModelConfig(n_layer=3, n_head=4, d_model=16, d_ff=32, n_ctx=64, vocab_size=tok.vocab_size)
    torch.manual_seed(0)
    model = GPT(cfg).eval()
    per_head = attn.BYTES_PER_ENTRY["attention"] * 12
    monkeypatch.setattr(attn, "ATTENTION_BYTES", per_head * 20 * 20 + per_head)  # room for 20 tokens
    assert attn.token_cap(3, 4, 64) == 20
    got = attn.attention(model, tok, TEXT, 7)
    assert len(got.maps.tokens) == 20 and got.maps.weights.shape == (3, 4, 20, 20)
    assert got.note.startswith("Showing the prompt's first 20 of 64 tokens: the attention of 12 heads at 64 "
                               "tokens would take") and "\n" not in got.note
    whole = probes.attention_maps(model, probes.prompt_ids(tok, TEXT, 64))
    # causal: the first 20 queries attend exactly as they do in the whole prompt
    np.testing.assert_allclose(got.maps.weights, whole.weights[:, :, :20, :20], atol=1e-6)
    masks = attn.masks(model, tok, TEXT, 4, 7, {})
    assert len(masks.tokens) == attn.token_cap(3, 4, 64, "masks") < 20 and "masks of 12 heads" in masks.note
    short = attn.attention(model, tok, TEXT[:10], 7)
    assert short.note == "" and len(short.maps.tokens) == 10
    assert attn.attention_diff(got, got).note == got.note
