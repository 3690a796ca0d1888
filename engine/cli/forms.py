"""`gpt-explorer forms`: the symbolic differential form of the training error (docs/forms.md) from the command
line — terms, counts, verification against autograd, and the note's console."""

from __future__ import annotations

import argparse

from ..errors import UserError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "forms", help="the symbolic form of the error pulled back to every weight",
        description="Derive the differential form of the training error for a GPT (a preset or config; "
                    "default: the tiny preset) or for the note's encoder chain, and print its terms, their "
                    "counts, or their agreement with autograd. Term IDs name the weight and the labelled "
                    "occurrences the route passes through, e.g. 'K_0 via X_1@Z_1#1'.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--preset", metavar="NAME", help="a preset (tiny, seed-chain, nanogpt-cpu, baby-gpt)")
    src.add_argument("--config", metavar="FILE", help="an experiment TOML file (its [model] section is used)")
    src.add_argument("--chain", type=int, metavar="N", help="the note's encoder chain of depth N")
    ch = p.add_argument_group("chain options (with --chain)")
    ch.add_argument("--residual", action="store_true", help="residual connections X_{i+1} = X_i + …")
    ch.add_argument("--heads", type=int, default=1, metavar="H", help="attention heads per layer (default 1)")
    ch.add_argument("--layer-norm", action="store_true", help="a layer norm before each layer's attention")
    ch.add_argument("--cross-entropy", action="store_true", help="a softmax head with the mean cross-entropy")
    ch.add_argument("--causal", action="store_true", help="the causal mask in the attention")
    p.add_argument("--weight", metavar="NAME",
                   help="only this weight (a state-dict key such as blocks.0.W_Q, or the chain's K_0)")
    p.add_argument("--other", metavar="NAME",
                   help="with --weight B: the mixed form of B by this weight A, d<G_B, V> pulled back to dA "
                        "(V a direction on B; summed at V = ΔB it is -<ΔB, H_BA ΔA>); works with --format, "
                        "--count and --verify (docs/second-order.md)")
    p.add_argument("--term", metavar="ID", help="one term by its ID, with its route class and coefficient word")
    p.add_argument("--format", choices=("text", "latex", "html"), default="text",
                   help="how formulas are printed (default text, the note's notation)")
    p.add_argument("--count", action="store_true", help="print 'NAME COUNT' per weight, then 'total N'")
    p.add_argument("--verify", action="store_true",
                   help="compare the summed coefficients with autograd in float64 (random weights and probe "
                        "batch from a fixed seed) and exit non-zero if any relative error exceeds 1e-8")
    p.add_argument("--out", metavar="FILE",
                   help="write a formula snapshot instead of listing: the --term, else the --weight's coefficient, "
                        "else the whole form; the format from the suffix (.tex .svg .png .html; long forms continue "
                        "on further SVG/PNG pages, NAME-p2.png, ...)")
    p.add_argument("--eval", metavar="LINE", dest="eval_line",
                   help="run a line of the note's console language (e.g. \"forms(2).length\"); with a model "
                        "option the network is predefined as net")
    p.set_defaults(func=run)


def _network(args):
    from ..configs.config import ExperimentConfig
    from ..configs.presets import DEFAULT_PRESET, load_preset
    from ..forms import chain, gpt

    chain_flags = args.residual or args.layer_norm or args.cross_entropy or args.causal or args.heads != 1
    if args.chain is not None:
        if args.chain < 1:
            raise UserError("--chain needs a depth of at least 1")
        if args.heads < 1:
            raise UserError("--heads needs at least 1 head")
        return chain.encoder(args.chain, residual=args.residual, heads=args.heads, layer_norm=args.layer_norm,
                             cross_entropy=args.cross_entropy, causal=args.causal)
    if chain_flags:
        raise UserError("--residual, --heads, --layer-norm, --cross-entropy and --causal apply to --chain N")
    cfg = ExperimentConfig.load(args.config) if args.config else load_preset(args.preset or DEFAULT_PRESET)
    problems = cfg.validate()  # sizes and memory, before any network or tensor is built
    if problems:
        raise UserError(f"{args.config or args.preset or DEFAULT_PRESET}: " + "; ".join(map(str, problems)))
    return gpt.network(cfg.model)


