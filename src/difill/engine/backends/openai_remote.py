"""An OpenAI-compatible server (vLLM serving DiffusionGemma, mlx-vlm, ...).

Each request tries difill's own seeded canvas first where the server keeps vLLM 0.32's contract
(engine/backends/vllm.py; ``RemoteConfig.canvas``), else the plain path of engine/backends/openai.py:
``/v1/completions`` with ``suffix``, or the chat prompt (``RemoteConfig.fim``; ``auto`` takes chat
from the first time the server refuses ``suffix`` on).  Holes without the seeded canvas are filled
one request each, left to right.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from difill.engine.api import (
    DEFAULT_HOLE_MARKER,
    HOLE_TOKENS,
    FillOptions,
    FillResult,
    HolesResult,
    PreviewCallback,
    RewriteRequest,
    ShouldStop,
)
from difill.engine.backends import answers, openai, vllm_names
from difill.engine.backends.remote import RemoteBackend, RemoteConfig
from difill.engine.backends.transport import HttpStatusError, HttpTransport
from difill.engine.backends.vllm import SeededCanvasClient
from difill.text.rules import fill_each_hole


class OpenAIRemote(RemoteBackend):
    protocol = "openai"
    server_kind = "OpenAI-compatible"

    def __init__(self, config: RemoteConfig, transport: HttpTransport | None = None) -> None:
        super().__init__(config, transport)
        self.model = config.model  # found with /v1/models on first use when not given
        self.fim = config.fim  # "auto" becomes "chat" once the server refuses `suffix`
        self.score_deadline_s = vllm_names.SCORE_DEADLINE_S  # a name order later than this is not used
        self.seeded = SeededCanvasClient(
            self._post, self._get, self._model, self.transport.shown_url, config.canvas, config.canvas_length,
            config.vocab_size,
        )  # fmt: skip

    def describe_path(self) -> str:
        return self.seeded.describe()

    @property
    def scores_names(self) -> bool:
        """Whether ``score_names`` can be asked: the seeded path on vLLM 0.32 or later (or one that
        has answered a seeded canvas).  server/suggestion_path.py asks no other remote, so no log line a
        keystroke says what was never possible."""
        seeded = self.seeded
        return seeded.active and (seeded.is_release or seeded.used)

    def score_names(
        self, prefix: str, suffix: str, names: Sequence[str], options: FillOptions | None = None
    ) -> list[float]:
        """Each name's score at the cursor from one constrained read (engine/backends/vllm_names.py),
        within ``score_deadline_s``; NameScoringFailed (a ValueError) says why when there is none."""
        options = options or FillOptions()
        return vllm_names.score_names(self.seeded, prefix, suffix, names, options, self.score_deadline_s)

    def fill(
        self,
        prefix: str,
        suffix: str,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,  # noqa: ARG002 - remote fills send no previews
    ) -> FillResult:
        options = options or FillOptions()
        # An OpenAI-style or vLLM server reads one prompt: the context block goes before the prefix.
        prefix = options.context_block + prefix
        seeded = self.seeded.fill(prefix, suffix, options, should_stop)
        return seeded if seeded is not None else self._plain_fill(prefix, suffix, options, should_stop)

    def fill_holes(
        self,
        text: str,
        marker: str = DEFAULT_HOLE_MARKER,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
    ) -> HolesResult:
        options = options or FillOptions(max_hole_tokens=HOLE_TOKENS)
        seeded = self.seeded.fill_holes(text, marker, options, should_stop)
        if seeded is not None:  # every hole in one canvas, the text between them pinned
            return seeded
        # The chat prompt takes one hole: one request per hole, left to right.
        middles, filled = fill_each_hole(
            text, marker, lambda before, after: self._plain_fill(before, after, options, should_stop).text
        )
        return HolesResult(middles, filled)

    def rewrite(
        self,
        request: RewriteRequest,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,  # noqa: ARG002
    ) -> FillResult:
        prefix, selection, suffix = request.prefix, request.selection, request.suffix
        options = options or FillOptions()
        seeded = self.seeded.rewrite(request, options, should_stop)
        if seeded is not None:
            return seeded
        started = time.perf_counter()
        self.seeded.check_version(should_stop)
        body = openai.rewrite_chat_body(
            self._model(should_stop), prefix, selection, suffix, request.instruction, options
        )
        body = self._released_vllm(body)
        answer = self._post("/v1/chat/completions", body, should_stop)
        text, complete, tokens = self._parse(lambda a: answers.first_choice(a, True, None), answer)
        text = self._parse(lambda t: answers.bounded_rewrite(t, selection, body["max_tokens"]), text)
        text = openai.chat_text(text)
        return openai.result_of(
            text, complete, tokens, len(selection), (time.perf_counter() - started) * 1000
        )

    # ------------------------------------------------------------------ the plain path

    def _plain_fill(
        self, prefix: str, suffix: str, options: FillOptions, should_stop: ShouldStop | None
    ) -> FillResult:
        started = time.perf_counter()
        self.seeded.check_version(should_stop)  # once: a released vLLM needs its own sampling fields
        model = self._model(should_stop)
        chat = self.fim == "chat"
        if chat:
            body = self._released_vllm(openai.fim_chat_body(model, prefix, suffix, options))
            answer = self._post("/v1/chat/completions", body, should_stop)
        else:
            answer = self._completion(model, prefix, suffix, options, should_stop)
            if answer is None:  # no `suffix` (or no /v1/completions) there: use chat from now on
                self.fim = "chat"
                chat = True
                body = self._released_vllm(openai.fim_chat_body(model, prefix, suffix, options))
                answer = self._post("/v1/chat/completions", body, should_stop)
        limit = options.max_hole_tokens
        text, complete, tokens = self._parse(lambda a: answers.first_choice(a, chat, limit), answer)
        if chat:
            text = openai.chat_text(text)
        elapsed = (time.perf_counter() - started) * 1000
        return openai.result_of(text, complete, tokens, options.max_hole_tokens, elapsed)

    def _completion(
        self, model: str, prefix: str, suffix: str, options: FillOptions, should_stop: ShouldStop | None
    ) -> Any | None:
        """The /v1/completions answer, or None (fim auto) when the server does not take ``suffix``
        (vLLM: a 400 about it) or has no /v1/completions (mlx-vlm's server: a 404)."""
        body = self._released_vllm(openai.completion_body(model, prefix, options, options.max_hole_tokens))
        if suffix:
            body["suffix"] = suffix
        try:
            return self._post("/v1/completions", body, should_stop)
        except HttpStatusError as err:
            refused_suffix = suffix and err.status in (400, 422) and "suffix" in err.detail.lower()
            if self.fim == "auto" and (refused_suffix or err.status == 404):
                return None
            raise

    def _get(self, path: str, should_stop: ShouldStop | None) -> Any:
        return self.transport.request("GET", path, None, should_stop)

    def _released_vllm(self, body: dict) -> dict:
        """``body`` as vLLM 0.32 and later take it for a diffusion model: they refuse a
        ``temperature`` other than 1 and any ``seed`` (vllm/sampling_params.py ``_validate_diffusion``),
        so the plain path's greedy, seeded request would be a 400 there.  Other servers get it as is."""
        if self.seeded.is_release:
            body = {k: v for k, v in body.items() if k != "seed"} | {"temperature": 1.0}
        return body

    def _model(self, should_stop: ShouldStop | None) -> str:
        """The served model's name: given, or the first one /v1/models lists."""
        if self.model is None:
            listing = self.transport.request("GET", "/v1/models", None, should_stop)
            self.model = self._parse(answers.model_id, listing)
        return self.model
