"""Timers around the parts of one ghost-text fill, for `difill bench --profile` (lab/bench_profile.py).

Nothing here is in the engine: ``instrumented(engine)`` wraps, for as long as it is entered,

* the engine's tokenizer calls (the module globals engine/infill.py calls them by), its prefix
  encode and its denoising loop, as instance or module attributes, restored on exit;
* each decoder pass's modules with forward hooks (embedding, self-conditioning, rotary positions,
  each layer's attention, MLP and MoE, the final norm), live only inside the denoising loop, so the
  encoder's passes (which share the embedding) are not counted;
* the pass's own methods on each CanvasDecoder the engine makes (the LM head over the open slots,
  the next pass's self-conditioning input).

What the loop spends outside the timed modules is the sampler's (bans, softmax, entropy,
acceptance, renoising, in NumPy on the host).  A part is inclusive of what it calls: "attention" is the
q/k/v/o projections, their norms, rotary application and sdpa; "layer norms and residuals" is a
layer's time less its attention, MLP and MoE.  Timers cost a few microseconds each (the profile
reports the fill's total with and without them).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

import difill.engine.infill as infill_module
import difill.server.suggestion_path as path_module

TOKENIZER_CALLS = ("encode_prefix_window", "encode_suffix_window", "block_tokens", "draft_tokens", "encode")
# Per-step parts, in the order a pass runs them; "sampler" is the loop's time outside them.
STEP_PARTS = (
    "embedding", "self-conditioning MLP", "rotary", "attention", "MLP", "MoE",
    "layer norms and residuals", "final norm", "LM head", "self-conditioning input", "sampler",
)  # fmt: skip


class Recorder:
    """Milliseconds per part for the fill being timed (``reset`` between fills)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = defaultdict(float)
        self.in_denoise = False
        self.steps = 0
        self.slots = 0  # canvas slots (B x L) summed over passes
        self.open_slots = 0  # open slots summed over passes (the LM head's rows)
        self.settled: int | None = None  # the first pass whose best text was the final text

    def reset(self) -> None:
        self.ms = defaultdict(float)
        self.steps = self.slots = self.open_slots = 0
        self.settled = None

    def timed(self, part: str, fn: Callable, only_in_denoise: bool = False) -> Callable:
        def wrapper(*args, **kwargs):
            if only_in_denoise and not self.in_denoise:
                return fn(*args, **kwargs)
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.ms[part] += (time.perf_counter() - started) * 1000

        return wrapper


def _hook_module(recorder: Recorder, module: Any, part: str) -> list:
    """Forward pre/post hooks adding ``module``'s time to ``part`` while the loop runs."""
    started: list[float] = []

    def before(_module, _args):
        if recorder.in_denoise:
            started.append(time.perf_counter())

    def after(_module, _args, _output):
        if recorder.in_denoise and started:
            recorder.ms[part] += (time.perf_counter() - started.pop()) * 1000

    return [module.register_forward_pre_hook(before), module.register_forward_hook(after)]


def hook_decoder(recorder: Recorder, decoder: Any) -> list:
    handles = _hook_module(recorder, decoder.embed_tokens, "embedding")
    handles += _hook_module(recorder, decoder.self_conditioning, "self-conditioning MLP")
    handles += _hook_module(recorder, decoder.rotary_emb, "rotary")
    handles += _hook_module(recorder, decoder.norm, "final norm")
    for layer in decoder.layers:
        handles += _hook_module(recorder, layer, "_layer")
        handles += _hook_module(recorder, layer.self_attn, "attention")
        handles += _hook_module(recorder, layer.mlp, "MLP")
        handles += _hook_module(recorder, layer.router, "MoE")
        handles += _hook_module(recorder, layer.experts, "MoE")
    return handles


@contextmanager
def instrumented(engine: Any, recorder: Recorder) -> Iterator[Recorder]:
    """``engine`` (an InfillEngine) and the suggestion path timed into ``recorder`` while entered."""
    saved_globals: list[tuple[Any, str, Any]] = []

    def patch(module: Any, name: str, part: str) -> None:
        original = getattr(module, name)
        saved_globals.append((module, name, original))
        setattr(module, name, recorder.timed(part, original))

    for name in TOKENIZER_CALLS:
        patch(infill_module, name, "tokenize")
    patch(path_module, "shown_texts", "pipeline")
    denoise = infill_module.denoise
    saved_globals.append((infill_module, "denoise", denoise))
    infill_module.denoise = timed_denoise(engine, recorder, denoise)
    engine._decoder = timed_decoder(recorder, engine._decoder)
    engine._decode = recorder.timed("tokenize", engine._decode)
    engine.prefix_cache.encode = recorder.timed("prefix encode", engine.prefix_cache.encode)
    engine.fill = recorder.timed("_fill", engine.fill)
    handles = hook_decoder(recorder, engine.model.model.decoder)
    try:
        yield recorder
    finally:
        for handle in handles:
            handle.remove()
        for name in ("_decoder", "_decode", "fill"):
            delattr(engine, name)  # the class's own method again
        del engine.prefix_cache.encode
        for module, name, original in reversed(saved_globals):
            setattr(module, name, original)


