"""Supervised tokens per CPU-second of each training step kind, from the shipped weights.

    .venv/bin/python -m lab.scripts.train_throughput --seconds 60 [--profile]

Run it on an idle machine (pause any training with kill -STOP). Each recipe runs a few warm-up
steps, then optimizer steps for --seconds; the figure is supervised tokens over the process's
CPU seconds, so it is fair whatever else the machine does, and per wall second beside it.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion

from difill.engine.model import DEFAULT_MODEL_DIR
from difill.engine.vocab import TokenIds
from lab.training.batches import diffusion_batch
from lab.training.corpus import read_jsonl
from lab.training.packed import causal_lm_loss, packed_batch, token_stream
from lab.training.train import (
    CANVAS_LENGTHS,
    PREFIX_LENGTHS,
    PREFIX_WEIGHTS,
    TrainConfig,
    diffusion_loss,
)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(recipe: str, tok, ids: TokenIds, texts: list[str], stream, seconds: float, profile: bool) -> dict:
    """Optimizer steps of one recipe for ``seconds`` from the shipped weights."""
    model = DiffusionGemmaForBlockDiffusion.from_pretrained(DEFAULT_MODEL_DIR, dtype=torch.float32)
    model.config._experts_implementation = "eager"
    model.config.text_config._experts_implementation = "eager"
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rng = random.Random(0)
    gen = torch.Generator().manual_seed(0)
    cfg = TrainConfig()
    if recipe.endswith("_compiled"):
        model.model.encoder.compile()

    def step() -> int:
        if recipe == "canvas":  # today's recipe: the engine's canvas, prefix LM loss, self-conditioning
            batch = diffusion_batch(texts, tok, ids, 16, rng.choices(PREFIX_LENGTHS, PREFIX_WEIGHTS)[0],
                                    rng.choice(CANVAS_LENGTHS), rng)  # fmt: skip
            loss, info = diffusion_loss(model, batch, ids, cfg, gen)
            supervised = info["supervised"]
        else:  # packed causal LM: lm16 / lm32 rows of 256, with or without the soft-cap, compiled or not
            rows = 32 if recipe.startswith("lm32") else 16
            windows = packed_batch(stream, rows, 256, rng)
            loss = causal_lm_loss(model, windows, softcap=recipe.startswith("lm16_softcap"))
            supervised = windows.numel() - rows
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return supervised

    for _ in range(3):  # warm-up (and compilation)
        step()
    if profile:
        with torch.profiler.profile() as prof:
            step()
        print(
            f"== {recipe}: one step\n"
            + prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
        )
    supervised, c0, t0 = 0, cpu_seconds(), time.time()
    while time.time() - t0 < seconds:
        supervised += step()
    cpu, wall = cpu_seconds() - c0, time.time() - t0
    return {
        "supervised_per_cpu_s": round(supervised / cpu),
        "supervised_per_wall_s": round(supervised / wall),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="data/corpus")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", action="store_true", help="print the top ops of one step of each kind")
    ap.add_argument("--recipes", default="canvas,lm16_softcap,lm16,lm32,lm16_compiled")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tok = AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR)
    ids = TokenIds.from_tokenizer(tok, len(tok))
    texts = [d["text"] for d in read_jsonl(Path(args.corpus) / "heldout.jsonl")]
    stream = token_stream(Path(args.corpus), "heldout", tok, ids)
    results = {}
    for recipe in args.recipes.split(","):
        results[recipe] = measure(recipe, tok, ids, texts, stream, args.seconds, args.profile)
        print(recipe, results[recipe], flush=True)
    base = results.get("canvas", {}).get("supervised_per_wall_s")
    if base:
        for r in results.values():
            r["vs_canvas"] = round(r["supervised_per_wall_s"] / base, 2)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
