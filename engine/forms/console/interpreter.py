"""The console: runs a line of the note's command language and returns what show/log produced.

Values are words (with the network they came from, so expandAll can substitute a named value's
differential), networks (encoder(n), gpt("tiny")), finished terms, lists, strings and integers. Functions
are looked up in a fixed table — nothing else can be called, no attribute but the listed properties can be
read, and nothing reaches Python (DESIGN §8).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import printing, rules
from ..chain import encoder
from ..derive import Forms, Term, TooManyTerms
from ..network import Network
from ..words import Diff, Op, Prod, Sum, Sym, T, Trace, Word, Zero, add, prod, transpose
from .syntax import (Assign, Attr, Call, ConsoleError, Expr, Index, ListLit, Name, Node, Number, SetAttr,
                     String, parse)

MAX_TERMS = 10_000  # what the console will expand or list at once


@dataclass(frozen=True)
class Output:
    kind: str      # "text" | "html" | "latex"
    content: str


@dataclass(frozen=True)
class Form:
    """A word and the network whose named values it mentions (None in the free algebra)."""

    word: Word
    net: Network | None = None


class NoteList(list):
    """The note's array-words: A = ["A"]; A.op = "" makes the symbol A; [X, Y] with .op = "otimes" a
    product, "oplus" a sum, "transpose", "d"."""

    op: str | None = None


NOTE_OPS = ("", "otimes", "oplus", "transpose", "d")


@dataclass(frozen=True)
class Builtin:
    fn: Callable
    args: str          # signature for help and errors
    doc: str
    lo: int
    hi: int


class Console:
    def __init__(self):
        self.env: dict[str, object] = {}
        self._forms: dict[int, Forms] = {}
        self.out: list[Output] = []
        self.builtins = _builtins(self)

    # ---- running ----

    def run(self, line: str) -> list[Output]:
        """Run one line (statements separated by ';'); returns the outputs of show/showHTML/log/help,
        and the value of a last bare expression, as a console echoes it."""
        self.out = []
        statements = parse(line)
        last = None
        for k, st in enumerate(statements):
            last = self.statement(st)
            if k == len(statements) - 1 and isinstance(st, Expr) and last is not None:
                if not (isinstance(st.value, Call) and st.value.name in _SILENT):
                    self.out.append(Output("text", self.string(last)))
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

    def eval(self, node: Node):
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
            return b.fn(node.pos, *[self.eval(a) for a in node.args])
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
            raise ConsoleError(node.pos, f"cannot index {_kind(target)}")
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
        if isinstance(target, Term):
            fields = {"id": target.id, "weight": target.weight, "route": target.route_class,
                      "ops": target.op_count, "index": target.index, "G": Form(target.G),
                      "P": Form(target.P)}
            if name in fields:
                return fields[name]
        raise ConsoleError(node.pos, f"{_kind(target)} has no property .{name}")

    # ---- coercion and display ----

    def word(self, v, pos: int, where: str) -> Word:
        if isinstance(v, Form):
            return v.word
        if isinstance(v, Term):
            return v.G
        if isinstance(v, NoteList) and v.op is not None:
            return self.note_word(v, v.op, pos).word
        raise ConsoleError(pos, f"{where} expected a word, got {_kind(v)}")

    def forms_of(self, net: Network) -> Forms:
        f = self._forms.get(id(net))
        if f is None or f.net is not net:
            f = self._forms[id(net)] = Forms(net)
        return f

    def string(self, v, fmt: str = "text") -> str:
        if isinstance(v, str):
            return v
        if isinstance(v, bool) or isinstance(v, int):
            return str(v)
        if isinstance(v, Form):
            return _show_word(v.word, fmt)
        if isinstance(v, Term):
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


def _kind(v) -> str:
    if isinstance(v, Form):
        return "a word"
    if isinstance(v, Term):
        return "a term"
    if isinstance(v, Network):
        return "a network"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, int):
        return "a number"
    return type(v).__name__


# ---- the functions ----

_CHAIN_FLAGS = {"residual": "residual", "layer_norm": "layer_norm", "layernorm": "layer_norm",
                "cross_entropy": "cross_entropy", "crossentropy": "cross_entropy", "causal": "causal"}


def _builtins(c: Console) -> dict[str, Builtin]:
    def need_int(v, pos, what):
        if not isinstance(v, int):
            raise ConsoleError(pos, f"{what} expected a number, got {_kind(v)}")
        return v

    def network(v, pos, fname) -> Network:
        if isinstance(v, Network):
            return v
        if isinstance(v, int):
            return make_encoder(pos, v)
        raise ConsoleError(pos, f"{fname} expected a network or a depth, got {_kind(v)}")

    def make_encoder(pos, n, *flags):
        n = need_int(n, pos, "encoder")
        if not 1 <= n <= 8:
            raise ConsoleError(pos, "encoder(n) takes a depth from 1 to 8")
        opts: dict = {}
        for f in flags:
            if not isinstance(f, str):
                raise ConsoleError(pos, f"encoder options are strings, got {_kind(f)}")
            key, _, val = f.partition("=")
            if key == "heads" and val.isdigit() and 1 <= int(val) <= 8:
                opts["heads"] = int(val)
            elif key in _CHAIN_FLAGS and not val:
                opts[_CHAIN_FLAGS[key]] = True
            else:
                raise ConsoleError(pos, f"unknown encoder option {f!r}: expected residual, layer_norm, "
                                        "cross_entropy, causal or heads=H")
        return encoder(n, **opts)

    def make_gpt(pos, name):
        from ...presets import load_preset
        from ..gpt import network as gpt_network
        if not isinstance(name, str):
            raise ConsoleError(pos, "gpt takes a preset name, e.g. gpt(\"tiny\")")
        try:
            return gpt_network(load_preset(name).model)
        except Exception as e:  # a UserError from the preset loader
            raise ConsoleError(pos, str(e)) from None

    def form(pos, v):
        net = network(v, pos, "form")
        return Form(net.form, net)

    def checked(pos, net: Network | None):
        if net is not None:
            n = c.forms_of(net).count()
            if n > MAX_TERMS:
                raise ConsoleError(pos, f"the form has {n} terms, more than the console expands "
                                        f"({MAX_TERMS}); look at one with forms(net, k)")

    def stage(fn_word, name, full=False):
        def run(pos, v):
            if isinstance(v, list):
                return [run(pos, x) for x in v]
            if isinstance(v, Network):
                v = Form(v.form, v)
            w = c.word(v, pos, name)
            net = v.net if isinstance(v, Form) else None
            if full:
                checked(pos, net)
            try:
                return Form(fn_word(w, net), net)
            except rules.RuleError as e:
                raise ConsoleError(pos, f"{name}: {e}") from None
        return run

    def d(pos, v):
        if isinstance(v, list) and not isinstance(v, NoteList):
            return [d(pos, x) for x in v]
        net = v.net if isinstance(v, Form) else None
        try:
            return Form(rules.d(c.word(v, pos, "d")), net)
        except rules.RuleError as e:
            raise ConsoleError(pos, f"d: {e}") from None

    def flatten(pos, v):
        if isinstance(v, list):
            return [x for y in v for x in flatten(pos, y)]
        net = v.net if isinstance(v, Form) else None
        return [Form(x, net) for x in rules.flatten(c.word(v, pos, "flatten"))]

    def finish(pos, v):
        if isinstance(v, list):
            return [finish(pos, x) for x in v]
        try:
            _, G = rules.finish(c.word(v, pos, "finish"))
        except rules.RuleError as e:
            raise ConsoleError(pos, f"finish: {e}") from None
        return Form(G, v.net if isinstance(v, Form) else None)

    def forms(pos, v, k=None):
        net = network(v, pos, "forms")
        f = c.forms_of(net)
        if k is None:
            try:
                return f.terms(limit=MAX_TERMS)
            except TooManyTerms as e:
                raise ConsoleError(pos, f"{e}; look at one with forms(n, k)") from None
        k = need_int(k, pos, "forms(n, k)")
        try:
            return f.term_at(k)
        except IndexError as e:
            raise ConsoleError(pos, str(e)) from None

    def count(pos, v, weight=None):
        f = c.forms_of(network(v, pos, "count"))
        try:
            return f.count(weight)
        except KeyError as e:
            raise ConsoleError(pos, str(e.args[0])) from None

    def term(pos, v, tid):
        f = c.forms_of(network(v, pos, "term"))
        if not isinstance(tid, str):
            raise ConsoleError(pos, "term(net, id) takes the term's ID as a string")
        try:
            return f.term(tid)
        except KeyError as e:
            raise ConsoleError(pos, str(e.args[0])) from None

    def stages(pos, v, t):
        f = c.forms_of(network(v, pos, "stages"))
        if isinstance(t, int):
            t = forms(pos, v, t)
        if not isinstance(t, Term):
            raise ConsoleError(pos, "stages(net, k) takes a term or its number")
        return [f"{name}: {printing.text(w)}" for name, w in f.stages(t)]

    def sym(pos, name):
        if not isinstance(name, str) or not name:
            raise ConsoleError(pos, 'sym takes a name: sym("A")')
        return Form(Sym(name))

    def otimes(pos, *vs):
        return Form(prod(*[c.word(v, pos, "otimes") for v in vs]), _net_of(vs))

    def oplus(pos, *vs):
        return Form(add(*[c.word(v, pos, "oplus") for v in vs]), _net_of(vs))

    def transpose_(pos, v):
        try:
            return Form(transpose(c.word(v, pos, "transpose")), _net_of([v]))
        except ValueError as e:
            raise ConsoleError(pos, str(e)) from None

    def show(pos, v):
        c.out.append(Output("text", c.string(v)))

    def show_html(pos, v):
        c.out.append(Output("html", v if isinstance(v, str) else c.string(v, "html")))

    def log(pos, *vs):
        c.out.append(Output("text", " ".join(c.string(v) for v in vs)))

    def string(pos, v):
        return c.string(v, "text")

    def html(pos, v):
        return c.string(v, "html")

    def latex(pos, v):
        return c.string(v, "latex")

    def help_(pos, topic=None):
        if topic is None:
            lines = ["The note's console. Statements are separated by ';'. Functions:"]
            lines += [f"  {name}({b.args})  {b.doc}" for name, b in sorted(c.builtins.items())]
            lines += ['Symbols: A = sym("A"), or as the note writes it: A = ["A"]; A.op = ""',
                      "Lists and words: z[13], z.length, w.op; terms: t.id, t.G, t.route, t.ops"]
        else:
            b = c.builtins.get(topic) if isinstance(topic, str) else None
            if b is None:
                raise ConsoleError(pos, f"no help on {topic!r}")
            lines = [f"{topic}({b.args})  {b.doc}"]
        c.out.append(Output("text", "\n".join(lines)))

    B = Builtin
    return {
        "encoder": B(make_encoder, 'n, "residual", "heads=2", "layer_norm", "cross_entropy", "causal"',
                     "the note's encoder chain of depth n, with options", 1, 6),
        "gpt": B(make_gpt, '"tiny"', "the GPT of a preset", 1, 1),
        "form": B(form, "net", "the form trace(E^t dF) of a network (or of encoder(n))", 1, 1),
        "d": B(d, "x", "the differential by the Leibniz rule", 1, 1),
        "expandAll": B(stage(lambda w, net: rules.expand_all(w, net.substitute if net else None), "expandAll"),
                       "x", "multiply out (substituting named values' differentials, outside operators)", 1, 1),
        "expandmm": B(stage(lambda w, net: rules.expandmm(w, net.substitute if net else None), "expandmm", True),
                      "x", "expandAll through operator arguments: one term per path", 1, 1),
        "flatten": B(flatten, "x", "the summands as a list", 1, 1),
        "cycle": B(stage(lambda w, net: rules.cycle(w), "cycle"), "term", "trace(L f R) -> trace(R L f)", 1, 1),
        "shift": B(stage(lambda w, net: rules.shift(w), "shift"), "term", "one shift: trace(P op[A]) -> "
                   "trace(op^T[P] A)", 1, 1),
        "shiftmm": B(stage(lambda w, net: rules.shiftmm(w), "shiftmm"), "term",
                     "shift until the differential leaves every operator", 1, 1),
        "finish": B(finish, "term", "the coefficient G of trace(G dW)", 1, 1),
        "forms": B(forms, "n or net, k", "every finished term, or the k-th (from 0)", 1, 2),
        "count": B(count, "n or net, weight", "how many terms (of one weight)", 1, 2),
        "term": B(term, 'net, "K_0 via X_1@Z_1#1"', "the term with this ID", 2, 2),
        "stages": B(stages, "net, k", "the pipeline for one term, stage by stage", 2, 2),
        "sym": B(sym, '"A"', "a symbol of the free algebra", 1, 1),
        "otimes": B(otimes, "a, b, …", "the product", 1, 64),
        "oplus": B(oplus, "a, b, …", "the sum", 1, 64),
        "transpose": B(transpose_, "x", "the transpose (pushed onto the leaves)", 1, 1),
        "show": B(show, "x", "print x in the note's notation", 1, 1),
        "showHTML": B(show_html, "x", "print x as HTML", 1, 1),
        "log": B(log, "x, …", "print values", 1, 16),
        "string": B(string, "x", "x in the note's notation, as a string", 1, 1),
        "html": B(html, "x", "x as HTML, as a string", 1, 1),
        "latex": B(latex, "x", "x as LaTeX (matplotlib mathtext), as a string", 1, 1),
        "help": B(help_, '"name"', "this list, or help on one function", 0, 1),
    }


def _net_of(vs) -> Network | None:
    for v in vs:
        if isinstance(v, Form) and v.net is not None:
            return v.net
    return None


def run(line: str, console: Console | None = None) -> list[Output]:
    """Run a line in a fresh console (or the given one)."""
    return (console or Console()).run(line)
