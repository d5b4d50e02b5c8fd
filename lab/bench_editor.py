"""`difill bench --editor`: what a keystroke costs, beside what a new file costs (issue 64).

The plain bench starts every held-out case as a new file, so every fill pays a fresh prefix.  In
an editor the file's prefix is already in the encoder's cache and a keystroke changed its last
tokens.  Both are timed here, case by case, every variant back to back (interleaved, so a busy
machine slows them alike):

* **fresh**: the engine's prompt cache emptied, then the case's suggestion;
* **warm**: the suggestion at the case's prefix less its last ``KEYSTROKE`` characters first
  (untimed: the keystroke before), then the case's own (timed).

Variants (the last one adds Fast-dLLM's confidence-aware commit, ``commit_probability``),
all through the server's suggestion path (``ServedModel``, drafts off so that the
model answers every request, the show gate at 0 so that what it wrote is shown) on the torch engine:
diffusion with every slot computed each pass (and the same on the llama.cpp engine, where its
worker is built: the default engine then), diffusion with the canvas cache
(``SamplerConfig.canvas_cache_refresh``, engine/canvas_kv.py), that and every slot at least
``COMMIT_PROBABILITY`` sure committed in one pass, and the same-size AR baseline
with its prompt cache (engine/ar_baseline.py).  Reported per variant, case kind and shape
group: p50 / p95 ms, passes, ms per pass (the decoder's time over its passes; AR: its whole
time over its forwards), ms to the first shown text (p50 over the cases that showed one) and
exact match.  ``pass_costs`` times one pass with 4, 8 and 16 of 16 slots open, with and without
the cache, and the self-conditioning product over the whole vocabulary against a top-k one.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from lab.bench_timing import SHAPE_GROUPS, percentile
from lab.training.examples import InfillExample

KEYSTROKE = 1  # characters the warm case's previous request lacked
CACHE_REFRESH = 4  # the canvas cache's full pass every this many passes
COMMIT_PROBABILITY = 0.9  # Fast-dLLM's threshold: every slot this sure commits in the same pass
DIFFUSION, CACHED, AR = "diffusion", f"diffusion, canvas cache (refresh {CACHE_REFRESH})", "ar"
CONFIDENT = f"diffusion, canvas cache, commit >= {COMMIT_PROBABILITY}"
LLAMACPP = "diffusion on llama.cpp"  # the default engine once `difill build-native` has run


@dataclass
class Rows:
    ms: list[float] = field(default_factory=list)
    passes: list[int] = field(default_factory=list)
    pass_ms: list[float] = field(default_factory=list)
    shown_ms: list[float] = field(default_factory=list)  # cases that showed text
    exact: list[bool] = field(default_factory=list)
    reused: list[float] = field(default_factory=list)  # share of the prompt read from the cache (diffusion)

    def summary(self) -> dict:
        return {
            "cases": len(self.ms),
            "p50_ms": round(percentile(self.ms, 50), 1),
            "p95_ms": round(percentile(self.ms, 95), 1),
            "passes": round(statistics.fmean(self.passes or [0]), 2),
            "ms_per_pass": round(statistics.median(self.pass_ms or [0]), 2),
            "first_shown_p50_ms": round(percentile(self.shown_ms, 50), 1) if self.shown_ms else None,
            "shown": len(self.shown_ms),
            "exact_match": round(sum(self.exact) / max(1, len(self.exact)), 4),
            "prefix_reused": round(statistics.fmean(self.reused), 3) if self.reused else None,
        }


def load_variants(model_dir: str | None, ar_dir: str | None) -> dict:
    """Each variant's ServedModel and how to set its engine up for it (torch, CPU)."""
    from difill.engine.ar_baseline import ARBackend
    from difill.engine.backends import EngineChoice, local_backend
    from difill.server.config import Settings
    from difill.server.suggestion_path import ServedModel

    # Drafts off: every request runs the model (a draft shown as it stands costs no pass).
    # The show gate at 0: every text the model wrote is shown, so exact match is the model's (the
    # calibrated gate, tuned with drafts on, holds most of the model's own texts back).
    settings = Settings(context_drafts="off", min_show_probability=0.0)
    diffusion = ServedModel(local_backend(model_dir, "cpu", EngineChoice("torch")), settings)
    variants = {
        DIFFUSION: (diffusion, {"canvas_cache_refresh": 0, "commit_probability": 0.0}),
        CACHED: (diffusion, {"canvas_cache_refresh": CACHE_REFRESH, "commit_probability": 0.0}),
        CONFIDENT: (
            diffusion,
            {"canvas_cache_refresh": CACHE_REFRESH, "commit_probability": COMMIT_PROBABILITY},
        ),
    }
    try:  # the worker `difill build-native` built; without it the row is left out
        llama = local_backend(model_dir, "cpu", EngineChoice("llamacpp"))
        variants[LLAMACPP] = (ServedModel(llama, settings), {"canvas_cache_refresh": 0, "commit_probability": 0.0})
    except Exception as error:  # noqa: BLE001 - a missing worker or GGUF says why in one line
        print(f"{LLAMACPP}: left out ({error})")
    if ar_dir:
        variants[AR] = (ServedModel(ARBackend(ar_dir, prompt_cache=True), settings), None)
    return variants


