"""A reference model of LSP document sync, and Hypothesis strategies for edits to fuzz it with.

The reference is written from the specification, not from ``server/documents.py``: lines end at
``\\r\\n``, ``\\r`` or ``\\n``; a position's ``character`` counts code units of the negotiated
encoding, found here by encoding the line with Python's codecs; a character past the end of its
line means the end of the line; changes in one ``didChange`` apply in order, each to the text the
previous one left.
"""

from __future__ import annotations

import re

from hypothesis import strategies as st

ENCODINGS = ("utf-8", "utf-16", "utf-32")
CODECS = {"utf-8": ("utf-8", 1), "utf-16": ("utf-16-le", 2), "utf-32": ("utf-32-le", 4)}
EOL = re.compile(r"\r\n|\r|\n")

# Pieces of inserted text: multi-byte and astral characters (surrogate pairs in UTF-16), every
# kind of line end, and characters that str.splitlines() splits on but LSP does not.
PIECES = (
    "a", "Z", "_", " ", "\t", "x = 1", "é", "ß", "한", "中", "😀", "𝕏", "🇫🇷", "e\u0301", "\ufeff",
    "\u2028", "\x0c", "\x85", "\r\n", "\n", "\r", "\r\r\n", "\n\r",
)  # fmt: skip


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line's content, end-of-line characters excluded."""
    spans, start = [], 0
    for match in EOL.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


def units(text: str, encoding: str) -> int:
    codec, width = CODECS[encoding]
    return len(text.encode(codec)) // width


def offset_of(text: str, line: int, character: int, encoding: str) -> int:
    start, end = line_spans(text)[line]
    codec, width = CODECS[encoding]
    head = text[start:end].encode(codec)[: character * width]  # past the end: the whole line
    return start + len(head.decode(codec))


def apply_change(text: str, change: dict, encoding: str) -> str:
    """``change`` as sent in ``contentChanges``: ``{"range": ..., "text": ...}`` or ``{"text": ...}``."""
    if "range" not in change:
        return change["text"]
    start, end = change["range"]["start"], change["range"]["end"]
    first = offset_of(text, start["line"], start["character"], encoding)
    last = offset_of(text, end["line"], end["character"], encoding)
    return text[:first] + change["text"] + text[last:]


# ---------------------------------------------------------------------------- strategies

inserted_text = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=8).map("".join),
    st.text(max_size=6),  # any code point but lone surrogates (Hypothesis leaves those out)
)
documents = st.one_of(
    st.sampled_from(["", "\n", "\r\n", "\r", "😀", "def f():\r\n    return 1\r\n"]),
    st.lists(st.sampled_from(PIECES), max_size=40).map("".join),
)


@st.composite
def positions(draw, text: str, encoding: str) -> dict:
    """A position in ``text`` at a character boundary, sometimes past the end of its line."""
    spans = line_spans(text)
    line = draw(st.integers(0, len(spans) - 1))
    start, end = spans[line]
    content = text[start:end]
    index = draw(st.integers(0, len(content)))
    character = units(content[:index], encoding)
    if index == len(content) and draw(st.booleans()):
        character += draw(st.integers(1, 1000))  # past the end of the line: means its end
    return {"line": line, "character": character}


@st.composite
def changes(draw, text: str, encoding: str) -> dict:
    """One content change for ``text``: a range edit, most often, or one of the edge cases."""
    kind = draw(st.sampled_from(["range"] * 6 + ["at end", "at start", "delete all", "whole"]))
    new_text = draw(inserted_text)
    spans = line_spans(text)
    end_of_text = {"line": len(spans) - 1, "character": units(text[spans[-1][0] :], encoding)}
    if kind == "whole":
        return {"text": draw(st.one_of(st.just(""), documents))}
    if kind == "at end":
        return {"range": {"start": end_of_text, "end": end_of_text}, "text": new_text}
    if kind == "at start":
        start = {"line": 0, "character": 0}
        return {"range": {"start": start, "end": draw(positions(text, encoding))}, "text": new_text}
    if kind == "delete all":
        return {"range": {"start": {"line": 0, "character": 0}, "end": end_of_text}, "text": ""}
    a, b = draw(positions(text, encoding)), draw(positions(text, encoding))
    first, last = sorted((a, b), key=lambda p: (p["line"], p["character"]))
    return {"range": {"start": first, "end": last}, "text": new_text}
