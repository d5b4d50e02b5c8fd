"""Latency of candidate model sizes through the server's suggestion path, before training any of them.

    .venv/bin/python -m lab.scripts.size_latency --cases 40 [--sizes 192x4,256x6,320x8]

Each size is a randomly initialised DiffusionGemma with the shipped tokenizer, loaded the way the
server loads a checkpoint, asked for typing-style suggestions (one hole length, the server's
default settings) at rest-of-line cursors of the held-out split. A random model rarely commits
early, so it runs to the step cap: these are upper bounds of what a trained model of that size
costs. Pause any training (kill -STOP) while it runs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import torch
from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion

from difill.engine.model import DEFAULT_MODEL_DIR, ModelShape, build_config
from difill.engine.vocab import TokenIds
from lab.quality import load_served
from lab.training.evaluate import eval_cases


def build_random(out: Path, hidden: int, layers: int) -> int:
    tok = AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR)
    ids = TokenIds.from_tokenizer(tok, len(tok))
    config = build_config(ids, ModelShape(hidden_size=hidden, num_layers=layers))
    config.difill = {"max_prefix_tokens": 256, "trained_canvas_lengths": [32, 48, 64, 80]}
    torch.manual_seed(0)
    model = DiffusionGemmaForBlockDiffusion(config)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return sum(p.numel() for n, p in model.named_parameters() if "vision" not in n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="data/corpus")
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--sizes", default="192x4,256x6,320x8", help="hidden x layers, comma-separated")
    args = ap.parse_args()
    cases = eval_cases(Path(args.corpus), args.cases, seed=99)["rest_of_line"]
    print("| hidden x layers | parameters (text) | p50 ms | p95 ms | mean forwards |")
    print("|---|---|---|---|---|")
    for size in args.sizes.split(","):
        hidden, layers = (int(x) for x in size.split("x"))
        with tempfile.TemporaryDirectory() as tmp:
            params = build_random(Path(tmp), hidden, layers)
            served = load_served(tmp)
            served.suggest("def area(w, h):\n    return w", len("def area(w, h):\n    return w"))  # warm-up
            shown = [served.suggest(ex.prefix + ex.suffix, len(ex.prefix)) for ex in cases]
        ms = sorted(s.ms for s in shown)
        p95 = ms[int(0.95 * (len(ms) - 1))]
        forwards = statistics.fmean(s.forwards for s in shown)
        print(f"| {hidden} x {layers} | {params / 1e6:.1f}M | {statistics.median(ms):.0f} | {p95:.0f} | {forwards:.1f} |",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