def forget(served) -> None:
    """Empty the engine's prompt cache: the next request is a new file's."""
    engine = served.engine
    if getattr(engine, "engine", None) == "llamacpp":  # its worker keeps the last prompt: give it another
        engine.prefix_cache.encode([engine.ids.bos])
    elif hasattr(engine, "prefix_cache"):
        engine.prefix_cache.clear()
    elif hasattr(engine, "baseline"):
        engine.baseline._cached = None


def timed(served, sampler: dict | None, ex: InfillExample, rows: Rows) -> None:
    """One suggestion at ``ex``'s cursor, its engine's sampler set as ``sampler`` says, into ``rows``."""
    for name, value in (sampler or {}).items():
        setattr(served.engine.loaded.sampler, name, value)
    shown = served.suggest(ex.prefix + ex.suffix, len(ex.prefix), "file:///bench/case.py")
    stats = shown.result.stats
    rows.ms.append(shown.ms)
    rows.passes.append(stats.decoder_forwards)
    if stats.decoder_forwards:
        spent = stats.decoder_ms if stats.decoder_ms else stats.total_ms
        rows.pass_ms.append(spent / stats.decoder_forwards)
    if shown.text:
        rows.shown_ms.append(shown.ms)
    rows.exact.append(shown.text.rstrip() == ex.middles[0].rstrip())
    if stats.prefix_tokens:
        rows.reused.append(stats.reused_prefix_tokens / stats.prefix_tokens)


def bench_editor(model_dir: str | None, ar_dir: str | None, cases: dict[str, list[InfillExample]]) -> dict:
    """Fresh and warm rows for every variant, case by case (module docstring)."""
    variants = load_variants(model_dir, ar_dir)
    for served, _ in variants.values():
        served.suggest("import os\n\n", len("import os\n"), "file:///warm-up.py")  # first-call allocations
    rows = {(v, kind, g): Rows() for v in variants for kind in ("fresh", "warm") for g in SHAPE_GROUPS}
    for group, shapes in SHAPE_GROUPS.items():
        for ex in (ex for shape in shapes for ex in cases[shape]):
            if len(ex.prefix) <= KEYSTROKE:
                continue
            before = InfillExample(ex.prefix[:-KEYSTROKE], ex.middles, ex.betweens, ex.suffix, ex.shape)
            for name, (served, sampler) in variants.items():
                forget(served)
                timed(served, sampler, ex, rows[(name, "fresh", group)])
                timed(served, sampler, before, Rows())  # the keystroke before: its prefix is cached
                timed(served, sampler, ex, rows[(name, "warm", group)])
    report: dict = {"keystroke_chars": KEYSTROKE, "rows": {}}
    for (name, kind, group), r in rows.items():
        report["rows"].setdefault(name, {}).setdefault(kind, {})[group] = r.summary()
    return report


