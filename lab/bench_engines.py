"""`difill bench --engines N`: torch and llama.cpp side by side, in one run, on the same model.

1. One denoising pass (every slot open, self-conditioned, as the sampler's later passes are) on
   canvases of 16, 32 and 48 slots after the same cached prompt of 20 and of 200 tokens: torch's
   ``CanvasDecoder`` against the llama.cpp worker built with difill's patches (``llamacpp``) and
   without them (``llamacpp_stock``, the PR as it is), each on 1 thread (what the server gives
   either on this 2-core machine: half the cores) and on every core.  Median of 50.
2. One fill through each engine (``fill_times``), one hole length and three.
3. The typing replay through `difill serve --engine NAME` (lab/bench_typing.py) on N files: per
   keystroke p50/p95, the first request on a new line, and keystrokes saved at 6 chars/s.

The figures go to docs/llamacpp.md by hand, with the command; nothing here is a timed test.
"""

from __future__ import annotations

import itertools
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import torch

from lab.bench_timing import median_ms

CANVASES = (16, 32, 48)
PROMPTS = (20, 200)  # prompt tokens: a file's start, and the shipped model's usual window (256 at most)
REPEATS = 50


def worker_builds() -> dict[str, Path]:
    """The worker with difill's patches and without (built once each; the patched one stays the
    one the engine starts)."""
    from difill.engine.native.build import build_native

    stock = build_native(patches=False, log=lambda line: None).binary
    return {"llamacpp": build_native(log=lambda line: None).binary, "llamacpp_stock": stock}


def step_times(
    thread_counts: tuple[int, ...], prompt_lengths: tuple[int, ...] = PROMPTS, gguf: Path | None = None,
    builds: dict[str, Path] | None = None,
) -> dict:  # fmt: skip
    """One pass per engine, thread count, prompt length and canvas length: {key: {P: {C: ms}}};
    ``gguf``: the llama.cpp rows' file (default: the shipped model's F32 export)."""
    from difill.engine.decoder import CanvasDecoder
    from difill.engine.model import load_model
    from difill.engine.native.engine import shipped_gguf
    from difill.engine.native.worker import OPEN, FillRules, LlamaWorker, WorkerSettings
    from difill.engine.prefix_cache import PrefixCache

    loaded = load_model(device="cpu", dtype="float32")
    vocab = loaded.ids.vocab_size
    rng = np.random.default_rng(0)
    prompts = {n: [loaded.ids.bos, *map(int, rng.integers(8, vocab, n - 1))] for n in prompt_lengths}
    canvases = {c: np.random.default_rng(c).integers(8, vocab, (1, c)).astype(np.int32) for c in CANVASES}
    report: dict = {}
    default_threads = torch.get_num_threads()
    for threads in thread_counts:
        torch.set_num_threads(threads)
        row: dict = {}
        for n, prompt in prompts.items():
            decoder = CanvasDecoder(loaded.model, PrefixCache(loaded.model).encode(prompt).cache)
            row[n] = {}
            for length, ids in canvases.items():
                canvas = ids.astype(np.int64)  # (1, C): the sampler's NumPy canvas
                slots = np.ones((1, length), dtype=bool).nonzero()
                with torch.inference_mode():
                    soft = decoder.soft_embeddings(canvas, slots, decoder.open_logits(canvas, None, slots))

                    def one_pass(canvas=canvas, slots=slots, soft=soft, decoder=decoder):
                        logits = decoder.open_logits(canvas, soft, slots)
                        decoder.soft_embeddings(
                            canvas, slots, logits
                        )  # the next pass's input: part of a step

                    row[n][length] = round(median_ms(one_pass, REPEATS), 2)
        report[f"torch_{threads}"] = row
    torch.set_num_threads(default_threads)
    for (name, binary), threads in itertools.product((builds or worker_builds()).items(), thread_counts):
        worker = LlamaWorker(WorkerSettings(binary, gguf or shipped_gguf(), threads=threads))
        row = {}
        for n, prompt in prompts.items():
            worker.fill(prompt, FillRules(vocab))
            row[n] = {}
            for length, ids in canvases.items():
                flags = np.full((1, length), OPEN, dtype=np.uint8)
                worker.step(ids, flags, False, 1.0)
                row[n][length] = round(
                    median_ms(lambda c=ids, f=flags, w=worker: w.step(c, f, True, 1.0), REPEATS), 2
                )
        # A STEP with no open slot: nothing is forwarded, so this is the protocol's own round trip.
        closed = np.zeros((1, CANVASES[0]), dtype=np.uint8)
        report[f"round_trip_ms_{name}_{threads}"] = round(
            median_ms(lambda w=worker, f=closed: w.step(canvases[CANVASES[0]], f, False, 1.0), REPEATS), 3
        )
        worker.close()
        report[f"{name}_{threads}"] = row
    return report


