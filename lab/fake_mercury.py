"""A fake of Inception's Mercury API, built from its published request and answer shapes: the
Mercury backend's tests run against it.  No request of difill's ever reached the real service.

What it checks, as Inception documents it (docs.inceptionlabs.ai "Autocomplete (FIM)", "Next
Edit", "API parameters"; LiteLLM's Inception provider page):

* ``POST /v1/fim/completions``: ``model``, ``prompt`` and ``suffix`` strings; optional
  ``max_tokens`` (1-8192), ``temperature`` and ``top_p`` (0-1), ``presence_penalty`` (0-2),
  ``stop`` (at most 4 strings), ``stream``, ``stream_options``.  Answers OpenAI's completion
  shape, ``{"id", "object": "text_completion", "model", "choices": [{"index", "text",
  "finish_reason"}], "usage"}``;
* ``POST /v1/edit/completions``: ``model`` and exactly one ``messages`` entry, a ``user`` message
  (no system role: Inception adds its own) holding, in order, the recently viewed snippets, the
  current file with one ``<|code_to_edit|>`` region with one ``<|cursor|>`` in it, and the edit
  history; the same optional fields.  Answers a chat completion whose
  ``choices[0].message.content`` is the region rewritten in a code fence, or ``None``;
* ``Authorization: Bearer <key>`` on every request, else 401 ``{"error": {"message"}}``.

A field it does not know is refused (400): the fake is stricter than a server that may ignore it,
so that difill sends only what is published.  ``fim(prompt, suffix)`` gives a middle,
``edit(region_without_cursor)`` a region's new text (None: "None").  ``requests`` keeps every
(path, body, Authorization header present) for a test to read.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from lab.fake_vllm import read_body, send

KEY = "sk-fake-mercury-0123456789"
COMMON = {"model", "max_tokens", "temperature", "top_p", "presence_penalty", "stop", "stream", "stream_options"}
FIM_FIELDS = COMMON | {"prompt", "suffix"}
EDIT_FIELDS = COMMON | {"messages"}
SECTIONS = re.compile(
    r"\A<\|recently_viewed_code_snippets\|>\n.*?<\|/recently_viewed_code_snippets\|>\n\n"
    r"<\|current_file_content\|>\ncurrent_file_path: [^\n]+\n(?P<above>.*?)"
    r"<\|code_to_edit\|>\n(?P<region>.*?)<\|/code_to_edit\|>\n(?P<below>.*?)<\|/current_file_content\|>\n\n"
    r"<\|edit_diff_history\|>\n(?P<history>.*?)<\|/edit_diff_history\|>\Z",
    re.DOTALL,
)


class Refused(ValueError):
    pass


class FakeMercury:
    def __init__(
        self,
        fim: Callable[[str, str], str] = lambda prompt, suffix: "a + b",
        edit: Callable[[str], str | None] = lambda region: None,
        key: str = KEY,
    ) -> None:
        self.fim = fim
        self.edit = edit
        self.key = key
        self.requests: list[tuple[str, Any, bool]] = []
        self._lock = threading.Lock()

    def __call__(self, request) -> None:
        raw = read_body(request)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        authorized = request.headers.get("Authorization") == f"Bearer {self.key}"
        with self._lock:
            self.requests.append((request.path, body, "Authorization" in request.headers))
        if not authorized:
            return _json(request, 401, {"error": {"message": "Incorrect API key provided"}})
        try:
            if request.command == "POST" and request.path == "/v1/fim/completions":
                return _json(request, 200, self._fim(body))
            if request.command == "POST" and request.path == "/v1/edit/completions":
                return _json(request, 200, self._edit(body))
        except Refused as err:
            return _json(request, 400, {"error": {"message": str(err)}})
        _json(request, 404, {"error": {"message": f"no route {request.command} {request.path}"}})

    def bodies(self, path: str) -> list[dict]:
        with self._lock:
            return [body for p, body, _ in self.requests if p == path]

    def _fim(self, body: Any) -> dict:
        check_common(body, FIM_FIELDS)
        for name in ("prompt", "suffix"):
            if not isinstance(body.get(name), str):
                raise Refused(f"'{name}' must be a string")
        middle = self.fim(body["prompt"], body["suffix"])
        choice = {"index": 0, "text": middle, "finish_reason": "stop"}
        return _answer("text_completion", body["model"], choice)

    def _edit(self, body: Any) -> dict:
        check_common(body, EDIT_FIELDS)
        messages = body.get("messages")
        if not (isinstance(messages, list) and len(messages) == 1 and isinstance(messages[0], dict)):
            raise Refused("'messages' must hold exactly one message")
        if messages[0].get("role") != "user" or not isinstance(messages[0].get("content"), str):
            raise Refused("the message must be a user message with string content")
        match = SECTIONS.match(messages[0]["content"])
        if match is None or match.group("region").count("<|cursor|>") != 1:
            raise Refused("the content must hold the three next-edit sections and one <|cursor|>")
        new = self.edit(match.group("region").replace("<|cursor|>", ""))
        content = "None" if new is None else f"```\n{new}```"
        choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        return _answer("chat.completion", body["model"], choice)


def check_common(body: Any, allowed: set[str]) -> None:
    """The published fields, each of its published type and range."""
    if not isinstance(body, dict):
        raise Refused("the body must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise Refused(f"unknown fields: {', '.join(unknown)}")
    if not isinstance(body.get("model"), str):
        raise Refused("'model' must be a string")
    ranges = {"max_tokens": (1, 8192), "temperature": (0, 1), "top_p": (0, 1), "presence_penalty": (0, 2)}
    for name, (low, high) in ranges.items():
        value = body.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high):
            raise Refused(f"'{name}' must be between {low} and {high}")
    if isinstance(body.get("max_tokens"), float):
        raise Refused("'max_tokens' must be an integer")
    stop = body.get("stop")
    if stop is not None and not (isinstance(stop, list) and len(stop) <= 4 and all(isinstance(s, str) for s in stop)):
        raise Refused("'stop' must be at most 4 strings")
    if body.get("stream", False) is not False:
        raise Refused("this fake answers no streams")


def _answer(kind: str, model: str, choice: dict) -> dict:
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    return {"id": "cmpl-fake", "object": kind, "created": 0, "model": model, "choices": [choice], "usage": usage}


def _json(request, status: int, payload: dict) -> None:
    send(request, status, json.dumps(payload).encode())
