"""vLLM's canvas-seeding contract (vLLM pull request #57250): difill's own canvas on a vLLM server.

Released vLLM serves DiffusionGemma but starts every canvas from noise, so the code after the
cursor is not clamped.  A build with #57250 takes, in ``vllm_xargs`` of ``POST /v1/completions``:

* ``diffusion_seed_canvas``: exactly canvas-length token ids, each in ``[0, vocab)``;
* ``diffusion_pinned``: in-canvas positions held at their seed value on every denoise step
  (needs a seed canvas);
* ``diffusion_canvas_length``: at most the served canvas; a smaller one needs the server to run
  with ``--async-scheduling``;
* ``diffusion_max_steps``: an int > 0 (difill's ``steps``);
* ``diffusion_samples``: at most 32 canvases from one request (needs a seed canvas and pins);
* ``diffusion_read_only``: ``ignore_eos`` and ``max_tokens`` capped, so one whole canvas comes back.

difill lays out the canvas as its local engine does (engine/canvas.py): noise in every hole -
DiffusionGemma has no mask token - and the known text (the nearest suffix, the text between
holes, the kept share of a rewritten selection) pinned.  Each answer choice's ``token_ids`` is
checked before any text is shown: the length that was sent, ids inside the vocabulary, every
pinned slot unchanged.  Only the holes' slots become text, so a shown middle can never hold a
changed copy of the suffix: a fill's middle is the answer's own text up to where the pinned
suffix's text begins, when it begins there only, else the server's ``/detokenize`` of the hole.

Tokenization goes through the server's ``/tokenize`` and ``/detokenize`` (its tokenizer is the
model's), cached per text window: while the user types, the text after the cursor stays the same,
so a keystroke costs one request, the completion.

How a refusal is taken depends on ``mode`` (the ``remoteCanvas`` setting): ``"auto"`` remembers
that the server does not keep the contract and lets the caller use the plain OpenAI path from then
on; ``"seeded"`` makes it an error that says what to run.  engine/backends/openai_remote.py owns
the plain path and the choice between the two.
"""

from __future__ import annotations

import random
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from difill.engine.api import (
    BackendError,
    Candidate,
    FillOptions,
    FillResult,
    FillStats,
    HolesResult,
    RewriteRequest,
)
from difill.engine.backends.transport import HttpStatusError
from difill.text.instruction import with_instruction_comment
from difill.text.rules import with_middles

CANVAS_MODES = ("auto", "seeded", "plain")
CANVAS_SIZES = (32, 64, 128, 256)  # a request's canvas is rounded up to one of these (few shapes to compile)
MAX_SAMPLES = 32  # #57250's bound on diffusion_samples
CACHE_ENTRIES = 256  # tokenized text windows (and detokenized middles) kept
CACHE_BYTES = 4 * 1024 * 1024  # and at most this much of them (ids counted at ID_BYTES each)
ID_BYTES = 36  # a list slot and a small int object
SPECIAL_TOKEN_SLACK = 8  # ids a tokenizer may add beyond one per byte (markers)
MAX_CHARS_PER_TOKEN = 1024  # a /detokenize answer longer than this per id is not a detokenization
CHARS_PER_TOKEN_BOUND = 8  # a suffix window this many characters per wanted token holds enough tokens
CONTRACT = "vLLM pull request #57250"

Post = Callable[[str, dict, Any], Any]  # (path, body, should_stop) -> the JSON answer
Segment = int | list[int]  # a hole of that many noise slots, or ids pinned as they are


class ContractRefused(Exception):
    """The server does not keep the canvas-seeding contract; ``str(err)`` says how it showed it."""


class SmallCanvasRefused(Exception):
    """The server refused a canvas shorter than its own (it runs without --async-scheduling)."""


class CanvasTooLong(Exception):
    """The server refused the canvas length: its own canvas is shorter than difill assumed."""


@dataclass
class Answered:
    ids: list[int]  # (L,) the denoised canvas, checked against the seed
    text: str | None  # the server's own detokenization of it (the choice's text), if it sent one


@dataclass
class SeededCanvas:
    ids: list[int]  # (L,) the seed: noise in holes and free slots, known ids where pinned
    pinned: list[int]  # positions held at their seed value, ascending
    holes: list[tuple[int, int]]  # [start, end) of each hole, in order

    @property
    def length(self) -> int:
        return len(self.ids)


