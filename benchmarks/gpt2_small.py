"""A GPT-2-small-shaped model on this CPU (issue 24; docs/figures.md#gpt-2-small: open, sample, draw its 144-head
grid, and what the Weight pane, the head timeline and the heatmaps cost on it).

GPT-2 small's shape (12 layers × 12 heads, d_model 768, context 1024, a 50,257-token vocabulary; 124 M
parameters) with random weights: transformers builds it and `save_pretrained` writes it, with a byte-level
BPE trained here on the bundled plays and padded with unused special tokens to 50,257, since nothing may be
downloaded. Then, each as the app does it:

    import     File → Open Hugging Face model…: the import in its child process, each stage's time
    open       the run's model at step 0 built from its checkpoint (what opening the run loads)
    sample     generate_text: tokens per second of a continuation after a prompt
    first heatmaps  RunAnalysis opening the run and computing the prompt's attention (weights, model, maps)
    attention  every layer's and head's attention for a prompt (engine/analysis/attention.py), two lengths,
               and a 1024-token prompt, which is cut to what ATTENTION_BYTES allows
    grid       the Heatmaps pane's 144-tile mosaic (HeatmapGrid.set_stack) drawn offscreen
    G first    the Weight pane's first answer (questions.CoefficientAt): G of blocks.11.W_Q by autograd (the
               step's one backward), then W_E's, pooled and as its prompt tokens' rows (the same backward)
    split      the route classes of blocks.11.W_Q (2 classes) and blocks.5.W_Q (26), and W_E's refusal
    timeline   the head timeline a slice at a time (TimelineScorer): slices, the longest, the whole
    --layer L  every weight of layer L split (the cost of one interval of the whole model's route shares is
               about the sum over the 12 layers); off by default: minutes

and the process's resident memory after each (VmRSS) and at its peak (VmHWM). Times are medians of --reps
where repeated; all but the import run on one torch thread, as the app's analysis process does.

With `--against transformers` it compares instead, on the same folder and one torch thread, each of ours
against what a researcher would run with Hugging Face `transformers`, alternating ours and theirs --reps times,
and prints a line per phase, starting with its name and ending with the ratio of the medians (ours / theirs):

    open       a fresh process until the model is ready: our run of the folder (Run(...).build_model(), what
               the app loads on opening it) against GPT2LMHeadModel.from_pretrained(folder); interpreter start
               and imports included on both sides. `import` is the same for the import itself (import_hf and
               then the run opened, File → Open Hugging Face model…), done once per folder
    sample     32 greedy tokens after a 16-token prompt: generate_text against generate(do_sample=False)
    attention  every head on a 256-token prompt: engine.analysis.attention.attention (the Heatmaps pane's
               answer) against the forward with output_attentions=True (eager attention, which returns them)
    G          G of blocks.11.W_Q on the run's probe batch (1 × 1024 tokens), the Weight pane's first answer for
               a step not asked before (CoefficientStore.first: its weights read, one backward) against the
               forward and backward of the same tokens with labels

    python benchmarks/gpt2_small.py [--reps 3] [--tokens 32] [--keep DIR] [--layer L]
    python benchmarks/gpt2_small.py --against transformers [--folder HF_DIR] [--reps 3] [--keep DIR]
    python benchmarks/gpt2_small.py --scale [splits,timeline,routes] [--folder HF_DIR] [--keep DIR]

`transformers` is a test extra, not a dependency of the app: without it `--against transformers` says so in one
line and compares nothing, and a folder must be named with --folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GPT2_VOCAB = 50_257


def memory() -> str:
    """Resident memory now and at the peak, from /proc (Linux)."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return f"RSS {fields.get('VmRSS', '?')}, peak {fields.get('VmHWM', '?')}"


def timed(fn, reps: int = 1):
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def the_folder(root: Path, args) -> Path:
    """The folder named by --folder, or one built under root the first time (kept with --keep)."""
    if args.folder:
        folder = Path(args.folder)
        if not (folder / "config.json").is_file():
            raise SystemExit(f"--folder {folder}: no config.json there (a Hugging Face GPT-2 folder is expected)")
        return folder
    folder = root / "gpt2-small"
    if not (folder / "config.json").exists():
        t, _ = timed(lambda: build_folder(folder))
        print(f"built a random GPT-2 small folder in {t:.1f} s (not part of the figures); {memory()}", flush=True)
    return folder


