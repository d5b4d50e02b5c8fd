"""Adapting the shipped model to one project (issue 61, the spike): its corpus, with the fresh
cursor's case files held out, and the held-out losses before and after.

    python -m lab.adapt corpus --repo NAME=GIT_DIR@COMMIT --out DIR [--cases 40] [--seed 0]
    difill train --init shipped --corpus DIR --out RUN ...      # the recipe (docs/adapt.md)
    python -m lab.adapt loss --corpus DIR --model MODEL_DIR [--model ...]

``corpus`` draws the project's fresh-cursor cases exactly as ``lab/fresh_cursor.py`` does (same
seed, same file and line order) *before* anything else, and writes ``train.jsonl`` from every
other Python file of the tree and ``heldout.jsonl`` from the case files alone: the training text
never holds a case's file, and the held-out losses are measured on exactly those files.
``loss`` prints each model's held-out next-token loss and canvas loss on them (fixed windows,
examples and noise, so two models compare directly).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from difill.server.context.policy import ContextPolicy, redact
from lab.fresh_cursor import draw_cases, export, parse_repos

MAX_TRAIN_FILE_BYTES = 400_000  # as the corpus's own cap (lab/training/corpus.py)


def case_files(name: str, git_dir: str, commit: str, cases: int, per_file: int, seed: int,
               into: Path) -> tuple[Path, set[str]]:  # fmt: skip
    """The tree at ``commit`` under ``into/name`` and the paths of its fresh-cursor cases' files,
    drawn as ``fresh_cursor.main`` draws them."""
    project = export(name, git_dir, commit, into)
    return project.root, {case.path for case in draw_cases(project, cases, per_file, seed)}


def split_project(root: Path, held: set[str]) -> tuple[list[dict], list[dict]]:
    """(train, held-out) documents: every regular Python file of the tree, the held ones apart.
    The secrets policy holds here as where text leaves for a model: a file it denies is never
    read, and key-shaped tokens and passwords are redacted (server/context/policy.py)."""
    policy = ContextPolicy()
    train, heldout = [], []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_TRAIN_FILE_BYTES:
            continue
        if policy.denies_under(str(root), relative):
            continue
        doc = {"path": relative, "text": redact(path.read_text(encoding="utf-8", errors="replace"))}
        (heldout if relative in held else train).append(doc)
    return train, heldout


def write_jsonl(docs: list[dict], path: Path) -> None:
    with open(path, "w") as f:
        for doc in docs:
            f.write(json.dumps(doc) + "\n")


def build(args: argparse.Namespace) -> int:
    (name, git_dir, commit), = parse_repos(args.repo)  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="difill-adapt-") as tmp:
        root, held = case_files(name, git_dir, commit, args.cases, args.per_file, args.seed, Path(tmp))
        train, heldout = split_project(root, held)
    write_jsonl(train, out / "train.jsonl")
    write_jsonl(heldout, out / "heldout.jsonl")
    summary = {
        "project": name, "commit": commit, "held_out": sorted(held),
        "train_files": len(train), "train_bytes": sum(len(d["text"]) for d in train),
        "heldout_files": len(heldout), "heldout_bytes": sum(len(d["text"]) for d in heldout),
    }  # fmt: skip
    (out / "manifest.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "held_out"}))
    return 0


def losses(args: argparse.Namespace) -> int:
    import torch
    from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion

    from difill.engine.vocab import TokenIds
    from lab.training.corpus import read_jsonl
    from lab.training.packed import heldout_lm_loss, token_stream
    from lab.training.train import heldout_canvas_loss

    torch.set_num_threads(args.threads)
    corpus = Path(args.corpus)
    texts = [d["text"] for d in read_jsonl(corpus / "heldout.jsonl")]
    for model_dir in args.model:
        tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        model = DiffusionGemmaForBlockDiffusion.from_pretrained(model_dir, dtype=torch.float32)
        ids = TokenIds.from_tokenizer(tok, model.config.text_config.vocab_size)
        stream = token_stream(corpus, "heldout", tok, TokenIds.from_tokenizer(tok, len(tok)))
        row = {
            "model": model_dir,
            "heldout_lm_loss": round(heldout_lm_loss(model, stream), 4),
            "heldout_canvas_loss": round(heldout_canvas_loss(model, texts, tok, ids), 4),
        }
        print(json.dumps(row))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.adapt", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("corpus", help="a project's training text, its fresh-cursor case files held out")
    p.add_argument("--repo", required=True, help="NAME=GIT_DIR@COMMIT (the whole commit)")
    p.add_argument("--out", required=True, help="where train.jsonl, heldout.jsonl and manifest.json go")
    p.add_argument("--cases", type=int, default=40, help="as fresh_cursor's --cases")
    p.add_argument("--per-file", type=int, default=3, help="as fresh_cursor's --per-file")
    p.add_argument("--seed", type=int, default=0, help="as fresh_cursor's --seed")
    p.set_defaults(func=build)
    p = sub.add_parser("loss", help="held-out next-token and canvas losses of each model")
    p.add_argument("--corpus", required=True, help="a folder written by `corpus`")
    p.add_argument("--model", action="append", required=True, help="a model folder (repeatable)")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=losses)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
