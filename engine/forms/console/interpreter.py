"""The console: runs a line of the note's command language and returns what show/log produced.

Values are words (with the network they came from, so expandAll can substitute a named value's
differential), networks (encoder(n), gpt("tiny")), finished terms, lists, strings and integers. Functions
are looked up in a fixed table — nothing else can be called, no attribute but the listed properties can be
read, and nothing reaches Python (docs/reliability.md#the-console).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from .. import printing, rules
from ..derive import Forms, Term
from ..mixed import MixedTerm
from ..network import Network
from ..words import Diff, Op, Prod, Sum, Sym, T, Trace, Word, Zero, add, prod, transpose
from .builtins import builtins
from .limits import MAX_SECONDS, MAX_STEPS, leaf_count
from .syntax import (Assign, Attr, Call, ConsoleError, Expr, Index, ListLit, Name, Node, Number, SetAttr,
                     String, parse)
from .values import NOTE_OPS, Form, Html, Latex, NoteList, Output, kind_of


def _never() -> bool:
    return False


class Console:
    def __init__(self):
        self.env: dict[str, object] = {}
        self._forms: dict[int, Forms] = {}
        self.out: list[Output] = []
        self.builtins = builtins(self)
        self._steps, self._deadline = 0, math.inf
        self._cancelled = False
        self._stopped: Callable[[], bool] = _never

    # ---- running ----

    def run(self, line: str, stopped: Callable[[], bool] | None = None) -> list[Output]:
        """Run one line (statements separated by ';'); returns the outputs of show/showHTML/log/help,
        and the value of a last bare expression, as a console echoes it. `stopped()`, asked at every
        evaluation step, cancels the line when true (whoever runs it was told to stop, maybe before it began)."""
        self.out = []
        self._steps, self._cancelled = 0, False
        self._stopped = stopped or _never
        self._deadline = time.monotonic() + MAX_SECONDS
        statements = parse(line)
        last = None
        for k, st in enumerate(statements):
            last = self.statement(st)
            if k == len(statements) - 1 and isinstance(st, Expr) and last is not None:
                if not (isinstance(st.value, Call) and st.value.name in _SILENT):
                    self.tick(st.pos, leaf_count(last))  # printing a list visits every item
                    self.out.append(self.output(last))
        return self.out

    def statement(self, st: Node):
        if isinstance(st, Assign):
            self.env[st.name] = self.eval(st.value)
            return None
        if isinstance(st, SetAttr):
            return self.set_attr(st)
        return self.eval(st.value)

    def set_attr(self, st: SetAttr):
        if st.attr != "op":
            raise ConsoleError(st.pos, f"only .op can be set, not .{st.attr}")
        target = self.env.get(st.name)
        if not isinstance(target, NoteList):
            raise ConsoleError(st.pos, f"{st.name}.op can be set on a list such as {st.name} = [\"{st.name}\"]")
        op = self.eval(st.value)
        if op not in NOTE_OPS:
            raise ConsoleError(st.value.pos, f"expected one of {', '.join(map(repr, NOTE_OPS))} as .op")
        self.env[st.name] = self.note_word(target, op, st.pos)
        return None

    def note_word(self, items: NoteList, op: str, pos: int) -> Form:
        if op == "":
            if len(items) != 1 or not isinstance(items[0], str) or not items[0]:
                raise ConsoleError(pos, 'a symbol is a list of one name: A = ["A"]; A.op = ""')
            return Form(Sym(items[0]))
        words = [self.word(x, pos, f".op = {op!r}") for x in items]
        if op == "otimes":
            return Form(prod(*words))
        if op == "oplus":
            return Form(add(*words))
        if len(words) != 1:
            raise ConsoleError(pos, f".op = {op!r} takes a list of one word")
        return Form(transpose(words[0]) if op == "transpose" else rules.d(words[0]))

    def cancel(self) -> None:
        """Stop the line being run (from another thread, e.g. the GUI's): it ends with a ConsoleError."""
        self._cancelled = True

    def tick(self, pos: int | None, n: int = 1) -> None:
        """Count evaluation steps: a line stops at MAX_STEPS, or when cancelled."""
        self._steps += n
        if self._cancelled or self._stopped():
            raise ConsoleError(pos, "evaluation cancelled")
        if self._steps > MAX_STEPS:
            raise ConsoleError(pos, f"this line takes more than {MAX_STEPS:,} steps; stopped")
        if self._steps % 256 == 0 and time.monotonic() > self._deadline:
            raise ConsoleError(pos, f"this line ran for more than {MAX_SECONDS} s; stopped")

    def eval(self, node: Node):
        self.tick(node.pos)
        if isinstance(node, Number):
            return node.value
        if isinstance(node, String):
            return node.value
        if isinstance(node, Name):
            if node.name in self.env:
                return self.env[node.name]
            if node.name == "help":
                return self.builtins["help"].fn(node.pos)
            if node.name in self.builtins:
                raise ConsoleError(node.pos, f"{node.name} is a function: call it as {node.name}"
                                             f"({self.builtins[node.name].args})")
            raise ConsoleError(node.pos, f"{node.name!r} is not defined")
        if isinstance(node, ListLit):
            return NoteList(self.eval(x) for x in node.items)
        if isinstance(node, Call):
            b = self.builtins.get(node.name)
            if b is None:
                raise ConsoleError(node.pos, f"unknown function {node.name!r}: expected one of "
                                             f"{', '.join(sorted(self.builtins))} (type help)")
            if not b.lo <= len(node.args) <= b.hi:
                raise ConsoleError(node.pos, f"{node.name} takes {b.args or 'no arguments'}")
            args = [self.eval(a) for a in node.args]
            self.tick(node.pos, sum(leaf_count(a) for a in args if isinstance(a, list)))  # before the work
            return b.fn(node.pos, *args)
        if isinstance(node, Index):
            return self.index(self.eval(node.target), self.eval(node.index), node)
        if isinstance(node, Attr):
            return self.attr(self.eval(node.target), node)
        raise ConsoleError(node.pos, "cannot evaluate this")

    def index(self, target, k, node: Index):
        if not isinstance(k, int):
            raise ConsoleError(node.index.pos, "expected an integer index")
        if isinstance(target, Form):
            items = _operands(target.word)
            items = [Form(x, target.net) for x in items]
        elif isinstance(target, list):
            items = target
        else:
            raise ConsoleError(node.pos, f"cannot index {kind_of(target)}")
        if not 0 <= k < len(items):
            raise ConsoleError(node.index.pos, f"index {k} out of range: there are {len(items)} items "
                                               f"(0 … {len(items) - 1})")
        return items[k]

    def attr(self, target, node: Attr):
        name = node.name
        if name == "length":
            if isinstance(target, (list, str)):
                return len(target)
            if isinstance(target, Form):
                return len(_operands(target.word))
        if name == "op":
            if isinstance(target, NoteList):
                return target.op if target.op is not None else "list"
            if isinstance(target, Form):
                return _op_name(target.word)
        if isinstance(target, (Term, MixedTerm)):
            fields = {"id": target.id, "weight": target.weight, "route": target.route_class,
                      "ops": target.op_count, "index": target.index, "G": Form(target.G),
                      "P": Form(target.P)}
            if name in fields:
                return fields[name]
        raise ConsoleError(node.pos, f"{kind_of(target)} has no property .{name}")

    # ---- coercion and display ----

    def word(self, v, pos: int, where: str) -> Word:
        if isinstance(v, Form):
            return v.word
        if isinstance(v, (Term, MixedTerm)):
            return v.G
        if isinstance(v, NoteList) and v.op is not None:
            return self.note_word(v, v.op, pos).word
        raise ConsoleError(pos, f"{where} expected a word, got {kind_of(v)}")

    def forms_of(self, net: Network) -> Forms:
        f = self._forms.get(id(net))
        if f is None or f.net is not net:
            f = self._forms[id(net)] = Forms(net)
        return f

    def output(self, v) -> Output:
        """What show(v) prints: HTML made by html(x) as HTML, LaTeX made by latex(x) as mathematics,
        anything else in the note's notation (with its rows as mathematics, for a GUI)."""
        if isinstance(v, Html):
            return Output("html", str(v))
        if isinstance(v, Latex):
            return Output("latex", str(v), (("", str(v)),) if v else ())
        return Output("text", self.string(v), self.rows(v))

    def rows(self, v) -> tuple[tuple[str, str], ...]:
        """(label, LaTeX) rows of a value that is mathematics; () for strings, numbers and the rest."""
        if isinstance(v, Form):
            w = v.word
            if type(w) is Sum and all(type(t) is Trace for t in w.terms):
                return tuple(("", printing.latex(t)) for t in w.terms)
            return (("", printing.latex(w)),)
        if isinstance(v, (Term, MixedTerm)):
            return ((v.id, printing.latex(v.G)),)
        if isinstance(v, Network):
            rows = [("", f"{printing.latex(a)} = {printing.latex(w)}") for a, w in v.equations()]
            return tuple(rows) + (("form", printing.latex(v.form)),)
        if isinstance(v, NoteList) and v.op is not None:
            return self.rows(self.note_word(v, v.op, 0))
        if isinstance(v, list):
            out = []
            for k, x in enumerate(v):
                for label, tex in self.rows(x):
                    out.append((f"[{k}] {label}".strip(), tex))
            return tuple(out)
        return ()

    def string(self, v, fmt: str = "text") -> str:
        if isinstance(v, str):
            return v
        if isinstance(v, bool) or isinstance(v, int):
            return str(v)
        if isinstance(v, Form):
            return _show_word(v.word, fmt)
        if isinstance(v, (Term, MixedTerm)):
            sep = " = " if fmt != "html" else ": "
            return f"{v.id}{sep}{printing.render(v.G, fmt)}"
        if isinstance(v, Network):
            nl = "<br>" if fmt == "html" else "\n"
            lines = [f"{printing.render(a, fmt)} = {printing.render(w, fmt)}" for a, w in v.equations()]
            lines.append(f"form = {printing.render(v.form, fmt)}")
            return nl.join(lines)
        if isinstance(v, NoteList):
            if v.op is not None:
                return _show_word(self.note_word(v, v.op, 0).word, fmt)
            inner = ", ".join(self.string(x, fmt) if not isinstance(x, str) else repr(x) for x in v)
            return f"[{inner}]"
        if isinstance(v, list):
            nl = "<br>" if fmt == "html" else "\n"
            return nl.join(f"[{k}] {self.string(x, fmt)}" for k, x in enumerate(v))
        if v is None:
            return ""
        return str(v)


_SILENT = ("show", "showHTML", "log", "help")


def _show_word(w: Word, fmt: str) -> str:
    if type(w) is Sum and all(type(t) is Trace for t in w.terms):
        nl = "<br>" if fmt == "html" else "\n"
        return nl.join(("  " if k == 0 else "+ ") + printing.render(t, fmt) for k, t in enumerate(w.terms))
    return printing.render(w, fmt)


def _operands(w: Word) -> list[Word]:
    if type(w) is Sum:
        return list(w.terms)
    if type(w) is Prod:
        return list(w.scalars) + list(w.factors)
    if type(w) is Zero:
        return []
    return [w]


def _op_name(w: Word) -> str:
    return {Sym: "", T: "transpose", Diff: "d", Prod: "otimes", Sum: "oplus", Trace: "trace"}.get(
        type(w), w.kind if type(w) is Op else type(w).__name__.lower())


def run(line: str, console: Console | None = None) -> list[Output]:
    """Run a line in a fresh console (or the given one)."""
    return (console or Console()).run(line)
