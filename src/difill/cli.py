"""The ``difill`` command: serve, fill, serve-http, build-native, export-gguf, corpus, tokenizer, train, ship, eval, bench.

Argument parsing only: each command's work lives in its own package and is imported when the
command runs, so ``difill fill --remote`` never loads torch.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from difill import __version__
from difill.engine.names import ENGINES  # a leaf: the registry, nothing else loaded

# Never reach for the hub: difill only reads local files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


# Each command's handler imports its work when the command runs, not when `difill` starts (so
# `difill fill --remote` never loads torch), with an import statement, so that the dependency
# shows to a reader and to tests/test_imports.py.


def run_serve(args: argparse.Namespace) -> int:
    from difill.server.server import run_server

    return run_server(args)


def run_fill(args: argparse.Namespace) -> int:
    from difill.server.fill_command import main

    return main(args)


def run_serve_http(args: argparse.Namespace) -> int:
    from difill.server.serve_http import run_http_server

    return run_http_server(args)


def run_build_native(args: argparse.Namespace) -> int:
    from difill.engine.native.commands import build

    return build(args)


def run_export_gguf(args: argparse.Namespace) -> int:
    from difill.engine.native.commands import export

    return export(args)


# The lab's commands: lab/ sits beside src/ in a clone of the repository and is not in the wheel
# (it trains, evaluates and benchmarks the model; users run the server).  Under `pip install -e .`
# this file is src/difill/cli.py, so the clone is two folders up.
CHECKOUT = Path(__file__).resolve().parents[2]


def lab_command(command: str, module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """The handler of ``difill <command>``: ``lab.<module>.<function>``, found in the clone."""

    def run(args: argparse.Namespace) -> int:
        if not (CHECKOUT / "lab" / "__init__.py").is_file():
            raise SystemExit(
                f"difill {command} needs the lab, which the installed package leaves out: run it in a "
                "clone of the difill repository after `pip install -e .` (docs/install.md)"
            )
        if str(CHECKOUT) not in sys.path:
            sys.path.insert(0, str(CHECKOUT))  # this clone's lab, before any other package named lab
        return getattr(importlib.import_module(f"lab.{module}"), function)(args)

    return run


Argument = tuple[tuple[str, ...], dict[str, Any]]


def arg(*flags: str, **options: Any) -> Argument:
    """One argument, as ``add_argument`` takes it."""
    return flags, options


class Command:
    """One ``difill`` subcommand: its one-line help in ``difill -h``, the handler that runs it, and
    its arguments in the order ``-h`` lists them."""

    def __init__(
        self, name: str, help: str, handler: Callable[[argparse.Namespace], int], *arguments: Argument
    ) -> None:
        self.name, self.help, self.handler, self.arguments = name, help, handler, arguments


# Which model, on which device: serve, fill and serve-http take these.
MODEL_ARGS = (
    arg("--model", help="model directory (default: the model shipped with difill)"),
    # The same values as the `device` setting (README, Settings).
    arg("--device", default="auto", help="auto (CUDA when present, else CPU), cpu, cuda, cuda:N, mps"),
)
# The same values as the `engine`, `ggufPath` and `llamacppWorker` settings (docs/llamacpp.md).
ENGINE_ARGS = (
    arg(
        "--engine",
        default="auto",
        choices=ENGINES,
        help="auto: llama.cpp where --gguf names a GGUF, else torch (docs/llamacpp.md); "
        "mlx: mlx-vlm, pip install difill[mlx] (docs/mlx.md)",
    ),
    arg("--gguf", help="the model's GGUF for --engine llamacpp (the shipped model's is exported)"),
    arg("--llamacpp-worker", help="the difill-llama-worker binary (default: the one built)"),
    arg("--llamacpp-threads", type=int, help="llama.cpp threads (default: half the cores)"),
    arg("--llamacpp-gpu-layers", type=int, help="layers llama.cpp offloads to a GPU (default 0)"),
)

COMMANDS = (
    Command(
        "serve",
        "run the language server (stdio unless --tcp)",
        run_serve,
        *MODEL_ARGS,
        *ENGINE_ARGS,
        arg("--tcp", action="store_true", help="listen on TCP instead of stdio"),
        arg(
            "--host",
            default="127.0.0.1",
            help="address to listen on with --tcp (loopback only, unless --allow-remote)",
        ),
        arg("--port", type=int, default=2087, help="port to listen on with --tcp"),
        arg(
            "--allow-remote",
            action="store_true",
            help="let --tcp listen on a non-loopback address (LSP has no authentication)",
        ),
        arg("--log-file", help="also write the server log to this file"),
        arg("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR"),
    ),
    Command(
        "fill",
        "print the suggestion an editor would show at PATH:LINE:COL",
        run_fill,
        arg("location", help="PATH:LINE:COL (1-based), or PATH with --holes"),
        *MODEL_ARGS,
        *ENGINE_ARGS,
        arg(
            "--json",
            action="store_true",
            help="print text, steps, ms, the model's raw text, candidates and stats as JSON",
        ),
        arg(
            "--raw",
            action="store_true",
            help="print the bare text (the default when stdout is not a terminal): for scripts",
        ),
        arg("--holes", action="store_true", help="fill every hole marker in the file"),
        arg(
            "--typing",
            action="store_true",
            help="what ghost text while typing shows (the ghost-text cut applies); "
            "default: an explicitly requested suggestion",
        ),
        arg("--marker", default="<|hole|>", help="the text that marks a hole (with --holes)"),
        arg("--max-tokens", type=int, help="longest suggestion in tokens (the server's maxTokens, 32)"),
        arg("--steps", type=int, default=12, help="denoising step cap"),
        arg("--remote", metavar="URL", help="fill on a difill serve-http or OpenAI-compatible server"),
        arg(
            "--remote-canvas",
            choices=("auto", "seeded", "plain"),
            default="auto",
            help="a vLLM remote: seeded canvas (vLLM 0.32 or later, released; difill is tested "
            "against 0.33.0's rules), plain chat path, or auto (seeded, else plain)",
        ),
    ),
    Command(
        "serve-http",
        "serve the model over HTTP (/v1/completions, /v1/fill, /health)",
        run_serve_http,
        *MODEL_ARGS,
        arg("--host", default="127.0.0.1", help="other than loopback only with DIFILL_API_KEY set"),
        arg("--port", type=int, default=8765, help="0 picks a free port"),
        arg("--max-concurrent", type=int, default=32, help="fills run at once; more wait"),
        arg("--batch-window-ms", type=float, default=5.0, help="wait to batch decoder passes"),
        arg(
            "--header-timeout",
            type=float,
            default=10.0,
            help="seconds a client has for a request's headers (slow clients are cut off)",
        ),
        arg(
            "--body-timeout",
            type=float,
            default=30.0,
            help="seconds a client has for a request's body (then 408)",
        ),
        arg("--tls-cert", help="serve HTTPS with this certificate (PEM)"),
        arg("--tls-key", help="the certificate's private key (PEM)"),
        arg("--log-level", default="info", help="debug, info, warning or error"),
    ),
    Command(
        "build-native",
        "build the llama.cpp worker (--engine llamacpp; docs/llamacpp.md)",
        run_build_native,
        arg(
            "--source",
            help="a llama.cpp tree (or .tar.xz) with DiffusionGemma, PR #24423 "
            "(default: $DIFILL_LLAMA_SOURCE, else the tarball in third_party/llama.cpp/ of a checkout)",
        ),
        arg("--cuda", action="store_true", help="with CUDA (-DGGML_CUDA=ON; needs the CUDA toolkit)"),
        arg("--metal", action="store_true", help="with Metal (-DGGML_METAL=ON; macOS)"),
        arg("--portable", action="store_true", help="no -march=native: a binary for other CPUs"),
        arg("--jobs", type=int, help="parallel compile jobs (default: every core)"),
        arg(
            "--no-patches",
            action="store_true",
            help="build the tree as it is, without difill's patches (engine/native/patches/)",
        ),
    ),
    Command(
        "export-gguf",
        "write a DiffusionGemma checkpoint as a GGUF for llama.cpp",
        run_export_gguf,
        arg("model_dir", help="checkpoint directory (config.json, model.safetensors, tokenizer.json)"),
        arg("out", help="the .gguf to write"),
        arg("--type", default="f32", choices=("f32", "f16", "q8_0"), help="weight type (norms stay f32)"),
    ),
    Command(
        "corpus",
        "build the training corpus: the stdlib and the pinned permissive packages",
        lab_command("corpus", "commands", "corpus"),
        arg("--out", default="data/corpus", help="where train.jsonl, heldout.jsonl and manifest.json go"),
        arg("--cache", default="data/archives", help="where the fetched package archives are kept"),
    ),
    Command(
        "tokenizer",
        "train the byte-level BPE tokenizer on the corpus",
        lab_command("tokenizer", "commands", "tokenizer"),
        arg("--corpus", default="data/corpus", help="the corpus whose train.jsonl it learns from"),
        arg("--out", default="data/tokenizer", help="where the tokenizer files go"),
        arg("--vocab-size", type=int, default=8192, help="tokens in the vocabulary, special ones included"),
    ),
    Command(
        "train",
        "train the default model (or the AR baseline)",
        lab_command("train", "commands", "train_model"),
        arg(
            "--arch",
            choices=["diffusion", "ar"],
            default="diffusion",
            help="the diffusion model or the AR baseline",
        ),
        arg(
            "--out",
            default="runs/diffusion",
            help="run directory: latest/ (the checkpoint) and train_log.jsonl",
        ),
        arg("--corpus", default="data/corpus", help="the corpus to train on (difill corpus)"),
        arg("--tokenizer", default="data/tokenizer", help="the tokenizer directory (difill tokenizer)"),
        arg("--init", help="resume from a model dir, or 'shipped' for the packaged model"),
        arg("--minutes", type=float, default=90, help="wall-clock cap of this run"),
        arg("--cpu-hours", type=float, help="CPU budget of this run; the lr decays (cosine) over it"),
        arg("--threads", type=int, default=2, help="torch threads (this machine has 2 cores)"),
        arg("--seed", type=int, default=0, help="seeds the initial weights, batches and noise"),
        arg("--lr", type=float, default=2e-3, help="peak learning rate"),
        arg("--warmup-steps", type=int, default=200, help="linear lr warm-up over this run's first steps"),
        arg("--ema-decay", type=float, default=0.998, help="decay of the weight average saved (short runs: lower)"),
        arg(
            "--canvas-share",
            type=float,
            default=1.0,
            help="share of canvas (diffusion) steps; the rest are packed causal-LM steps",
        ),
        arg("--canvas-share-end", type=float, help="canvas share at the end of the run (linear ramp)"),
        arg(
            "--draft-share",
            type=float,
            default=0.0,
            help="share of one-hole canvas examples whose hole starts from a draft (prompt lookup on the "
            "document, else the true middle spoiled) instead of noise, as the engine's draft-seeded rows",
        ),
        arg("--hidden-size", type=int, default=192, help="model width when training from scratch"),
        arg("--num-layers", type=int, default=4, help="model depth when training from scratch"),
        arg("--save-every-minutes", type=float, default=10.0, help="checkpoint interval"),
        arg("--batch-size", type=int, default=16, help="rows per step (canvas examples or packed windows)"),
        arg("--device", default="cpu", help="cpu, or cuda for the GPU recipe (lab/scripts/gpu_recipe.sh)"),
        arg("--bf16", action="store_true", help="bf16 autocast (GPUs; emulated and slow on this CPU)"),
    ),
    Command(
        "ship",
        "copy a trained model into the package as the default model",
        lab_command("ship", "commands", "ship"),
        arg("source", help="checkpoint dir, e.g. runs/diffusion/latest"),
        arg("--corpus", default="data/corpus", help="where the corpus manifest is"),
        arg(
            "--min-token-prob",
            type=float,
            help="the ghost-text cut chosen for these weights (lab/scripts/tune_truncation.py); "
            "default: the source's own, else the shipped model's",
        ),
    ),
    Command(
        "eval",
        "held-out quality of what the editor shows: the model and the AR baseline "
        "through the server's suggestion path and filters",
        lab_command("eval", "quality", "main"),
        arg("--model", help="diffusion model dir (default: shipped)"),
        arg("--ar-model", help="AR baseline dir (default: benchmarks/ar-baseline, else runs/ar/latest)"),
        arg("--no-ar", action="store_true", help="evaluate the diffusion model alone"),
        arg("--corpus", default="data/corpus", help="the corpus whose held-out split gives the cases"),
        arg("--cases", type=int, default=200, help="cases per hole shape"),
        arg("--seed", type=int, default=1234, help="which held-out cases (fixed, never tuned)"),
        arg("--typing-files", type=int, default=6, help="held-out files for the typing replay (0: none)"),
        arg("--typing-lines", type=int, default=4, help="last lines of each file that are typed"),
        arg(
            "--workspace-cases",
            type=int,
            default=0,
            help="repository-level cases per shape, from packages not in the corpus, each package the "
            "workspace (--workspace-packages): "
            "retrieval alone, the model alone and draft-seeded canvases side by side (0: none)",
        ),
        arg(
            "--workspace-typing-files",
            type=int,
            default=0,
            help="files for the typing replay inside files, suffix present, for the three rows (0: none)",
        ),
        arg(
            "--workspace-packages",
            help="the pinned packages (not in the corpus) whose files give the workspace cases "
            "(default: lab/training/workspace_packages.txt)",
        ),
        arg("--cache", default="data/archives", help="where the fetched package archives are kept"),
        arg("--json", action="store_true", help="print the full report as JSON"),
        arg(
            "--revise",
            action="store_true",
            help="experiment: completions re-decide committed tokens every step (as edits do)",
        ),
        arg(
            "--min-token-prob",
            type=float,
            help="serve both models with this minTokenProb setting instead of the server's default",
        ),
        arg(
            "--context-drafts",
            choices=("auto", "show", "seed", "off"),
            default="auto",
            help="serve with this contextDrafts setting (off: the model alone, as before drafts existed)",
        ),
        arg(
            "--snippet-tokens",
            type=int,
            help="serve with this snippetTokens setting (default: the server's): the budget of workspace "
            "snippets read before the prefix in the workspace rows (0: none)",
        ),
        arg(
            "--filler",
            choices=("eos", "pad", "none"),
            help="experiment: end middles as a checkpoint without <|fill|> does (engine/vocab.py)",
        ),
        arg("--record", action="store_true", help="append the result to the model's training_state.json"),
        arg(
            "--next-edit",
            action="store_true",
            help="instead: next-edit suggestions through `difill serve` on cases mined from git history "
            "(drafts alone, the model alone, as served: docs/next_edit.md)",
        ),
        arg(
            "--next-edit-cases",
            help="the mined cases, files joined by commas (default: benchmarks/next_edit/cases.jsonl)",
        ),
        arg(
            "--next-edit-rows",
            help="the served rows to run, of drafts,model,on (default: all three; the copy rule always runs)",
        ),
    ),
    Command(
        "bench",
        "latency benchmark: diffusion vs AR, engine and server",
        lab_command("bench", "bench", "main"),
        arg("--model", help="diffusion model dir (default: shipped)"),
        arg("--ar-model", help="AR baseline dir (default: benchmarks/ar-baseline, else runs/ar/latest)"),
        arg("--quick", action="store_true", help="a small run that finishes in under a minute"),
        arg("--json", action="store_true", help="print the full report as JSON (no plot)"),
        arg(
            "--typing",
            type=int,
            metavar="N",
            help="only the typing replay: 3 lines typed inside each of N held-out files at 4, 6 and 8 "
            "characters a second with editor-like cancellation, and with every answer waited for",
        ),
        arg(
            "--typing-repos",
            metavar="NAME=GIT_DIR@COMMIT,...",
            help="with --typing: type into these projects' Python files (read from git at the commit, "
            "as `python -m lab.fresh_cursor` reads them) instead of the held-out corpus",
        ),
        arg(
            "--server-python",
            help="the Python that runs `difill serve` for --typing (default: this one): another "
            "checkout's venv gives a before/after",
        ),
        arg(
            "--plot",
            help="where the plot goes, its figures beside it as JSON "
            "(default: docs/bench.png; with --quick runs/bench-quick.png, so CI leaves docs/ alone)",
        ),
        arg(
            "--engines",
            type=int,
            metavar="N",
            help="torch and llama.cpp side by side: one denoising pass at C=16/32/48, then the "
            "typing replay through `difill serve --engine` on N files (0: passes only)",
        ),
        arg(
            "--engine",
            choices=ENGINES,
            help="the server's --engine for --typing (default: its own choice)",
        ),
        arg("--gguf", help="with --engines: the GGUF of the llama.cpp passes (default: the shipped F32)"),
        arg(
            "--profile",
            action="store_true",
            help="where a fill's and a keystroke's time goes, part by part (in process and through "
            "the server), passes needed by middle length, and one step at C=16",
        ),
        arg(
            "--editor",
            action="store_true",
            help="only the editor's case: a warm prefix (the keystroke before cached) beside a fresh "
            "file, diffusion with and without the canvas cache and the AR baseline, interleaved, "
            "and one pass's cost by slots open (lab/bench_editor.py)",
        ),
        arg(
            "--team",
            action="store_true",
            help="the team path alone: round trips and bytes per keystroke through serve-http "
            "and a fake vLLM (seeded canvas and plain), and a network latency model",
        ),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="difill", description=__doc__)
    parser.add_argument("--version", action="version", version=f"difill {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, help="run `difill <command> -h` for its options"
    )
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help)
        for flags, options in command.arguments:
            p.add_argument(*flags, **options)
        p.set_defaults(func=command.handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


# Commands that end without the interpreter's teardown (0.3 s after torch, a fifth of a fill), as
# they leave nothing it would save; the lab's commands write files and keep it.
EXIT_AT_ONCE = ("fill",)


def run() -> None:
    """The `difill` command (pyproject.toml's script, __main__.py): ``main``, then the exit."""
    argv = sys.argv[1:]
    try:
        code = main(argv)
        sys.stdout.flush()
    except BrokenPipeError:  # `difill fill ... | head` closed the pipe: no traceback (Python's advice)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor one at exit's flush
        code = 1
    if argv[:1] and argv[0] in EXIT_AT_ONCE:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