def canvas_size(needed: int, served: int, small_ok: bool) -> int:
    """The canvas length to send: ``needed`` rounded up to one of CANVAS_SIZES, at most ``served``."""
    if not small_ok:
        return served
    return next((size for size in CANVAS_SIZES if needed <= size <= served), served)


def lay_out(segments: Sequence[Segment], length: int, vocab_size: int, seed: int) -> SeededCanvas:
    """Segments left to right in ``length`` slots; pinned text that does not fit is cut (the far
    end of the suffix); the free slots after the last segment are noise, not pinned."""
    generator = random.Random(seed)  # seeded noise: a request is reproducible
    ids = [generator.randrange(vocab_size) for _ in range(length)]
    pinned: list[int] = []
    holes: list[tuple[int, int]] = []
    at = 0
    for segment in segments:
        if isinstance(segment, int):
            size = min(segment, length - at)
            if size <= 0:
                raise BackendError(
                    f"a canvas of {length} slots has no room for hole {len(holes) + 1}; fill fewer or "
                    "shorter holes at once"
                )
            holes.append((at, at + size))
            at += size
        else:
            kept = segment[: length - at]
            ids[at : at + len(kept)] = kept
            pinned.extend(range(at, at + len(kept)))
            at += len(kept)
    return SeededCanvas(ids, pinned, holes)


def seeded_xargs(canvas: SeededCanvas, served: int, steps: int, samples: int) -> dict[str, Any]:
    """The request's ``vllm_xargs``; ``diffusion_canvas_length`` only when shorter than served."""
    xargs: dict[str, Any] = {
        "diffusion_seed_canvas": canvas.ids,
        "diffusion_pinned": canvas.pinned,
        "diffusion_max_steps": max(1, steps),
        "diffusion_read_only": True,
    }
    if canvas.length < served:
        xargs["diffusion_canvas_length"] = canvas.length
    if samples > 1:
        xargs["diffusion_samples"] = min(samples, MAX_SAMPLES)
    return xargs


def answered_canvases(answer: Any, sent: SeededCanvas, vocab_size: int, where: str) -> list[Answered]:
    """Every choice's denoised canvas, checked against what was sent.

    ContractRefused when the answer shows the seed was not kept (no ``token_ids``, another length,
    a pinned slot changed: a server that ignores ``vllm_xargs`` answers like that); BackendError
    for ids no tokenizer of this model has.
    """
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not choices:
        raise BackendError(f"{where} answered a seeded canvas without 'choices'")
    out = []
    for number, choice in enumerate(choices):
        ids = choice.get("token_ids") if isinstance(choice, dict) else None
        if not isinstance(ids, list):
            raise ContractRefused("its answer has no token_ids: it does not return the canvas")
        if len(ids) != sent.length:
            raise ContractRefused(f"it answered a canvas of {len(ids)} ids for one of {sent.length}")
        if not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab_size for t in ids):
            raise BackendError(
                f"{where} answered token ids outside the vocabulary [0, {vocab_size}) in sample "
                f"{number + 1}; nothing of it is shown. Is the server's model the one difill expects?"
            )
        changed = [p for p in sent.pinned if ids[p] != sent.ids[p]]
        if changed:
            raise ContractRefused(f"it changed {len(changed)} pinned slot(s), first at position {changed[0]}")
        text = choice.get("text")
        out.append(Answered(ids, text if isinstance(text, str) else None))
    return out


