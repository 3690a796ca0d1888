"""Corpora: the bundled plays become plain play text; bad files are refused with one clear message."""

import pytest

from engine.text.corpus import CorpusError, load_corpus, markdown_play_to_text, shakespeare_text


def test_bundled_shakespeare_is_plain_play_text():
    text = shakespeare_text()
    assert len(text) > 4_000_000
    assert "HAMLET:\n" in text and "To be, or not to be" in text
    assert not any(mark in text for mark in ("**", "##", "\\["))


def test_markdown_is_stripped_to_speaker_verse_and_directions():
    md = "# Play\n\n## ACT I\n\n_Enter A and B_\n\n**A**  \nFirst line,  \nsecond \\[Aside].\n\n**B**  \nYes.\n"
    assert markdown_play_to_text(md) == "Enter A and B\n\nA:\nFirst line,\nsecond [Aside].\n\nB:\nYes.\n"


@pytest.mark.parametrize("content, message", [
    (b"", "empty"), (b"  \n ", "empty"), (b"\x00\x01\x02binary", "binary"),
    (b"caf\xe9 latin-1", "UTF-8"),
])
def test_bad_corpus_files_are_refused(tmp_path, content, message):
    path = tmp_path / "corpus.txt"
    path.write_bytes(content)
    with pytest.raises(CorpusError, match=message):
        load_corpus(str(path))


def test_missing_corpus_and_directory_are_refused(tmp_path):
    with pytest.raises(CorpusError, match="not found"):
        load_corpus(str(tmp_path / "missing.txt"))
    with pytest.raises(CorpusError, match="not a file"):
        load_corpus(str(tmp_path))


def test_utf8_file_with_bom_is_read(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes("\ufeffhello wörld\n".encode("utf-8"))
    assert load_corpus(str(path)) == "hello wörld\n"


def test_the_repeats_corpus_says_every_span_of_the_plays_twice_and_is_the_same_text_every_time():
    from engine.text.corpus import REPEAT_SPANS, repeated_spans_text

    plays, text = shakespeare_text(), repeated_spans_text()
    assert len(text) == 2 * len(plays) and load_corpus("shakespeare-repeats") == text
    lo, hi = REPEAT_SPANS
    i = j = 0
    lengths = set()
    for _ in range(2000):  # walk the first spans: each is the next piece of the plays, then itself again
        k = next(k for k in range(lo, hi + 1) if text[j:j + k] == text[j + k:j + 2 * k] == plays[i:i + k])
        i, j = i + k, j + 2 * k
        lengths.add(k)
    assert len(lengths) > (hi - lo) // 2  # the cuts vary, so a model cannot learn the period
