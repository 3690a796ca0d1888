"""The note's console language (syntax.py parses, interpreter.py runs): `Console().run(line)` returns the
outputs of show/showHTML/log/help (and the value of a last bare expression) as `Output(kind, content)`."""

from .interpreter import Console, run
from .values import Form, NoteList, Output
from .syntax import ConsoleError, parse, tokenize

__all__ = ["Console", "Output", "Form", "NoteList", "ConsoleError", "run", "parse", "tokenize"]
