"""engine/heap.py: a trim at most every so often, and nothing where there is no glibc."""

from __future__ import annotations

from engine import heap


def test_a_trim_is_made_once_its_interval_has_passed(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    trim = heap.HeapTrim(every_s=3600.0)
    trim()
    assert calls == []  # not yet due
    trim.every_s = 0.0
    trim()
    trim()
    assert calls == [0, 0]


def test_without_malloc_trim_nothing_is_called(monkeypatch):
    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    heap.HeapTrim(every_s=0.0)()  # no error


def test_glibc_s_malloc_trim_is_found_where_there_is_glibc():
    import platform

    assert (heap._malloc_trim() is not None) == (platform.libc_ver()[0] == "glibc")
