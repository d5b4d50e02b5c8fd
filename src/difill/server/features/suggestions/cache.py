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

An answer also reads beyond that window: import drafts and symbol candidates read the whole
document, and drafts and candidates come from other files and tabs (issue 52).  So each entry
keeps a ``Beyond``: a digest of the document outside the window (``beyond``) and the workspace's
generation for the document (``generation``: files and other tabs changed); an entry whose
``Beyond`` differs from the request's is not reused.  The far part of the prefix is cut at a
multiple of ``FAR_STEP`` characters below the window, so that typing at the cursor keeps it;
what lies in the gap (at most ``FAR_STEP`` + 2 x ``MAX_TYPED_AHEAD`` characters beyond the window)
is read by neither.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

KEY_CHARS = 4096  # context that must match for a cached suggestion to be reused
MAX_TYPED_AHEAD = 64  # characters typed into a suggestion that still find it
MAX_ENTRIES = 256
FAR_STEP = 1024  # the far prefix's cut moves in steps of this many characters


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


@dataclass(frozen=True)
class Beyond:
    """What an answer read beyond the window around the cursor (the module docstring)."""

    beyond: bytes  # the document's text far before and after the cursor
    generation: int  # the workspace's, for this document (context/index.py ``generation``)


NOTHING_BEYOND = Beyond(b"", 0)  # for callers that key on the window alone


def beyond(text: str, offset: int, generation: int, typed: int = 0) -> Beyond:
    """``Beyond`` of a cursor at ``offset`` of the whole document ``text`` (its own line endings),
    as it was ``typed`` characters ago (typing at the cursor moved the far suffix with it)."""
    cut = max(0, (offset - typed - KEY_CHARS - 2 * MAX_TYPED_AHEAD) // FAR_STEP * FAR_STEP)
    return Beyond(_digest(text[:cut]) + _digest(text[offset + KEY_CHARS :]), generation)


class SuggestionCache:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[_Key, tuple[Beyond, list[str]]] = OrderedDict()

    def clear(self) -> None:
        self._entries.clear()

    def store(
        self, asked: Asked, prefix: str, suffix: str, suggestions: list[str], far: Beyond = NOTHING_BEYOND
    ) -> None:
        """``prefix`` and ``suffix`` in LF line endings (a FillContext's), ``suggestions`` in
        ``asked.newline``; none is an answer too (the model had nothing to show there).  ``far``:
        what it read beyond them (``beyond``)."""
        key = (asked, _digest(prefix[-KEY_CHARS:]), _digest(suffix[:KEY_CHARS]))
        self._entries[key] = (far, list(suggestions))
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def lookup(
        self, asked: Asked, prefix: str, suffix: str, far: Callable[[int], Beyond] | None = None
    ) -> CacheHit | None:
        """The cached answer for this window, or the rest of one that the characters typed since
        start; ``far(typed)``: the request's ``Beyond`` with ``typed`` characters taken back."""
        suffix_key = _digest(suffix[:KEY_CHARS])
        for typed in range(0, min(MAX_TYPED_AHEAD, len(prefix)) + 1):
            earlier = prefix[: len(prefix) - typed]
            key = (asked, _digest(earlier[-KEY_CHARS:]), suffix_key)
            found = self._entries.get(key)
            if found is None:
                continue
            stored, entry = found
            if stored != (far(typed) if far is not None else NOTHING_BEYOND):
                continue  # the document far away, another file or a tab changed since
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
