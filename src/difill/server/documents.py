"""Open documents: their text and version, and LSP positions <-> offsets into the text.

LSP positions count ``character`` in code units of the negotiated position encoding: UTF-16 by
default (so an emoji counts 2), UTF-8 (bytes) or UTF-32 (code points, like Python's ``str``).
Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` and nowhere else (not at the other characters
``str.splitlines`` splits on).  A position past the end of its line means the end of the line,
as the specification says; a position inside a character (half a surrogate pair, the middle of
a UTF-8 sequence) is rounded down to the character's start.

A ``Document`` is immutable: every change makes a new one.  That lets a request keep the
document exactly as it was when the request arrived (see ``Documents.snapshot``), whatever
changes arrive while the model runs.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lsprotocol import types

from difill.text.characters import LINE_ENDING, common_prefix, without_lone_surrogates
from difill.text.languages import language_of

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"  # the values of lsprotocol's PositionEncodingKind
EOL = LINE_ENDING  # one definition of a line ending for the server and the text pipeline

# without_lone_surrogates: JSON can carry half a UTF-16 surrogate pair ("\ud800") and VS Code's
# strings can hold one, but UTF-8, tree-sitter and the tokenizer refuse it: kept as it is, every
# request in that document failed with a UnicodeEncodeError.  It is stored as U+FFFD, one code
# unit in UTF-16 and UTF-32 and three bytes in UTF-8, as the lone surrogate was counted, so no
# position moves.


def code_units(text: str, encoding: str) -> int:
    """Length of ``text`` in the code units of ``encoding``."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8"))
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)  # UTF-16: astral chars take 2


def char_index(line: str, units: int, encoding: str) -> int:
    """Index into ``line`` of the character at ``units`` code units (rounded down, clamped)."""
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    counted = 0
    for index, ch in enumerate(line):
        width = _width(ch, encoding)
        if counted + width > units:
            return index
        counted += width
    return len(line)


def _width(ch: str, encoding: str) -> int:
    code = ord(ch)
    if encoding == UTF8:
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 2 if code > 0xFFFF else 1


def range_json(rng: types.Range) -> dict[str, Any]:
    """An LSP range as the JSON a custom notification or command result carries."""
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


@dataclass(frozen=True)
class Document:
    uri: str
    language_id: str
    version: int
    text: str = field(repr=False)  # never in reprs: document contents stay out of logs
    # [start, end) of the text the latest change put in (empty for a deletion), in this text; None
    # for a document as opened. Where a user typed, against where a cursor only went (issue 66).
    changed: tuple[int, int] | None = field(default=None, compare=False)

    @cached_property
    def language(self) -> str | None:
        """The document's language as text/languages.py names it: decided once per document,
        read by every feature's model request (server/model_request.py)."""
        return language_of(self.language_id, self.uri)

    @cached_property
    def line_starts(self) -> list[int]:
        """Offset of the first character of each line; the last line may be empty."""
        return [0] + [m.end() for m in EOL.finditer(self.text)]

    @property
    def line_count(self) -> int:
        return len(self.line_starts)

    def line_end(self, line: int) -> int:
        """Offset just before the end-of-line characters of ``line``."""
        if line + 1 < len(self.line_starts):
            end = self.line_starts[line + 1]
            return end - 2 if self.text.startswith("\r\n", end - 2) else end - 1
        return len(self.text)

    def line_text(self, line: int) -> str:
        return self.text[self.line_starts[line] : self.line_end(line)]

    def offset_at(self, position: types.Position, encoding: str) -> int | None:
        """Offset of ``position``, or None when its line is past the last line."""
        if position.line < 0 or position.character < 0 or position.line >= self.line_count:
            return None
        start = self.line_starts[position.line]
        line = self.text[start : self.line_end(position.line)]
        return start + char_index(line, position.character, encoding)

    def clamped_offset_at(self, position: types.Position, encoding: str) -> int:
        """Like ``offset_at``, but a line past the end means the end of the text (for edits)."""
        if position.line < 0:
            return 0
        if position.line >= self.line_count:
            return len(self.text)
        offset = self.offset_at(position, encoding)
        return 0 if offset is None else offset

    def position_at(self, offset: int, encoding: str) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[line]
        offset = min(offset, self.line_end(line))  # inside a CRLF: the end of the line
        return types.Position(line=line, character=code_units(self.text[start:offset], encoding))

    def range_of(self, start: int, end: int, encoding: str) -> types.Range:
        return types.Range(start=self.position_at(start, encoding), end=self.position_at(end, encoding))

    def splits_character(self, position: types.Position, encoding: str) -> bool:
        """Whether ``position`` falls inside a character (half a surrogate pair, mid UTF-8 sequence).

        A request there is rounded down harmlessly; a change there cannot be applied exactly.
        """
        if not 0 <= position.line < self.line_count or position.character < 0:
            return False
        line = self.line_text(position.line)
        if position.character >= code_units(line, encoding):  # at or past the end: the line end
            return False
        index = char_index(line, position.character, encoding)
        return code_units(line[:index], encoding) != position.character

    def with_changes(
        self, changes: list[types.TextDocumentContentChangeEvent], version: int, encoding: str
    ) -> tuple[Document, bool]:
        """The document after ``changes``, applied in order as the specification says, and whether
        every change applied exactly (none of them starts or ends inside a character)."""
        current = self
        exact = True
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                exact = exact and not any(
                    current.splits_character(p, encoding) for p in (change.range.start, change.range.end)
                )
                start = current.clamped_offset_at(change.range.start, encoding)
                end = max(start, current.clamped_offset_at(change.range.end, encoding))
                current = current._spliced(start, end, without_lone_surrogates(change.text), version)
            else:
                text = without_lone_surrogates(change.text)
                current = Document(
                    self.uri, self.language_id, version, text, _changed_span(current.text, text)
                )
                exact = True  # the whole text: whatever came before is replaced
        if current is self:  # no changes at all: still the new version
            current = Document(self.uri, self.language_id, version, self.text, self.changed)
        return current, exact

    def _spliced(self, start: int, end: int, piece: str, version: int) -> Document:
        """The text with ``[start, end)`` replaced by ``piece``, its line index updated around the
        change instead of rebuilt: a keystroke in a 20 MB document took 0.45 s to re-index."""
        text = self.text[:start] + piece + self.text[end:]
        document = Document(self.uri, self.language_id, version, text, (start, start + len(piece)))
        old = self.line_starts
        delta = len(piece) - (end - start)
        # A line start is the end of a line ending. Those ending before ``start - 1`` cannot change,
        # nor (shifted) those after ``end + 1`` in the old text; the rest are found again, so that
        # a CR and an LF that the change joins or parts are counted as LSP counts them.
        low, high = max(0, start - 1), start + len(piece) + 2
        before = old[: bisect.bisect_right(old, low)]
        after = [s + delta for s in old[bisect.bisect_left(old, end + 2) :]]
        between = [m.end() for m in EOL.finditer(text, low, min(len(text), high + 1)) if low < m.end() < high]
        after = [s for s in after if s >= high]
        document.__dict__["line_starts"] = before + between + after  # fills the cached_property
        return document


