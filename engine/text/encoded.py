"""A corpus's tokenizer and token ids, each computed once per (corpus, tokenizer) and then read from the token
cache (engine/text/token_cache.py): the BPE fit of the bundled plays and their encoding took seconds at every
start of a run, resume, builder inspection and draft; read back they take a fraction of one.
"""

from __future__ import annotations

import numpy as np

from ..configs.config import DataConfig
from ..errors import UserError
from . import token_cache
from .pieces import Cancel
from .tokenizer import Tokenizer, fit_tokenizer, id_dtype, tokenizer_from_dict


def fitted_tokenizer(text: str, cfg: DataConfig, cancel: Cancel = None, text_sha: str | None = None) -> Tokenizer:
    """The tokenizer `cfg` fits on `text` (read from the cache when fitted before); `text_sha`: the text's
    digest, when the caller has it."""
    key = token_cache.fit_key(text_sha or token_cache.text_digest(text), cfg.tokenizer, cfg.max_vocab)
    d = token_cache.load_fit(key)
    if d is not None:
        try:  # our own file, read as any tokenizer file is
            return tokenizer_from_dict(d, "a cached tokenizer", kind=cfg.tokenizer)
        except UserError:
            token_cache.forget_fit(key)
    tok = fit_tokenizer(text, cfg, cancel)
    token_cache.save_fit(key, tok.to_dict())
    return tok


def token_ids(tokenizer: Tokenizer, text: str, cancel: Cancel = None, text_sha: str | None = None) -> np.ndarray:
    """`text` encoded by `tokenizer`, in the narrowest integer type its vocabulary needs (read from the cache
    when encoded before); CorpusError when the text holds what the vocabulary cannot encode."""
    dtype = id_dtype(tokenizer.vocab_size)
    sha = text_sha or token_cache.text_digest(text)
    ids = token_cache.load_ids(sha, tokenizer.digest, tokenizer.vocab_size, dtype)
    if ids is None:
        ids = tokenizer.encode_corpus(text, dtype, cancel)
        token_cache.save_ids(sha, tokenizer.digest, ids)
    return ids