def fill_times(prompt_tokens: int = 200, repeats: int = 10, builds: dict[str, Path] | None = None) -> dict:
    """One fill after a ``prompt_tokens`` prefix, 12 passes at most, with one hole length and with
    three (an invoked completion's), per engine: median ms.  Torch and the patched worker forward
    a fill's canvases in one batch, the stock worker one after another (the PR's mask has no rows)."""
    from difill.engine.api import FillOptions
    from difill.engine.infill import InfillEngine
    from difill.engine.model import load_model
    from difill.engine.native.engine import load_llamacpp_engine

    # Python text long enough for the window, that does not change with difill's own code: the
    # standard library's textwrap (this module's own text moved the fill whenever it was edited).
    source = Path(textwrap.__file__).read_text()
    prefix, suffix = source[: prompt_tokens * 4], "\n" + source[prompt_tokens * 4 : prompt_tokens * 4 + 400]
    engines = {"torch": InfillEngine(load_model(device="cpu"))}
    engines |= {
        name: load_llamacpp_engine(binary=binary) for name, binary in (builds or worker_builds()).items()
    }
    report: dict = {}
    for name, engine in engines.items():
        for label, options in (
            ("one_length", FillOptions(hole_candidates=(32,))),
            ("three_lengths", FillOptions()),
        ):
            engine.fill(prefix, suffix, options)  # the prefix is cached, as while typing
            report[f"{name}_{label}"] = round(
                median_ms(lambda e=engine, o=options: e.fill(prefix, suffix, o), repeats), 1
            )
    for name, engine in engines.items():
        if name != "torch":
            engine.close()
    return report


def main(files: int, model_dir: str | None = None, gguf: str | None = None) -> dict:
    from lab.bench_typing import Server, bench_typing

    cores = os.cpu_count() or 2
    builds = worker_builds()
    report: dict = {
        "steps_ms": step_times(tuple(sorted({1, cores})), gguf=Path(gguf) if gguf else None, builds=builds)
    }
    print(f"steps: {report['steps_ms']}", file=sys.stderr, flush=True)
    if gguf is None:  # fills and typing run the shipped model as the server exports it
        report["fills_ms"] = fill_times(builds=builds)
        print(f"fills: {report['fills_ms']}", file=sys.stderr, flush=True)
    if files:
        for engine in ("torch", "llamacpp"):
            report[f"typing_{engine}"] = bench_typing(
                files, rates=(6.0,), server=Server(model_dir, engine=engine)
            )
    return report


def format_engines(report: dict) -> str:
    steps = report["steps_ms"]
    rows = [
        f"one denoising pass, ms (median of {REPEATS}; every slot open, self-conditioned)",
        "| engine | threads | prompt | " + " | ".join(f"C={c}" for c in CANVASES) + " |",
        "|---|---|---|" + "---|" * len(CANVASES),
    ]
    for key, row in steps.items():
        if key.startswith("round_trip"):
            continue
        engine, threads = key.rsplit("_", 1)
        for n, by_length in row.items():
            cells = []
            for c in CANVASES:
                ms = by_length[c]
                base = steps[f"torch_{threads}"][n][c]
                cells.append(f"{ms}" if engine == "torch" else f"{ms} ({ms / base:.2f}x)")
            rows.append(f"| {engine} | {threads} | {n} | " + " | ".join(cells) + " |")
    trips = {k.removeprefix("round_trip_ms_"): v for k, v in steps.items() if k.startswith("round_trip")}
    rows.append("llama.cpp STEP round trip with nothing to forward, ms: "
                + ", ".join(f"{ms} ({key})" for key, ms in trips.items()))  # fmt: skip
    if "fills_ms" in report:
        f = report["fills_ms"]
        rows += ["", "one fill after a 200-token prefix, median ms: one hole length / three"]
        rows += [f"| {name} | {f[f'{name}_one_length']} / {f[f'{name}_three_lengths']} |"
                 for name in ("torch", "llamacpp", "llamacpp_stock")]  # fmt: skip
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
