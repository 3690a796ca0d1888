"""`gpt-explorer train`: train a model in the terminal, writing a run directory (docs/run-directory.md).

A new run comes from a preset (default `tiny`) or a config file, with the command line's overrides; if
`--run` names an existing run it is resumed exactly from its latest checkpoint; an imported pretrained model
(`import hf`, `import nanogpt`) is fine-tuned that way, on `--corpus` if given, with its own tokenizer.
Progress is one updating line on a terminal and plain lines otherwise. Ctrl-C stops between steps and
saves a checkpoint. Qt is never imported here (a test checks it).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import signal
import sys
import threading
import time
from pathlib import Path

from ..errors import UserError
from ..configs.resolve import unresolved


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..configs.fields import BY_KEY, settings_help
    from ..configs.presets import DEFAULT_PRESET, preset_names

    def field(key: str) -> dict:
        """metavar and help of an option that sets a config field, from the fields' table."""
        f = BY_KEY[key]
        return {"metavar": "|".join(f.values), "help": f"{f.help}: {f.choices_text()}"}

    p = sub.add_parser(
        "train", help="train a model in the terminal (no window)",
        description="Train a GPT and write its run directory. With --run pointing at an existing run, "
                    "resume it exactly from its latest checkpoint. Ctrl-C stops and saves a checkpoint.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--preset", metavar="NAME",
                     help="a named experiment: " + ", ".join(
                         f"{n} (the default)" if n == DEFAULT_PRESET else n for n in preset_names()))
    src.add_argument("--config", metavar="FILE", help="an experiment TOML file (as written in a run's config.toml)")
    p.add_argument("--corpus", metavar="shakespeare|shakespeare-repeats|PATH",
                   help="'shakespeare' (bundled), 'shakespeare-repeats' (the same with every span of 10-30 "
                        "characters said twice: the induction lesson's corpus) or a UTF-8 text file; default: "
                        "the config's corpus. With --run naming an imported model not yet trained: the text to "
                        "fine-tune it on")
    p.add_argument("--steps", type=int, metavar="N", help="total optimizer steps (on resume: a new total)")
    p.add_argument("--device", **field("train.device"))
    p.add_argument("--seed", type=int, metavar="S", help="random seed (initialisation, batches, dropout)")
    p.add_argument("--precision", choices=BY_KEY["train.precision"].values, **field("train.precision"))
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="torch.compile the training step (falls back to eager, with a message, if it cannot)")
    p.add_argument("--nproc", type=int, metavar="N",
                   help="train with N processes (DistributedDataParallel: NCCL on CUDA, one GPU each; gloo "
                        "on the CPU) sharing each batch; also works when launched by torchrun")
    p.add_argument("--optimizer", **field("train.optimizer"))
    p.add_argument("--run", metavar="DIR",
                   help="run directory; default runs/<preset-or-name>-<timestamp>; an existing run is resumed")
    p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE",
                   help="change one setting of the config, e.g. train.lr=3e-4 (repeatable); the settings are "
                        f"{settings_help()}; docs/config-fields.md says what each means")
    p.add_argument("--fork", metavar="PARENT",
                   help="a new run paired with the run PARENT: its config with --set's changes, the same "
                        "initial weights and batch order (the seed and data cannot change)")
    p.add_argument("--fork-step", type=int, default=0, metavar="S",
                   help="with --fork: start from PARENT's checkpoint at step S (default 0: the start)")
    p.set_defaults(func=run)


def build_config(args: argparse.Namespace, base=None):
    """The ExperimentConfig the options describe (a preset or file, else `base`, then the overrides)."""
    from ..configs.config import ExperimentConfig
    from ..rundir.fork import parse_setting
    from ..configs.presets import DEFAULT_PRESET, load_preset

    if args.config:
        cfg = ExperimentConfig.load(args.config)
    else:
        cfg = base if base is not None and not args.preset else load_preset(args.preset or DEFAULT_PRESET)
    for setting in getattr(args, "set", None) or []:
        cfg = parse_setting(setting, cfg)
    train, data = cfg.train, cfg.data
    if args.corpus is not None:
        from ..text.corpus import BUNDLED

        corpus = args.corpus if args.corpus in BUNDLED else str(Path(args.corpus).expanduser().resolve())
        data = dataclasses.replace(data, corpus=corpus)
    overrides = {k: getattr(args, k) for k in ("steps", "device", "seed", "precision", "compile", "optimizer")
                 if getattr(args, k, None) is not None}
    return cfg.replace(train=dataclasses.replace(train, **overrides), data=data)


def default_run_dir(name: str) -> Path:
    slug = re.sub(r"[^\w.-]+", "-", name).strip("-.") or "run"
    base = Path("runs") / f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, i = base, 1
    while path.exists():
        i += 1
        path = base.with_name(f"{base.name}-{i}")
    return path


