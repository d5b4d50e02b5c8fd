"""The ``difill`` commands that make the default model: corpus, tokenizer, train, ship."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def corpus(args: argparse.Namespace) -> int:
    from lab.training.corpus import build_corpus

    manifest = build_corpus(Path(args.out), Path(args.cache))
    print(f"train: {manifest.train_files} files, {manifest.train_bytes} bytes; "
          f"held-out: {manifest.heldout_files} files, {manifest.heldout_bytes} bytes; "
          f"near-duplicates removed: {manifest.duplicates_removed}")  # fmt: skip
    return 0


def tokenizer(args: argparse.Namespace) -> int:
    from lab.training.corpus import read_jsonl
    from lab.training.tokenizer import save_tokenizer, train_tokenizer

    docs = read_jsonl(Path(args.corpus) / "train.jsonl")
    tokenizer = train_tokenizer((d["text"] for d in docs), args.vocab_size)
    save_tokenizer(tokenizer, Path(args.out))
    print(f"saved a {len(tokenizer)}-token tokenizer to {args.out}")
    return 0


def train_model(args: argparse.Namespace) -> int:
    from lab.training.train import TrainConfig, train

    init = args.init
    if init == "shipped":
        from difill.engine.model import DEFAULT_MODEL_DIR

        init = str(DEFAULT_MODEL_DIR)
    state = train(TrainConfig(
        arch=args.arch, out=args.out, corpus=args.corpus, tokenizer=args.tokenizer, init=init,
        minutes=args.minutes, cpu_hours=args.cpu_hours, threads=args.threads, seed=args.seed, lr=args.lr,
        canvas_share=args.canvas_share, canvas_share_end=args.canvas_share_end, draft_share=args.draft_share,
        hidden_size=args.hidden_size, num_layers=args.num_layers, save_every_minutes=args.save_every_minutes,
        batch_size=args.batch_size, device=args.device, bf16=args.bf16,
        warmup_steps=args.warmup_steps, ema_decay=args.ema_decay,
    ))  # fmt: skip
    print(
        f"trained to step {state.step}: {state.target_tokens} supervised tokens, {state.cpu_hours:.2f} CPU-hours"
    )
    return 0


def ghost_text_cut(source: Path, shipped: Path, chosen: float | None) -> float | None:
    """The min_token_prob the shipped config gets: chosen now, else the source's, else the old one's.

    Weights trained further keep the cut chosen for the ones they replace unless a new one is
    chosen (lab/scripts/tune_truncation.py); a run started before the cut existed lacks the key.
    """
    if chosen is not None:
        if not 0.0 <= chosen <= 1.0:
            raise SystemExit(f"--min-token-prob must be between 0 and 1, got {chosen}")
        return chosen
    for directory in (source, shipped):
        config = directory / "config.json"
        meta = json.loads(config.read_text()).get("difill") or {} if config.is_file() else {}
        if "min_token_prob" in meta:
            return float(meta["min_token_prob"])
    return None


def ship(args: argparse.Namespace) -> int:
    """Copy a trained checkpoint's weights, config and tokenizer into the package."""
    import shutil

    from difill.engine.model import DEFAULT_MODEL_DIR, check_model_dir

    source = Path(args.source)
    check_model_dir(source)
    cut = ghost_text_cut(source, DEFAULT_MODEL_DIR, args.min_token_prob)
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
    if cut is not None:  # the calibrated ghost-text cut lives in the config's difill metadata
        config_path = DEFAULT_MODEL_DIR / "config.json"
        config = json.loads(config_path.read_text())
        config.setdefault("difill", {})["min_token_prob"] = cut
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    manifest = Path(args.corpus) / "manifest.json"
    if manifest.exists():
        shutil.copy2(manifest, DEFAULT_MODEL_DIR / "corpus_manifest.json")
    print(f"shipped {', '.join(copied)} to {DEFAULT_MODEL_DIR}")
    return 0