def pass_costs(model_dir: str | None, repeats: int = 200, prefix_tokens: int = 200) -> dict:
    """One pass at C=16 after ``prefix_tokens`` cached tokens, 4 / 8 / 16 slots open, with every
    slot computed and with the canvas cache in its steady state (the open slots alone computed),
    and the self-conditioning product (the next pass's input) over the vocabulary against its
    top 64; median ms, every variant timed in turn within each repeat."""
    from difill.engine.canvas_kv import CachedCanvasDecoder
    from difill.engine.decoder import CanvasDecoder
    from difill.engine.model import load_model
    from difill.engine.prefix_cache import PrefixCache

    loaded = load_model(model_dir, "cpu")
    cache = PrefixCache(loaded.model).encode(list(range(5, 5 + prefix_tokens))).cache
    vocab = loaded.model.config.text_config.vocab_size
    canvas = torch.randint(10, 1000, (1, 16), generator=torch.Generator().manual_seed(0)).numpy()
    stock = CanvasDecoder(loaded.model, cache)
    runs = {}
    with torch.inference_mode():
        for n in (16, 8, 4):
            open_mask = np.zeros((1, 16), dtype=bool)
            open_mask[0, :n] = True
            slots = open_mask.nonzero()
            soft = stock.soft_embeddings(canvas, slots, torch.randn(n, vocab).numpy())
            cached = CachedCanvasDecoder(loaded.model, cache, refresh_every=10**9)
            cached.open_logits(canvas, soft, slots)  # the full pass; the rest read the cache
            runs[f"pass, {n} of 16 open"] = lambda c=canvas, s=soft, o=slots: stock.open_logits(c, s, o)
            runs[f"pass, {n} of 16 open, canvas cache"] = lambda d=cached, c=canvas, s=soft, o=slots: (
                d.open_logits(c, s, o)
            )
            logits = torch.randn(n, vocab).numpy()  # (N, V) as the sampler hands them over
            runs[f"self-conditioning, {n} open, whole vocabulary"] = lambda o=slots, lg=logits: (
                stock.soft_embeddings(canvas, o, lg)
            )
            runs[f"self-conditioning, {n} open, top 64"] = lambda lg=logits: top_k_soft(
                stock, torch.from_numpy(lg), 64
            )
        times = {name: [] for name in runs}
        for _ in range(5):
            for run in runs.values():
                run()
        for _ in range(repeats):
            for name, run in runs.items():
                started = time.perf_counter()
                run()
                times[name].append((time.perf_counter() - started) * 1000)
    out = {name: round(statistics.median(t), 3) for name, t in times.items()}
    out["vocab"] = vocab
    return out


def top_k_soft(decoder, logits: torch.Tensor, k: int) -> torch.Tensor:
    """logits (N, V) -> the self-conditioning input (N, D) from the top ``k`` tokens alone
    (mlx-vlm's diffusion_turbo): what the whole-vocabulary product would cost without its tail."""
    weight = decoder.decoder.embed_tokens.weight  # (V, D)
    top, index = logits.topk(k, dim=-1)  # (N, k)
    probs = top.softmax(-1).to(weight.dtype)  # (N, k)
    return torch.einsum("nk,nkd->nd", probs, weight[index]) * decoder.embed_scale.to(weight.dtype)


def format_editor(report: dict) -> str:
    rows = [
        f"editor's case: fresh file against a warm prefix (the keystroke before cached, {report['keystroke_chars']} "
        "character less), every variant in turn on each case",
        "| variant | case | shape | p50 ms | p95 ms | passes | ms a pass | first shown p50 ms (cases shown) | exact match |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, kinds in report["rows"].items():
        for kind, groups in kinds.items():
            for group, s in groups.items():
                rows.append(
                    f"| {name} | {kind} | {group} | {s['p50_ms']} | {s['p95_ms']} | {s['passes']} | "
                    f"{s['ms_per_pass']} | {s['first_shown_p50_ms'] or '-'} ({s['shown']}) | {s['exact_match']:.1%} |"
                )
    ratios = report.get("ratios", {})
    if ratios:
        rows.append("\ndiffusion p50 over AR's: " + "; ".join(f"{k} {v}x" for k, v in ratios.items()))
    costs = report.get("pass_costs")
    if costs:
        rows.append(f"\none pass at C=16 after 200 cached tokens, median ms (vocabulary {costs['vocab']}):")
        rows += [f"* {name}: {ms}" for name, ms in costs.items() if name != "vocab"]
    return "\n".join(rows)


def ratios(report: dict) -> dict:
    """Each diffusion variant's p50 over AR's, per case kind and shape group."""
    out = {}
    ar = report["rows"].get(AR)
    if not ar:
        return out
    for name in (n for n in (DIFFUSION, CACHED, CONFIDENT, LLAMACPP) if n in report["rows"]):
        for kind in ("fresh", "warm"):
            for group in SHAPE_GROUPS:
                base = ar[kind][group]["p50_ms"]
                out[f"{name}, {kind}, {group}"] = round(
                    report["rows"][name][kind][group]["p50_ms"] / max(base, 1e-9), 2
                )
    return out


def main(
    model_dir: str | None, ar_dir: str | None, cases: dict[str, list[InfillExample]], quick: bool
) -> dict:
    report = bench_editor(model_dir, ar_dir, cases)
    report["ratios"] = ratios(report)
    report["pass_costs"] = pass_costs(model_dir, repeats=20 if quick else 200)
    return report
