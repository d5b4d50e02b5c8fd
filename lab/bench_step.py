"""One denoising step at a fixed canvas size, for `difill bench --profile` and before/after checks.

Issue 49's target is a step at C=16 slots.  Two figures, after a 200-token prefix of real Python:

* ``pass_ms``: one pass with every slot open and self-conditioned (``CanvasDecoder.open_logits``
  then ``soft_embeddings``), what `difill bench --engines` times;
* ``step_ms``: a whole sampler step, the loop's time per pass over a 16-slot hole denoised to the
  end (12 passes at most; the open slots shrink as the loop commits), the sampler's work included.

Each is the median of ``repeats`` runs; the best of ``rounds`` such medians is kept, because this
machine is shared and a busy neighbour only ever adds time.  A third run with the profile's timers
(lab/profile_hooks.py) splits the step into its parts.

    PYTHONPATH=src python -m lab.bench_step   # prints the JSON
    PYTHONPATH=src python -m lab.bench_step --compile   # the pass with torch.compile
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from lab.bench_timing import median_ms

PREFIX_TOKENS = 200


def prefixed_decoder(model_dir: str | None):
    """The model, and a CanvasDecoder after a ``PREFIX_TOKENS``-token prefix of real Python."""
    from difill.engine.decoder import CanvasDecoder
    from difill.engine.model import load_model
    from difill.engine.prefix_cache import PrefixCache
    from difill.engine.tokens import encode

    loaded = load_model(model_dir, device="cpu")
    ids = loaded.ids
    source = encode(loaded.tokenizer, Path(__file__).with_name("bench.py").read_text())
    cache = PrefixCache(loaded.model).encode([ids.bos, *source[: PREFIX_TOKENS - 1]]).cache
    return loaded, CanvasDecoder(loaded.model, cache)


def random_canvas(vocab_size: int, slots: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """A (1, slots) canvas of random ids, and every slot as open (rows, cols): NumPy, as the
    sampler hands them to the decoder (the ids torch's generator drew before the sampler's port)."""
    canvas = torch.randint(8, vocab_size, (1, slots), generator=torch.Generator().manual_seed(0)).numpy()
    return canvas, np.ones((1, slots), dtype=bool).nonzero()


def compiled_pass(model_dir: str | None, slots: int = 16, repeats: int = 40, rounds: int = 3) -> dict:
    """Issue 49, item 2's torch.compile: one pass (every slot open) eager, then with the decoder's
    layers compiled by inductor for this canvas length, the compile's seconds, and the first pass
    at another length (a recompile).  Not the engine's path: measured, not taken (docs/bench.md)."""
    loaded, decoder = prefixed_decoder(model_dir)
    canvas, every = random_canvas(loaded.ids.vocab_size, slots)
    with torch.inference_mode():
        soft = decoder.soft_embeddings(canvas, every, decoder.open_logits(canvas, None, every))

        def one_pass() -> None:
            decoder.soft_embeddings(canvas, every, decoder.open_logits(canvas, soft, every))

        eager_ms = min(median_ms(one_pass, repeats) for _ in range(rounds))
        decoder.hidden = torch.compile(decoder.hidden, dynamic=False)
        started = time.perf_counter()
        one_pass()
        compile_s = time.perf_counter() - started
        compiled_ms = min(median_ms(one_pass, repeats) for _ in range(rounds))
        other, other_open = random_canvas(loaded.ids.vocab_size, slots + 8)
        other_soft = decoder.soft_embeddings(other, other_open, decoder.open_logits(other, None, other_open))
        started = time.perf_counter()
        decoder.soft_embeddings(other, other_open, decoder.open_logits(other, other_soft, other_open))
        recompile_s = time.perf_counter() - started
    return {
        "slots": slots, "threads": torch.get_num_threads(), "eager_pass_ms": round(eager_ms, 2),
        "compiled_pass_ms": round(compiled_ms, 2), "compile_s": round(compile_s, 1),
        "another_length_first_pass_s": round(recompile_s, 2),
    }  # fmt: skip


def step_profile(model_dir: str | None, slots: int = 16, repeats: int = 20, rounds: int = 3) -> dict:
    from difill.engine.api import FillOptions
    from difill.engine.noise import Noise
    from difill.engine.sampler import DenoiseRequest, denoise
    from difill.engine.sampler_config import sampler_config
    from lab.profile_hooks import STEP_PARTS, Recorder, hook_decoder, step_split

    loaded, decoder = prefixed_decoder(model_dir)
    ids = loaded.ids
    canvas, every = random_canvas(ids.vocab_size, slots)
    request = DenoiseRequest(
        canvas, np.zeros((1, slots), dtype=bool), np.array(ids.banned_in_hole, dtype=np.int64), ids.vocab_size,
        filler_id=ids.filler[0] if ids.filler else None,
    )  # fmt: skip
    config = sampler_config(loaded.sampler, FillOptions())
    steps = {"n": 0}

    def fill() -> None:
        result = denoise(decoder, request, config, Noise(0))
        steps["n"] = result.steps

    with torch.inference_mode():
        soft = decoder.soft_embeddings(canvas, every, decoder.open_logits(canvas, None, every))

        def one_pass() -> None:
            decoder.soft_embeddings(canvas, every, decoder.open_logits(canvas, soft, every))

        pass_ms = min(median_ms(one_pass, repeats * 2) for _ in range(rounds))
        fill_ms = min(median_ms(fill, repeats) for _ in range(rounds))
        recorder = Recorder()
        handles = hook_decoder(recorder, loaded.model.model.decoder)
        decoder.logits = recorder.timed("LM head", decoder.logits)
        decoder.soft_embeddings = recorder.timed("self-conditioning input", decoder.soft_embeddings)
        recorder.in_denoise = True
        started = time.perf_counter()
        for _ in range(repeats):
            fill()
        recorder.ms["_denoise"] = (time.perf_counter() - started) * 1000
        for handle in handles:
            handle.remove()
    split = step_split(recorder.ms)
    per_step = repeats * steps["n"]
    return {
        "slots": slots, "prefix_tokens": PREFIX_TOKENS, "threads": torch.get_num_threads(),
        "pass_ms": round(pass_ms, 2), "step_ms": round(fill_ms / steps["n"], 2), "steps": steps["n"],
        "timed_step_ms": round(recorder.ms["_denoise"] / per_step, 2),
        "parts_ms": {part: round(split[part] / per_step, 3) for part in STEP_PARTS},
    }  # fmt: skip


def format_step(report: dict) -> str:
    parts = ", ".join(f"{part} {ms}" for part, ms in report["parts_ms"].items())
    return (
        f"a step at C={report['slots']} after {report['prefix_tokens']} prefix tokens, torch on "
        f"{report['threads']} thread(s), best of 3 medians: one pass (every slot open) "
        f"{report['pass_ms']} ms; a sampler step {report['step_ms']} ms ({report['steps']} steps per "
        f"fill); with timers {report['timed_step_ms']} ms: {parts}"
    )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--compile"]
    if "--compile" in sys.argv:  # PYTHONPATH=src python -m lab.bench_step --compile
        print(json.dumps(compiled_pass(args[0] if args else None), indent=1))
    else:
        report = step_profile(args[0] if args else None)
        print(json.dumps(report, indent=1))
        print(format_step(report), file=sys.stderr)