def _weight(net, name: str):
    try:
        return net.find(name)
    except KeyError:
        names = [p.name for p in net.params]
        shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        raise UserError(f"no weight {name!r} in {net.title}; weights: {shown}") from None


def run(args: argparse.Namespace) -> int:
    from ..forms.console import Console
    from ..forms.derive import DEFAULT_LIMIT, Forms

    explicit = args.chain is not None or args.preset or args.config
    if args.eval_line is not None and not (explicit or args.count or args.verify or args.term or args.weight):
        return _eval(Console(), args.eval_line)
    net = _network(args)
    forms = Forms(net)
    if args.weight:
        _weight(net, args.weight)
    if args.other is not None:
        from ._forms_mixed import run_mixed

        return run_mixed(args, forms)
    status = 0
    if args.eval_line is not None:
        console = Console()
        console.env["net"] = net
        status = _eval(console, args.eval_line)
    if args.count:
        _count(forms, args.weight)
    if args.verify:
        status = max(status, _verify(net, args.weight))
    if args.out:
        _snapshot(forms, args.term, args.weight, args.out)
    elif args.term:
        _term(forms, args.term, args.format)
    if not (args.count or args.verify or args.term or args.out or args.eval_line is not None):
        _list(forms, args.weight, args.format, DEFAULT_LIMIT)
    return status


def _eval(console, line: str) -> int:
    for out in console.run(line):
        print(out.content)
    return 0


def _count(forms, weight) -> None:
    counts = forms.counts()
    if weight:
        param = forms.net.find(weight)[0].name
        counts = {param: forms.count(weight)}
    for name, n in counts.items():
        print(f"{name} {n}")
    print(f"total {sum(counts.values())}")


def _verify(net, weight) -> int:
    from ..forms import verify

    checks = verify.verify_chain(net) if net.spec is not None and hasattr(net.spec, "depth") \
        else verify.verify_gpt(net.spec)
    if weight:
        param = net.find(weight)[0].name
        checks = [c for c in checks if c.weight == param]
    width = max(len(c.weight) for c in checks)
    for c in checks:
        print(f"{c.weight:<{width}}  {c.error:.2e}" + ("  (degenerate: relative to the model's largest)"
                                                      if c.degenerate else ""))
    worst = max(c.error for c in checks)
    ok = worst <= verify.TOLERANCE
    print(f"max relative error {worst:.2e} over {len(checks)} weights ({', '.join(checks[0].methods)} vs "
          f"autograd, float64): {'ok' if ok else 'FAILED'} (tolerance {verify.TOLERANCE:g})")
    return 0 if ok else 1


def _term(forms, term_id: str, fmt: str) -> None:
    from ..forms.printing import render

    try:
        t = forms.term(term_id)
    except KeyError as e:
        raise UserError(str(e.args[0])) from None
    print(t.id)
    print(f"weight {t.weight}, route class {t.route_class}, {t.operators}, term {t.index} in Leibniz order")
    print(render(t.G, fmt))


def _snapshot(forms, term_id, weight, out: str) -> None:
    from ..forms import snapshot_export as se
    from ..safe_io import check_output_path, write_failed

    se.format_of(out, se.FORMATS)  # a wrong suffix or place is refused before anything is derived
    check_output_path(out)
    if term_id:
        try:
            sheet = se.term_sheet(forms, forms.term(term_id))
        except KeyError as e:
            raise UserError(str(e.args[0])) from None
    elif weight:
        sheet = se.weight_sheet(forms, forms.net.find(weight)[0].name)
    else:
        sheet = se.form_sheet(forms)
    try:
        paths = se.export_sheet(out, sheet)
    except OSError as e:
        raise write_failed(out, e) from None
    for path in paths:
        print(path)


def _list(forms, weight, fmt: str, limit: int) -> None:
    from ..forms.derive import TooManyTerms
    from ..forms.printing import render

    try:
        terms = forms.terms(weight, limit)
    except TooManyTerms as e:
        raise UserError(f"{e}; print --count, one --weight, or one --term") from None
    current = None
    for t in terms:
        if t.weight != current:
            current = t.weight
            print(f"# {current}: {forms.count(current)} terms")
        print(f"{t.id}  [{t.route_class}]")
        print(f"  G = {render(t.G, fmt)}")


__all__ = ["add_parser", "run"]
