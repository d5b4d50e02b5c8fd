"""A fake vLLM serving DiffusionGemma: the remote backend's tests and ``difill bench --team`` use it.

``FakeVllm()`` is **vLLM 0.33.0 as released** (``GET /version`` answers ``{"version": "0.33.0"}``):
it checks a ``/v1/completions`` request with the rules of that wheel, each below naming where it
is read from, in the release's own words:

* ``vllm/utils/diffusion.py`` ``validate_diffusion_sampling_params``: the ``vllm_xargs`` keys;
* ``vllm/sampling_params.py`` ``_validate_diffusion`` (temperature 1, no seed, ...), ``n`` and
  ``logprob_token_ids``;
* ``vllm/entrypoints/openai/completion/protocol.py``: ``vllm_xargs``' value types (pydantic, which
  narrows a JSON boolean to 0/1) and ``logprob_token_ids`` needing ``logprobs``.

Where the release **ignores** rather than refuses - a ``vllm_xargs`` key it does not know (such as
the pull request's ``diffusion_samples``), a body field ``CompletionRequest`` does not have - the
fake answers too, and notes the key in ``ignored`` so that a test can require it stays empty.
Several samples come from the request's ``n``, as in the release (each child request shares the
parent's ``extra_args``: vllm/v1/engine/parallel_sampling.py).

``contract=False`` is a vLLM from before the seeded canvas (``/version`` 0.29.0 unless ``version``
says otherwise): it ignores ``vllm_xargs`` and answers a plain completion.  ``version`` is what
``/version`` says (None: 404); ``version_body`` replaces that answer's bytes (a broken server).
Every server refuses ``suffix`` (400), as difill has seen vLLM do for this model, and answers the
chat fill-in-the-middle prompt.

Its tokenizer is one id per character (``ord``, below 256); ids from 256 up are special tokens that
detokenize to nothing (PAD is the one the fake writes after a middle).  Its "model" writes
``middles`` into the runs of free (unpinned) slots: run k of sample s gets middle ``(k + s)``.  A
read with ``logprob_token_ids`` reports, at every canvas position, the log-softmax over those ids
of ``logits`` (keyed ``(position, id)`` or ``id``; 0 for the rest), as the release's constrained
read renormalises over the set (diffusion_gemma.py), keyed ``token_id:N`` when the request asks
``return_tokens_as_token_ids``.

``fault`` makes it misbehave on seeded requests: ``wrong_length``, ``change_pins``, ``out_of_vocab``,
``hang`` (answers after ``hang_s``), ``flaky`` (HTTP 500 on every third completion), and on reads
with logprobs ``logprobs_missing``, ``logprobs_nan``, ``logprobs_foreign`` (an id not asked for),
``logprobs_huge`` (every logprob 800.0: finite, and no probability).
``numbered`` appends the completion's number to each middle, so that no two answers are alike (as
while typing).  It does no model work: it measures what the client and the wire cost.
"""

from __future__ import annotations

import http.server
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MODEL = "RedHatAI/diffusiongemma-26B-A4B-it-NVFP4"
VOCAB = 262_144  # DiffusionGemma's (Gemma 3's), the RemoteConfig default
PAD = 256
RELEASE = "0.33.0"  # the vLLM release whose rules the fake follows
OLD_RELEASE = "0.29.0"  # what contract=False says it is, unless told
# The vllm_xargs keys vllm/utils/diffusion.py and diffusion_gemma.py read in 0.33.0; any other is ignored.
RELEASE_XARGS = frozenset({
    "diffusion_canvas_length", "diffusion_seed_canvas", "diffusion_pinned", "diffusion_max_steps",
    "diffusion_read_only", "diffusion_constrained",
})  # fmt: skip
# CompletionRequest's fields in 0.33.0 (vllm/entrypoints/openai/completion/protocol.py); others are
# ignored (OpenAIBaseModel has extra="allow" and only logs them).
COMPLETION_FIELDS = frozenset({
    "add_special_tokens", "allowed_token_ids", "bad_words", "cache_salt", "ec_transfer_params", "echo",
    "frequency_penalty", "ignore_eos", "include_stop_str_in_output", "kv_transfer_params", "length_penalty",
    "logit_bias", "logprob_token_ids", "logprobs", "max_tokens", "min_p", "min_tokens", "mm_payload",
    "model", "n", "presence_penalty", "priority", "prompt", "prompt_embeds", "prompt_logprobs",
    "repetition_detection", "repetition_penalty", "request_id", "response_format", "return_mm_kwargs",
    "return_token_ids", "return_token_offsets", "return_tokens_as_token_ids", "return_weight_versions",
    "routed_experts_prompt_start", "seed", "session_id", "skip_special_tokens",
    "spaces_between_special_tokens", "stop", "stop_token_ids", "stream", "stream_interval",
    "stream_options", "structured_outputs", "suffix", "temperature", "thinking_token_budget", "top_k",
    "top_p", "truncate_prompt_tokens", "truncation_side", "use_beam_search", "user", "vllm_xargs",
    "watermarking",
})  # fmt: skip
MAX_LOGPROB_TOKEN_IDS = 128  # vllm/sampling_params.py
DIFFUSION_UNSUPPORTED = (  # vllm/sampling_params.py _validate_diffusion
    "The temperature, min_p, seed, min_tokens, logit_bias, bad_words, and allowed_token_ids sampling "
    "parameters are not yet supported with diffusion models."
)