class TokenCache:
    """The server's /tokenize and /detokenize, remembered per text (LRU): typing re-sends nothing.

    A hostile or broken server's answer must not fill memory: a /tokenize answer with more ids
    than its text has bytes (+ a few for a tokenizer's markers) is refused, and each cache holds
    at most ``CACHE_ENTRIES`` entries and ``CACHE_BYTES`` (3 million ids for a short window, once
    kept whole per entry, grew the process by 24 MB a fill)."""

    def __init__(self, post: Post, model: Callable[[Any], str]) -> None:
        self._post = post
        self._model = model
        self._ids = _Bounded()
        self._texts = _Bounded()

    def tokenize(self, text: str, should_stop) -> list[int]:
        if text == "":
            return []
        ids = self._ids.get(text)
        if ids is None:
            body = {"model": self._model(should_stop), "prompt": text, "add_special_tokens": False}
            answer = self._post("/tokenize", body, should_stop)
            tokens = answer.get("tokens") if isinstance(answer, dict) else None
            if not isinstance(tokens, list) or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in tokens
            ):
                raise ContractRefused("its /tokenize answer has no list of token ids")
            most = len(text.encode("utf-8", "replace")) + SPECIAL_TOKEN_SLACK
            if len(tokens) > most:
                raise ContractRefused(
                    f"its /tokenize answer has {len(tokens)} ids for a text of {most - SPECIAL_TOKEN_SLACK} "
                    "bytes: no tokenizer gives more ids than bytes"
                )
            ids = tokens
            self._ids.put(text, ids, ID_BYTES * len(ids) + len(text))
        return ids

    def detokenize(self, ids: list[int], should_stop) -> str:
        if not ids:
            return ""
        key = tuple(ids)
        text = self._texts.get(key)
        if text is None:
            body = {"model": self._model(should_stop), "tokens": ids}
            answer = self._post("/detokenize", body, should_stop)
            text = answer.get("prompt") if isinstance(answer, dict) else None
            if not isinstance(text, str):
                raise ContractRefused("its /detokenize answer has no 'prompt' text")
            if len(text) > MAX_CHARS_PER_TOKEN * len(ids):
                raise ContractRefused(f"its /detokenize answer has {len(text)} characters for {len(ids)} ids")
            self._texts.put(key, text, ID_BYTES * len(ids) + len(text))
        return text


