"""`gpt-explorer export`: a figure, or the numbers behind it, from a run directory alone (docs/command-line.md).

The format comes from --out's suffix (.png .svg .pdf through matplotlib; .csv .npy for the data; .gif .mp4
for the coefficient's animation over the saved steps). Each
--what is one entry of `HANDLERS`, a function (RunAnalysis, args) -> Path; another part of the engine adds
its own export by putting its function in that dict. The numbers come from the run's
`engine.analysis.run_analysis.RunAnalysis`, as the panes' do, so the two cannot disagree. Never loads Qt.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import UserError

WHATS = ("loss", "attention", "mask", "posenc", "coefficient", "update", "heads", "routes", "interaction",
         "interaction-map", "tokens", "curvature", "code")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export", help="export a plot (PNG, SVG, PDF) or its data (CSV, NPY) from a run",
        description="Write one of a run's views to --out; the format comes from the file's suffix: .png "
                    ".svg .pdf for a figure, .csv .npy for its numbers. Masked entries are NaN in the data "
                    "and hatched in figures. For --what coefficient: .npy holds G at --step, .csv the norms "
                    "over every saved step, .gif/.mp4 an animation of G over the saved steps.")
    p.add_argument("--run", metavar="DIR", required=True, help="the run directory to read")
    p.add_argument("--what", required=True, choices=WHATS,
                   help="loss: train and validation loss curves; attention: attention weights for the prompt "
                        "(every layer and head, one layer with --layer, one head with --layer and --head); "
                        "mask: the mask in force for the prompt's length; posenc: the positional encoding "
                        "matrix (positions × dimensions); coefficient: a weight's coefficient matrix G = −∂L/∂W on "
                        "the run's probe batch, split by the form into route classes (needs --weight); update: "
                        "G at --step turned into a step by each geometry (Euclidean, sign, AdamW's diagonal, "
                        "spectral) beside the applied ΔW = W(step) − W(previous saved step) (needs --weight; "
                        ".csv cosines, norms, effective ranks; .npy the stacked directions; figures side by side); "
                        "heads: every head's scores over the saved steps (.csv), or as heads × steps above the loss curve; "
                        "routes: each route class's share ⟨G_c(p), ΔW⟩ of the first-order decrease over every "
                        "interval [p, s] of saved steps, G on the probe batch (--weight, or the whole model "
                        "without it; .csv every direction's shares, .npy the applied update's, figures with "
                        "the ranking; with --step, the intervals up to it); interaction: how --other's (A's) update that reached --step moved "
                        "--weight's (B's) coefficient, −H_BA ΔA, H the Hessian of the probe loss at the previous "
                        "saved step (.npy −H_BA ΔA in B's shape; .csv per saved step its norm, its cosine with "
                        "the real ΔG_B, the norm of the exact change from A's update alone, the real ΔG_B's norm "
                        "and the pair's share ½⟨ΔB, H_BA ΔA⟩ of the curvature term; figures the three maps side "
                        "by side); interaction-map: every pair's share of the curvature term over the update "
                        "that reached --step (.npy the weights × weights matrix [B, A] in model order, .csv "
                        "with the weights' names, figures the map with the loss accounting); tokens: --weight's "
                        "coefficient read in tokens, the vocabulary items it, the update that reached the step "
                        "and each route class push toward and away (through the unembedding for a weight "
                        "writing to the residual stream, directly for the unembedding) or the probe's tokens "
                        "whose outer products make it up (a weight reading the stream) (.csv the ranked tokens "
                        "at every saved step, or --step's; .npy the push over the vocabulary or the imprints "
                        "by probe position; figures the bars at --step and G's tokens over training); "
                        "curvature: along each update between saved steps, the curvature κ = δᵀHδ/‖δ‖² of the "
                        "probe loss (with --weight, that weight's own too) and the critical sharpness λ_c (the "
                        "smallest multiple of the mean step that raises the probe loss, as 2/(t η)) against 2/η "
                        "(.csv and .npy one row per saved step; figures λ_c and κ over training above the loss); "
                        "code: --weight's coefficient (or its route class --class) at --step as a standalone "
                        "Python file (.py, with FILE.npz beside it) that computes it with the model written out "
                        "in NumPy and checks it against finite differences, the forms engine and autograd")
    p.add_argument("--step", type=int, metavar="S",
                   help="use the weights saved at this step (default: the newest saved step whose weights are "
                        "intact, naming any damaged newer one)")
    p.add_argument("--layer", type=int, metavar="L", help="attention: only this layer (from 0)")
    p.add_argument("--head", type=int, metavar="H", help="attention: only this head of --layer (from 0)")
    p.add_argument("--weight", metavar="NAME",
                   help="coefficient, update, routes, tokens and curvature: the weight, e.g. blocks.0.W_K")
    p.add_argument("--other", metavar="NAME",
                   help="interaction: the weight A whose update moved --weight's coefficient, e.g. blocks.0.W_Q")
    p.add_argument("--score", metavar="NAME", help="heads: draw only this score (e.g. induction)")
    p.add_argument("--class", dest="part", metavar="C",
                   help="code: one route class of --weight's coefficient (e.g. L1.q, direct) instead of the whole")
    p.add_argument("--prompt", metavar="TEXT",
                   help="attention and mask: the text to probe (default: the run's heatmap prompt)")
    p.add_argument("--out", metavar="FILE", required=True, help="the file to write; its suffix sets the format")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..figures import export
    from ..analysis.run_analysis import RunAnalysis
    from ..rundir.layout import steps_listed
    from ..safe_io import check_output_path, write_failed, write_whole, written

    out = Path(args.out)
    # a bad suffix is refused before any work
    export.format_of(out, _coefficient_formats() if args.what == "coefficient" else _code_formats()
                     if args.what == "code" else export.FIGURE_FORMATS + export.DATA_FORMATS)
    check_output_path(out)
    _check_options(args)
    analysis = RunAnalysis(args.run)
    if args.step is None and args.what in AT_ONE_STEP:  # as sample and resume do, past damaged weights
        args.step = analysis.run.newest_intact_step()
    elif args.step is not None and args.step not in analysis.saved_steps():  # every --what, one door
        raise UserError(f"{analysis.path} has no weights saved at step {args.step} "
                        f"(it has {steps_listed(analysis.saved_steps())})")

    def write(tmp: Path) -> None:  # under a hidden name beside --out, renamed once whole, as the app's exports
        HANDLERS[args.what](analysis, argparse.Namespace(**{**vars(args), "out": str(tmp)}))

    try:
        paths = write_whole(out, write)
    except OSError as e:  # unwritable after all (a full disk, a read-only file system)
        raise write_failed(out, e) from None
    for warning in analysis.warnings:  # after loading: a damaged step skipped, a snapshot replaced, are named too
        print(f"gpt-explorer: warning: {warning}", file=sys.stderr)
    print(f"wrote {written(paths)}")
    return 0


AT_ONE_STEP = ("attention", "posenc", "coefficient", "update", "code")  # what reads the weights of one step
# the options each --what reads beside --step; any other given is refused, never ignored (as --class was by
# coefficient, which wrote the whole G where a class was asked for)
USES = {"attention": ("layer", "head", "prompt"), "mask": ("prompt",), "coefficient": ("weight",),
        "update": ("weight",), "heads": ("score",), "routes": ("weight",), "interaction": ("weight", "other"),
        "tokens": ("weight",), "curvature": ("weight",), "code": ("weight", "part")}
OPTION_NAMES = {"layer": "--layer", "head": "--head", "weight": "--weight", "other": "--other", "score": "--score",
                "part": "--class", "prompt": "--prompt"}


def _check_options(args: argparse.Namespace) -> None:
    stray = [k for k in OPTION_NAMES if getattr(args, k, None) is not None and k not in USES.get(args.what, ())]
    if stray:
        users = [w for w in WHATS if stray[0] in USES.get(w, ())]
        raise UserError(f"{OPTION_NAMES[stray[0]]} does not apply to --what {args.what}; it is for --what "
                        + " and ".join(filter(None, [", ".join(users[:-1]), users[-1]])))


def export_loss(a, args) -> Path:
    from ..figures import export

    return export.export_loss(args.out, a.run.metrics())


def export_attention(a, args) -> Path:
    from ..figures import export

    cfg, step = a.config.model, args.step
    if args.head is not None and args.layer is None:
        raise UserError("--head needs --layer")
    if args.layer is not None and not 0 <= args.layer < cfg.n_layer:
        raise UserError(f"--layer must be between 0 and {cfg.n_layer - 1}")
    if args.head is not None and not 0 <= args.head < cfg.n_head:
        raise UserError(f"--head must be between 0 and {cfg.n_head - 1}")
    maps = a.attention(step, args.prompt).maps
    weights, tokens = maps.weights, maps.tokens  # (L, H, T, T)
    if args.head is not None:
        return export.export_matrix(args.out, weights[args.layer, args.head], row_labels=tokens,
                                    col_labels=tokens, kind="probability", row_title="query", col_title="key",
                                    title=f"attention weights · layer {args.layer} · head {args.head} · step {step}")
    if args.layer is not None:
        weights = weights[args.layer: args.layer + 1]
    return export.export_grid(args.out, weights, row_labels=tokens, col_labels=tokens, kind="probability",
                              title=f"attention weights · step {step}",
                              tile_title="layer {0} · head {1}" if args.layer is None
                              else f"layer {args.layer} · head {{1}}")


def export_mask(a, args) -> Path:
    from ..figures import export
    from ..model import probes
    from ..analysis.attention import prompt_tokens

    cfg = a.config.model
    _, tokens = prompt_tokens(a.tokenizer, a.prompt if args.prompt is None else args.prompt, cfg.n_ctx)
    name = {"banded": f"banded, β = {cfg.band}"}.get(cfg.mask, cfg.mask)
    return export.export_matrix(args.out, probes.mask_matrix(cfg.mask, len(tokens), cfg.band),
                                row_labels=tokens, col_labels=tokens, kind="probability", row_title="query",
                                col_title="key", title=f"mask in force: {name} (1 allowed, hatched masked)")


def export_posenc(a, args) -> Path:
    from ..figures import export

    step = args.step
    P = a.positional(step).P
    return export.export_matrix(args.out, P, kind="signed", row_title="position", col_title="dimension",
                                title=f"{a.config.model.pos_encoding} positional encoding · step {step}")


def _coefficient_formats() -> tuple[str, ...]:
    from ..coefficients.export import FORMATS

    return FORMATS


def export_coefficient(a, args) -> Path:
    from ..coefficients.export import check_step, check_weight, export_coefficient

    store = a.coefficients
    check_weight(store, args.weight)
    step = check_step(store, args.step)  # before an animation spends minutes, even though it uses every step
    progress = None
    if Path(args.out).suffix.lower() in (".gif", ".mp4"):
        def progress(done: int, total: int) -> None:
            print(f"\ranimation {100 * done // total}%", end="" if done < total else "\n", file=sys.stderr, flush=True)
    return export_coefficient(args.out, store, args.weight, step, progress)


def export_heads(a, args) -> Path:
    from ..analysis.head_export import export_heads

    timeline = a.head_timeline()
    if args.step is not None:  # a saved step (run checked it); the timeline up to it
        timeline = timeline.upto(args.step)
    return export_heads(args.out, timeline, a.run.metrics(), args.score)


def export_update(a, args) -> Path:
    from ..analysis.update_export import export_update

    return export_update(args.out, a.update_geometry(args.weight, args.step))


def export_routes(a, args) -> Path:
    from ..analysis.routes_export import export_routes

    if len([s for s in a.saved_steps() if args.step is None or s <= args.step]) < 2:
        raise UserError(f"{a.path} has fewer than two saved steps{'' if args.step is None else f' up to {args.step}'}: "
                        "no update to split yet")
    return export_routes(args.out, a.route_shares(args.weight, upto=args.step))


def export_interaction(a, args) -> Path:
    from ..analysis.interaction_export import export_interaction

    pair = a.interaction(args.weight, args.other, args.step)  # checks the names and the step first
    if Path(args.out).suffix.lower() == ".csv":
        return export_interaction(args.out, a.interaction_series(args.weight, args.other), pair.step)
    return export_interaction(args.out, [pair], pair.step)


def export_interaction_map(a, args) -> Path:
    from ..analysis.interaction_export import export_interaction_map

    return export_interaction_map(args.out, a.interaction_map(args.step))


def _progress(unit: str):
    def progress(done: int, total: int) -> None:
        print(f"\r{unit} {done} of {total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return progress


def export_tokens(a, args) -> Path:
    from ..analysis.tokens_export import export_run_tokens

    return export_run_tokens(args.out, a.path, args.weight, args.step, _progress("saved steps read:"))


def export_curvature(a, args) -> Path:
    from ..analysis.curvature_export import export_run_curvature

    path = export_run_curvature(args.out, a.path, args.weight, args.step, _progress("intervals measured:"))
    if a.curvature_unmeasured():
        print(f"gpt-explorer: warning: {a.curvature_unmeasured()}: λ_c alone, from forwards", file=sys.stderr)
    elif a.curvature_approximate():
        print(f"gpt-explorer: note: κ and the shares {a.curvature_approximate()}", file=sys.stderr)
    return path


def _code_formats() -> tuple[str, ...]:
    from ..ascode.generate import CODE_FORMATS

    return CODE_FORMATS


def export_code(a, args) -> Path:
    from ..ascode.generate import export_run_code

    return export_run_code(args.out, a.path, args.weight, args.step, args.part)


HANDLERS: dict[str, Callable] = {"loss": export_loss, "attention": export_attention, "mask": export_mask,
                                 "posenc": export_posenc, "coefficient": export_coefficient,
                                 "update": export_update, "heads": export_heads,
                                 "routes": export_routes, "interaction": export_interaction,
                                 "interaction-map": export_interaction_map, "tokens": export_tokens,
                                 "curvature": export_curvature, "code": export_code}