def build_folder(folder: Path) -> None:
    """A random GPT-2 small saved by transformers, with a 50,257-token byte-level BPE beside it."""
    import json

    import torch

    try:
        import transformers
    except ImportError:
        raise SystemExit("building a GPT-2-small-shaped folder needs transformers (pip install -e '.[test]'); "
                         "or name one with --folder") from None

    from engine.text.bpe import END_OF_TEXT, BPETokenizer
    from engine.text.corpus import shakespeare_text

    tok = BPETokenizer.fit(shakespeare_text(), GPT2_VOCAB - 1)
    unused = [f"<|unused{i}|>" for i in range(GPT2_VOCAB - 1 - tok.vocab_size)]
    tok._tok.add_special_tokens([*unused, END_OF_TEXT])  # padding to GPT-2's size; no text encodes to them
    tok = BPETokenizer(tok._tok)
    assert tok.vocab_size == GPT2_VOCAB, tok.vocab_size
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(transformers.GPT2Config()).save_pretrained(folder)
    (folder / "tokenizer.json").write_text(json.dumps(tok.to_dict()), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each timed phase (median printed)")
    ap.add_argument("--tokens", type=int, default=32, help="tokens sampled in the sample phase")
    ap.add_argument("--keep", metavar="DIR", help="build the folder and run here and keep them (default: a temp dir)")
    ap.add_argument("--layer", type=int, help="also split every weight of this layer (minutes)")
    ap.add_argument("--against", choices=["transformers"], help="compare with transformers instead, phase by phase")
    ap.add_argument("--folder", metavar="HF_DIR", help="a GPT-2-small-shaped folder to use instead of building one")
    ap.add_argument("--scale", nargs="?", const="splits,timeline,routes", metavar="PARTS",
                    help="instead: the analysis at scale, all or the PARTS named (splits, timeline: the head "
                    "timeline in backward-equivalents, routes: the whole model's route shares over one interval); "
                    "tens of minutes")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gpt2-small-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        (against_transformers if args.against else at_scale if args.scale else run)(root, args)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def run(root: Path, args) -> None:
    import torch

    from engine.analysis.attention import attention
    from engine.analysis.run_analysis import RunAnalysis
    from engine.configs.sizes import human_count, parameter_count
    from engine.rundir.runs import Run
    from engine.training.trainer import generate_text

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores; {memory()}")
    folder, run_dir = the_folder(root, args), root / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    t, done = timed(lambda: import_in_child(folder, run_dir))
    m = done.config.model
    print(f"import   {t:6.2f} s  in its child process (the window polls it): {m.n_layer}×{m.n_head}×{m.d_model}, "
          f"context {m.n_ctx}, {m.vocab_size:,} tokens, {human_count(parameter_count(m))} parameters; {memory()}")
    # the app reads weights, samples and computes attention with one torch thread (its analysis process,
    # engine/analysis/door.py; generate_text): on this shared machine two threads made a 12×768 by
    # 768×768 product 36 ms instead of 0.6 ms
    torch.set_num_threads(1)
    run_ = Run(run_dir)
    t, model = timed(lambda: run_.build_model(0).eval(), args.reps)
    print(f"open     {t:6.2f} s  the model built from the step-0 checkpoint; {memory()}")
    prompt = "ROMEO: But soft, what light through yonder window breaks?"
    t, text = timed(lambda: generate_text(model, run_.tokenizer, prompt, args.tokens, 0.8, seed=1), args.reps)
    print(f"sample   {t:6.2f} s  {args.tokens} tokens: {args.tokens / t:.1f} tokens/s; {memory()}")
    del model
    t, _ = timed(lambda: RunAnalysis(run_dir).attention(0, prompt))
    print(f"first heatmaps {t:5.2f} s  the analysis opening the run: weights loaded, model built, attention "
          f"for the prompt; {memory()}")
    analysis = RunAnalysis(run_dir)
    model = analysis.model(0)
    long_prompt = " ".join(["My lord, the king is come to Westminster."] * 8)
    for p in (prompt, long_prompt):
        n = len(run_.tokenizer.encode(p))
        t, result = timed(lambda p=p: attention(model, run_.tokenizer, p, 0), args.reps)
        print(f"attention {t:5.2f} s  {m.n_layer * m.n_head} heads on a {n}-token prompt; {memory()}")
    draw_grid(result.maps, args.reps)
    capped_prompt = " ".join(["My lord, the king is come to Westminster."] * 120)
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM from here
    t, capped = timed(lambda: attention(model, run_.tokenizer, capped_prompt, 0))
    print(f"attention {t:5.2f} s  a {len(run_.tokenizer.encode(capped_prompt))}-token prompt kept "
          f"{len(capped.maps.tokens)} tokens: {capped.note!r}; {memory()}")
    del model, result, capped
    coefficients(run_dir, prompt, args)
    head_timeline(run_dir)


# ---- --scale ------------------------------------------------------------------------------------------------

def at_scale(root: Path, args) -> None:
    """Every weight's split within its memory budget, the head timeline of a saved step in backward-equivalents
    and the whole model's route shares over one interval, on the imported run (made once), one torch thread."""
    import torch

    parts = args.scale.split(",")
    if unknown := set(parts) - {"splits", "timeline", "routes"}:
        raise SystemExit(f"--scale: unknown part(s) {', '.join(sorted(unknown))}; the parts are splits, timeline, "
                         "routes")
    torch.set_num_threads(1)
    folder = the_folder(root, args)
    run_dir = root / "run"
    if not (run_dir / "config.toml").exists():
        import_in_child(folder, run_dir)
    print(f"torch {torch.__version__}, one thread, load {os.getloadavg()[0]:.1f}; {memory()}", flush=True)
    if "splits" in parts:
        splits(run_dir)
    if "timeline" in parts:
        timeline_in_backward_equivalents(run_dir)
    if "routes" in parts:
        route_shares_interval(run_dir)


def reset_peak() -> None:
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM from here


def splits(run_dir: Path) -> None:
    import engine.coefficients as co
    from engine.coefficients.cache import CoefficientStore
    from engine.forms import derive, evaluate
    from engine.rundir.runs import Run

    run = Run(run_dir)
    cfg, x = run.config.model, run.probe().x
    forms = derive(cfg)
    need = {w: co.module_split_bytes(cfg, w, len(evaluate.class_names(forms, w)), *x.shape)
            for w in CoefficientStore(run, disk=False).weight_names()}
    top = max(need, key=need.get)
    print(f"splits   every weight within {co.SPLIT_BYTES / 2**30:.0f} GB: the largest estimate is {top}'s, "
          f"{need[top] / 2**30:.2f} GB; {sum(n <= co.SPLIT_BYTES for n in need.values())} of {len(need)} weights "
          "under the budget", flush=True)
    for weight in ("blocks.11.W_Q", "blocks.0.W_Q", "blocks.0.W_in", "W_E"):
        store = CoefficientStore(run, disk=False)
        store.first(weight, 0)  # G and its backward, shared by the step's weights, before the split is timed
        reset_peak()
        t, rec = timed(lambda w=weight: store.record(w, 0))
        print(f"split    {t:6.1f} s  {weight}: {len(rec.classes)} classes, agreement {rec.agreement:.1e}"
              f"{' ' + rec.unsplit if rec.unsplit else ''}; {memory()}", flush=True)


def backward_pass(model, x, y) -> float:
    """Seconds of one forward and backward of the model on the probe: the backward-equivalent."""
    import torch

    t0 = time.perf_counter()
    model.zero_grad(set_to_none=True)
    with torch.enable_grad():
        model(x, y)[1].backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - t0


def timeline_in_backward_equivalents(run_dir: Path, every: int = 8) -> None:
    """The head timeline of the run's step 0 scored afresh, a piece at a time, with one forward and backward of
    the probe before, after every `every` pieces and after (not counted in the timeline's time): their median is
    the unit, so that a load that changes during the minutes of scoring changes both alike."""
    import torch

    from engine.analysis.head_timeline import CACHE_DIR, TimelineScorer
    from engine.rundir.runs import Run

    run = Run(run_dir)
    probe = run.probe()
    x, y = torch.as_tensor(probe.x), torch.as_tensor(probe.y)
    model = run.build_model(0)
    units = [backward_pass(model, x, y)]
    shutil.rmtree(run_dir / CACHE_DIR, ignore_errors=True)
    reset_peak()
    scorer, pieces, total = TimelineScorer(run_dir), 0, 0.0
    while True:
        t, got = timed(lambda: scorer.advance(slice_s=0.0))
        total, pieces = total + t, pieces + 1
        if got.scoring is None:
            break
        if pieces % every == 0:
            units.append(backward_pass(model, x, y))
    line = memory()
    units.append(backward_pass(model, x, y))
    unit = statistics.median(units)
    print(f"timeline {total:6.1f} s  one saved step, {pieces} pieces: {total / unit:.1f} backward-equivalents (one "
          f"forward and backward of the probe {tuple(x.shape)}: median {unit:.1f} s of {len(units)}, "
          f"{min(units):.1f}-{max(units):.1f} s); {got.ablation}; {line}", flush=True)


def route_shares_interval(run_dir: Path) -> None:
    """The whole model's route shares over one interval: a second saved step is written beside step 0 (the
    import's weights moved a little), then RunAnalysis.route_shares(None) is timed."""
    import torch

    from engine.analysis.run_analysis import RunAnalysis
    from engine.rundir.runs import Run, RunWriter

    run = Run(run_dir)
    if len(run.saved_steps()) < 2:
        gen = torch.Generator().manual_seed(0)
        moved = {k: v + 1e-3 * torch.randn(v.shape, generator=gen) for k, v in run.load_weights(0).items()}
        writer = RunWriter(run.path, run.config)
        try:
            writer.save_snapshot(5, moved)
        finally:
            writer.close()
    probe = run.probe()
    x, y = torch.as_tensor(probe.x), torch.as_tensor(probe.y)
    before = backward_pass(run.build_model(0), x, y)
    reset_peak()
    t, shares = timed(lambda: RunAnalysis(run_dir).route_shares(None))
    line = memory()
    unit = (before + backward_pass(run.build_model(0), x, y)) / 2
    top = ", ".join(f"{c} {v:.2f}" for c, v in shares.ranking()[:3])
    print(f"routes   {t:6.1f} s  the whole model's route shares over one interval, every weight: "
          f"{len(shares.classes)} classes, {t / unit:.1f} backward-equivalents (one: {unit:.1f} s); the largest "
          f"summed shares {top}; {line}", flush=True)


# ---- --against transformers -------------------------------------------------------------------------------

OURS_OPEN = """
import torch; torch.set_num_threads(1)
import sys
from engine.rundir.runs import Run
Run(sys.argv[1]).build_model()
"""
OURS_IMPORT = """
import torch; torch.set_num_threads(1)
import sys
from engine.importers.hugging_face import import_hf
from engine.rundir.runs import Run
import_hf(sys.argv[2], sys.argv[1])
Run(sys.argv[1]).build_model()
"""
THEIRS_OPEN = """
import torch; torch.set_num_threads(1)
import sys, transformers
transformers.GPT2LMHeadModel.from_pretrained(sys.argv[2])
"""


def against_transformers(root: Path, args) -> None:
    """Each phase ours and theirs alternating --reps times, one torch thread (module docstring)."""
    import torch

    from engine.rundir.runs import Run

    try:
        import transformers
    except ImportError:
        print("transformers is not installed (a test extra, not a dependency of the app: pip install -e '.[test]'): "
              "no comparison")
        return

    torch.set_num_threads(1)
    folder = the_folder(root, args)
    run_dir = root / "run"
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, one thread, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; {args.reps} alternations, medians; {folder}")

    def fresh(code: str, target: Path):
        def go():
            shutil.rmtree(target, ignore_errors=True) if code is OURS_IMPORT else None
            subprocess.run([sys.executable, "-c", code, str(target), str(folder)], check=True, cwd=ROOT,
                           env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return go

    compare("import", "import_hf and the run opened, a fresh process", "from_pretrained, a fresh process",
            fresh(OURS_IMPORT, run_dir), fresh(THEIRS_OPEN, run_dir), args.reps)
    compare("open", "the run's model (Run.build_model), a fresh process", "from_pretrained, a fresh process",
            fresh(OURS_OPEN, run_dir), fresh(THEIRS_OPEN, run_dir), args.reps)
    run_, hf = Run(run_dir), transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager")
    model, hf = run_.build_model(), hf.eval()
    probe = run_.probe()
    sample(run_, model, hf, probe, args)
    attended(run_, model, hf, probe, args)
    backprop(run_, hf, probe, args)
    print(f"this process, both models: {memory()}")


def compare(name: str, ours_what: str, theirs_what: str, ours, theirs, reps: int) -> tuple:
    """Run ours and theirs alternately `reps` times; print the phase's line; their last results."""
    times: dict[str, list[float]] = {"ours": [], "theirs": []}
    got = {}
    for _ in range(reps):
        for side, fn in (("ours", ours), ("theirs", theirs)):
            t0 = time.perf_counter()
            got[side] = fn()
            times[side].append(time.perf_counter() - t0)
    a, b = statistics.median(times["ours"]), statistics.median(times["theirs"])
    print(f"{name:<10} ours {a:7.2f} s ({ours_what}); transformers {b:7.2f} s ({theirs_what}); "
          f"load {os.getloadavg()[0]:.1f}  {a / b:.2f}×", flush=True)
    return got["ours"], got["theirs"]


def sample(run_, model, hf, probe, args) -> None:
    import torch

    from engine.training.trainer import generate_text

    prompt = run_.tokenizer.decode(probe.x[0, :16].tolist())
    ids = torch.tensor([run_.tokenizer.encode(prompt)])
    n = args.tokens

    def theirs():
        with torch.inference_mode():
            out = hf.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
        return run_.tokenizer.decode(out[0, ids.shape[1]:].tolist())

    ours, text = compare("sample", f"generate_text, {n} greedy tokens after {ids.shape[1]}", "generate",
                         lambda: generate_text(model, run_.tokenizer, prompt, n, 0.0), theirs, args.reps)
    assert ours == text, "greedy tokens differ from transformers'"


def attended(run_, model, hf, probe, args) -> None:
    import numpy as np
    import torch

    from engine.analysis.attention import attention

    prompt = run_.tokenizer.decode(np.tile(probe.x[0], 2)[:256].tolist())
    ids = torch.tensor([run_.tokenizer.encode(prompt)])

    def theirs():
        with torch.inference_mode():
            return torch.stack(hf(ids, output_attentions=True).attentions)[:, 0].numpy()

    ours, maps = compare("attention", f"attention(), every head on {ids.shape[1]} tokens",
                         "forward with output_attentions", lambda: attention(model, run_.tokenizer, prompt, 0),
                         theirs, args.reps)
    assert np.allclose(np.nan_to_num(ours.maps.weights), maps, atol=1e-5), "attention differs from transformers'"


def backprop(run_, hf, probe, args) -> None:
    import torch

    from engine.coefficients.cache import CoefficientStore

    x = torch.as_tensor(probe.x)

    def theirs():
        hf.zero_grad(set_to_none=True)
        hf(input_ids=x, labels=x).loss.backward()

    compare("G", f"CoefficientStore.first of blocks.11.W_Q, probe {tuple(x.shape)}", "forward and backward",
            lambda: CoefficientStore(run_, disk=False).first("blocks.11.W_Q", 0), theirs, args.reps)


def import_in_child(folder: Path, run_dir: Path):
    """File → Open Hugging Face model…'s import: its child process, polled as the window polls it."""
    from engine.importers.process import ImportProcess

    job, t0, last = ImportProcess("hf", folder, run_dir), time.perf_counter(), None
    while True:
        for event in job.poll():
            now = time.perf_counter() - t0
            if event[0] == "stage":
                print(f"         {now:6.2f} s  stage {event[1] + 1} of {event[2]}: {event[3]}")
            elif event[0] == "done":
                return event[1]
            else:
                raise SystemExit(f"import failed: {event[1]}")
        time.sleep(0.05)


def coefficients(run_dir: Path, prompt: str, args) -> None:
    """The Weight pane's questions, answered as the analysis process answers them (no disk cache)."""
    from engine.analysis import questions as q
    from engine.analysis.door import Door
    from engine.coefficients import window

    door = Door()
    analysis = door.analysis(str(run_dir))
    analysis.coefficients.disk = False
    run = str(run_dir)

    def ask(weight: str, split: bool = False, rows=None):
        t0 = time.perf_counter()
        answer = q.CoefficientAt(run, weight, 0, True, split, rows).answer(door)
        return time.perf_counter() - t0, answer[2][0]

    t, rec = ask("blocks.11.W_Q")
    print(f"G first  {t:6.2f} s  blocks.11.W_Q: weights read, autograd's backward for every weight of the step "
          f"(pending {rec.pending}); {memory()}")
    t, rec = ask("W_E")
    print(f"G first  {t:6.2f} s  W_E at the same step (the backward reused), drawn as {rec.G.shape}: "
          f"{rec.axes.note}; {memory()}")
    ids = tuple(dict.fromkeys(analysis.tokenizer.encode(prompt)))
    t, rec = ask("W_E", rows=window.Window(ids))
    print(f"G rows   {t:6.2f} s  W_E as the prompt's {len(ids)} token rows: {rec.axes.note}; {memory()}")
    for weight in ("blocks.11.W_Q", "blocks.5.W_Q", "W_E"):
        t, rec = ask(weight, split=True)
        what = f"{len(rec.classes)} route classes, agreement {rec.agreement:.1e}" if rec.classes else rec.unsplit
        print(f"split    {t:6.2f} s  {weight}: {what}; {memory()}")
    if args.layer is not None:
        names = [w for w in analysis.coefficients.weight_names() if w.startswith(f"blocks.{args.layer}.")]
        total = 0.0
        for weight in names:
            t, rec = ask(weight, split=True)
            total += t
            print(f"         {t:6.2f} s  {weight}: {len(rec.classes)} classes{' ' + rec.unsplit if rec.unsplit else ''}")
        print(f"layer {args.layer}  {total:6.1f} s  splitting its {len(names)} weights (one interval of the whole "
              f"model's route shares is about the sum over its layers); {memory()}")


def head_timeline(run_dir: Path) -> None:
    from engine.analysis.head_timeline import TimelineScorer

    scorer, slices, longest, t0 = TimelineScorer(run_dir), 0, 0.0, time.perf_counter()
    while True:
        t, got = timed(scorer.advance)
        slices, longest = slices + 1, max(longest, t)
        if got.scoring is None:
            break
    print(f"timeline {time.perf_counter() - t0:6.1f} s  144 heads at {len(got.steps)} saved step(s) in {slices} "
          f"slices, the longest {longest:.1f} s (questions on screen are answered between them); {memory()}")


def draw_grid(maps, reps: int) -> None:
    from PySide6.QtWidgets import QApplication

    from gui.widgets.heatmap_grid import HeatmapGrid

    app = QApplication.instance() or QApplication([])
    grid = HeatmapGrid(title="attention")
    grid.resize(1600, 1000)
    grid.show()
    labels = list(maps.tokens)

    def draw():
        grid.set_stack(maps.weights, labels, labels)
        grid.repaint()
        app.processEvents()

    draw()  # the plot is built on first use
    t, _ = timed(draw, reps)
    L, H, T, _ = maps.weights.shape
    print(f"grid     {t:6.3f} s  the {L}×{H} mosaic of {T}×{T} tiles set and painted at 1600×1000; {memory()}")


if __name__ == "__main__":
    main()