def run(args: argparse.Namespace) -> int:
    from ..training.distributed import launched_by_torchrun
    from ..rundir.runs import RunError

    parallel = getattr(args, "nproc", None) not in (None, 1) or launched_by_torchrun()
    if parallel and getattr(args, "fork", None):
        raise RunError("--fork makes its run in one process; train the fork on with --run DIR --nproc N after")
    if parallel:
        from ._parallel import run_parallel

        return run_parallel(args)
    if getattr(args, "fork", None):
        return _fork(args, Path(args.run) if args.run else None)
    run_dir, resume = plan_run(args)
    return _train(make_trainer(args, run_dir, resume), run_dir)


def plan_run(args: argparse.Namespace) -> tuple[Path, bool]:
    """The run directory and whether it is resumed; the options are refused here, before training."""
    from ..rundir.integrity import is_half_made
    from ..rundir.runs import CONFIG, MADE_FILES, Run, RunError

    run_dir = Path(args.run) if args.run else None
    if run_dir is not None and (run_dir / CONFIG).is_file():
        if not Run(run_dir).checkpoint_steps():
            _restart(args, run_dir)
            return run_dir, False
        _check_resumable(args, run_dir)
        return run_dir, True
    if run_dir is not None and run_dir.exists() and not is_half_made(run_dir, MADE_FILES):
        raise RunError(f"{run_dir} is not a run directory (it has no {CONFIG}) and is not empty; "
                       "choose a new directory or an existing run")
    return run_dir or default_run_dir(build_config(args).name), False


def _fork(args: argparse.Namespace, run_dir: Path | None) -> int:
    from ..rundir.fork import fork_record, fork_run
    from ..rundir.runs import Run

    parent = Run(args.fork)
    cfg = build_config(args, base=parent.config)
    run_dir = run_dir or default_run_dir(f"{parent.path.name}-fork")
    trainer = fork_run(parent.path, run_dir, cfg, args.fork_step)
    changed = "; ".join(f"{k} {a} -> {b}" for k, (a, b) in fork_record(run_dir)["changed"].items())
    print(f"fork of {parent.path} at step {args.fork_step}: {changed}")
    return _train(trainer, run_dir)


def make_trainer(args: argparse.Namespace, run_dir: Path, resume: bool, group=None):
    """The Trainer of a planned run: resumed, or new (`group`: this process's place among several)."""
    from ..training.distributed import SOLO
    from ..training.trainer import Trainer

    group = group or SOLO
    if resume:
        corpus = None if args.corpus is None else build_config(args).data.corpus  # fine-tuning an import
        return Trainer.resume(run_dir, steps=args.steps, device=args.device, group=group, corpus=corpus,
                              precision=getattr(args, "precision", None), compile=getattr(args, "compile", None))
    return Trainer(getattr(args, "fresh_config", None) or build_config(args), run_dir, group=group)


def _restart(args: argparse.Namespace, run_dir: Path) -> None:
    """A run stopped before its first checkpoint has nothing to resume from: it is trained afresh with
    its own config (or the one the options give), which `make_trainer` finds in args.fresh_config."""
    from ..rundir.lock import RunLock
    from ..rundir.runs import CONFIG, Run

    cfg = Run(run_dir).config
    if args.preset or args.config or args.corpus is not None or args.seed is not None:
        cfg = build_config(args)
    else:
        overrides = {k: getattr(args, k) for k in ("steps", "device", "precision", "compile")
                     if getattr(args, k, None) is not None}
        cfg = cfg.replace(train=dataclasses.replace(cfg.train, **overrides))
    with RunLock(run_dir):  # not while another process is creating or training it
        (run_dir / CONFIG).unlink()  # what is left is a half-made run, which the Trainer clears
    args.fresh_config = cfg
    print(f"{run_dir} was stopped before its first checkpoint; starting it afresh", file=sys.stderr)


def _check_resumable(args: argparse.Namespace, run_dir: Path) -> None:
    from ..rundir.runs import Run

    existing = Run(run_dir).config
    if args.preset or args.config or args.seed is not None or args.optimizer or getattr(args, "set", None):
        wanted = build_config(args)

        def same(c):  # what must not change when a run is resumed (its corpus: Trainer.resume says)
            return (unresolved(c.model),
                    dataclasses.replace(c.train, steps=0, device="auto", precision="auto", compile=False),
                    dataclasses.replace(c.data, corpus=""))
        if same(wanted) != same(existing):
            raise UserError(f"{run_dir} is a run made with another config; to resume it pass only "
                            "--run (and --steps or --device if you want)")


