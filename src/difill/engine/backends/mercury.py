"""Inception's Mercury: a hosted diffusion coder with fill-in-the-middle and next-edit endpoints.

The request and answer shapes are Inception's published ones (docs.inceptionlabs.ai, "Autocomplete"
and "Next Edit"; LiteLLM's Inception provider page); difill is tested against a fake built from
them (lab/fake_mercury.py), never against the real service:

* ghost text: ``POST /v1/fim/completions`` ``{model, prompt, suffix, max_tokens, ...}``; the
  middle is ``choices[0].text`` (OpenAI's completion shape; ``choices[0].message.content`` is read
  where a choice has no ``text``);
* next edits and rewrites: ``POST /v1/edit/completions`` with one user message holding
  ``<|recently_viewed_code_snippets|>``, ``<|current_file_content|>`` (the file, the editable
  region between ``<|code_to_edit|>`` and ``<|/code_to_edit|>`` with ``<|cursor|>`` in it) and
  ``<|edit_diff_history|>`` (unified diffs, oldest first); the answer's
  ``choices[0].message.content`` is the region rewritten, in a code fence, or ``None`` for no edit.

Mercury writes no per-token probabilities: its edit is its own judgement, so each candidate is
marked ``source="remote"`` and a next edit's gate takes it as the model chose it.  The endpoint
takes no instruction: an instructed edit is refused with a message.  The key travels only in the
Authorization header (remote.py ``open_transport``: ``DIFILL_API_KEY``, else ``INCEPTION_API_KEY``).
"""

from __future__ import annotations

import time
from typing import Any

from difill.engine.api import (
    DEFAULT_HOLE_MARKER,
    HOLE_TOKENS,
    BackendError,
    Candidate,
    FillOptions,
    FillResult,
    FillStats,
    HolesResult,
    PreviewCallback,
    RewriteRequest,
    ShouldStop,
)
from difill.engine.backends import answers, openai
from difill.engine.backends.remote import RemoteBackend
from difill.text.languages import BY_NAME
from difill.text.rules import fill_each_hole

MODEL = "mercury-edit-2"  # the published model of both endpoints
HOST = "api.inceptionlabs.ai"  # a remote on this host is Mercury when remoteKind is "auto"
FIM_PATH = "/v1/fim/completions"
EDIT_PATH = "/v1/edit/completions"
NO_EDIT = "None"  # the edit endpoint's answer when it sees nothing to change
MAX_TOKENS = 8192  # the endpoints' published bound on max_tokens


class MercuryRemote(RemoteBackend):
    protocol = "mercury"
    server_kind = "Inception Mercury"

    def describe_path(self) -> str:
        return f"Mercury, {self.config.model or MODEL}: {FIM_PATH} and {EDIT_PATH}"

    def fill(
        self,
        prefix: str,
        suffix: str,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,  # noqa: ARG002 - the endpoint streams no previews
    ) -> FillResult:
        options = options or FillOptions()
        started = time.perf_counter()
        limit = max(1, min(options.max_hole_tokens, MAX_TOKENS))
        body: dict[str, Any] = {
            "model": self.config.model or MODEL,
            "prompt": options.context_block + prefix,  # the snippet block, redacted (policy.to_model)
            "suffix": suffix,
            "max_tokens": limit,
            "temperature": 0.0,
            "stream": False,
        }
        if options.single_line:
            body["stop"] = ["\n"]
        answer = self._post(FIM_PATH, body, should_stop)
        text, complete, tokens = self._parse(lambda a: _first_text(a, limit), answer)
        elapsed = (time.perf_counter() - started) * 1000
        return openai.result_of(text, complete, tokens, limit, elapsed)

    def fill_holes(
        self,
        text: str,
        marker: str = DEFAULT_HOLE_MARKER,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
    ) -> HolesResult:
        """One fill per hole, left to right (Mercury's endpoint takes one hole)."""
        options = options or FillOptions(max_hole_tokens=HOLE_TOKENS)
        middles, filled = fill_each_hole(
            text, marker, lambda before, after: self.fill(before, after, options, should_stop).text
        )
        return HolesResult(middles, filled)

    def rewrite(
        self,
        request: RewriteRequest,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,  # noqa: ARG002
    ) -> FillResult:
        if request.instruction:
            raise BackendError(
                "Mercury's edit endpoint takes no instruction: use Rewrite selection, or a remote that "
                "follows instructions (a vLLM or difill serve-http)"
            )
        options = options or FillOptions()
        started = time.perf_counter()
        limit = max(1, min(MAX_TOKENS, max(options.max_hole_tokens, 2 * len(request.selection) // 3 + 16)))
        body = {
            "model": self.config.model or MODEL,
            "messages": [{"role": "user", "content": edit_prompt(request, options.language)}],
            "max_tokens": limit,
            "stream": False,
        }
        answer = self._post(EDIT_PATH, body, should_stop)
        text, complete, tokens = self._parse(lambda a: answers.first_choice(a, True, None), answer)
        text = self._parse(lambda t: answers.bounded_rewrite(t, request.selection, limit), text)
        text = unfenced(text)
        elapsed = (time.perf_counter() - started) * 1000
        stats = FillStats(hole_tokens=tokens, total_ms=elapsed, hole_length=len(request.selection), candidates=1)
        if text.strip() == NO_EDIT:
            return FillResult("", [], stats)
        candidate = Candidate(text, len(request.selection), 0.0, complete, source="remote")
        return FillResult(text, [candidate], stats)


def edit_prompt(request: RewriteRequest, language: str | None) -> str:
    """The next-edit message: no snippets (other files' text stays here), the file with the
    editable region and the cursor marked, and the user's last edit as a unified diff."""
    selection = request.selection
    cursor = len(selection) if request.cursor is None else max(0, min(request.cursor, len(selection)))
    region = selection[:cursor] + "<|cursor|>" + selection[cursor:]
    name = file_name(language)
    history = f"--- {name}\n+++ {name}\n{_line_end(request.history)}" if request.history else "\n"
    return (
        "<|recently_viewed_code_snippets|>\n\n<|/recently_viewed_code_snippets|>\n\n"
        f"<|current_file_content|>\ncurrent_file_path: {name}\n"
        f"{_line_end(request.prefix)}<|code_to_edit|>\n{_line_end(region)}<|/code_to_edit|>\n"
        f"{_line_end(request.suffix)}<|/current_file_content|>\n\n"
        f"<|edit_diff_history|>\n{history}<|/edit_diff_history|>"
    )


def file_name(language: str | None) -> str:
    """A file name that says the language and nothing of the user's folders."""
    spec = BY_NAME.get(language or "")
    return "file" + spec.extensions[0] if spec is not None and spec.extensions else "file.txt"


def unfenced(text: str) -> str:
    """The region in a fenced answer: the opening fence line and the closing fence dropped, the
    whitespace between them kept (whitespace is code; the region's own last line ending is the
    one before the closing fence)."""
    if text.startswith("```"):
        newline = text.find("\n")
        text = text[newline + 1 :] if newline >= 0 else ""
        end = text.rstrip()
        if end.endswith("```"):
            text = end[:-3]
    return text


def _line_end(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _first_text(raw: Any, limit: int) -> tuple[str, bool, int]:
    """A fill answer's first middle: ``choices[0].text``, or a chat-shaped choice's content."""
    choices = raw.get("choices") if isinstance(raw, dict) else None
    chat = isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict) and "text" not in choices[0]
    return answers.first_choice(raw, chat, limit)
