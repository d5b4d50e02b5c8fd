"""The ``difill`` command: serve, fill, serve-http, corpus, tokenizer, train, ship, eval, bench."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

# Never reach for the hub: difill only reads local files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def parse_location(spec: str) -> tuple[Path, int | None, int | None]:
    """``PATH[:LINE[:COL]]`` with 1-based line and column, as editors show them."""
    parts = spec.rsplit(":", 2)
    numbers: list[int] = []
    while len(parts) > 1 and parts[-1].isdigit():
        numbers.insert(0, int(parts.pop()))
    path = Path(":".join(parts))
    line = numbers[0] if numbers else None
    col = numbers[1] if len(numbers) > 1 else None
    return path, line, col


def split_at(text: str, line: int, col: int) -> tuple[str, str]:
    """Prefix and suffix around a 1-based (line, column); the column counts characters."""
    lines = text.splitlines(keepends=True) or [""]
    if not 1 <= line <= len(lines) + 1:
        raise SystemExit(f"difill: line {line} is outside the file (1..{len(lines)})")
    offset = sum(len(x) for x in lines[: line - 1])
    current = lines[line - 1] if line <= len(lines) else ""
    content = current.rstrip("\r\n")
    if not 1 <= col <= len(content) + 1:
        raise SystemExit(f"difill: column {col} is outside line {line} (1..{len(content) + 1})")
    offset += col - 1
    return text[:offset], text[offset:]


def cmd_fill(args: argparse.Namespace) -> int:
    from difill.engine.api import BackendError, ModelLoadError
    from difill.engine.backends import make_backend
    from difill.engine.syntax import language_for_path
    from difill.server.config import Settings
    from difill.server.served import ServedModel

    path, line, col = parse_location(args.location)
    try:
        text = path.read_bytes().decode("utf-8")  # as it is: read_text would turn CRLF into LF
    except OSError as err:
        raise SystemExit(f"difill: cannot read {path}: {err.strerror}") from err
    except UnicodeDecodeError as err:
        raise SystemExit(
            f"difill: {path} is not UTF-8 text (byte {err.start}); difill reads UTF-8 files"
        ) from err
    if args.holes and args.marker not in text:  # before the model loads: nothing to fill
        raise SystemExit(f"difill: {path} has no hole marker {args.marker!r}; put one where code should go")
    try:
        engine = make_backend(args.remote, args.model, args.device)
    except (ModelLoadError, BackendError) as err:
        raise SystemExit(f"difill: {err}") from err
    language = language_for_path(str(path))
    served = ServedModel(
        engine, Settings(max_tokens=args.max_tokens or Settings.max_tokens, steps=args.steps)
    )
    if args.holes:
        try:
            holes = served.fill_holes(text, args.marker, language, args.max_tokens)
        except BackendError as err:
            raise SystemExit(f"difill: {err}") from err
        if args.json:
            print(json.dumps({"text": holes.text, "middles": holes.middles, "model_middles": holes.result.middles,
                              "steps": holes.result.stats.steps, "ms": round(holes.ms, 1),
                              "stats": asdict(holes.result.stats)}))  # fmt: skip
        else:
            sys.stdout.write(holes.text)
        return 0
    if line is None:
        raise SystemExit("difill: give a position as PATH:LINE:COL, or --holes")
    prefix, _ = split_at(text, line, col or 1)
    # The server's own suggestion path (shape, settings, pipeline): what an editor would show here.
    try:
        shown = served.suggest(text, len(prefix), path.resolve().as_uri(), language or "plaintext")
    except BackendError as err:
        raise SystemExit(f"difill: {err}") from err
    if args.json:
        result = shown.result
        print(json.dumps({
            "text": shown.text, "steps": result.stats.steps, "ms": round(shown.ms, 1), "model_text": result.text,
            "candidates": [asdict(c) for c in result.candidates], "stats": asdict(result.stats),
        }))  # fmt: skip
    else:
        print(shown.text)
    return 0


def cmd_corpus(args: argparse.Namespace) -> int:
    from difill.engine.training.corpus import build_corpus

    manifest = build_corpus(Path(args.out), Path(args.cache))
    print(f"train: {manifest.train_files} files, {manifest.train_bytes} bytes; "
          f"held-out: {manifest.heldout_files} files, {manifest.heldout_bytes} bytes; "
          f"near-duplicates removed: {manifest.duplicates_removed}")  # fmt: skip
    return 0


def cmd_tokenizer(args: argparse.Namespace) -> int:
    from difill.engine.training.corpus import read_jsonl
    from difill.engine.training.tokenizer import save_tokenizer, train_tokenizer

    docs = read_jsonl(Path(args.corpus) / "train.jsonl")
    tokenizer = train_tokenizer((d["text"] for d in docs), args.vocab_size)
    save_tokenizer(tokenizer, Path(args.out))
    print(f"saved a {len(tokenizer)}-token tokenizer to {args.out}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from difill.engine.training.train import TrainConfig, train

    init = args.init
    if init == "shipped":
        from difill.engine.model import DEFAULT_MODEL_DIR

        init = str(DEFAULT_MODEL_DIR)
    state = train(TrainConfig(
        arch=args.arch, out=args.out, corpus=args.corpus, tokenizer=args.tokenizer, init=init,
        minutes=args.minutes, cpu_hours=args.cpu_hours, threads=args.threads, seed=args.seed, lr=args.lr,
        canvas_share=args.canvas_share, canvas_share_end=args.canvas_share_end,
        hidden_size=args.hidden_size, num_layers=args.num_layers, save_every_minutes=args.save_every_minutes,
        batch_size=args.batch_size, device=args.device, bf16=args.bf16,
    ))  # fmt: skip
    print(
        f"trained to step {state.step}: {state.target_tokens} supervised tokens, {state.cpu_hours:.2f} CPU-hours"
    )
    return 0


def cmd_ship(args: argparse.Namespace) -> int:
    """Copy a trained checkpoint's weights, config and tokenizer into the package."""
    import shutil

    from difill.engine.model import DEFAULT_MODEL_DIR, check_model_dir

    source = Path(args.source)
    check_model_dir(source)
    keep = (
        "*.safetensors",
        "config.json",
        "generation_config.json",
        "tokenizer*.json",
        "training_state.json",
    )
    skip = {"optimizer.safetensors", "ema_fp32.safetensors"}  # resumable state stays out of the wheel
    for old in DEFAULT_MODEL_DIR.iterdir():
        if old.name not in ("__init__.py", "MODEL.md", "corpus_manifest.json") and old.is_file():
            old.unlink()
    copied = []
    for pattern in keep:
        for path in sorted(source.glob(pattern)):
            if path.name not in skip:
                shutil.copy2(path, DEFAULT_MODEL_DIR / path.name)
                copied.append(path.name)
    manifest = Path(args.corpus) / "manifest.json"
    if manifest.exists():
        shutil.copy2(manifest, DEFAULT_MODEL_DIR / "corpus_manifest.json")
    print(f"shipped {', '.join(copied)} to {DEFAULT_MODEL_DIR}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from difill.server.quality import main as eval_main

    return eval_main(args)


def cmd_serve(args: argparse.Namespace) -> int:
    from difill.server.server import run_server

    return run_server(args)


def cmd_serve_http(args: argparse.Namespace) -> int:
    from difill.server.http_server import run_http_server

    return run_http_server(args)


def cmd_bench(args: argparse.Namespace) -> int:
    from difill.server.bench import main as bench_main

    return bench_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="difill", description=__doc__)
    sub = parser.add_subparsers(
        dest="command", required=True, help="run `difill <command> -h` for its options"
    )

    def model_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", help="model directory (default: the model shipped with difill)")
        # The same values as the `device` setting (README, Settings).
        p.add_argument(
            "--device", default="auto", help="auto (CUDA when present, else CPU), cpu, cuda, cuda:N, mps"
        )

    p = sub.add_parser("serve", help="run the language server (stdio unless --tcp)")
    model_args(p)
    p.add_argument("--tcp", action="store_true", help="listen on TCP instead of stdio")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on with --tcp (loopback only, unless --allow-remote)",
    )
    p.add_argument("--port", type=int, default=2087, help="port to listen on with --tcp")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --tcp listen on a non-loopback address (LSP has no authentication)",
    )
    p.add_argument("--log-file", help="also write the server log to this file")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("fill", help="print the suggestion an editor would show at PATH:LINE:COL")
    p.add_argument("location", help="PATH:LINE:COL (1-based), or PATH with --holes")
    model_args(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print text, steps, ms, the model's raw text, candidates and stats as JSON",
    )
    p.add_argument("--holes", action="store_true", help="fill every hole marker in the file")
    p.add_argument("--marker", default="<|hole|>", help="the text that marks a hole (with --holes)")
    p.add_argument("--max-tokens", type=int, help="longest suggestion in tokens (the server's maxTokens, 32)")
    p.add_argument("--steps", type=int, default=12, help="denoising step cap")
    p.add_argument("--remote", metavar="URL", help="fill on a difill serve-http or OpenAI-compatible server")
    p.set_defaults(func=cmd_fill)

    p = sub.add_parser("serve-http", help="serve the model over HTTP (/v1/completions, /v1/fill, /health)")
    model_args(p)
    p.add_argument("--host", default="127.0.0.1", help="other than loopback only with DIFILL_API_KEY set")
    p.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    p.add_argument("--max-concurrent", type=int, default=32, help="fills run at once; more wait")
    p.add_argument("--batch-window-ms", type=float, default=5.0, help="wait to batch decoder passes")
    p.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--tls-key", help="the certificate's private key (PEM)")
    p.add_argument("--log-level", default="info", help="debug, info, warning or error")
    p.set_defaults(func=cmd_serve_http)

    p = sub.add_parser(
        "corpus", help="build the training corpus: the stdlib and the pinned permissive packages"
    )
    p.add_argument(
        "--out", default="data/corpus", help="where train.jsonl, heldout.jsonl and manifest.json go"
    )
    p.add_argument("--cache", default="data/archives", help="where the fetched package archives are kept")
    p.set_defaults(func=cmd_corpus)

    p = sub.add_parser("tokenizer", help="train the byte-level BPE tokenizer on the corpus")
    p.add_argument("--corpus", default="data/corpus", help="the corpus whose train.jsonl it learns from")
    p.add_argument("--out", default="data/tokenizer", help="where the tokenizer files go")
    p.add_argument(
        "--vocab-size", type=int, default=8192, help="tokens in the vocabulary, special ones included"
    )
    p.set_defaults(func=cmd_tokenizer)

    p = sub.add_parser("train", help="train the default model (or the AR baseline)")
    p.add_argument(
        "--arch",
        choices=["diffusion", "ar"],
        default="diffusion",
        help="the diffusion model or the AR baseline",
    )
    p.add_argument(
        "--out", default="runs/diffusion", help="run directory: latest/ (the checkpoint) and train_log.jsonl"
    )
    p.add_argument("--corpus", default="data/corpus", help="the corpus to train on (difill corpus)")
    p.add_argument("--tokenizer", default="data/tokenizer", help="the tokenizer directory (difill tokenizer)")
    p.add_argument("--init", help="resume from a model dir, or 'shipped' for the packaged model")
    p.add_argument("--minutes", type=float, default=90, help="wall-clock cap of this run")
    p.add_argument("--cpu-hours", type=float, help="CPU budget of this run; the lr decays (cosine) over it")
    p.add_argument("--threads", type=int, default=2, help="torch threads (this machine has 2 cores)")
    p.add_argument("--seed", type=int, default=0, help="seeds the initial weights, batches and noise")
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate")
    p.add_argument(
        "--canvas-share",
        type=float,
        default=1.0,
        help="share of canvas (diffusion) steps; the rest are packed causal-LM steps",
    )
    p.add_argument("--canvas-share-end", type=float, help="canvas share at the end of the run (linear ramp)")
    p.add_argument("--hidden-size", type=int, default=192, help="model width when training from scratch")
    p.add_argument("--num-layers", type=int, default=4, help="model depth when training from scratch")
    p.add_argument("--save-every-minutes", type=float, default=10.0, help="checkpoint interval")
    p.add_argument(
        "--batch-size", type=int, default=16, help="rows per step (canvas examples or packed windows)"
    )
    p.add_argument("--device", default="cpu", help="cpu, or cuda for the GPU recipe (scripts/gpu_recipe.sh)")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (GPUs; emulated and slow on this CPU)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("ship", help="copy a trained model into the package as the default model")
    p.add_argument("source", help="checkpoint dir, e.g. runs/diffusion/latest")
    p.add_argument("--corpus", default="data/corpus", help="where the corpus manifest is")
    p.set_defaults(func=cmd_ship)

    p = sub.add_parser(
        "eval",
        help="held-out quality of what the editor shows: the model and the AR baseline "
        "through the server's suggestion path and filters",
    )
    p.add_argument("--model", help="diffusion model dir (default: shipped)")
    p.add_argument(
        "--ar-model", help="AR baseline dir (default: benchmarks/ar-baseline, else runs/ar/latest)"
    )
    p.add_argument("--no-ar", action="store_true", help="evaluate the diffusion model alone")
    p.add_argument("--corpus", default="data/corpus", help="the corpus whose held-out split gives the cases")
    p.add_argument("--cases", type=int, default=200, help="cases per hole shape")
    p.add_argument("--seed", type=int, default=1234, help="which held-out cases (fixed, never tuned)")
    p.add_argument(
        "--typing-files", type=int, default=6, help="held-out files for the typing replay (0: none)"
    )
    p.add_argument("--typing-lines", type=int, default=4, help="last lines of each file that are typed")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    p.add_argument(
        "--revise",
        action="store_true",
        help="experiment: completions re-decide committed tokens every step (as edits do)",
    )
    p.add_argument(
        "--record", action="store_true", help="append the result to the model's training_state.json"
    )
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("bench", help="latency benchmark: diffusion vs AR, engine and server")
    p.add_argument("--model", help="diffusion model dir (default: shipped)")
    p.add_argument(
        "--ar-model", help="AR baseline dir (default: benchmarks/ar-baseline, else runs/ar/latest)"
    )
    p.add_argument("--quick", action="store_true", help="a small run that finishes in under a minute")
    p.add_argument("--json", action="store_true", help="print the full report as JSON (no plot)")
    p.add_argument(
        "--plot",
        help="where the plot goes, its figures beside it as JSON "
        "(default: docs/bench.png; with --quick runs/bench-quick.png, so CI leaves docs/ alone)",
    )
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
