"""A run of a small model with GPT-2's wide vocabulary axis (5,000 BPE tokens × d_model 64, random weights,
no download): W_E has more rows than a screen, as GPT-2 small's 50,257 do, at a test's cost."""

from __future__ import annotations

from pathlib import Path

import torch

from engine.configs.config import DataConfig, ExperimentConfig, ModelConfig, TrainConfig
from engine.importers.hugging_face import probe
from engine.model.gpt import GPT
from engine.rundir.create import create_run
from engine.rundir.runs import Run
from engine.text.bpe import END_OF_TEXT, BPETokenizer
from engine.text.corpus import SHAKESPEARE, shakespeare_text

VOCAB = 5000


def wide_tokenizer() -> BPETokenizer:
    tok = BPETokenizer.fit(shakespeare_text()[:200_000], VOCAB - 1)
    unused = [f"<|unused{i}|>" for i in range(VOCAB - 1 - tok.vocab_size)]
    tok._tok.add_special_tokens([*unused, END_OF_TEXT])  # padded to the size; no text encodes to them
    return BPETokenizer(tok._tok)


def wide_run(path: Path, tokenizer: BPETokenizer | None = None) -> Run:
    tokenizer = tokenizer or wide_tokenizer()
    model = ModelConfig(n_layer=2, n_head=2, d_model=64, d_ff=128, n_ctx=32, vocab_size=VOCAB, tied=True,
                        attn_bias=True, activation="gelu_tanh")
    cfg = ExperimentConfig(name="wide", model=model,
                           train=TrainConfig(steps=4, batch_size=2, probe_batch=2, torch_threads=1, device="cpu"),
                           data=DataConfig(corpus=SHAKESPEARE, tokenizer="bpe", max_vocab=VOCAB))
    torch.manual_seed(0)
    weights = {k: v.detach().clone() for k, v in GPT(model).state_dict().items()}
    create_run(path, cfg, tokenizer, probe(cfg, tokenizer), weights)
    return Run(path)
