"""vLLM's seeded canvas, as released in vLLM 0.32 and later: difill's own canvas on a vLLM server.

Read from the 0.33.0 wheel (``vllm/utils/diffusion.py`` validates, ``diffusion_gemma.py``
applies): ``POST /v1/completions`` takes, in ``vllm_xargs``:

* ``diffusion_seed_canvas``: exactly canvas-length token ids, each in ``[0, vocab)``;
* ``diffusion_pinned``: in-canvas positions held at their seed value on every denoise step
  (needs a seed canvas);
* ``diffusion_canvas_length``: a positive int, at most the served canvas (``--diffusion-config``);
* ``diffusion_max_steps``: an int > 0 (difill's ``steps``; the server caps it at its own);
* ``diffusion_read_only``: the argmax canvas at the step cap, ``ignore_eos`` and ``max_tokens``
  capped, so one whole canvas comes back (with temperature-1 logprobs when asked);
* ``diffusion_constrained``: the step reads only the request's ``logprob_token_ids``
  (engine/backends/vllm_names.py scores names with it).

Any other key is ignored without a word (the pull request's ``diffusion_samples`` among them):
several samples are the request's ``n``.  The release refuses ``temperature`` other than 1 and
any ``seed`` for a diffusion model (``sampling_params.py``), so difill sends neither: the noise it
lays in the hole is seeded on difill's side, the server's own draws are not.

difill lays out the canvas as its local engine does (engine/canvas.py): noise in every hole -
DiffusionGemma has no mask token - and the known text (the nearest suffix, the text between
holes, the kept share of a rewritten selection) pinned.  Each answer choice's ``token_ids`` is
checked before any text is shown: the length that was sent, ids inside the vocabulary, every
pinned slot unchanged.  Only the holes' slots become text, so a shown middle can never hold a
changed copy of the suffix: a fill's middle is the answer's own text up to where the pinned
suffix's text begins, when it begins there only, else the server's ``/detokenize`` of the hole.

The server's version comes from ``GET /version`` once: older than 0.32, fills take the chat path
(``auto``) and the status says why; an answer that is not a version (404, not JSON, garbage)
leaves it to the first fill to probe, and a version that lies is caught by the same checks of the
answer (a server that ignores ``vllm_xargs`` answers a canvas that does not keep the pins).

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
import re
import time
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
from difill.engine.backends.transport import HttpStatusError, NotJson
from difill.engine.backends.vllm_tokens import ContractRefused, Post, TokenCache
from difill.engine.names import CANVAS_MODES
from difill.text.instruction import with_instruction_comment
from difill.text.rules import with_middles

CANVAS_SIZES = (32, 64, 128, 256)  # a request's canvas is rounded up to one of these (few shapes to compile)
MAX_SAMPLES = 32  # difill's own bound on a request's n (the release allows far more)
CHARS_PER_TOKEN_BOUND = 8  # a suffix window this many characters per wanted token holds enough tokens
MIN_VERSION = (0, 32)  # the first vLLM release with the seeded canvas
CONTRACT = "vLLM 0.32 or later"
VERSION = re.compile(r"v?(\d{1,4})\.(\d{1,4})(?:\.\d{1,6})?(?:[.+-]?[0-9A-Za-z.+-]{0,80})?")
# Where a refusal names the served canvas: "diffusion_seed_canvas must hold exactly 64 ids, got 256."
SERVED_LENGTH = re.compile(r"must hold exactly (\d{1,6}) ids")

Get = Callable[[str, Any], Any]  # (path, should_stop) -> the JSON answer
Segment = int | list[int]  # a hole of that many noise slots, or ids pinned as they are


class CanvasTooLong(Exception):
    """The server refused the canvas length: its own canvas is shorter than difill assumed.
    ``served`` is its length when the refusal names it."""

    def __init__(self, message: str, served: int | None = None) -> None:
        super().__init__(message)
        self.served = served


def parse_version(answer: Any) -> tuple[str, tuple[int, int]] | None:
    """``GET /version``'s answer (``{"version": "0.33.0"}``) as its text and (major, minor); None
    for anything else, which leaves the contract to be probed."""
    text = answer.get("version") if isinstance(answer, dict) else None
    if not isinstance(text, str):
        return None
    match = VERSION.fullmatch(text.strip())
    return (text.strip(), (int(match[1]), int(match[2]))) if match else None


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


def canvas_size(needed: int, served: int) -> int:
    """The canvas length to send: ``needed`` rounded up to one of CANVAS_SIZES, at most ``served``."""
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


def seeded_xargs(canvas: SeededCanvas, served: int, steps: int) -> dict[str, Any]:
    """The request's ``vllm_xargs``, only keys the release reads; ``diffusion_canvas_length`` only
    when shorter than served."""
    xargs: dict[str, Any] = {
        "diffusion_seed_canvas": canvas.ids,
        "diffusion_pinned": canvas.pinned,
        "diffusion_max_steps": max(1, steps),
        "diffusion_read_only": True,
    }
    if canvas.length < served:
        xargs["diffusion_canvas_length"] = canvas.length
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


class SeededCanvasClient:
    """Fills, holes and rewrites as seeded canvases on a vLLM >= 0.32 server.

    Each method returns None when the contract is off (``plain``, or ``auto`` after a refusal,
    remembered in ``refused``): the caller then takes the plain path.
    """

    def __init__(
        self,
        post: Post,
        get: Get,
        model: Callable[[Any], str],
        where: str,
        mode: str,
        canvas_length: int,
        vocab_size: int,
    ) -> None:
        if mode not in CANVAS_MODES:
            raise BackendError(f"unknown remote canvas mode {mode!r}; use one of {', '.join(CANVAS_MODES)}")
        self.post = post  # public: engine/backends/vllm_names.py posts its read through it
        self._get = get
        self._model = model
        self.where = where
        self.mode = mode
        self.served_length = canvas_length  # the server's canvas (vLLM --diffusion-config canvas_length)
        self.vocab_size = vocab_size  # noise ids are drawn below this; answers are checked against it
        self.tokens = TokenCache(post, model)
        self.refused: str | None = None  # why the server does not keep the contract (auto mode)
        self.used = False  # a seeded request has been answered
        self.version: str | None = None  # what GET /version said, when it said a version
        self.release: tuple[int, int] | None = None  # (major, minor) of it
        self.version_checked = False

    @property
    def active(self) -> bool:
        return self.mode == "seeded" or (self.mode == "auto" and self.refused is None)

    @property
    def is_release(self) -> bool:
        """The server said it is vLLM 0.32 or later: it reads the seeded canvas's fields and
        refuses ``temperature`` other than 1 and ``seed`` (what the plain path must know too)."""
        return self.release is not None and self.release >= MIN_VERSION

    def check_version(self, should_stop) -> None:
        """``GET /version``, once.  A server older than 0.32 is refused in ``auto``; in ``seeded``
        the user asked for the canvas, so it is still tried (a server's ``/version`` may be missing
        or wrong, a build of its own say) and the answer's checks decide.  No version (a 404, not
        JSON, garbage): the first fill probes.  A failure to connect is the fill's, and is retried."""
        if self.version_checked:
            return
        try:
            found = parse_version(self._get("/version", should_stop))
        except (HttpStatusError, NotJson):
            found = None
        self.version_checked = True
        if found is None:
            return
        self.version, self.release = found
        if not self.is_release and self.mode == "auto":
            self.refused = f"it is vLLM {self.version}; the seeded canvas needs {CONTRACT}"

    def describe(self) -> str:
        """Which path fills take, for the status line."""
        if self.mode == "plain":
            return "plain OpenAI path (remoteCanvas: plain)"
        if self.refused is not None:
            return f"plain OpenAI path: the server does not keep the seeded canvas of {CONTRACT} ({self.refused})"
        server = f"vLLM {self.version}" if self.version else CONTRACT
        if not self.used:
            return f"seeded canvas ({server}) to be tried on the first fill"
        return f"seeded canvas ({server}), canvases sized to each request, at most {self.served_length} slots"

    # ------------------------------------------------------------------ requests

    def fill(self, prefix: str, suffix: str, options: FillOptions, should_stop) -> FillResult | None:
        def run() -> FillResult:
            started = time.perf_counter()
            hole = max(options.candidate_lengths())
            samples = len(options.candidate_lengths())  # an invoked request: one sample per candidate
            suffix_ids = self.suffix_ids(suffix, options.suffix_tokens, should_stop)
            canvas, answers = self._denoise(prefix, [hole, suffix_ids], options, samples, should_stop)
            start, end = canvas.holes[0]
            pinned_text = self.tokens.detokenize(suffix_ids, should_stop)  # cached while typing
            texts = [self._hole_text(a, (start, end), pinned_text, should_stop) for a in answers]
            candidates = [Candidate(text, end - start, 0.0, False) for text in texts if text]
            stats = FillStats(hole_tokens=end - start, hole_length=end - start, candidates=len(candidates))
            stats.total_ms = (time.perf_counter() - started) * 1000
            return FillResult(candidates[0].text if candidates else "", candidates, stats)

        return self._guarded(run, should_stop)

    def fill_holes(self, text: str, marker: str, options: FillOptions, should_stop) -> HolesResult | None:
        def run() -> HolesResult:
            started = time.perf_counter()
            parts = text.split(marker)
            if len(parts) < 2:
                return HolesResult([], text, FillStats())
            segments: list[Segment] = []
            for between in parts[1:-1]:  # each hole, then the text up to the next one, pinned
                segments += [options.max_hole_tokens, self.tokens.tokenize(between, should_stop)]
            suffix_ids = self.suffix_ids(parts[-1], options.suffix_tokens, should_stop)
            segments += [options.max_hole_tokens, suffix_ids]
            canvas, answers = self._denoise(parts[0], segments, options, 1, should_stop)
            middles = [self.tokens.detokenize(answers[0].ids[a:b], should_stop) for a, b in canvas.holes]
            stats = FillStats(hole_tokens=sum(b - a for a, b in canvas.holes), candidates=1)
            stats.total_ms = (time.perf_counter() - started) * 1000
            return HolesResult(middles, with_middles(text, marker, middles), stats)

        return self._guarded(run, should_stop)

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
            suffix_ids = self.suffix_ids(request.suffix, options.suffix_tokens, should_stop)
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

        return self._guarded(run, should_stop)

    # ------------------------------------------------------------------ steps

    def _guarded(self, run: Callable[[], Any], should_stop) -> Any | None:
        """``run()``, or None once the server shows it does not keep the contract (auto mode)."""
        if not self.active:
            return None
        self.check_version(should_stop)  # once; a cancelled check is asked again by the next fill
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
            said = f"; it says it is vLLM {self.version}" if self.version and not self.is_release else ""
            raise BackendError(
                f"{self.where} does not take difill's seeded canvas ({reason}{said}). It needs "
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

    def suffix_ids(self, suffix: str, tokens: int, should_stop) -> list[int]:
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
        """The canvas sent and the canvases answered.  A canvas longer than the server's is
        retried at the length the refusal names, else at the next size down (kept: the server's
        canvas is then known to be at most that)."""
        needed = sum(s if isinstance(s, int) else len(s) for s in segments)
        while True:
            length = canvas_size(needed, self.served_length)
            canvas = adjust(lay_out(segments, length, self.vocab_size, options.seed))
            try:
                return canvas, self._complete(prompt, canvas, options, samples, should_stop)
            except CanvasTooLong as err:
                smaller = [size for size in CANVAS_SIZES if size < length]
                if err.served is not None and err.served not in (length, self.served_length):
                    self.served_length = err.served
                elif smaller:
                    self.served_length = smaller[-1]
                else:
                    raise ContractRefused(str(err)) from None

    def request_body(
        self, prompt: str, canvas: SeededCanvas, steps: int, samples: int, should_stop
    ) -> dict[str, Any]:
        """A seeded ``/v1/completions`` body: only fields the release's CompletionRequest has,
        ``temperature`` 1 and no ``seed`` (the release refuses others for a diffusion model), and
        the samples as ``n``."""
        return {
            "model": self._model(should_stop), "prompt": prompt, "max_tokens": canvas.length, "temperature": 1.0,
            "n": max(1, min(samples, MAX_SAMPLES)), "stream": False, "return_token_ids": True,
            "vllm_xargs": seeded_xargs(canvas, self.served_length, steps),
        }  # fmt: skip

    def _complete(self, prompt: str, canvas: SeededCanvas, options: FillOptions, samples: int, should_stop):
        body = self.request_body(prompt, canvas, options.max_steps, samples, should_stop)
        try:
            answer = self.post("/v1/completions", body, should_stop)
        except HttpStatusError as err:
            said, why = err.detail.lower(), f"HTTP {err.status}: {err.detail}"
            served = SERVED_LENGTH.search(said)
            if err.status in (400, 422) and (served or "canvas_length" in said):
                raise CanvasTooLong(why, int(served[1]) if served else None) from None
            raise
        return answered_canvases(answer, canvas, self.vocab_size, f"{self.where}/v1/completions")
