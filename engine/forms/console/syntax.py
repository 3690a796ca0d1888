"""The console's grammar: tokens and a recursive-descent parser into a small syntax tree. No Python eval.

    program    := [statement] (";" [statement])*
    statement  := NAME "=" expr  |  NAME "." NAME "=" expr  |  expr
    expr       := primary ( "[" expr "]" | "." NAME )*
    primary    := NAME [ "(" [expr ("," expr)*] ")" ]  |  ["-"] NUMBER  |  STRING
                | "[" [expr ("," expr)*] "]"  |  "(" expr ")"

Names are letters, digits and "_" but never start with "_"; strings use "…" or '…'. Errors say the
position (0-based character offset) and what was expected there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import UserError
from .limits import MAX_DEPTH, MAX_DIGITS, MAX_LINE


class ConsoleError(UserError):
    """A line the console cannot run; the message names the position and what was expected."""

    def __init__(self, pos: int | None, message: str):
        self.pos = pos
        super().__init__(message if pos is None else f"at position {pos}: {message}")


@dataclass(frozen=True)
class Token:
    kind: str   # name, number, string, op, end
    text: str
    pos: int


_TOKEN = re.compile(r"""\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>\d+)|(?P<string>"[^"]*"|'[^']*')
                         |(?P<op>[=;(),\[\].\-]))""", re.VERBOSE)


def tokenize(line: str) -> list[Token]:
    out, pos = [], 0
    while True:
        while pos < len(line) and line[pos].isspace():
            pos += 1
        if pos >= len(line):
            out.append(Token("end", "", pos))
            return out
        m = _TOKEN.match(line, pos)
        if m is None or m.end() == pos:
            ch = line[pos]
            if ch in "\"'":
                raise ConsoleError(pos, "this string is never closed")
            raise ConsoleError(pos, f"unexpected character {ch!r}: the console understands names, numbers, "
                                    "strings and = ; ( ) [ ] , .")
        kind = m.lastgroup
        start = m.start(kind)
        text = m.group(kind)
        if kind == "number" and len(text) > MAX_DIGITS:
            raise ConsoleError(start, f"a number of {len(text)} digits; the console's integers have at most "
                                      f"{MAX_DIGITS}")
        if kind == "name" and text.startswith("_"):
            raise ConsoleError(start, f"{text!r} is not a name of the forms language (names cannot start "
                                      "with '_'); the console runs the note's commands, not Python")
        out.append(Token(kind, text, start))
        pos = m.end()


# ---- syntax tree ----

@dataclass(frozen=True)
class Node:
    pos: int


@dataclass(frozen=True)
class Name(Node):
    name: str


@dataclass(frozen=True)
class Number(Node):
    value: int


@dataclass(frozen=True)
class String(Node):
    value: str


@dataclass(frozen=True)
class ListLit(Node):
    items: tuple


@dataclass(frozen=True)
class Call(Node):
    name: str
    args: tuple


@dataclass(frozen=True)
class Index(Node):
    target: Node
    index: Node


@dataclass(frozen=True)
class Attr(Node):
    target: Node
    name: str


@dataclass(frozen=True)
class Assign(Node):
    name: str
    value: Node


@dataclass(frozen=True)
class SetAttr(Node):
    name: str
    attr: str
    value: Node


@dataclass(frozen=True)
class Expr(Node):
    value: Node


class Parser:
    def __init__(self, line: str):
        if len(line) > MAX_LINE:
            raise ConsoleError(None, f"the line has {len(line):,} characters; the console reads at most "
                                     f"{MAX_LINE:,}")
        self.tokens = tokenize(line)
        self.i = 0
        self.depth = 0  # expressions open around the current one

    def deeper(self, pos: int, by: int = 1) -> None:
        if self.depth + by > MAX_DEPTH:
            raise ConsoleError(pos, f"nested more than {MAX_DEPTH} deep (brackets, calls, indexes or "
                                    "properties); split it into assignments")

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def take(self) -> Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def expect(self, text: str, what: str) -> Token:
        if self.tok.kind == "op" and self.tok.text == text:
            return self.take()
        raise ConsoleError(self.tok.pos, f"expected {what}, found {_describe(self.tok)}")

    def program(self) -> list[Node]:
        out = []
        while True:
            if self.tok.kind == "end":
                return out
            if self.tok.kind == "op" and self.tok.text == ";":
                self.take()
                continue
            out.append(self.statement())
            if self.tok.kind != "end":
                self.expect(";", "';' between statements")

    def statement(self) -> Node:
        t = self.tok
        if t.kind == "name" and self.peek().text == "=" and self.peek().kind == "op":
            self.take()
            self.take()
            return Assign(t.pos, t.text, self.expr())
        if (t.kind == "name" and self.peek().text == "." and self.peek(2).kind == "name"
                and self.peek(3).kind == "op" and self.peek(3).text == "="):
            self.take()
            self.take()
            attr = self.take().text
            self.take()
            return SetAttr(t.pos, t.text, attr, self.expr())
        return Expr(t.pos, self.expr())

    def expr(self) -> Node:
        self.deeper(self.tok.pos)
        self.depth += 1
        try:
            return self._expr()
        finally:
            self.depth -= 1

    def _expr(self) -> Node:
        node = self.primary()
        chain = 0  # a[0][0]… and a.b.c… nest as deeply as brackets do
        while self.tok.kind == "op" and self.tok.text in "[.":
            chain += 1
            self.deeper(self.tok.pos, chain)
            t = self.take()
            if t.text == "[":
                node = Index(t.pos, node, self.expr())
                self.expect("]", "']' to close the index")
            else:
                if self.tok.kind != "name":
                    raise ConsoleError(self.tok.pos, f"expected a property name after '.', found {_describe(self.tok)}")
                node = Attr(t.pos, node, self.take().text)
        if self.tok.kind == "op" and self.tok.text == "(":
            raise ConsoleError(self.tok.pos, "only the console's functions can be called (type help); "
                                             "this is not one")
        return node

    def primary(self) -> Node:
        t = self.tok
        if t.kind == "name":
            self.take()
            if self.tok.kind == "op" and self.tok.text == "(":
                self.take()
                args = self.items(")", "')' to close the call")
                return Call(t.pos, t.text, args)
            return Name(t.pos, t.text)
        if t.kind == "number":
            self.take()
            return Number(t.pos, int(t.text))
        if t.kind == "op" and t.text == "-" and self.peek().kind == "number":
            self.take()
            return Number(t.pos, -int(self.take().text))
        if t.kind == "string":
            self.take()
            return String(t.pos, t.text[1:-1])
        if t.kind == "op" and t.text == "[":
            self.take()
            return ListLit(t.pos, self.items("]", "']' to close the list"))
        if t.kind == "op" and t.text == "(":
            self.take()
            node = self.expr()
            self.expect(")", "')'")
            return node
        raise ConsoleError(t.pos, f"expected a name, number, string, list or '(', found {_describe(t)}")

    def items(self, close: str, what: str) -> tuple:
        out = []
        if self.tok.kind == "op" and self.tok.text == close:
            self.take()
            return ()
        while True:
            out.append(self.expr())
            if self.tok.kind == "op" and self.tok.text == ",":
                self.take()
                continue
            self.expect(close, f"',' or {what}")
            return tuple(out)


def _describe(t: Token) -> str:
    if t.kind == "end":
        return "the end of the line"
    return f"{t.text!r}"


def parse(line: str) -> list[Node]:
    return Parser(line).program()
