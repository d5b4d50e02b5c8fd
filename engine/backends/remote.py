"""The remote backend: fills run on a server, over HTTP.

``protocol``:

* ``"difill"`` - difill serve-http's native ``POST /v1/fill``: every feature (candidates, holes,
  rewrite with strength) and the same text as the local engine for the same seed;
* ``"openai"`` - an OpenAI-compatible server such as vLLM serving DiffusionGemma: difill's own
  seeded canvas where the server keeps vLLM #57250's contract (engine/backends/vllm.py, chosen by
  ``canvas``: ``auto`` tries it first), else engine/backends/openai.py's ``suffix`` or chat prompt
  (``fim``);
* ``"auto"`` (default) - ``GET /health`` once: difill answers ``{"server": "difill"}``.

The API key comes from ``DIFILL_API_KEY`` unless one is passed; it is only ever sent in the
Authorization header.  TLS certificates are verified against the system trust store.  Every
answer is checked by engine/backends/answers.py before it is used; messages name the server by
``secrets.shown_url`` (no password, no query string).
"""

from __future__ import annotations

import os
import time
from typing import Any

import httpx2 as httpx

from difill.engine import secrets
from difill.engine.api import (
    DEFAULT_HOLE_MARKER,
    HOLE_TOKENS,
    BackendError,
    DraftCallback,
    FillOptions,
    FillResult,
    HolesResult,
    RewriteRequest,
    ShouldStop,
)
from difill.engine.backends import answers, openai
from difill.engine.backends.transport import HttpStatusError, HttpTransport
from difill.engine.backends.vllm import SeededCanvasClient
from difill.engine.backends.wire import options_to_json
from difill.text.rules import trim_to_hole, with_middles

API_KEY_ENV = "DIFILL_API_KEY"
PROTOCOLS = ("auto", "difill", "openai")
FIM_MODES = ("auto", "suffix", "chat")