class _Bounded:
    """An LRU of at most CACHE_ENTRIES entries and CACHE_BYTES bytes (as the caller counts them)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self.bytes = 0

    def get(self, key: Any) -> Any:
        found = self._entries.get(key)
        if found is None:
            return None
        self._entries.move_to_end(key)
        return found[0]

    def put(self, key: Any, value: Any, size: int) -> None:
        if size > CACHE_BYTES:
            return  # used once, never kept
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        self._entries[key] = (value, size)
        self.bytes += size
        while len(self._entries) > CACHE_ENTRIES or self.bytes > CACHE_BYTES:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.bytes -= dropped

    def __len__(self) -> int:
        return len(self._entries)


class SeededCanvasClient:
    """Fills, holes and rewrites as seeded canvases on a #57250 server.

    Each method returns None when the contract is off (``plain``, or ``auto`` after a refusal,
    remembered in ``refused``): the caller then takes the plain path.
    """

    def __init__(
        self,
        post: Post,
        model: Callable[[Any], str],
        where: str,
        mode: str,
        canvas_length: int,
        vocab_size: int,
    ) -> None:
        if mode not in CANVAS_MODES:
            raise BackendError(f"unknown remote canvas mode {mode!r}; use one of {', '.join(CANVAS_MODES)}")
        self._post = post
        self._model = model
        self.where = where
        self.mode = mode
        self.served_length = canvas_length  # the server's canvas (vLLM --diffusion-config canvas_length)
        self.vocab_size = vocab_size  # noise ids are drawn below this; answers are checked against it
        self.tokens = TokenCache(post, model)
        self.refused: str | None = None  # why the server does not keep the contract (auto mode)
        self.small_refused: str | None = None  # why it wants its full canvas every time
        self.used = False  # a seeded request has been answered

    @property
    def active(self) -> bool:
        return self.mode == "seeded" or (self.mode == "auto" and self.refused is None)

    def describe(self) -> str:
        """Which path fills take, for the status line."""
        if self.mode == "plain":
            return "plain OpenAI path (remoteCanvas: plain)"
        if self.refused is not None:
            return f"plain OpenAI path: the server does not keep {CONTRACT}'s seeded canvas ({self.refused})"
        if not self.used:
            return f"seeded canvas ({CONTRACT}) to be tried on the first fill"
        size = "the full canvas" if self.small_refused else "canvases sized to each request"
        return f"seeded canvas ({CONTRACT}), {size}, at most {self.served_length} slots"

    # ------------------------------------------------------------------ requests

    def fill(self, prefix: str, suffix: str, options: FillOptions, should_stop) -> FillResult | None:
        def run() -> FillResult:
            started = time.perf_counter()
            hole = max(options.candidate_lengths())
            samples = len(options.candidate_lengths())  # an invoked request: one sample per candidate
            suffix_ids = self._suffix_ids(suffix, options.suffix_tokens, should_stop)
            canvas, answers = self._denoise(prefix, [hole, suffix_ids], options, samples, should_stop)
            start, end = canvas.holes[0]
            pinned_text = self.tokens.detokenize(suffix_ids, should_stop)  # cached while typing
            texts = [self._hole_text(a, (start, end), pinned_text, should_stop) for a in answers]
            candidates = [Candidate(text, end - start, 0.0, False) for text in texts if text]
            stats = FillStats(hole_tokens=end - start, hole_length=end - start, candidates=len(candidates))
            stats.total_ms = (time.perf_counter() - started) * 1000
            return FillResult(candidates[0].text if candidates else "", candidates, stats)

        return self._guarded(run)

    def fill_holes(self, text: str, marker: str, options: FillOptions, should_stop) -> HolesResult | None:
        def run() -> HolesResult:
            started = time.perf_counter()
            parts = text.split(marker)
            if len(parts) < 2:
                return HolesResult([], text, FillStats())
            segments: list[Segment] = []
            for between in parts[1:-1]:  # each hole, then the text up to the next one, pinned
                segments += [options.max_hole_tokens, self.tokens.tokenize(between, should_stop)]
            suffix_ids = self._suffix_ids(parts[-1], options.suffix_tokens, should_stop)
            segments += [options.max_hole_tokens, suffix_ids]
            canvas, answers = self._denoise(parts[0], segments, options, 1, should_stop)
            middles = [self.tokens.detokenize(answers[0].ids[a:b], should_stop) for a, b in canvas.holes]
            stats = FillStats(hole_tokens=sum(b - a for a, b in canvas.holes), candidates=1)
            stats.total_ms = (time.perf_counter() - started) * 1000
            return HolesResult(middles, with_middles(text, marker, middles), stats)

        return self._guarded(run)

    def rewrite(self, request: RewriteRequest, options: FillOptions, should_stop) -> FillResult | None:
        """A share ``request.strength`` of the selection's slots renoised, the rest pinned at their
        tokens, as the local engine's rewrite; a few spare noise slots after it let the rewrite grow."""

        def run() -> FillResult:
            started = time.perf_counter()
            strength_ = min(1.0, max(0.0, request.strength))
            prompt = request.prefix
            if request.instruction:
                prompt = with_instruction_comment(
                    request.prefix, request.selection, request.instruction, options.language
                )
            original = self.tokens.tokenize(request.selection, should_stop)
            hole = max(1, len(original) + max(4, len(original) // 4))
            suffix_ids = self._suffix_ids(request.suffix, options.suffix_tokens, should_stop)
            generator = random.Random(options.seed)
            kept = [i for i in range(len(original)) if generator.random() >= strength_]

            def keep_share(canvas: SeededCanvas) -> SeededCanvas:
                start, end = canvas.holes[0]
                slots = [i for i in kept if start + i < end]
                for i in slots:
                    canvas.ids[start + i] = original[i]
                canvas.pinned = sorted(canvas.pinned + [start + i for i in slots])
                return canvas

            canvas, answers = self._denoise(prompt, [hole, suffix_ids], options, 1, should_stop, keep_share)
            start, end = canvas.holes[0]
            text = self.tokens.detokenize(answers[0].ids[start:end], should_stop)
            stats = FillStats(hole_tokens=end - start, hole_length=end - start, candidates=1)
            stats.total_ms = (time.perf_counter() - started) * 1000
            return FillResult(text, [Candidate(text, end - start, 0.0, False)] if text else [], stats)

        return self._guarded(run)

    # ------------------------------------------------------------------ steps

    def _guarded(self, run: Callable[[], Any]) -> Any | None:
        """``run()``, or None once the server shows it does not keep the contract (auto mode)."""
        if not self.active:
            return None
        try:
            result = run()
        except ContractRefused as err:
            return self._refused(str(err))
        except HttpStatusError as err:
            if err.status not in (400, 404, 422):  # 500, 503...: this fill fails, the path stays
                raise
            return self._refused(f"HTTP {err.status}: {err.detail}")
        self.used = True
        return result

    def _refused(self, reason: str) -> None:
        if self.mode == "seeded":
            raise BackendError(
                f"{self.where} does not take difill's seeded canvas ({reason}). It needs a vLLM build with "
                f"{CONTRACT} (docs/remote.md); set remoteCanvas to auto or plain to use the chat path."
            )
        self.refused = reason
        return None

    def _hole_text(self, answer: Answered, hole: tuple[int, int], pinned_text: str, should_stop) -> str:
        """The text of a hole at the canvas's start, followed by the pinned suffix: cut from the
        server's own text of the canvas where the suffix's text begins, when it begins there only
        (no round trip), else the server's /detokenize of the hole's ids."""
        if answer.text and pinned_text and answer.text.count(pinned_text) == 1:
            return answer.text[: answer.text.index(pinned_text)]
        return self.tokens.detokenize(answer.ids[hole[0] : hole[1]], should_stop)

    def _suffix_ids(self, suffix: str, tokens: int, should_stop) -> list[int]:
        """The suffix's first ``tokens`` ids, tokenized from a window of whole lines (cached)."""
        if tokens <= 0:
            return []
        window = suffix
        cut = len(suffix) > tokens * CHARS_PER_TOKEN_BOUND
        if cut:  # end the window at a line end, so that it stays the same while the user types
            newline = suffix.find("\n", tokens * CHARS_PER_TOKEN_BOUND)
            window = suffix[: newline + 1] if newline >= 0 else suffix[: tokens * CHARS_PER_TOKEN_BOUND * 2]
            cut = len(window) < len(suffix)
        ids = self.tokens.tokenize(window, should_stop)
        # A window cut mid-line may end mid-token: its last id may not be the document's.
        return ids[:tokens] if len(ids) > tokens or not cut else ids[:-1]

    def _denoise(
        self, prompt: str, segments: list[Segment], options: FillOptions, samples: int, should_stop,
        adjust: Callable[[SeededCanvas], SeededCanvas] = lambda canvas: canvas,
    ) -> tuple[SeededCanvas, list[Answered]]:  # fmt: skip
        """The canvas sent and the canvases answered.  A small canvas refused for want of
        --async-scheduling is retried full; a canvas longer than the server's, at the next size
        down (the server's canvas is then known to be at most that)."""
        needed = sum(s if isinstance(s, int) else len(s) for s in segments)
        refusal = None  # a small canvas refused: the full one is tried, and remembered if taken
        while True:
            small_ok = self.small_refused is None and refusal is None
            length = canvas_size(needed, self.served_length, small_ok)
            canvas = adjust(lay_out(segments, length, self.vocab_size, options.seed))
            try:
                answers = self._complete(prompt, canvas, options, samples, should_stop)
            except SmallCanvasRefused as err:
                refusal = str(err)
                continue
            except CanvasTooLong as err:  # the served canvas is shorter: the next size down, kept
                smaller = [size for size in CANVAS_SIZES if size < length]
                if not smaller:
                    raise ContractRefused(str(err)) from None
                self.served_length = smaller[-1]
                continue
            if refusal is not None:
                self.small_refused = refusal  # the full canvas was taken: send it from now on
            return canvas, answers

    def _complete(self, prompt: str, canvas: SeededCanvas, options: FillOptions, samples: int, should_stop):
        body = {
            "model": self._model(should_stop), "prompt": prompt, "max_tokens": canvas.length,
            "temperature": 0, "seed": options.seed, "n": 1, "stream": False, "return_token_ids": True,
            "vllm_xargs": seeded_xargs(canvas, self.served_length, options.max_steps, samples),
        }  # fmt: skip
        try:
            answer = self._post("/v1/completions", body, should_stop)
        except HttpStatusError as err:
            said, why = err.detail.lower(), f"HTTP {err.status}: {err.detail}"
            if err.status in (400, 422) and "canvas_length" in said:
                if "async" in said and canvas.length < self.served_length:
                    raise SmallCanvasRefused(why) from None
                raise CanvasTooLong(why) from None
            raise
        return answered_canvases(answer, canvas, self.vocab_size, f"{self.where}/v1/completions")
