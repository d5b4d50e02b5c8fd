"""`difill bench --engines N`: torch and llama.cpp side by side, in one run, on the same model.

1. One denoising pass (every slot open, self-conditioned, as the sampler's later passes are) on
   canvases of 16, 32 and 48 slots after the same cached prompt: torch's ``CanvasDecoder``
   against the llama.cpp worker, at the thread counts each engine is given (torch takes half
   the cores; the worker too by default, and with every core for comparison).  Median of 50.
2. The typing replay through `difill serve --engine NAME` (lab/bench_typing.py) on N files: per
   keystroke p50/p95, the first request on a new line, and keystrokes saved at 6 chars/s.

The figures go to docs/llamacpp.md by hand, with the command; nothing here is a timed test.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np
import torch

CANVASES = (16, 32, 48)
REPEATS = 50


def _median_ms(run, repeats: int = REPEATS) -> float:
    run()  # warm-up: first-call allocations
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def step_times(thread_counts: tuple[int, ...]) -> dict:
    from difill.engine.decoder import CanvasDecoder
    from difill.engine.model import load_model
    from difill.engine.native.build import built_worker
    from difill.engine.native.engine import shipped_gguf
    from difill.engine.native.worker import OPEN, FillRules, LlamaWorker, WorkerSettings
    from difill.engine.prefix_cache import PrefixCache
    from difill.engine.tokens import encode

    loaded = load_model(device="cpu", dtype="float32")
    prompt = [
        loaded.ids.bos,
        *encode(loaded.tokenizer, "import os\n\n\ndef read(path):\n    with open(path) as f:\n"),
    ]
    vocab = loaded.ids.vocab_size
    report: dict = {"torch_threads": torch.get_num_threads(), "prompt_tokens": len(prompt), "torch": {}}
    cache = PrefixCache(loaded.model).encode(prompt).cache
    decoder = CanvasDecoder(loaded.model, cache)
    for length in CANVASES:
        canvas = torch.randint(8, vocab, (1, length), generator=torch.Generator().manual_seed(length))
        slots = torch.ones(1, length, dtype=torch.bool).nonzero(as_tuple=True)
        with torch.inference_mode():
            soft = decoder.soft_embeddings(canvas, slots, decoder.open_logits(canvas, None, slots))

            def one_pass(canvas=canvas, slots=slots, soft=soft):
                logits = decoder.open_logits(canvas, soft, slots)
                decoder.soft_embeddings(canvas, slots, logits)  # the next pass's input: part of a step

            report["torch"][length] = round(_median_ms(one_pass), 2)
    for threads in thread_counts:
        worker = LlamaWorker(WorkerSettings(built_worker(), shipped_gguf(), threads=threads))
        worker.fill(prompt, FillRules(vocab))
        row = {}
        for length in CANVASES:
            canvas = np.random.default_rng(length).integers(8, vocab, (1, length), dtype=np.int32)
            flags = np.full((1, length), OPEN, dtype=np.uint8)
            worker.step(canvas, flags, False, 1.0)
            row[length] = round(_median_ms(lambda c=canvas, f=flags, w=worker: w.step(c, f, True, 1.0)), 2)
        worker.close()
        report[f"llamacpp_{threads}_threads"] = row
    return report


def main(files: int, model_dir: str | None = None) -> dict:
    from difill.lab.bench_typing import bench_typing

    cores = os.cpu_count() or 2
    report: dict = {"steps_ms": step_times(tuple(sorted({max(1, cores // 2), cores})))}
    print(f"steps: {report['steps_ms']}", file=sys.stderr, flush=True)
    if files:
        for engine in ("torch", "llamacpp"):
            report[f"typing_{engine}"] = bench_typing(model_dir, files, rates=(6.0,), engine=engine)
    return report


def format_engines(report: dict) -> str:
    steps = report["steps_ms"]
    rows = [
        f"one denoising pass, ms (median of {REPEATS}; prompt {steps['prompt_tokens']} tokens)",
        "| engine | " + " | ".join(f"C={c}" for c in CANVASES) + " |",
        "|---|" + "---|" * len(CANVASES),
        f"| torch ({steps['torch_threads']} thread(s)) | "
        + " | ".join(str(steps["torch"][c]) for c in CANVASES)
        + " |",
    ]
    for key, row in steps.items():
        if key.startswith("llamacpp_"):
            threads = key.split("_")[1]
            ratio = " | ".join(f"{row[c]} ({row[c] / steps['torch'][c]:.2f}x)" for c in CANVASES)
            rows.append(f"| llama.cpp ({threads} thread(s)) | {ratio} |")
    typing = [(e, report.get(f"typing_{e}")) for e in ("torch", "llamacpp")]
    if all(t for _, t in typing):
        rows += ["", "typing through `difill serve` (every answer waited for; and at 6 chars/s)",
                 "| engine | per key p50 / p95 ms | first on a new line p50 / p95 ms | net saved (waited) | net saved at 6/s |",
                 "|---|---|---|---|---|"]  # fmt: skip
        for engine, t in typing:
            w, r = t["waited"], t["6_chars_per_s"]
            rows.append(
                f"| {engine} | {w['p50_ms']} / {w['p95_ms']} | {w['new_line_p50_ms']} / {w['new_line_p95_ms']} "
                f"| {w['net_saved']:.1%} | {r['net_saved']:.1%} |"
            )
    return "\n".join(rows)
