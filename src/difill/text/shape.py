"""The shape of a suggestion: how much text the cursor's position asks for.

* inside a comment or a string: short, on this line (a few words);
* mid-line (text after the cursor, or the cursor ends a non-blank line): the rest of the line;
* on the empty body of a block (``def f():`` then nothing, or only ``pass``/``...``): several
  lines, up to a bound, indented inside the block;
* on any other blank line: a few lines in the current scope.

Tree-sitter (where a grammar is installed) says whether the cursor is in a comment or a string
and whether a line's ``:`` or ``{`` really opens a block; plain text rules stand in for other
languages.  What opens a block, what a string looks like and what an empty body is come from the
language (text/languages.py).  The caller hands in the tree (the server keeps one per document,
server/trees.py).

Editors close brackets as they are typed, so the rest of the line is often only closers
(``foo(█)``, ``=> {█})``): such a spot counts as the end of its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from tree_sitter import Node, Tree

from difill.text.characters import LINE_ENDING, line_start
from difill.text.languages import BlockStyle, LanguageSpec, is_prose, is_stub, spec_of

SHORT_TOKENS = 12  # a comment or string continuation: a few words
BLOCK_LINES = 12  # the most lines an empty block body gets
SCOPE_LINES = 4  # the most lines a blank line elsewhere gets
COMMENT_STARTS = ("#", "//", "--", "/*", "*", ";")
# What an editor's auto-close leaves after the cursor: a rest of line of only these is no text.
AUTO_CLOSED = set(")]}>\"'`;,")
# Grammar node types (across the grammars of text/languages.py) that are strings, and the code
# inside a string (``${x}``, ``#{x}``) that is not.
STRING_TYPES = {
    "string", "string_literal", "interpreted_string_literal", "raw_string_literal", "template_string",
    "raw_string", "encapsed_string", "multiline_string_literal", "verbatim_string_literal",
    "interpolated_string_expression", "char_literal", "rune_literal", "character_literal",
}  # fmt: skip
CODE_IN_STRING = {
    "template_substitution",
    "interpolation",
    "expansion",
    "simple_expansion",
    "command_substitution",
}


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
    # Lines a suggestion may take when it opens a block of its own (``get█`` -> a whole getter):
    # the block is completed to its end, up to this many lines.  0: the line bound holds.
    open_block_lines: int = 0

    @property
    def single_line(self) -> bool:
        return self.max_lines == 1


def decide_shape(
    text: str, offset: int, tree: Tree | None, max_tokens: int, language: str | None = None
) -> Shape:
    """The shape for a suggestion at ``offset`` in ``text`` (LF or CRLF) in ``language``."""
    spec = spec_of(language)
    start = line_start(text, offset)
    line_end = _line_end(text, offset)
    before, after = text[start:offset], text[offset:line_end]

    # Prose (Markdown) has no comments or strings: "## █" is a heading to finish, "it's" no quote.
    if not is_prose(language) and in_comment_or_string(text, offset, before, tree, spec):
        return Shape(ShapeKind.SHORT, min(max_tokens, SHORT_TOKENS), 1)
    if after.strip() and not only_closers(after):
        return Shape(ShapeKind.LINE_REST, max_tokens, 1)
    if before.strip():
        # The cursor ends a line: finish it, unless the line opens a block that has no body yet.
        header = before if _opens_block(text, offset, before, tree, spec) else None
    else:
        header = block_header_before(text, start, tree, spec)
    if header is not None and block_body_is_empty(text, line_end, indent_width(header), language):
        body_indent = max(indent_width(before) if not before.strip() else 0, indent_width(header) + 1)
        return Shape(ShapeKind.BLOCK, min(2 * max_tokens, 512), BLOCK_LINES, body_indent)
    # A block the suggestion itself opens may be completed, where a block has a visible end.
    # Python keeps its one line (its eval figures are measured on it); a language without a
    # grammar (CSS, Vue, Solidity, ...) gets the brace rule (scope._own_block).
    open_block_lines = BLOCK_LINES if spec is None or spec.block_style is not BlockStyle.INDENT else 0
    if before.strip():
        return Shape(ShapeKind.LINE_REST, max_tokens, 1, open_block_lines=open_block_lines)
    return Shape(ShapeKind.LINES, max_tokens, SCOPE_LINES, len(before), open_block_lines)


def only_closers(rest: str) -> bool:
    """Is the rest of a line only what an editor's auto-close leaves (``)``, ``})``, ``")``)?"""
    return bool(rest.strip()) and set(rest.strip()) <= AUTO_CLOSED


def in_comment_or_string(
    text: str, offset: int, before: str, tree: Tree | None, spec: LanguageSpec | None = None
) -> bool:
    if tree is not None:
        at = len(text[:offset].encode("utf-8"))
        if _inside_syntax(tree, at, offset > 0 and text[offset - 1] not in "\r\n", spec):
            return True
        if _in_code_in_string(tree, at, spec):
            return False  # ``${user.█}``: code, whatever the quotes on the line say
    elif before.lstrip().startswith(spec.line_comment if spec else COMMENT_STARTS):
        return True  # no grammar: a line comment by its look
    # Also with a grammar: it parses an unclosed string being typed as an error, not a string.
    # (A backquoted string may span lines: there the grammar alone decides.)
    return _open_quote(before, spec, backquotes=tree is None) is not None


