"""The token cache: a corpus's fitted tokenizer and its token ids, kept on disk so that each is computed once per
(corpus, tokenizer) and not at every start of a run, resume, builder inspection or draft.

Entries are named by content: the sha256 of the corpus's text, and the digest of the tokenizer
(`Tokenizer.digest`) or of what decides a fit (the data config's kind and size, and `FIT_VERSION`). A corpus
edited in place, or another tokenizer, is simply another entry. Ids are stored as .npy in the narrowest integer
type the vocabulary needs (engine/text/tokenizer.py `id_dtype`): the bundled plays in GPT-2's 50,257 tokens are
5.3 MB. The folder is `$GPT_EXPLORER_CACHE`, else the user's cache folder; it is kept under `BUDGET` bytes by
deleting the entries read least recently. A cache is never trusted further than it must be: an entry that does
not read back as what it claims (truncated, another dtype, an id outside the vocabulary) is deleted and computed
again, and a folder that cannot be written only means the work is done again next time. An entry is written under
a temporary name and renamed whole; the temporary file of a writer killed on the way is deleted by a later write.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from ..safe_io import JSON_CAP, UnsafeFileError, check_regular, parse_json, read_text
from ..user_cache import ENV, root  # noqa: F401  (ENV: where the folder is set)

BUDGET = 1 << 30      # bytes of entries kept; the bundled plays' ids take 5-10 MB per tokenizer
FIT_VERSION = 2       # how a tokenizer is fitted (engine/text/bpe_fit.py): a new way is a new entry
IDS_CAP = 1 << 33     # a corpus is at most 2 GB of text: at most 2G ids of 4 bytes
STALE_WRITE = 24 * 3600  # seconds: a temporary file this old was left by a writer that was killed


def folder() -> Path:
    return root() / "tokens"


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def fit_key(text_sha: str, kind: str, max_vocab: int) -> str:
    """What decides a fitted tokenizer: the text, the kind and (for words and BPE) the size asked for."""
    size = 0 if kind == "char" else max_vocab
    return hashlib.sha256(f"{text_sha}\0{kind}\0{size}\0{FIT_VERSION}".encode()).hexdigest()


def _ids_path(text_sha: str, tokenizer_sha: str) -> Path:
    return folder() / f"ids-{text_sha[:32]}-{tokenizer_sha[:32]}.npy"


def _fit_path(key: str) -> Path:
    return folder() / f"tokenizer-{key[:48]}.json"


def load_ids(text_sha: str, tokenizer_sha: str, vocab_size: int, dtype: np.dtype) -> np.ndarray | None:
    """The cached ids of this text under this tokenizer, or None (absent, or not what it claims: deleted)."""
    path = _ids_path(text_sha, tokenizer_sha)
    try:
        check_regular(path, IDS_CAP, "cached token ids")
        ids = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnsafeFileError, EOFError):
        _forget(path)
        return None
    if ids.ndim != 1 or ids.dtype != dtype or (ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size)):
        _forget(path)
        return None
    _touch(path)
    return ids


def save_ids(text_sha: str, tokenizer_sha: str, ids: np.ndarray) -> None:
    path = _ids_path(text_sha, tokenizer_sha)
    _write(path, lambda f: np.save(f, ids, allow_pickle=False))


def load_fit(key: str) -> dict | None:
    """The cached tokenizer dict of a fit (read back by the caller as any tokenizer file is), or None."""
    path = _fit_path(key)
    try:
        d = parse_json(read_text(path, JSON_CAP, "cached tokenizer"), "cached tokenizer")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnsafeFileError):
        _forget(path)
        return None
    _touch(path)
    return d if isinstance(d, dict) else None


def save_fit(key: str, d: dict) -> None:
    _write(_fit_path(key), lambda f: f.write(json.dumps(d, ensure_ascii=False).encode("utf-8")))


def forget_fit(key: str) -> None:
    _forget(_fit_path(key))


def _write(path: Path, write) -> None:
    """Write an entry whole (a temporary name, then a rename), then keep the folder under BUDGET. A cache that
    cannot be written is no error: the work is done again next time."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except OSError:
        _forget(tmp)
        return
    prune()


def prune(budget: int = BUDGET) -> None:
    """Delete the entries read least recently until the rest fit `budget` bytes, and the temporary files that
    writers killed on the way left (older than STALE_WRITE: a younger one may be being written now)."""
    try:
        files = [(p, p.stat()) for p in folder().iterdir() if p.is_file()]
    except OSError:
        return
    now = time.time()
    for p, st in files:
        if p.name.startswith(".") and ".tmp" in p.name and now - st.st_mtime > STALE_WRITE:
            _forget(p)
    entries = [(st.st_mtime, st.st_size, p) for p, st in files if not p.name.startswith(".")]
    total = sum(size for _, size, _ in entries)
    for _, size, p in sorted(entries):
        if total <= budget:
            break
        _forget(p)
        total -= size


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def _forget(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass
