"""Identifiers, windows and Jaccard similarity: how "text like the text around the cursor" is
measured (Copilot's neighboring tabs: the best window of each other file by Jaccard over the
identifiers it uses)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words every file of a language uses: they say nothing about which file is alike.
STOP_WORDS = frozenset(
    "and as assert async await break case catch class const continue def default del elif else "
    "enum except export extends false final finally fn for from func function global if impl "
    "import in interface is lambda let match mut new nil none not null or package pass private "
    "protected pub public raise return self static struct super switch this throw true try type "
    "use var void while with yield int str bool float string none_type".split()
)
WINDOW_LINES = 16  # a snippet: 16 lines, windows start every 8 lines
WINDOW_STRIDE = 8
QUERY_LINES_BEFORE = 16  # the text around the cursor: lines above it...
QUERY_LINES_AFTER = 4  # ...and below it, never the cursor's own line (see query_text)


def identifiers(text: str) -> set[str]:
    """The identifiers ``text`` uses (at least 2 characters, not a stop word), interned: the
    index holds each name once however many files use it."""
    return {
        sys.intern(word)
        for word in IDENTIFIER.findall(text)
        if len(word) > 1 and word.lower() not in STOP_WORDS
    }


def jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)


@dataclass(frozen=True)
class Window:
    start_line: int  # 0-based
    text: str
    names: frozenset[str]


def windows(text: str) -> list[Window]:
    """Overlapping windows of ``WINDOW_LINES`` lines (a short text is one window)."""
    lines = text.split("\n")
    starts = range(0, max(1, len(lines) - WINDOW_LINES + WINDOW_STRIDE), WINDOW_STRIDE)
    result = []
    for start in starts:
        body = "\n".join(lines[start : start + WINDOW_LINES]).strip("\n")
        if body.strip():
            result.append(Window(start, body, frozenset(identifiers(body))))
    return result


def window_around(text: str, line: int) -> Window:
    """The window of ``text`` centred on ``line`` (for recent edits)."""
    lines = text.split("\n")
    start = max(0, min(line - WINDOW_LINES // 2, len(lines) - WINDOW_LINES))
    body = "\n".join(lines[start : start + WINDOW_LINES]).strip("\n")
    return Window(start, body, frozenset(identifiers(body)))


def query_text(text: str, offset: int) -> str:
    """The text around the cursor that retrieval compares with: lines above and below the cursor,
    not the cursor's own line.  The line being typed changes with every keystroke; leaving it out
    keeps the snippets, and so the prompt's head, byte-identical while the user types a line,
    which is what lets the prefix cache hit."""
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line_end = len(text) if line_end < 0 else line_end
    start = line_start
    for _ in range(QUERY_LINES_BEFORE):
        start = text.rfind("\n", 0, max(0, start - 1)) + 1
        if start == 0:
            break
    end = line_end
    for _ in range(QUERY_LINES_AFTER):
        end = text.find("\n", end + 1)
        if end < 0:
            end = len(text)
            break
    return text[start:line_start] + text[line_end:end]
