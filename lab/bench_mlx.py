"""`python -m lab.bench_mlx`: the MLX engine against torch on the shipped model, float32.

1. Parity: the largest logit difference and argmax agreement over every open slot of one pass,
   without and with self-conditioning (each engine on its own first pass), at C=16/32/48.
2. One denoising pass per engine (every slot open, self-conditioned, as the sampler's later passes
   are) after a 20- and a 200-token prompt: median of ``--repeats``, as lab/bench_engines.py times
   torch against llama.cpp.
3. One fill after a 200-token prefix (three hole lengths, as an invoked completion): median ms.

The figures go to docs/mlx.md by hand, with this command; nothing here is a timed test.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from lab.bench_engines import CANVASES, PROMPTS
from lab.bench_timing import median_ms


def passes(torch_engine, mlx_engine, prompt: list[int], rows: int = 1):
    from difill.engine.decoder import CanvasDecoder
    from difill.engine.mlx.engine import MlxCanvasPass
    from difill.engine.prefix_cache import PrefixCache, expand_cache

    cache = PrefixCache(torch_engine.loaded.model).encode(prompt).cache
    ours = CanvasDecoder(torch_engine.loaded.model, expand_cache(cache, rows))
    return ours, MlxCanvasPass(mlx_engine.mlx_model, mlx_engine.prefix_cache.encode(prompt).cache, rows)


def parity(torch_engine, mlx_engine, prompt: list[int]) -> dict:
    vocab = torch_engine.loaded.ids.vocab_size
    report = {}
    for length in CANVASES:
        canvas = np.random.default_rng(length).integers(8, vocab, (2, length))  # (B, C) int64
        slots = np.ones((2, length), dtype=bool).nonzero()
        ours_pass, theirs_pass = passes(torch_engine, mlx_engine, prompt, 2)
        with torch.inference_mode():
            ours, theirs = (
                ours_pass.open_logits(canvas, None, slots),
                theirs_pass.open_logits(canvas, None, slots),
            )
            soft_ours = ours_pass.soft_embeddings(canvas, slots, ours)
            soft_theirs = theirs_pass.soft_embeddings(canvas, slots, theirs)
            ours2 = ours_pass.open_logits(canvas, soft_ours, slots)
            theirs2 = theirs_pass.open_logits(canvas, soft_theirs, slots)
        report[length] = {
            "max_diff": float(np.abs(ours - theirs).max()),
            "max_diff_self_conditioned": float(np.abs(ours2 - theirs2).max()),
            "argmax_equal": bool(np.array_equal(ours.argmax(-1), theirs.argmax(-1)))
            and bool(np.array_equal(ours2.argmax(-1), theirs2.argmax(-1))),
        }
    return report


def step_times(torch_engine, mlx_engine, repeats: int) -> dict:
    vocab = torch_engine.loaded.ids.vocab_size
    rng = np.random.default_rng(0)
    report: dict = {"torch": {}, "mlx": {}}
    for n in PROMPTS:
        prompt = [torch_engine.loaded.ids.bos, *map(int, rng.integers(8, vocab, n - 1))]
        decoders = dict(zip(("torch", "mlx"), passes(torch_engine, mlx_engine, prompt), strict=True))
        for name, decoder in decoders.items():
            report[name][n] = {}
            for length in CANVASES:
                canvas = np.random.default_rng(length).integers(8, vocab, (1, length))  # (1, C) int64
                slots = np.ones((1, length), dtype=bool).nonzero()
                with torch.inference_mode():
                    soft = decoder.soft_embeddings(canvas, slots, decoder.open_logits(canvas, None, slots))

                    def one_pass(decoder=decoder, canvas=canvas, slots=slots, soft=soft):
                        decoder.soft_embeddings(canvas, slots, decoder.open_logits(canvas, soft, slots))

                    report[name][n][length] = round(median_ms(one_pass, repeats), 2)
    return report


def fill_times(torch_engine, mlx_engine, repeats: int) -> dict:
    from pathlib import Path

    from difill.engine.api import FillOptions

    source = Path(__file__).read_text()
    prefix, suffix = source[:800], "\n" + source[800:1200]
    report = {}
    for name, engine in (("torch", torch_engine), ("mlx", mlx_engine)):
        engine.fill(prefix, suffix, FillOptions())  # the prefix is cached, as while typing
        report[name] = round(median_ms(lambda e=engine: e.fill(prefix, suffix, FillOptions()), repeats), 1)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.bench_mlx", description=__doc__)
    parser.add_argument("--repeats", type=int, default=20, help="timed runs per figure (median)")
    args = parser.parse_args()
    from difill.engine.infill import InfillEngine
    from difill.engine.mlx.engine import load_mlx_engine
    from difill.engine.model import load_model
    from difill.engine.tokens import encode

    torch_engine = InfillEngine(load_model(device="cpu", dtype="float32"))
    mlx_engine = load_mlx_engine(dtype="float32")
    loaded = torch_engine.loaded
    prompt = [loaded.ids.bos, *encode(loaded.tokenizer, "import os\n\ndef add(a, b):\n    return ")]
    report = {
        "torch_threads": torch.get_num_threads(),
        "parity": parity(torch_engine, mlx_engine, prompt),
        "steps_ms": step_times(torch_engine, mlx_engine, args.repeats),
        "fill_ms": fill_times(torch_engine, mlx_engine, max(3, args.repeats // 4)),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