def tokenize(text: str) -> list[int]:
    return [ord(c) if ord(c) < PAD else ord("?") for c in text]


def detokenize(ids: list[int]) -> str:
    return "".join(chr(i) for i in ids if i < PAD)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Refused(Exception):
    """A request the release refuses: HTTP 400 with the release's message."""


@dataclass(eq=False)
class FakeVllm:
    """The release's rules and what it answers, each a field (``FakeVllm(canvas_length=32)``)."""

    contract: bool = True  # keeps the seeded canvas (vLLM >= 0.32)
    canvas_length: int = 64  # --diffusion-config canvas_length
    middles: tuple[str, ...] = ("a + b",)
    chat_answer: str = "chat(a, b)"
    fault: str | None = None
    hang_s: float = 3.0
    numbered: bool = False
    version: str | None = ""  # "": the release the contract stands for (RELEASE or OLD_RELEASE)
    version_body: bytes | None = None
    logits: dict[Any, float] | None = None
    requests: list[tuple[str, Any]] = field(default_factory=list, init=False)
    # Keys the release would have ignored without a word.
    ignored: list[str] = field(default_factory=list, init=False)
    completions: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.version == "":
            self.version = RELEASE if self.contract else OLD_RELEASE
        self.logits = self.logits or {}

    def paths(self, since: int = 0) -> list[str]:
        return [path for path, _ in self.requests[since:]]

    def seeded_bodies(self) -> list[dict]:
        return [b for p, b in self.requests if p == "/v1/completions" and "vllm_xargs" in b]

    # ------------------------------------------------------------------ the handler

    def __call__(self, request) -> None:
        raw = read_body(request)
        body = json.loads(raw) if raw else None
        with self._lock:
            self.requests.append((request.path, body))
        if request.path == "/health":
            send(request, 200, b"")
        elif request.path == "/version" and (self.version is not None or self.version_body is not None):
            body_bytes = self.version_body or json.dumps({"version": self.version}).encode()
            send(request, 200, body_bytes)
        elif request.path == "/v1/models":
            self._json(request, 200, {"object": "list", "data": [{"id": MODEL, "max_model_len": 8192}]})
        elif request.path == "/tokenize":
            tokens = tokenize(body["prompt"])
            self._json(request, 200, {"tokens": tokens, "count": len(tokens), "max_model_len": 8192})
        elif request.path == "/detokenize":
            self._json(request, 200, {"prompt": detokenize(body["tokens"])})
        elif request.path == "/v1/completions":
            self._completion(request, body)
        elif request.path == "/v1/chat/completions":
            if self.contract:  # the release's check holds for every request to a diffusion model
                try:
                    self.check_sampling(body)
                except Refused as err:
                    return self._error(request, str(err))
            message = {"role": "assistant", "content": self.chat_answer}
            self._json(request, 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
        else:
            self._json(request, 404, {"detail": "Not Found"})

    def _completion(self, request, body: dict) -> None:
        with self._lock:
            self.completions += 1
            number = self.completions
        if "suffix" in body:
            return self._error(request, "suffix is not currently supported")
        xargs = body.get("vllm_xargs")
        if not self.contract:  # before the seeded canvas: vllm_xargs means nothing to it
            if xargs:
                self.ignored += [f"vllm_xargs.{key}" for key in sorted(xargs)]
            text = "plain"
            return self._json(
                request, 200,
                {"choices": [{"index": 0, "text": text, "token_ids": tokenize(text), "finish_reason": "stop"}]},
            )  # fmt: skip
        try:
            self.ignored += [key for key in sorted(body) if key not in COMPLETION_FIELDS]
            xargs = self.check_request(body)
            self.check_sampling(body)
            self.validate(xargs, body.get("logprob_token_ids"))
        except Refused as err:
            return self._error(request, str(err))
        if xargs.get("diffusion_seed_canvas") is None:
            return self._json(
                request, 200, {"choices": [{"index": 0, "text": "plain", "finish_reason": "stop"}]}
            )
        if self.fault == "flaky" and number % 3 == 0:
            return self._error(request, "EngineCore died", 500)
        if self.fault == "hang":
            time.sleep(self.hang_s)
        seed, pinned = xargs["diffusion_seed_canvas"], set(xargs.get("diffusion_pinned") or [])
        choices = []
        for sample in range(body.get("n", 1)):
            canvas = self.denoise(seed, pinned, sample, number if self.numbered else None)
            choice = {
                "index": sample, "text": detokenize(canvas), "token_ids": canvas, "finish_reason": "length",
            }  # fmt: skip
            if body.get("logprob_token_ids") and self.fault != "logprobs_missing":
                choice["logprobs"] = self.logprobs(canvas, body)
            choices.append(choice)
        self._json(request, 200, {"choices": choices, "usage": {"completion_tokens": len(seed)}})

    # ------------------------------------------------------------------ 0.33.0's rules

    def check_request(self, body: dict) -> dict:
        """completion/protocol.py: ``vllm_xargs`` as pydantic reads it (a JSON boolean becomes 0/1;
        values are str, int, float or lists of them) and ``check_logprobs``.  Returns the xargs."""
        xargs = body.get("vllm_xargs") or {}
        if not isinstance(xargs, dict):
            raise Refused("vllm_xargs: Input should be a valid dictionary")
        scalar = (str, int, float)
        for key, value in xargs.items():
            values = value if isinstance(value, list) else [value]
            if not all(isinstance(v, scalar) for v in values):
                raise Refused(f"vllm_xargs.{key}: Input should be a valid string, integer or number")
        xargs = {k: narrowed(v) for k, v in xargs.items()}
        self.ignored += [f"vllm_xargs.{key}" for key in sorted(xargs) if key not in RELEASE_XARGS]
        if body.get("logprob_token_ids") and body.get("logprobs") is None:
            raise Refused("when using `logprob_token_ids`, `logprobs` must be set.")
        return xargs

    def check_sampling(self, body: dict) -> None:
        """sampling_params.py: ``n``, ``logprob_token_ids`` and ``_validate_diffusion``."""
        n = body.get("n", 1)
        if not is_int(n):
            raise Refused(f"n must be an int, but is of type {type(n)}")
        if n < 1:
            raise Refused(f"n must be at least 1, got {n}.")
        temperature = body.get("temperature")
        temperature = 1.0 if temperature is None else temperature  # the OpenAI default
        if (
            temperature != 1.0 or (body.get("min_p") or 0) > 1e-5 or body.get("seed") is not None
            or (body.get("min_tokens") or 0) > 0 or body.get("logit_bias") or body.get("bad_words")
            or body.get("allowed_token_ids")
        ):  # fmt: skip
            raise Refused(DIFFUSION_UNSUPPORTED)
        ids = body.get("logprob_token_ids")
        if ids:
            if len(ids) > MAX_LOGPROB_TOKEN_IDS:
                raise Refused(
                    f"Requested logprob_token_ids of length {len(ids)}, which is greater than max "
                    f"allowed: {MAX_LOGPROB_TOKEN_IDS}"
                )
            invalid = [t for t in ids if t < 0 or t >= VOCAB]
            if invalid:
                raise Refused(
                    f"token_id(s) {invalid} in logprob_token_ids contain out-of-vocab token ids. "
                    f"Vocabulary size: {VOCAB}"
                )

    def validate(self, xargs: dict, logprob_token_ids: list[int] | None = None) -> None:
        """utils/diffusion.py ``validate_diffusion_sampling_params``, rule by rule, in its order."""

        def check(valid: bool, message: str) -> None:
            if not valid:
                raise Refused(message)

        width = xargs.get("diffusion_canvas_length")
        if width is not None:
            check(
                is_int(width) and 0 < width <= self.canvas_length,
                "diffusion_canvas_length must be a positive integer no larger than the served canvas.",
            )
        expected = width or self.canvas_length
        seed = xargs.get("diffusion_seed_canvas")
        if seed is not None:
            check(
                isinstance(seed, list) and all(is_int(t) for t in seed),
                "diffusion_seed_canvas must be a list of token ids.",
            )
            check(all(0 <= t < VOCAB for t in seed), f"diffusion_seed_canvas ids must be in [0, {VOCAB}).")
            check(
                len(seed) == expected,
                f"diffusion_seed_canvas must hold exactly {expected} ids, got {len(seed)}.",
            )
        pins = xargs.get("diffusion_pinned")
        if pins is not None:
            check(
                isinstance(pins, list) and all(is_int(p) for p in pins),
                "diffusion_pinned must be a list of canvas positions.",
            )
            check(seed is not None, "diffusion_pinned needs a diffusion_seed_canvas to hold.")
            check(
                all(0 <= p < expected for p in pins), "diffusion_pinned positions must lie inside the canvas."
            )
        cap = xargs.get("diffusion_max_steps")
        if cap is not None:
            check(is_int(cap) and cap > 0, "diffusion_max_steps must be a positive integer.")
        read_only = xargs.get("diffusion_read_only")
        if read_only is not None:
            check(
                is_int(read_only) and read_only in (0, 1), "diffusion_read_only must be a boolean (or 0/1)."
            )
        constrained = xargs.get("diffusion_constrained")
        if constrained is not None:
            check(
                is_int(constrained) and constrained in (0, 1),
                "diffusion_constrained must be a boolean (or 0/1).",
            )
        if constrained:
            check(
                bool(logprob_token_ids),
                "diffusion_constrained needs logprob_token_ids: they are the allowed set.",
            )

    def denoise(self, seed: list[int], pinned: set[int], sample: int, number: int | None = None) -> list[int]:
        """Pinned slots as seeded; run k of free slots holds middle (k + sample), then PAD."""
        canvas = list(seed)
        run, at = -1, 0
        for i in range(len(canvas)):
            if i in pinned:
                continue
            if i == 0 or (i - 1) in pinned:
                run, at = run + 1, 0
            middle = tokenize(
                self.middles[(run + sample) % len(self.middles)] + (str(number) if number else "")
            )
            canvas[i] = middle[at] if at < len(middle) else PAD
            at += 1
        if self.fault == "wrong_length":
            canvas = canvas[:-1]
        elif self.fault == "change_pins" and pinned:
            first = min(pinned)
            canvas[first] = (canvas[first] + 1) % PAD
        elif self.fault == "out_of_vocab":
            canvas[0] = VOCAB + 7
        return canvas

    def logprobs(self, canvas: list[int], body: dict) -> dict:
        """A choice's ``logprobs`` as the release's completion serving writes them: at every
        position, every asked id's log-probability renormalised over the asked set (clamped at
        -9999, keyed ``token_id:N`` with ``return_tokens_as_token_ids``, else by the token's text)."""
        asked = body["logprob_token_ids"]

        def key(token: int) -> str:
            return f"token_id:{token}" if body.get("return_tokens_as_token_ids") else detokenize([token])

        tokens, token_logprobs, top = [], [], []
        for position, token in enumerate(canvas):
            logits = [self.logits.get((position, t), self.logits.get(t, 0.0)) for t in asked]
            most = max(logits)
            norm = most + math.log(sum(math.exp(x - most) for x in logits))
            row = {key(t): max(x - norm, -9999.0) for t, x in zip(asked, logits, strict=True)}
            if position == 0 and self.fault == "logprobs_nan":
                row[key(asked[0])] = math.nan  # json.dumps writes NaN, as Python servers can
            if self.fault == "logprobs_huge":
                row = dict.fromkeys(row, 800.0)
            if position == 0 and self.fault == "logprobs_foreign":
                row[key(VOCAB - 1)] = row.pop(key(asked[0]))  # an id nobody asked for
            tokens.append(key(token))
            token_logprobs.append(row.get(key(token), -9999.0))
            top.append(row)
        offsets = [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))]
        return {
            "tokens": tokens,
            "token_logprobs": token_logprobs,
            "top_logprobs": top,
            "text_offset": offsets,
        }

    # ------------------------------------------------------------------ answers

    def _json(self, request, status: int, payload: Any) -> None:
        try:
            send(request, status, json.dumps(payload).encode())
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (hang): nobody to answer
            pass

    def _error(self, request, message: str, status: int = 400) -> None:
        """The release's ErrorResponse (vllm/entrypoints/serve/engine/protocol.py)."""
        kind = "BadRequestError" if status == 400 else "InternalServerError"
        error = {
            "message": message,
            "type": kind,
            "param": "extra_args" if status == 400 else None,
            "code": status,
        }
        self._json(request, status, {"error": error})


def narrowed(value: Any) -> Any:
    """A vllm_xargs value as pydantic's ``str | int | float`` leaves it: a boolean becomes 0/1."""
    if isinstance(value, list):
        return [narrowed(v) for v in value]
    return int(value) if isinstance(value, bool) else value


def send(request: http.server.BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    request.send_response(status)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


def read_body(request: http.server.BaseHTTPRequestHandler) -> bytes:
    return request.rfile.read(int(request.headers.get("Content-Length") or 0))


def serve_in_thread(
    handler: Callable[[http.server.BaseHTTPRequestHandler], None],
) -> tuple[str, Callable[[], None]]:
    """``handler`` behind a loopback HTTP server in a daemon thread: (its URL, stop)."""

    class Handle(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            handler(self)

        do_POST = do_GET  # noqa: N815

        def log_message(self, *args):  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}", stop
