"""`gpt-explorer train`: train a model in the terminal, writing a run directory (DESIGN §5, §6).

A new run comes from a preset (default `tiny`) or a config file, with the command line's overrides; if
`--run` names an existing run it is resumed exactly from its latest checkpoint. Progress is one updating
line on a terminal and plain lines otherwise. Ctrl-C stops between steps and saves a checkpoint. Qt is
never imported here (a test checks it).
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
from ..resolve import unresolved


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train", help="train a model in the terminal (no window)",
        description="Train a GPT and write its run directory. With --run pointing at an existing run, "
                    "resume it exactly from its latest checkpoint. Ctrl-C stops and saves a checkpoint.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--preset", metavar="NAME",
                     help="a named experiment: seed-chain, tiny (the default), nanogpt-cpu, baby-gpt")
    src.add_argument("--config", metavar="FILE", help="an experiment TOML file (as written in a run's config.toml)")
    p.add_argument("--corpus", metavar="shakespeare|PATH",
                   help="'shakespeare' (bundled) or a UTF-8 text file; default: the config's corpus")
    p.add_argument("--steps", type=int, metavar="N", help="total optimizer steps (on resume: a new total)")
    p.add_argument("--device", metavar="auto|cpu|cuda", help="where to train; auto picks CUDA, then MPS, then CPU")
    p.add_argument("--seed", type=int, metavar="S", help="random seed (initialisation, batches, dropout)")
    p.add_argument("--run", metavar="DIR",
                   help="run directory; default runs/<preset-or-name>-<timestamp>; an existing run is resumed")
    p.set_defaults(func=run)


def build_config(args: argparse.Namespace):
    """The ExperimentConfig the options describe (a preset or file, then the overrides)."""
    from ..config import ExperimentConfig
    from ..presets import DEFAULT_PRESET, load_preset

    cfg = ExperimentConfig.load(args.config) if args.config else load_preset(args.preset or DEFAULT_PRESET)
    train, data = cfg.train, cfg.data
    if args.corpus is not None:
        corpus = args.corpus if args.corpus == "shakespeare" else str(Path(args.corpus).expanduser().resolve())
        data = dataclasses.replace(data, corpus=corpus)
    overrides = {k: getattr(args, k) for k in ("steps", "device", "seed") if getattr(args, k) is not None}
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
    from ..runs import CONFIG, RunError
    from ..trainer import Trainer

    run_dir = Path(args.run) if args.run else None
    if run_dir is not None and (run_dir / CONFIG).is_file():
        trainer = _resume(args, run_dir)
    else:
        if run_dir is not None and run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
            raise RunError(f"{run_dir} is not a run directory (it has no {CONFIG}) and is not empty; "
                           "choose a new directory or an existing run")
        cfg = build_config(args)
        run_dir = run_dir or default_run_dir(cfg.name)
        trainer = Trainer(cfg, run_dir)
    return _train(trainer, run_dir)


def _resume(args: argparse.Namespace, run_dir: Path):
    from ..runs import Run
    from ..trainer import Trainer

    existing = Run(run_dir).config
    if args.preset or args.config or args.corpus is not None or args.seed is not None:
        wanted = build_config(args)

        def same(c):  # what must not change when a run is resumed
            return (unresolved(c.model),
                    dataclasses.replace(c.train, steps=0, device="auto"), c.data)
        if same(wanted) != same(existing):
            raise UserError(f"{run_dir} is a run made with another config; to resume it pass only "
                            "--run (and --steps or --device if you want)")
    return Trainer.resume(run_dir, steps=args.steps, device=args.device)


def _train(trainer, run_dir: Path) -> int:
    from ..config import human_count, parameter_count
    from ..corpus import corpus_label

    cfg = trainer.cfg
    out = sys.stdout
    if trainer.step >= cfg.train.steps:
        print(f"{run_dir} already finished at step {trainer.step}; pass --steps N (more than "
              f"{trainer.step}) to train it further", file=out)
        return 0
    verb = f"resuming at step {trainer.step}" if trainer.step else "new run"
    print(f"{verb}: {run_dir}", file=out)
    print(f"model {cfg.name}: {human_count(parameter_count(cfg.model))} parameters; corpus "
          f"{corpus_label(cfg.data.corpus)}, {human_count(len(trainer.dataset.train))} training tokens; "
          f"device {trainer.device.type}, {trainer.threads} thread(s)", file=out)
    progress = Progress(out)
    if trainer.step and trainer.writer is not None:  # a resumed run shows its last validation loss
        from ..runs import Run

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


class _StopFlag:
    """Ctrl-C sets a flag read between steps, so stopping never interrupts a step half-way."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def _on_sigint(self, signum, frame):
        self.requested = True

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
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
        return (f"step {r.step}/{r.total_steps}  loss {r.train_loss:.4f}  val {val}  "
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
