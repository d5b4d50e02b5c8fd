"""The shape of a suggestion: how much text the cursor's position asks for.

* inside a comment or a string: short, on this line (a few words);
* mid-line (text after the cursor, or the cursor ends a non-blank line): the rest of the line;
* on the empty body of a block (``def f():`` then nothing, or only ``pass``/``...``): several
  lines, up to a bound, indented inside the block;
* on any other blank line: a few lines in the current scope.

Tree-sitter (where a grammar is installed) says whether the cursor is in a comment or a string
and whether a line's ``:`` really opens a block; plain text rules stand in for other languages.
The caller hands in the tree (the server keeps one per document, server/trees.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from tree_sitter import Node, Tree

from difill.engine.text.characters import LINE_ENDING, line_start

SHORT_TOKENS = 12  # a comment or string continuation: a few words
BLOCK_LINES = 12  # the most lines an empty block body gets
SCOPE_LINES = 4  # the most lines a blank line elsewhere gets
STUB_BODIES = ("pass", "...")
COMMENT_STARTS = ("#", "//", "--", "/*", "*", ";")


class ShapeKind(Enum):
    LINE_REST = "line"  # finish the current line
    SHORT = "short"  # inside a comment or string
    BLOCK = "block"  # the body of an empty block
    LINES = "lines"  # a few lines on a blank line


@dataclass(frozen=True)
class Shape:
    kind: ShapeKind
    max_tokens: int
    max_lines: int
    # Width (in columns, a tab counting as one) below which a suggestion's line leaves the scope
    # the cursor is in; None for one-line shapes.
    scope_indent: int | None = None

    @property
    def single_line(self) -> bool:
        return self.max_lines == 1


def decide_shape(text: str, offset: int, tree: Tree | None, max_tokens: int) -> Shape:
    """The shape for a suggestion at ``offset`` in ``text`` (any line endings)."""
    start = line_start(text, offset)
    line_end = _line_end(text, offset)
    before, after = text[start:offset], text[offset:line_end]

    if in_comment_or_string(text, offset, before, tree):
        return Shape(ShapeKind.SHORT, min(max_tokens, SHORT_TOKENS), 1)
    if after.strip():
        return Shape(ShapeKind.LINE_REST, max_tokens, 1)
    if before.strip():
        # The cursor ends a line: finish it, unless the line opens a block that has no body yet.
        header = before if _opens_block(text, offset, before, tree) else None
    else:
        header = block_header_before(text, start, tree)
    if header is not None and block_body_is_empty(text, line_end, indent_width(header)):
        body_indent = max(indent_width(before) if not before.strip() else 0, indent_width(header) + 1)
        return Shape(ShapeKind.BLOCK, min(2 * max_tokens, 512), BLOCK_LINES, body_indent)
    if before.strip():
        return Shape(ShapeKind.LINE_REST, max_tokens, 1)
    return Shape(ShapeKind.LINES, max_tokens, SCOPE_LINES, len(before))


def in_comment_or_string(text: str, offset: int, before: str, tree: Tree | None) -> bool:
    if tree is not None:
        at = len(text[:offset].encode("utf-8"))
        if _inside_syntax(tree, at, offset > 0 and text[offset - 1] not in "\r\n"):
            return True
    elif before.lstrip().startswith(COMMENT_STARTS):  # no grammar: a line comment by its look
        return True
    # Also with a grammar: it parses an unclosed string being typed as an error, not a string.
    return _open_quote(before) is not None


def _inside_syntax(tree: Tree, byte: int, check_previous: bool) -> bool:
    """Is the byte offset inside a string, or inside or at the end of a comment?"""
    for probe in (byte, byte - 1) if check_previous else (byte,):
        node: Node | None = tree.root_node.descendant_for_byte_range(probe, probe)
        while node is not None:
            if node.type == "comment" and node.start_byte < byte <= node.end_byte:
                return True
            if node.type == "string" and node.start_byte < byte < node.end_byte:
                return True
            node = node.parent
    return False


def _open_quote(before: str) -> str | None:
    """The quote of a string left open before the cursor on its line (triple quotes aside)."""
    stripped = re.sub(r"\\.", "", before).replace('"""', "").replace("'''", "")
    open_quote = None
    for ch in stripped:
        if ch in "\"'" and open_quote in (None, ch):
            open_quote = None if open_quote == ch else ch
    return open_quote


def string_quote_at(text: str, offset: int, tree: Tree | None) -> str | None:
    """The quote character of the string the cursor is inside, or None outside strings."""
    if tree is not None:
        at = len(text[:offset].encode("utf-8"))
        node: Node | None = tree.root_node.descendant_for_byte_range(at, at)
        while node is not None:
            if node.type == "string" and node.start_byte < at < node.end_byte:
                opening = (node.text or b"").decode("utf-8", "replace").lstrip("rRbBuUfF")
                return opening[:1] if opening[:1] in ('"', "'") else None
            node = node.parent
    return _open_quote(text[line_start(text, offset) : offset])


def block_header_before(text: str, start_of_line: int, tree: Tree | None) -> str | None:
    """The previous non-blank line if it opens a block (ends with ``:`` or ``{``)."""
    end = start_of_line - 1
    while end > 0:
        if text[end] == "\n" and text[end - 1] == "\r":  # a CRLF: the line ends before its CR
            end -= 1
        start = line_start(text, end)
        line = text[start:end]
        if line.strip():
            return line if _opens_block(text, start + len(line), line, tree) else None
        end = start - 1
    return None


def _opens_block(text: str, line_end: int, line: str, tree: Tree | None) -> bool:
    """Does ``line`` (ending at ``line_end`` in ``text``) end with a ``:`` or ``{`` that is code?"""
    stripped = line.rstrip()
    if not stripped.endswith((":", "{")):
        return False
    if tree is None:
        return True
    opener = line_end - (len(line) - len(stripped)) - 1
    byte = len(text[:opener].encode("utf-8"))
    return not _inside_syntax(tree, byte, False)  # not a ":" inside a comment or string


def block_body_is_empty(text: str, line_end: int, header_indent: int) -> bool:
    """After the cursor line: nothing more indented than the header, or only a stub body."""
    lines = [ln for ln in LINE_ENDING.split(text[line_end:]) if ln.strip()]
    body = [ln for ln in lines[:2] if indent_width(ln) > header_indent]
    if not lines or not body:
        return True
    if body[0].strip() in STUB_BODIES or body[0].strip() == "}":
        return len(body) == 1 or body[0].strip() == "}"
    return False


def indent_width(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _line_end(text: str, offset: int) -> int:
    """Offset of the end of the line that holds ``offset`` (before its line ending)."""
    found = LINE_ENDING.search(text, offset)
    return found.start() if found else len(text)
