"""Suggestions already computed, so typing what was suggested costs no model run.

An LRU keyed on what was asked (``Asked``: the trigger kind and the document's line ending) and
on hashes of the text around the cursor: the last ``KEY_CHARS`` characters of the prefix and the
first ``KEY_CHARS`` of the suffix.  What was asked is part of the key because it changes the
answer: ghost text (automatic) is cut where the model is unsure, an explicit request gets whole
middles, and suggestions are stored in the document's line endings.

When the user types the first characters of a suggestion, the new prefix is the old one plus
those characters and the suffix is unchanged, so ``lookup`` also tries the prefix minus its last
1..``MAX_TYPED_AHEAD`` characters and, when the typed characters start a cached suggestion,
returns the rest of it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

KEY_CHARS = 4096  # context that must match for a cached suggestion to be reused
MAX_TYPED_AHEAD = 64  # characters typed into a suggestion that still find it
MAX_ENTRIES = 256


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True)
class Asked:
    """What a request asked for, beyond its context: answers to different asks are not shared."""

    invoked: bool  # the user asked (whole middles, several) rather than typed (cut ghost text)
    newline: str  # the document's line ending, which the stored suggestions are written in


@dataclass(frozen=True)
class CacheHit:
    suggestions: list[str]  # what is left of each cached suggestion after the typed characters
    typed: int  # characters typed since the suggestions were computed (0: exact hit)


_Key = tuple[Asked, bytes, bytes]


class SuggestionCache:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[_Key, list[str]] = OrderedDict()

    def clear(self) -> None:
        self._entries.clear()

    def store(self, asked: Asked, prefix: str, suffix: str, suggestions: list[str]) -> None:
        """``prefix`` and ``suffix`` in LF line endings (a FillContext's), ``suggestions`` in
        ``asked.newline``; none is an answer too (the model had nothing to show there)."""
        key = (asked, _digest(prefix[-KEY_CHARS:]), _digest(suffix[:KEY_CHARS]))
        self._entries[key] = list(suggestions)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def lookup(self, asked: Asked, prefix: str, suffix: str) -> CacheHit | None:
        suffix_key = _digest(suffix[:KEY_CHARS])
        for typed in range(0, min(MAX_TYPED_AHEAD, len(prefix)) + 1):
            earlier = prefix[: len(prefix) - typed]
            key = (asked, _digest(earlier[-KEY_CHARS:]), suffix_key)
            entry = self._entries.get(key)
            if entry is None:
                continue
            if not entry and typed == 0:  # the model had nothing to suggest here: no need to ask again
                self._entries.move_to_end(key)
                return CacheHit([], 0)
            # The typed characters come from the LF prefix; the suggestions are in the document's
            # line endings.
            chars = prefix[len(prefix) - typed :].replace("\n", asked.newline)
            rests = [s[len(chars) :] for s in entry if s.startswith(chars) and s[len(chars) :].strip()]
            if rests:
                self._entries.move_to_end(key)
                return CacheHit(rests, typed)
        return None