def timed_denoise(engine: Any, recorder: Recorder, denoise: Callable) -> Callable:
    """engine/infill.py's ``denoise``, timed into ``recorder``, and each pass's best canvas kept
    to find the pass the fill settled at."""

    def timed(decoder, request, config, noise, should_stop=None, on_step=None):
        hole = np.flatnonzero(~request.clamp_mask[0])  # (H,) row 0's hole slots
        bests: list = []

        def kept(step, best):  # each pass's best canvas, row 0's hole; its time is the bench's
            started = time.perf_counter()
            bests.append(best[0, hole].copy())
            if on_step is not None:
                on_step(step, best)
            recorder.ms["_preview"] += (time.perf_counter() - started) * 1000

        recorder.in_denoise = True
        started = time.perf_counter()
        try:
            result = denoise(decoder, request, config, noise, should_stop, kept)
        finally:
            recorder.in_denoise = False
            recorder.ms["_denoise"] += (time.perf_counter() - started) * 1000
        recorder.steps += result.steps
        recorder.settled = settled_pass(result, request, hole, bests, engine.ids.filler)
        return result

    return timed


def timed_decoder(recorder: Recorder, make_decoder: Callable) -> Callable:
    """The engine's ``_decoder``, its CanvasDecoders' LM head and self-conditioning input timed
    (and the LM head's slots counted) into ``recorder``."""

    def timed(cache, request, config):
        decoder = make_decoder(cache, request, config)
        logits = decoder.logits

        def counted_logits(hidden):
            recorder.slots += request.canvas.size
            recorder.open_slots += hidden.shape[0]
            return logits(hidden)

        decoder.logits = recorder.timed("LM head", counted_logits, only_in_denoise=True)
        decoder.soft_embeddings = recorder.timed(
            "self-conditioning input", decoder.soft_embeddings, only_in_denoise=True
        )
        return decoder

    return timed


def settled_pass(result: Any, request: Any, hole: Any, bests: list, filler: tuple[int, ...]) -> int | None:
    """The first pass (1-based) whose best canvas already held row 0's final middle, as the engine
    returns it: its tokens up to the filler, cut at the first unsure one (``confident_length``).
    A middle ended by the filler must end there too; a cut one need only start the pass's text.
    None: no middle to compare (empty, or row 0 left open when a draft row was verified)."""
    if result.done is not None and not bool(result.done[0]):
        return None

    def middle(ids) -> list[int]:  # (H,) -> the tokens up to the first filler
        tokens = ids.tolist()
        ends = [i for i, token in enumerate(tokens) if token in filler]
        return tokens[: ends[0]] if ends else tokens

    tokens = middle(result.canvas[0, hole])
    min_prob = math.exp(request.cut_below) if request.cut_below is not None else 0.0
    sure = infill_module.confident_length(result, 0, int(hole[0]), len(tokens), min_prob)
    final, complete = tokens[:sure], sure == len(tokens) and len(tokens) < len(hole)
    if not final:
        return None
    for k, best in enumerate(bests, 1):
        text = middle(best)
        if text == final or (not complete and text[: len(final)] == final):
            return k
    return None


def step_split(ms: dict[str, float]) -> dict[str, float]:
    """A fill's recorded times -> the denoising loop's parts (STEP_PARTS), ms summed over its passes."""
    out = {part: ms.get(part, 0.0) for part in STEP_PARTS}
    inner = ms.get("attention", 0.0) + ms.get("MLP", 0.0) + ms.get("MoE", 0.0)
    out["layer norms and residuals"] = max(0.0, ms.get("_layer", 0.0) - inner)
    model = sum(v for k, v in out.items() if k != "sampler")
    out["sampler"] = max(0.0, ms.get("_denoise", 0.0) - model - ms.get("_preview", 0.0))
    return out