class RemoteBackend:
    def __init__(
        self,
        url: str,
        protocol: str = "auto",
        api_key: str | None = None,
        model: str | None = None,
        fim: str = "auto",
        canvas: str = "auto",
        canvas_length: int = 256,
        vocab_size: int = 262_144,
        timeout_s: float = 30.0,
        retries: int = 2,
        backoff_s: float = 0.25,
        verify: bool | str = True,
    ) -> None:
        if protocol not in PROTOCOLS:
            raise BackendError(f"unknown remote protocol {protocol!r}; use one of {', '.join(PROTOCOLS)}")
        if fim not in FIM_MODES:
            raise BackendError(f"unknown fim mode {fim!r}; use one of {', '.join(FIM_MODES)}")
        if not url.startswith(("http://", "https://")):
            raise BackendError(f"remote URL {secrets.shown_url(url)!r} must start with http:// or https://")
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        try:
            self.transport = HttpTransport(
                url, key, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s, verify=verify
            )
        except OSError as err:
            raise BackendError(f"cannot read the CA bundle {verify!r}: {err.strerror or err}") from None
        except (ValueError, httpx.InvalidURL) as err:
            raise BackendError(
                f"remote URL {secrets.shown_url(url)!r} is not a valid URL: {secrets.scrub(str(err))}"
            ) from None
        self.protocol = protocol
        self.model = model
        self.fim = fim
        # vLLM #57250's seeded canvas (canvas: auto, seeded or plain); canvas_length is the server's
        # (vLLM --diffusion-config canvas_length), vocab_size bounds the noise ids
        self.seeded = SeededCanvasClient(
            self._post, self._model, self.transport.shown_url, canvas, canvas_length, vocab_size
        )

    def __repr__(self) -> str:
        return f"RemoteBackend({self.transport.shown_url!r}, protocol={self.protocol!r})"

    def close(self) -> None:
        self.transport.close()

    def describe_path(self) -> str:
        """Which way fills go, for the status line (known after the first fill: the warm-up)."""
        if self.protocol == "difill":
            return "difill serve-http"
        if self.protocol == "auto":
            return "protocol found on the first fill"
        return self.seeded.describe()

    # ------------------------------------------------------------------ InfillBackend

    def fill(
        self,
        prefix: str,
        suffix: str,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_draft: DraftCallback | None = None,  # noqa: ARG002 - remote fills send no drafts
    ) -> FillResult:
        if self._protocol(should_stop) == "difill":
            body = {"prefix": prefix, "suffix": suffix, "options": options_to_json(options)}
            tokens = (options or FillOptions()).max_hole_tokens
            return self._parse(
                lambda a: answers.fill_result(a, tokens), self._post("/v1/fill", body, should_stop)
            )
        options = options or FillOptions()
        # An OpenAI-style or vLLM server reads one prompt: the context block goes before the prefix.
        prefix = options.context_block + prefix
        seeded = self.seeded.fill(prefix, suffix, options, should_stop)
        return seeded if seeded is not None else self._openai_fill(prefix, suffix, options, should_stop)

    def fill_holes(
        self,
        text: str,
        marker: str = DEFAULT_HOLE_MARKER,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
    ) -> HolesResult:
        if self._protocol(should_stop) == "difill":
            body = {"holes": text, "marker": marker, "options": options_to_json(options)}
            tokens = (options or FillOptions(max_hole_tokens=HOLE_TOKENS)).max_hole_tokens
            answer = self._post("/v1/fill", body, should_stop)
            return self._parse(lambda a: answers.holes_result(a, tokens), answer)
        options = options or FillOptions(max_hole_tokens=HOLE_TOKENS)
        seeded = self.seeded.fill_holes(text, marker, options, should_stop)
        if seeded is not None:  # every hole in one canvas, the text between them pinned
            return seeded
        # One request per hole, left to right; later holes' markers are hidden from earlier fills.
        parts = text.split(marker)
        done, middles = parts[0], []
        for i in range(1, len(parts)):
            after = "".join(parts[i:])
            result = self._openai_fill(done, after, options, should_stop)
            middles.append(result.text)
            # The next hole's prompt holds this middle ended where the text after it begins.
            done += trim_to_hole(result.text, parts[i]) + parts[i]
        return HolesResult(middles, with_middles(text, marker, middles))

    def rewrite(
        self,
        request: RewriteRequest,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_draft: DraftCallback | None = None,  # noqa: ARG002
    ) -> FillResult:
        prefix, selection, suffix = request.prefix, request.selection, request.suffix
        if self._protocol(should_stop) == "difill":
            body = {
                "prefix": prefix, "selection": selection, "suffix": suffix, "strength": request.strength,
                "instruction": request.instruction, "options": options_to_json(options),
            }  # fmt: skip
            tokens = (options or FillOptions()).max_hole_tokens
            result = self._parse(
                lambda a: answers.fill_result(a, None), self._post("/v1/fill", body, should_stop)
            )
            self._parse(lambda r: answers.bounded_rewrite(r.text, selection, tokens), result)
            return result
        options = options or FillOptions()
        seeded = self.seeded.rewrite(
            prefix, selection, suffix, request.strength, request.instruction, options, should_stop
        )
        if seeded is not None:
            return seeded
        started = time.perf_counter()
        body = openai.rewrite_chat_body(
            self._model(should_stop), prefix, selection, suffix, request.instruction, options
        )
        answer = self._post("/v1/chat/completions", body, should_stop)
        text, complete, tokens = self._parse(lambda a: answers.first_choice(a, True, None), answer)
        text = self._parse(lambda t: answers.bounded_rewrite(t, selection, body["max_tokens"]), text)
        text = openai.chat_text(text)
        return openai.result_of(
            text, complete, tokens, len(selection), (time.perf_counter() - started) * 1000
        )

    # ------------------------------------------------------------------ OpenAI-compatible

    def _openai_fill(self, prefix: str, suffix: str, options: FillOptions, should_stop) -> FillResult:
        started = time.perf_counter()
        model = self._model(should_stop)
        chat = self.fim == "chat"
        if chat:
            answer = self._post(
                "/v1/chat/completions", openai.fim_chat_body(model, prefix, suffix, options), should_stop
            )
        else:
            answer = self._openai_completion(model, prefix, suffix, options, should_stop)
            if answer is None:  # no `suffix` (or no /v1/completions) there: use chat from now on
                self.fim = chat = "chat"
                body = openai.fim_chat_body(model, prefix, suffix, options)
                answer = self._post("/v1/chat/completions", body, should_stop)
        limit = options.max_hole_tokens
        text, complete, tokens = self._parse(lambda a: answers.first_choice(a, bool(chat), limit), answer)
        if chat:
            text = openai.chat_text(text)
        elapsed = (time.perf_counter() - started) * 1000
        return openai.result_of(text, complete, tokens, options.max_hole_tokens, elapsed)

    def _openai_completion(self, model, prefix, suffix, options, should_stop) -> Any | None:
        """The /v1/completions answer, or None (fim auto) when the server does not take ``suffix``
        (vLLM: a 400 about it) or has no /v1/completions (mlx-vlm's server: a 404)."""
        body = openai.completion_body(model, prefix, options, options.max_hole_tokens)
        if suffix:
            body["suffix"] = suffix
        try:
            return self._post("/v1/completions", body, should_stop)
        except HttpStatusError as err:
            refused_suffix = suffix and err.status in (400, 422) and "suffix" in err.detail.lower()
            if self.fim == "auto" and (refused_suffix or err.status == 404):
                return None
            raise

    def _model(self, should_stop) -> str:
        """The served model's name: given, or the first one /v1/models lists."""
        if self.model is None:
            listing = self.transport.request("GET", "/v1/models", None, should_stop)
            self.model = self._parse(answers.model_id, listing)
        return self.model

    # ------------------------------------------------------------------ plumbing

    def _protocol(self, should_stop) -> str:
        if self.protocol == "auto":
            try:  # vLLM answers an empty 200; a server without /health is not difill either
                health = self.transport.request("GET", "/health", None, should_stop, allow_empty=True)
            except HttpStatusError as err:
                if err.status != 404:
                    raise
                health = None
            is_difill = isinstance(health, dict) and health.get("server") == "difill"
            self.protocol = "difill" if is_difill else "openai"
        return self.protocol

    def _post(self, path: str, body: dict, should_stop) -> Any:
        return self.transport.request("POST", path, body, should_stop)

    def _parse(self, parse, answer: Any) -> Any:
        try:
            return parse(answer)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
            raise BackendError(
                f"{self.transport.shown_url} answered JSON of an unexpected shape ({err}). Is it a "
                f"{'difill' if self.protocol == 'difill' else 'OpenAI-compatible'} server of a matching version?"
            ) from None
