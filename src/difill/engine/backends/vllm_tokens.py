"""The server's own tokenizer for the seeded canvas (engine/backends/vllm.py): vLLM's ``/tokenize``
and ``/detokenize``, remembered per text, and bounded against a server that answers too much."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

CACHE_ENTRIES = 256  # tokenized text windows (and detokenized middles) kept
CACHE_BYTES = 4 * 1024 * 1024  # and at most this much of them (ids counted at ID_BYTES each)
ID_BYTES = 36  # a list slot and a small int object
SPECIAL_TOKEN_SLACK = 8  # ids a tokenizer may add beyond one per byte (markers)
MAX_CHARS_PER_TOKEN = 1024  # a /detokenize answer longer than this per id is not a detokenization

Post = Callable[[str, dict, Any], Any]  # (path, body, should_stop) -> the JSON answer


class ContractRefused(Exception):
    """The server does not keep the canvas-seeding contract; ``str(err)`` says how it showed it."""


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
