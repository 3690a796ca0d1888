"""The console's functions: the note's pipeline, the free algebra, display, help. A fixed table — nothing
else can be called. Each function takes the console (for display and caches), the call's position (for
errors) and the evaluated arguments."""

from __future__ import annotations

import re

from .. import printing, rules
from ..chain import encoder
from ..derive import Term, TooManyTerms
from ..network import Network
from ..words import Sym, add, prod, transpose
from .limits import MAX_TERMS, describe_count
from .syntax import ConsoleError
from .values import Builtin, Form, Html, Latex, NoteList, Output, kind_of


_CHAIN_FLAGS = {"residual": "residual", "layer_norm": "layer_norm", "layernorm": "layer_norm",
                "cross_entropy": "cross_entropy", "crossentropy": "cross_entropy", "causal": "causal"}


def builtins(c) -> dict[str, Builtin]:
    def need_int(v, pos, what):
        if not isinstance(v, int):
            raise ConsoleError(pos, f"{what} expected a number, got {kind_of(v)}")
        return v

    def network(v, pos, fname) -> Network:
        if isinstance(v, Network):
            return v
        if isinstance(v, int):
            return make_encoder(pos, v)
        raise ConsoleError(pos, f"{fname} expected a network or a depth, got {kind_of(v)}")

    def make_encoder(pos, n, *flags):
        n = need_int(n, pos, "encoder")
        if not 1 <= n <= 8:
            raise ConsoleError(pos, "encoder(n) takes a depth from 1 to 8")
        opts: dict = {}
        for f in flags:
            if not isinstance(f, str):
                raise ConsoleError(pos, f"encoder options are strings, got {kind_of(f)}")
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
        from ...configs.presets import load_preset
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
                raise ConsoleError(pos, f"the form has {describe_count(n)} terms, more than the console expands "
                                        f"({describe_count(MAX_TERMS)}); look at one with forms(net, k)")

    def bounded(pos, name, w, net, into_ops):
        n = rules.summand_count(w, net.substitute if net else None, into_ops)
        if n > MAX_TERMS:
            raise ConsoleError(pos, f"{name}: this expansion would have {describe_count(n)} terms, more than "
                                    f"the console expands ({describe_count(MAX_TERMS)}); expand a part of it")

    def stage(fn_word, name, full=False, expands=None):
        def run(pos, v):
            if isinstance(v, list):
                return [run(pos, x) for x in v]
            if isinstance(v, Network):
                v = Form(v.form, v)
            w = c.word(v, pos, name)
            net = v.net if isinstance(v, Form) else None
            if full:
                checked(pos, net)
            if expands is not None:
                bounded(pos, name, w, net, expands)
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

    def forms2(pos, *args):
        from ..mixed import MixedForm, MixedFormError

        *where, weight, other = args
        if not (isinstance(weight, str) and isinstance(other, str)):
            raise ConsoleError(pos, 'forms2 takes two weight names: forms2("K_5", "Q_3")')
        net = network(where[0], pos, "forms2") if where else c.env.get("net")
        if not isinstance(net, Network):
            net = make_encoder(pos, 1 + max(_layer(weight), _layer(other)))
        try:
            return MixedForm(c.forms_of(net), weight, other, MAX_TERMS).terms
        except KeyError as e:
            raise ConsoleError(pos, _missing_weight(net, e.args[0], weight, other)) from None
        except (TooManyTerms, MixedFormError) as e:
            raise ConsoleError(pos, f"forms2: {e}") from None

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
        c.out.append(c.output(v))

    def show_html(pos, v):
        c.out.append(Output("html", v if isinstance(v, str) else c.string(v, "html"), c.rows(v)))

    def log(pos, *vs):
        c.out.append(Output("text", " ".join(c.string(v) for v in vs)))

    def string(pos, v):
        return c.string(v, "text")

    def html(pos, v):
        return Html(c.string(v, "html"))

    def latex(pos, v):
        return Latex(c.string(v, "latex"))

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
        "expandAll": B(stage(lambda w, net: rules.expand_all(w, net.substitute if net else None), "expandAll",
                                 expands=False),
                       "x", "multiply out (substituting named values' differentials, outside operators)", 1, 1),
        "expandmm": B(stage(lambda w, net: rules.expandmm(w, net.substitute if net else None), "expandmm", True,
                                expands=True),
                      "x", "expandAll through operator arguments: one term per path", 1, 1),
        "flatten": B(flatten, "x", "the summands as a list", 1, 1),
        "cycle": B(stage(lambda w, net: rules.cycle(w), "cycle"), "term", "trace(L f R) -> trace(R L f)", 1, 1),
        "shift": B(stage(lambda w, net: rules.shift(w), "shift"), "term", "one shift: trace(P op[A]) -> "
                   "trace(op^T[P] A)", 1, 1),
        "shiftmm": B(stage(lambda w, net: rules.shiftmm(w), "shiftmm"), "term",
                     "shift until the differential leaves every operator", 1, 1),
        "finish": B(finish, "term", "the coefficient G of trace(G dW)", 1, 1),
        "forms": B(forms, "n or net, k", "every finished term, or the k-th (from 0)", 1, 2),
        "forms2": B(forms2, '"K_5", "Q_3" or net, "K_5", "Q_3"',
                    "the mixed form: d<G_B, V> pulled back to dA, one term per row; summed with V = ΔB it is "
                    "-<ΔB, H_BA ·>, H the second derivative of the error (docs/second-order.md); without a network, `net` "
                    "or the smallest chain holding both weights", 2, 3),
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


def _missing_weight(net: Network, missing, weight: str, other: str) -> str:
    """forms2's refusal of a weight the network lacks, saying what to do: an encoder chain too shallow for it
    names the depth that has both weights (issue 40: at depth 2, "no weight 'K_5'" said neither)."""
    names = [s.name for s in net.weights]
    shown = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
    text = f"forms2: no weight {missing!r} in {net.title} (its weights: {shown})"
    if net.title.startswith("encoder("):
        depth = 1 + max(_layer(weight), _layer(other))
        text += (f"; {weight} and {other} are weights of the chain of depth {depth}: choose depth {depth} as "
                 f"the source, or write forms2(encoder({depth}), \"{weight}\", \"{other}\")")
    return text


def _layer(name: str) -> int:
    """The layer a chain weight's name gives (K_5 -> 5, Q_{1,0} -> 1); 0 when it gives none."""
    m = re.search(r"_\{?(\d+)", name)
    return int(m.group(1)) if m else 0


def _net_of(vs) -> Network | None:
    for v in vs:
        if isinstance(v, Form) and v.net is not None:
            return v.net
    return None
