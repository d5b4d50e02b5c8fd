"""Fill the middle: prefix -> KV cache, hole + clamped suffix -> canvas -> denoise -> middles.

``InfillEngine`` is the in-process backend (engine/api.py ``InfillBackend``).  It owns the model, a
prefix cache and a lock (one fill at a time on one model); it is safe to call from worker threads.
It reads and writes LF text and returns the middles as the model wrote them, best first by the
model's own judgement; text/pipeline.py makes them fit the document.
"""

from __future__ import annotations

import math
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from difill.engine.api import (
    DEFAULT_HOLE_MARKER,
    HOLE_TOKENS,
    About,
    Cancelled,
    Candidate,
    FillOptions,
    FillResult,
    FillStats,
    HolesResult,
    PreviewCallback,
    RewriteRequest,
    ShouldStop,
    check_canvas,
    model_order,
)
from difill.engine.canvas import Canvas, Segment, build_canvas, hole_tokens, seeded_canvas, used_length
from difill.engine.model import LoadedModel, checkpoint_drafts, difill_meta
from difill.engine.name_scores import (
    MAX_NAME_TOKENS,
    name_scores,
    names_canvas,
    split_partial_word,
    word_continuing,
)
from difill.engine.noise import Noise
from difill.engine.sampler import DenoiseRequest, DenoiseResult, denoise
from difill.engine.sampler_config import SamplerConfig, sampler_config
from difill.engine.slot_rules import log_softmax
from difill.engine.steps import StepCallback, Steps, one_call_per_step
from difill.engine.tokens import (
    block_tokens,
    draft_tokens,
    encode,
    encode_prefix_window,
    encode_suffix_window,
)
from difill.text.instruction import with_instruction_comment
from difill.text.rules import with_middles

if TYPE_CHECKING:  # the torch forwards: imported where they run, so the llama.cpp engine never loads them
    from difill.engine.decoder import CanvasDecoder

WORD_END = re.compile(r"[A-Za-z0-9_]$")


def about_checkpoint(engine: str, loaded: LoadedModel, one_fill_state: bool = False) -> About:
    """What an in-process engine on ``loaded`` is (InfillBackend.about): it scores names, and
    its checkpoint says where it is, its languages and its drafts mode."""
    return About(
        engine, str(loaded.path), tuple(loaded.languages), checkpoint_drafts(loaded.config),
        one_fill_state, scores_names=True, show_gate=bool(difill_meta(loaded.config).get("show_gate", False)),
    )  # fmt: skip


