"""What a suggestion request hands the engine: prefix and suffix windows, shape, and the document
facts the filters need (line endings, indentation style, the text around the cursor)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tree_sitter import Tree

from difill.engine.syntax import language_for_path
from difill.server.documents import Document
from difill.server.features.shape import Shape, decide_shape, string_quote_at

# The engine cuts the prefix to its token budget itself; the server only has to hand it enough
# characters.  Code runs at about 4 characters a token; 8 leaves room for long tokens.
CHARS_PER_TOKEN = 8
SUFFIX_CHARS = 4000  # the filters compare a suggestion with the next lines; the engine reads less
INDENT_SAMPLE_LINES = 2000


@dataclass(frozen=True)
class FillContext:
    prefix: str  # the text before the cursor, cut to the context budget
    suffix: str  # the text after the cursor, cut to SUFFIX_CHARS
    language: str | None  # tree-sitter language id, when the document has one
    shape: Shape
    crlf: bool  # the document's line endings: suggestions are returned in them
    indent_unit: str  # one level of the document's indentation: "\t" or some spaces
    string_quote: str | None = None  # the quote of the string the cursor is in, if it is in one

    @property
    def line_before(self) -> str:
        """The cursor line's text before the cursor."""
        return self.prefix[self.prefix.rfind("\n") + 1 :]

    @property
    def line_after(self) -> str:
        """The cursor line's text after the cursor (without the line ending)."""
        end = self.suffix.find("\n")
        return (self.suffix if end < 0 else self.suffix[:end]).rstrip("\r")


def build_context(
    document: Document, offset: int, context_tokens: int, max_tokens: int, tree: Tree | None
) -> FillContext:
    text = document.text
    prefix = text[max(0, offset - context_tokens * CHARS_PER_TOKEN) : offset]
    suffix = text[offset : offset + SUFFIX_CHARS]
    return FillContext(
        prefix=prefix,
        suffix=suffix,
        language=language_of(document),
        shape=decide_shape(text, offset, tree, max_tokens),
        crlf="\r\n" in text[max(0, offset - 10000) : offset + 10000],
        indent_unit=indent_unit(text),
        string_quote=string_quote_at(text, offset, tree),
    )


def language_of(document: Document) -> str | None:
    """The tree-sitter language of a document: its language id, or else its file extension."""
    from difill.engine.syntax import GRAMMAR_MODULES

    if document.language_id in GRAMMAR_MODULES:
        return document.language_id
    return language_for_path(document.uri)


def indent_unit(text: str) -> str:
    """The document's indentation step: a tab, or the most common increase in leading spaces."""
    tabs = spaces = 0
    steps: Counter[int] = Counter()
    previous = 0
    for line in text.split("\n", INDENT_SAMPLE_LINES)[:INDENT_SAMPLE_LINES]:
        if not line.strip():
            continue
        if line.startswith("\t"):
            tabs += 1
            continue
        width = len(line) - len(line.lstrip(" "))
        if width:
            spaces += 1
        if width > previous:
            steps[width - previous] += 1
        previous = width
    if tabs > spaces:
        return "\t"
    if not steps:
        return "    "
    return " " * steps.most_common(1)[0][0]