def _train(trainer, run_dir: Path) -> int:
    from ..configs.config import human_count, parameter_count
    from ..text.corpus import corpus_label

    cfg = trainer.cfg
    out = sys.stdout
    for warning in getattr(trainer, "warnings", ()):
        print(f"gpt-explorer: warning: {warning}", file=sys.stderr)
    if trainer.step >= cfg.train.steps:
        print(f"{run_dir} already finished at step {trainer.step}; pass --steps N (more than "
              f"{trainer.step}) to train it further", file=out)
        return 0
    from ..configs.limits import memory_warning

    # a GPU's memory is not the machine's: the trainer refuses a run beyond it
    memory = memory_warning(cfg) if trainer.device.type == "cpu" else None
    if memory:
        print(f"gpt-explorer: warning: {memory}", file=sys.stderr)
    verb = f"resuming at step {trainer.step}" if trainer.step else "new run"
    print(f"{verb}: {run_dir}", file=out)
    print(f"model {cfg.name}: {human_count(parameter_count(cfg.model))} parameters; corpus "
          f"{corpus_label(cfg.data.corpus)}, {human_count(len(trainer.dataset.train))} training tokens; "
          f"device {trainer.device.type}, {trainer.threads} thread(s); {_how(trainer)}", file=out)
    if trainer.compile_message:
        print(f"note: {trainer.compile_message}", file=sys.stderr)
    progress = Progress(out)
    if trainer.step and trainer.writer is not None:  # a resumed run shows its last validation loss
        from ..rundir.runs import Run

        vals = [r["val_loss"] for r in Run(run_dir).metrics() if r.get("val_loss") is not None]
        progress.val = vals[-1] if vals else None
    stop = _StopFlag()
    gen = trainer.steps()
    last = None
    with stop:
        for report in gen:
            last = report
            progress.update(report)
            if stop.requested:
                gen.close()  # writes a checkpoint between steps
                break
    progress.finish()
    if last is not None and last.event == "nan":
        print(f"gpt-explorer: training stopped: {last.message}", file=sys.stderr)
        return 1
    if stop.requested:
        print(f"stopped at step {trainer.step}; checkpoint saved. Resume with: gpt-explorer train --run "
              f"{run_dir}", file=sys.stderr)
        return 130
    print(f"done: {run_dir} (sample with: gpt-explorer sample --run {run_dir})", file=out)
    return 0


def _how(trainer) -> str:
    """Precision, compilation and processes, as the first lines of a run show them."""
    from ..training.acceleration import precision_name

    how = precision_name(trainer.autocast_dtype)
    if trainer.compiled:
        how += ", compiled"
    if trainer.group.world > 1:
        how += f", {trainer.group.world} processes"
    return how


class _StopFlag:
    """Ctrl-C (or SIGTERM) sets a flag read between steps, so stopping never interrupts a step half-way."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._previous_term = signal.signal(signal.SIGTERM, self._on_sigint)  # `kill`: the same checkpoint
        return self

    def _on_sigint(self, signum, frame):
        self.requested = True

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            signal.signal(signal.SIGTERM, self._previous_term)
        return False


class Progress:
    """Training progress on a stream: one line rewritten in place on a terminal (at most 10 times a
    second), plain lines otherwise (every evaluation and every 5% of the steps). Samples are printed
    at evaluation steps."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.val: float | None = None
        self._shown = 0.0
        self._width = 0

    def line(self, r) -> str:
        val = "—" if self.val is None else f"{self.val:.4f}"
        bits = "" if r.train_bpc is None else f"  {r.train_bpc:.3f} bits/char"
        return (f"step {r.step}/{r.total_steps}  loss {r.train_loss:.4f}  val {val}{bits}  "
                f"{r.tokens_per_s:,.0f} tok/s  {_duration(r.wall_s)} elapsed  {_duration(r.eta_s)} left")

    def update(self, r) -> None:
        if r.val_loss is not None:
            self.val = r.val_loss
        if r.event == "nan":
            return
        every = max(r.total_steps // 20, 1)
        notable = r.val_loss is not None or r.event is not None
        if self.tty:
            now = time.monotonic()
            if notable or now - self._shown >= 0.1:
                self._rewrite(self.line(r))
                self._shown = now
        elif notable or r.step % every == 0:
            print(self.line(r), file=self.stream, flush=True)
        if r.sample:
            self._print_sample(r)

    def _rewrite(self, text: str) -> None:
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def _print_sample(self, r) -> None:
        if self.tty:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
        text = r.sample.strip("\n")[:300].replace("\n", "\n    ")
        print(f"  sample at step {r.step}:\n    {text}", file=self.stream, flush=True)

    def finish(self) -> None:
        if self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    h, m = s // 3600, s % 3600 // 60
    return f"{h}h{m:02d}m" if h else f"{m}m{s % 60:02d}s"