class InfillEngine:
    engine = "torch"  # About.engine: the subclasses that run the passes elsewhere say theirs
    one_fill_state = False  # About.one_fill_state

    def about(self) -> About:
        return about_checkpoint(self.engine, self.loaded, self.one_fill_state)

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer
        self.ids = loaded.ids
        if self.model is not None:  # the torch forwards' cache; an engine without a model sets its own
            from difill.engine.prefix_cache import PrefixCache  # transformers' modeling code: seconds

            self.prefix_cache: PrefixCache = PrefixCache(self.model)
        # Reentrant: the server may run a ghost-text fill between two steps of a long edit, on the
        # same thread (server/engine_host.py); that fill's prefix cache work leaves the edit's own
        # copy of the cache alone (expand_cache copies every layer).
        self.lock = threading.RLock()
        self._banned = np.array(self.ids.banned_in_hole, dtype=np.int64)  # (K,)
        self._word_continuing: np.ndarray | None = None  # (V,) built on the first score_names

    # ------------------------------------------------------------------ public API

    def fill(
        self,
        prefix: str,
        suffix: str,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,
    ) -> FillResult:
        """The middle between ``prefix`` and ``suffix``; raises Cancelled if ``should_stop()`` turns true.

        Out of memory degrades instead of failing: the fill is retried with one, shorter candidate.
        """
        options = options or FillOptions()
        try:
            return self._fill(prefix, suffix, options, should_stop, on_preview)
        except Exception as error:
            if not self._out_of_memory(error):
                raise
            smaller = replace(
                options,
                hole_candidates=(max(1, max(options.candidate_lengths()) // 2),),
                suffix_tokens=max(1, options.suffix_tokens // 2),
            )
            return self._fill(prefix, suffix, smaller, should_stop, on_preview)

    def _out_of_memory(self, error: Exception) -> bool:
        """Whether ``error`` is torch's out of memory (only the torch engine's forwards raise it);
        then the prefix cache and the accelerator's cached blocks are freed for the retry."""
        torch = sys.modules.get("torch")
        if torch is None or not isinstance(error, torch.OutOfMemoryError):
            return False
        self.prefix_cache.clear()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return True

    def _fill(self, prefix, suffix, options: FillOptions, should_stop, on_preview) -> FillResult:
        started = time.perf_counter()
        budget = self._prefix_budget(options)
        block = block_tokens(self.tokenizer, options.context_block, budget)  # tokenized once per fill
        prefix_ids = self._prefix_ids(prefix, budget, block)
        heal_text, prefix_ids = self._split_heal(prefix, prefix_ids, options.heal)
        lengths = options.candidate_lengths()
        canvases = self._hole_canvases(suffix, lengths, options.suffix_tokens)

        allowed = self._heal_allowed(heal_text) if heal_text else None
        if heal_text and allowed is None:  # no token extends the partial word: give it back to the prefix
            prefix_ids, heal_text = self._prefix_ids(prefix, budget, block), ""
        # Draft rows: the longest hole's canvas, its hole starting from the draft instead of noise.
        seeds = [seeded_canvas(canvases[-1], self._draft_ids(heal_text + d)) for d in options.drafts]
        canvases += [canvas for canvas, _ in seeds]
        seeded = np.stack(
            [np.zeros_like(c.clamp_mask) for c in canvases[: len(lengths)]] + [m for _, m in seeds]
        )
        rows = [(hole, "model") for hole in lengths] + [(lengths[-1], f"draft:{i}") for i in range(len(seeds))]

        min_prob = options.cut_probability(self.loaded.min_token_prob)
        request = replace(
            self._request(canvases),
            slot_allowed=(0, allowed) if allowed is not None else None,
            # the cut ends a monotone loop early; a revising loop re-decides slots, so it has none
            cut_below=math.log(min_prob) if min_prob > 0 and not options.revise else None,
            seeded=seeded if seeds else None,
        )
        steps = one_call_per_step(
            should_stop, on_preview, self._hole_text(canvases[-1].holes[0], heal_text, len(lengths) - 1)
        )
        result, stats = self._encode_and_denoise(prefix_ids, request, options, should_stop, steps)
        candidates = model_order(self._candidates(result, canvases, rows, heal_text, min_prob))

        best = candidates[0] if candidates else None
        stats.hole_length = best.hole_length if best else 0
        stats.draft_rows = len(seeds)
        stats.draft_verified = result.done is not None
        stats.context_tokens = len(block)
        finish_stats(stats, result, len(encode(self.tokenizer, best.text)) if best else 0, started)
        return FillResult(best.text if best else "", candidates, stats)

    def _hole_canvases(self, suffix: str, lengths: Sequence[int], suffix_tokens: int) -> list[Canvas]:
        """One canvas per hole length, all of one width: the hole, then as much of the suffix as
        fits clamped after it (the end of text after it when the whole suffix fits)."""
        canvas_length = max(lengths) + suffix_tokens
        suffix_ids, suffix_complete = encode_suffix_window(self.tokenizer, suffix, canvas_length - min(lengths))
        layouts: list[list[Segment]] = []
        ends: list[bool] = []
        for hole in lengths:
            clamped = suffix_ids[: canvas_length - hole]
            layouts.append([hole, clamped])
            ends.append(
                suffix_complete and len(clamped) == len(suffix_ids) and hole + len(clamped) < canvas_length
            )
        canvas_length = max(used_length(seg, end) for seg, end in zip(layouts, ends, strict=True))
        check_canvas(canvas_length, "the hole")
        return [build_canvas(seg, canvas_length, self.ids, end) for seg, end in zip(layouts, ends, strict=True)]

    def _candidates(
        self,
        result: DenoiseResult,
        canvases: list[Canvas],
        rows: list[tuple[int, str]],
        heal_text: str,
        min_prob: float,
    ) -> list[Candidate]:
        """Each row's middle (``rows``: its hole length and source), cut at its first unsure token,
        the healed partial word taken off its front; a row that does not extend that word is dropped."""
        candidates = []
        for row, (canvas, (hole, source)) in enumerate(zip(canvases, rows, strict=True)):
            if result.done is not None and not result.done[row]:
                continue  # left open when a draft row was verified
            span = canvas.holes[0]
            tokens = hole_tokens(result.canvas[row], span, self.ids.filler)
            sure = confident_length(result, row, span[0], len(tokens), min_prob)
            cut = sure < len(tokens)
            tokens = tokens[:sure]
            raw = self._decode(tokens)
            if heal_text:
                if not raw.startswith(heal_text):
                    continue
                raw = raw[len(heal_text) :]
            score = float(result.token_logprob[row, span[0] : span[1]].mean(dtype=np.float32))
            complete = not cut and len(tokens) < span[1] - span[0]
            candidates.append(Candidate(raw, hole, score, complete, source))
        return candidates

    def fill_holes(
        self,
        text: str,
        marker: str = DEFAULT_HOLE_MARKER,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
    ) -> HolesResult:
        """Fill every ``marker`` in ``text`` in one canvas: each hole's middle, as the model wrote it."""
        options = options or FillOptions(max_hole_tokens=HOLE_TOKENS)
        started = time.perf_counter()
        parts = text.split(marker)
        if len(parts) < 2:
            return HolesResult([], text, FillStats())
        prefix, betweens, suffix = parts[0], parts[1:-1], parts[-1]
        budget = self._prefix_budget(options)
        prefix_ids = self._prefix_ids(prefix, budget)
        segments: list[Segment] = []
        for i in range(len(parts) - 1):
            segments.append(options.max_hole_tokens)
            if i < len(betweens):
                segments.append(encode(self.tokenizer, betweens[i]))
        suffix_ids, complete = encode_suffix_window(self.tokenizer, suffix, options.suffix_tokens)
        segments.append(suffix_ids)
        ends = complete
        length = used_length(segments, ends)
        check_canvas(length, "the holes and the text between them")
        canvas = build_canvas(segments, length, self.ids, ends)
        result, stats = self._encode_and_denoise(prefix_ids, self._request([canvas]), options, should_stop)
        middles = [
            self._decode(hole_tokens(result.canvas[0], span, self.ids.filler)) for span in canvas.holes
        ]
        finish_stats(stats, result, sum(len(encode(self.tokenizer, m)) for m in middles), started)
        return HolesResult(middles, with_middles(text, marker, middles), stats)

    def rewrite(
        self,
        request: RewriteRequest,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,
    ) -> FillResult:
        """Re-denoise ``request.selection`` with its context clamped, starting from its own tokens.

        Like image-to-image: a share ``strength`` (0..1) of the selection's slots is renoised and
        denoised again while the rest stay, so the result stays close to the original.  A few spare
        slots after the selection let the rewrite grow.  An ``instruction`` is written into the
        prefix as a comment in the file's language, the only kind of prompt the default model knows.
        """
        prefix, selection, suffix = request.prefix, request.selection, request.suffix
        instruction = request.instruction
        options = options or FillOptions()
        started = time.perf_counter()
        strength = min(1.0, max(0.0, request.strength))
        if instruction:
            prefix = with_instruction_comment(prefix, selection, instruction, options.language)
        budget = self._prefix_budget(options)
        block = block_tokens(self.tokenizer, options.context_block, budget)
        prefix_ids = self._prefix_ids(prefix, budget, block)
        # Row 0 starts from the selection, each further row from a draft (a whole alternative
        # selection); every row gets the same hole, suffix and renoised slots.
        seeds = [encode(self.tokenizer, selection)] + [self._draft_ids(d) for d in options.drafts]
        base, canvases = self._seeded_rows(seeds, suffix, options.suffix_tokens)
        hole = base.holes[0][1]

        keep = np.zeros(base.length, dtype=bool)  # (L,) original slots kept as they are
        keep[:hole] = Noise(options.seed).uniform(hole) >= strength
        if options.revise is None:  # an edit revises its slots, as the stock sampler does
            options = replace(options, revise=True)
        kept = np.repeat(keep[None], len(canvases), axis=0)  # (B, L): the same slots in every row
        denoise_request = replace(self._request(canvases), initially_committed=kept)
        steps = one_call_per_step(should_stop, on_preview, self._hole_text(base.holes[0], "", 0))
        result, stats = self._encode_and_denoise(prefix_ids, denoise_request, options, should_stop, steps)
        renoised_slots = ~keep[:hole]
        candidates, lengths = self._rewritten(result, canvases, renoised_slots, strength > 0)
        if len(candidates) > 1:  # with drafts: best first by the model's own judgement
            candidates.sort(key=lambda c: c.score, reverse=True)
        stats.hole_length = hole
        stats.draft_rows = len(seeds) - 1
        stats.context_tokens = len(block)
        # per forward: the slots the loop decided (renoised ones), not the ones kept from the original
        finish_stats(stats, result, lengths[candidates[0].source], started, decided=int(renoised_slots.sum()))
        return FillResult(candidates[0].text, candidates, stats)

    def _seeded_rows(self, seeds: list[list[int]], suffix: str, suffix_tokens: int) -> tuple[Canvas, list[Canvas]]:
        """The rewrite's canvas (a hole a quarter longer than the longest seed, at least 4 spare
        slots, then the suffix clamped) and one row per seed, its hole starting from the seed."""
        longest = max(len(seed) for seed in seeds)
        hole = max(1, longest + max(4, longest // 4))
        suffix_ids, suffix_complete = encode_suffix_window(self.tokenizer, suffix, suffix_tokens)
        segments: list[Segment] = [hole, suffix_ids]
        check_canvas(used_length(segments, suffix_complete), "the selection")
        base = build_canvas(segments, used_length(segments, suffix_complete), self.ids, suffix_complete)
        canvases = []
        for seed in seeds:
            ids = base.ids.copy()
            ids[: len(seed)] = seed
            canvases.append(Canvas(ids, base.clamp_mask.copy(), list(base.holes)))
        return base, canvases

    def _rewritten(
        self, result: DenoiseResult, canvases: list[Canvas], renoised_slots: np.ndarray, scored: bool
    ) -> tuple[list[Candidate], dict[str, int]]:
        """Each row's text, scored on its renoised slots (``renoised_slots``: (hole,) bool), with
        the lowest confidence among the slots it changed; and each source's token count."""
        hole = int(renoised_slots.shape[0])
        candidates, lengths = [], {}
        for row, canvas in enumerate(canvases):
            tokens = hole_tokens(result.canvas[row], canvas.holes[0], self.ids.filler)
            logprob = result.token_logprob[row, :hole]
            score = float(logprob[renoised_slots].mean(dtype=np.float32)) if scored else 0.0
            changed = (result.canvas[row, :hole] != canvas.ids[:hole]) & renoised_slots
            # At temperature 1: the schedule's tempered log-probs are ~0 at its end, even for a guess.
            confidence = result.token_confidence[row, :hole]
            change = float(confidence[changed].min()) if changed.any() else None
            source = "model" if row == 0 else f"draft:{row - 1}"
            candidates.append(Candidate(self._decode(tokens), hole, score, len(tokens) < hole, source, change))
            lengths[source] = len(tokens)
        return candidates, lengths

    def score_names(
        self, prefix: str, suffix: str, names: Sequence[str], options: FillOptions | None = None
    ) -> list[float]:
        """Each name's log-probability as the text at the cursor, followed by a word end
        (engine/name_scores.py): the prefix encoded (or its cache reused), then one pass over one
        row.  ``options`` gives the prefix budget, the suffix window, ``context_block`` and the
        noise's seed; the identifier characters ``prefix`` ends with start every name."""
        options = options or FillOptions()
        if not names:
            return []
        prefix, typed = split_partial_word(prefix)
        budget = self._prefix_budget(options)
        block = block_tokens(self.tokenizer, options.context_block, budget)
        prefix_ids = self._prefix_ids(prefix, budget, block)
        tokens = [self._draft_ids(typed + name)[:MAX_NAME_TOKENS] or [self.ids.pad] for name in names]
        suffix_ids, complete = encode_suffix_window(self.tokenizer, suffix, options.suffix_tokens)
        canvas = names_canvas(tokens, suffix_ids, complete, self.ids)
        check_canvas(canvas.length, "the names")
        if self._word_continuing is None:
            self._word_continuing = word_continuing(self.loaded.token_texts())
        request = self._request([canvas])
        hole = canvas.holes[0][1]
        request.canvas[0, :hole] = Noise(options.seed).tokens(self.ids.vocab_size, (hole,))  # (1, L): noise in the hole
        open_slots = (np.zeros(hole, dtype=np.int64), np.arange(hole))  # the hole's slots
        with self.lock:
            encoded = self.prefix_cache.encode(prefix_ids)
            decoder = self._decoder(encoded.cache, request, sampler_config(self.loaded.sampler, options))
            raw = decoder.open_logits(request.canvas, None, open_slots)[:, : self.ids.vocab_size]  # (H, V)
        raw = raw.astype(np.float32)
        raw[:, self._banned] = -np.inf  # a hole never holds these: the sampler bans them too
        logp = np.maximum(log_softmax(raw), np.float32(-1e4))  # (H, V); a top-k pass leaves -inf
        return name_scores(logp, tokens, self._word_continuing)

    # ------------------------------------------------------------------ steps

    def _encode_and_denoise(
        self,
        prefix_ids: list[int],
        request: DenoiseRequest,
        options: FillOptions,
        should_stop: ShouldStop | None,
        steps: Steps | None = None,
    ) -> tuple[DenoiseResult, FillStats]:
        """Prefix -> KV cache (reusing the last one) -> denoised canvases, timed; one fill at a time.
        ``should_stop`` is asked before the encoder, ``steps`` (or ``should_stop``) between steps."""
        with self.lock:
            if should_stop is not None and should_stop():  # superseded before the encoder ran
                raise Cancelled()
            stats = FillStats(prefix_tokens=len(prefix_ids), candidates=int(request.canvas.shape[0]))
            t0 = time.perf_counter()
            encoded = self.prefix_cache.encode(prefix_ids)
            stats.encoder_ms = (time.perf_counter() - t0) * 1000
            stats.reused_prefix_tokens = encoded.reused_tokens
            t0 = time.perf_counter()
            steps = steps or Steps(should_stop)
            result = self._denoise(encoded.cache, request, options, steps.should_stop, steps.on_step)
            stats.decoder_ms = (time.perf_counter() - t0) * 1000
        return result, stats

    def _prefix_budget(self, options: FillOptions) -> int:
        """Prefix tokens a fill reads: the options' budget, capped by what the model was trained to read."""
        return min(options.prefix_tokens or self.loaded.max_prefix_tokens, self.loaded.max_prefix_tokens)

    def _prefix_ids(self, prefix: str, budget: int, block: Sequence[int] = ()) -> list[int]:
        tokens = encode_prefix_window(self.tokenizer, self.ids, prefix, budget, block)
        if not tokens:  # a tokenizer without bos and an empty prefix: cache one newline
            tokens = encode(self.tokenizer, "\n")
        return tokens

    def _draft_ids(self, draft: str) -> list[int]:
        """A draft's tokens, up to the first one a hole may never hold (a special token)."""
        return draft_tokens(self.tokenizer, self.ids, draft)

    def _decode(self, tokens: list[int]) -> str:
        """A middle's text; special tokens never reach the editor, even one the ban list missed."""
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    def _split_heal(self, prefix: str, prefix_ids: list[int], heal: bool) -> tuple[str, list[int]]:
        """Token healing: when the cursor ends a word, hand the prefix's last token to the hole."""
        if not heal or len(prefix_ids) < 2 or not WORD_END.search(prefix):
            return "", prefix_ids
        last = self.tokenizer.decode([prefix_ids[-1]])
        if not last.strip() or not prefix.endswith(last) or not WORD_END.search(last):
            return "", prefix_ids
        return last, prefix_ids[:-1]

    def _heal_allowed(self, heal_text: str) -> np.ndarray | None:
        """(V,) True for tokens that start with the healed text; None if there are none."""
        texts = self.loaded.token_texts()
        allowed = np.array([t.startswith(heal_text) for t in texts], dtype=bool)
        allowed[self._banned] = False
        return allowed if allowed.any() else None

    def _request(self, canvases: Sequence[Canvas]) -> DenoiseRequest:
        """The canvases as one batch, under the engine's bans and filler; a caller adds its own
        rules (token healing, the ghost-text cut, kept or seeded slots)."""
        return DenoiseRequest(
            np.stack([c.ids for c in canvases]),  # (B, L)
            np.stack([c.clamp_mask for c in canvases]),  # (B, L)
            self._banned,
            self.ids.vocab_size,
            filler_id=self.ids.filler[0] if self.ids.filler else None,
        )

    def _denoise(
        self,
        cache,
        request: DenoiseRequest,
        options: FillOptions,
        should_stop: ShouldStop | None,
        on_step: StepCallback | None = None,
    ) -> DenoiseResult:
        """``request`` denoised under the checkpoint's sampler with the options' step cap and seed."""
        config = sampler_config(self.loaded.sampler, options)
        decoder = self._decoder(cache, request, config)
        return denoise(decoder, request, config, Noise(options.seed), should_stop=should_stop, on_step=on_step)

    def _decoder(self, cache, request: DenoiseRequest, config: SamplerConfig) -> CanvasDecoder:
        """The decoder pass for one fill's canvases; engine/batcher.py overrides it to share
        passes, engine/native/engine.py to run them in llama.cpp."""
        from difill.engine.canvas_kv import fill_decoder  # transformers' modeling code: seconds

        rows = request.canvas.shape[0]
        return fill_decoder(self.model, cache, rows, self.ids.vocab_size, config.canvas_cache_refresh)

    def _hole_text(self, span: tuple[int, int], heal_text: str, row: int) -> Callable[[np.ndarray], str]:
        """The text a best canvas (B, L) shows in ``row``'s hole (``span``), the healed part left out."""

        def text(best: np.ndarray) -> str:
            shown = self._decode(hole_tokens(best[row], span, self.ids.filler))
            return shown[len(heal_text) :] if shown.startswith(heal_text) else shown

        return text


def finish_stats(
    stats: FillStats, result: DenoiseResult, middle_tokens: int, started: float, decided: int | None = None
) -> None:
    """What every fill reports once its loop ended: forwards, the middle's tokens, tokens decided
    per forward (``decided``: the slots the loop decided, default the middle's tokens), the time."""
    stats.steps = stats.decoder_forwards = result.steps
    stats.hole_tokens = middle_tokens
    stats.tokens_per_forward = (middle_tokens if decided is None else decided) / max(1, result.steps)
    stats.total_ms = (time.perf_counter() - started) * 1000


def confident_length(result: DenoiseResult, row: int, start: int, count: int, min_prob: float) -> int:
    """How many of a middle's ``count`` tokens (from slot ``start``) precede its first unsure one."""
    if min_prob <= 0 or count == 0:
        return count
    confidence = result.token_confidence[row, start : start + count]  # (count,) log-probs, temperature 1
    unsure = np.flatnonzero(confidence < math.log(min_prob))
    return int(unsure[0]) if len(unsure) else count
