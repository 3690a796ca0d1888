"""nanoGPT's `meta.pkl` (the character vocabulary of its `prepare.py`) read without running pickled code.

nanoGPT writes ``{'vocab_size': int, 'itos': {int: str}, 'stoi': {str: int}}`` with `pickle.dump`. A
pickle can name any importable callable and call it on load (a `meta.pkl` may carry `os.system`), so the
unpickler here refuses every global (`find_class`) and every persistent id: the opcodes that build dicts,
strings and integers need neither, and anything else is refused with one sentence. The result is then
checked to be exactly that plain shape. Reference: https://docs.python.org/3/library/pickle.html
("Restricting Globals").
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path

from ..errors import UserError, shown

MAX_META_BYTES = 16 * 1024 * 1024  # a character vocabulary is a few kB; more is not a meta.pkl


class MetaError(UserError, ValueError):
    """A meta.pkl that cannot be used as a character vocabulary; one line for the user."""


class _PlainUnpickler(pickle.Unpickler):
    """Builds only what pickle's own opcodes build (dicts, lists, strings, numbers); never a global."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"it asks to load {module}.{name}")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("it refers to an outside object")


def read_meta(path: str | Path) -> list[str]:
    """The vocabulary of a nanoGPT meta.pkl, as our token strings in id order (itos[0], itos[1], …)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_META_BYTES + 1)
    except OSError as e:
        raise MetaError(f"cannot read {path}: {e.strerror}") from None
    if len(data) > MAX_META_BYTES:
        raise MetaError(f"{path} is larger than {MAX_META_BYTES >> 20} MB, too large for a character vocabulary")
    try:
        meta = _PlainUnpickler(io.BytesIO(data)).load()
    except pickle.UnpicklingError as e:
        raise MetaError(f"{path} was refused without running it: {e} (a meta.pkl is a plain dict)") from None
    except Exception as e:  # truncated or not a pickle at all: struct, EOF, value and unicode errors
        raise MetaError(f"{path} is not a readable pickle ({type(e).__name__})") from None
    return vocabulary_of(meta, path)


def vocabulary_of(meta: object, path: Path | str = "meta.pkl") -> list[str]:
    """Check the plain shape nanoGPT writes and return itos as a list; any other shape is a MetaError."""
    if type(meta) is not dict or type(meta.get("itos")) is not dict:
        raise MetaError(f"{path} is not a nanoGPT character vocabulary (a dict with 'itos' and 'stoi')")
    itos, stoi = meta["itos"], meta.get("stoi", {})
    if not all(type(k) is int and type(v) is str for k, v in itos.items()):
        raise MetaError(f"{path}: 'itos' must map integers to strings")
    if type(stoi) is not dict or not all(type(k) is str and type(v) is int for k, v in stoi.items()):
        raise MetaError(f"{path}: 'stoi' must map strings to integers")
    n = len(itos)
    if sorted(itos) != list(range(n)):
        raise MetaError(f"{path}: token ids are not 0 … {n - 1}")
    vocab = [itos[i] for i in range(n)]
    if any(len(c) != 1 for c in vocab) or len(set(vocab)) != n:
        raise MetaError(f"{path}: tokens are not distinct single characters (only character vocabularies "
                        "can be imported; GPT-2 BPE is not supported)")
    if stoi and stoi != {c: i for i, c in enumerate(vocab)}:
        raise MetaError(f"{path}: 'stoi' and 'itos' disagree")
    size = meta.get("vocab_size", n)
    if type(size) is not int or size != n:
        raise MetaError(f"{path}: vocab_size {shown(size)} is not the {n} tokens of 'itos'")
    return vocab