def _inside_syntax(tree: Tree, byte: int, check_previous: bool, spec: LanguageSpec | None = None) -> bool:
    """Is the byte offset inside a string, or inside or at the end of a line comment?"""
    for probe in (byte, byte - 1) if check_previous else (byte,):
        node: Node | None = tree.root_node.descendant_for_byte_range(probe, probe)
        while node is not None:
            if _is_code_in_string(node, spec):
                break
            if "comment" in node.type and node.start_byte < byte <= node.end_byte:
                closed = (node.text or b"").rstrip().endswith((b"*/", b"]]"))  # a block comment's end
                if byte < node.end_byte or not closed:
                    return True
            if node.type in STRING_TYPES and node.start_byte < byte < node.end_byte:
                return True
            node = node.parent
    return False


def _in_code_in_string(tree: Tree, byte: int, spec: LanguageSpec | None) -> bool:
    node: Node | None = tree.root_node.descendant_for_byte_range(byte, byte)
    while node is not None:
        if _is_code_in_string(node, spec):
            return True
        node = node.parent
    return False


def _is_code_in_string(node: Node, spec: LanguageSpec | None) -> bool:
    """``${x}`` in a template literal is code; Python's f-string fields stay string, as before."""
    return node.type in CODE_IN_STRING and spec is not None and spec.name != "python"


def _open_quote(before: str, spec: LanguageSpec | None = None, backquotes: bool = True) -> str | None:
    """The quote of a string left open before the cursor on its line (triple quotes aside).

    The language says which characters are quotes (a Rust lifetime ``'a`` is not one; a Go or
    JavaScript backquote is), and a line comment ends the scan."""
    stripped = re.sub(r"\\.", "", before).replace('"""', "").replace("'''", "")
    quotes = "\"'" if spec is None else spec.quotes + ("`" if spec.backquote_strings and backquotes else "")
    if spec is not None and spec.lifetimes:
        stripped = re.sub(r"'(?:\w+)(?!')", "", stripped)
    comment = spec.line_comment if spec is not None else ()
    open_quote = None
    for i, ch in enumerate(stripped):
        if open_quote is None and comment and stripped.startswith(comment, i):
            break
        if ch in quotes and open_quote in (None, ch):
            open_quote = None if open_quote == ch else ch
    return open_quote


def string_quote_at(text: str, offset: int, tree: Tree | None, language: str | None = None) -> str | None:
    """The quote character of the string the cursor is inside, or None outside strings."""
    if is_prose(language):
        return None
    spec = spec_of(language)
    if tree is not None:
        at = len(text[:offset].encode("utf-8"))
        node: Node | None = tree.root_node.descendant_for_byte_range(at, at)
        while node is not None and not _is_code_in_string(node, spec):
            if node.type in STRING_TYPES and node.start_byte < at < node.end_byte:
                opening = (node.text or b"").decode("utf-8", "replace").lstrip("rRbBuUfF@$#L")
                return opening[:1] if opening[:1] in ('"', "'", "`") else None
            node = node.parent
    return _open_quote(text[line_start(text, offset) : offset], spec, backquotes=tree is None)


def block_header_before(
    text: str, start_of_line: int, tree: Tree | None, spec: LanguageSpec | None = None
) -> str | None:
    """The previous non-blank line if it opens a block (ends with ``:`` or ``{``, or ``do``...)."""
    end = start_of_line - 1
    while end > 0:
        if text[end] == "\n" and text[end - 1] == "\r":  # a CRLF: the line ends before its CR
            end -= 1
        start = line_start(text, end)
        line = text[start:end]
        if line.strip():
            return line if _opens_block(text, start + len(line), line, tree, spec) else None
        end = start - 1
    return None


def opens_block(line: str, spec: LanguageSpec | None) -> bool:
    """Does ``line``, by its text, open a block in the language (``:``, ``{``, ``do``, ``def f``)?"""
    stripped = line.strip()
    if spec is None:
        return stripped.endswith((":", "{"))
    return re.search(spec.block_open, stripped) is not None


def _opens_block(
    text: str, line_end: int, line: str, tree: Tree | None, spec: LanguageSpec | None = None
) -> bool:
    """Does ``line`` (ending at ``line_end`` in ``text``) open a block, with an opener that is code?"""
    if not opens_block(line, spec):
        return False
    if tree is None:
        return True
    stripped = line.rstrip()
    opener = line_end - (len(line) - len(stripped)) - 1
    byte = len(text[:opener].encode("utf-8"))
    return not _inside_syntax(tree, byte, False, spec)  # not a ":" inside a comment or string


def block_body_is_empty(text: str, line_end: int, header_indent: int, language: str | None = None) -> bool:
    """After the cursor line: nothing more indented than the header, or only a stub body."""
    lines = [ln for ln in LINE_ENDING.split(text[line_end:]) if ln.strip()]
    body = [ln for ln in lines[:2] if indent_width(ln) > header_indent]
    if not lines or not body:
        return True
    if is_stub(body[0], language) or body[0].strip() == "}":
        return len(body) == 1 or body[0].strip() == "}"
    return False


def indent_width(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _line_end(text: str, offset: int) -> int:
    """Offset of the end of the line that holds ``offset`` (before its line ending)."""
    found = LINE_ENDING.search(text, offset)
    return found.start() if found else len(text)