def _changed_span(old: str, new: str) -> tuple[int, int]:
    """[start, end) in ``new`` of what differs from ``old``: a whole-text change's one edit."""
    start = common_prefix(old, new)
    tail = common_prefix(old[start:][::-1], new[start:][::-1])
    return start, len(new) - tail


class Documents:
    """The open documents, by URI, and which of them may no longer match the editor's copy.

    A document is *unsynced* when a change to it could not be applied exactly (a range inside a
    character, a didChange that could not be read): from then on the server's copy may differ
    from the client's, so ``get`` and ``snapshot`` hide it and nothing is asked of the model for
    it, until a didOpen or a full-text change makes the copies equal again.
    """

    def __init__(self) -> None:
        self._documents: dict[str, Document] = {}
        self._unsynced: dict[str, str] = {}  # uri -> why

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        document = Document(uri, language_id, version, without_lone_surrogates(text))
        self._documents[uri] = document
        self._unsynced.pop(uri, None)
        return document

    def change(
        self, uri: str, version: int, changes: list[types.TextDocumentContentChangeEvent], encoding: str
    ) -> Document | None:
        """Apply ``changes``; None (and nothing changes) when ``uri`` is not open.

        The changes are applied even when inexact (the copy is then marked unsynced), so that a
        later full-text change, or the client's own view, is the only thing that matters again."""
        document = self._documents.get(uri)
        if document is None:
            return None
        document, exact = document.with_changes(changes, version, encoding)
        self._documents[uri] = document
        if not exact:
            self.mark_unsynced(uri, "a change started or ended inside a character")
        elif any(isinstance(c, types.TextDocumentContentChangeWholeDocument) for c in changes):
            self._unsynced.pop(uri, None)
        return document

    def mark_unsynced(self, uri: str | None, why: str) -> list[str]:
        """Mark ``uri`` (None: every open document) unsynced; the URIs that were synced until now."""
        uris = list(self._documents) if uri is None else [uri] if uri in self._documents else []
        newly = [u for u in uris if u not in self._unsynced]
        for u in uris:
            self._unsynced.setdefault(u, why)
        return newly

    def unsynced_reason(self, uri: str) -> str | None:
        return self._unsynced.get(uri)

    def close(self, uri: str) -> None:
        self._documents.pop(uri, None)
        self._unsynced.pop(uri, None)

    def get(self, uri: str) -> Document | None:
        """The open, synced document at ``uri``; None when it is not open or may differ from the editor's."""
        return None if uri in self._unsynced else self._documents.get(uri)

    def snapshot(self) -> dict[str, Document]:
        """Every open, synced document as it is now (cheap: documents are immutable and shared)."""
        return {uri: d for uri, d in self._documents.items() if uri not in self._unsynced}
