"""The text around a cursor: prefix and suffix windows, the suggestion's shape, and the document
facts the filters need (line endings, indentation style, the string the cursor is in).

Line endings are decided here, once per request: the windows are LF text (a lone CR is a line
ending too, text/characters.py), ``line_ending`` says what the document uses, and the last
filter (``keep_line_endings``) puts it back.  Every model and every filter in between sees LF only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tree_sitter import Tree

from difill.text.characters import CRLF, LINE_ENDING, line_ending_of, to_lf
from difill.text.languages import spec_of
from difill.text.shape import Shape, decide_shape, string_quote_at

# The engine cuts the prefix to its token budget itself (engine/tokens.py); the caller only has to
# hand it enough characters.  Code runs at about 4 characters a token; 8 leaves room for long ones.
CHARS_PER_TOKEN_BOUND = 8
SUFFIX_CHARS = 4000  # the filters compare a suggestion with the next lines; the engine reads less
INDENT_SAMPLE_LINES = 2000
LINE_ENDING_SAMPLE_CHARS = 10_000  # each side of the cursor: the endings of the code being edited


@dataclass(frozen=True)
class FillContext:
    prefix: str  # the text before the cursor, cut to the context budget, LF line endings
    suffix: str  # the text after the cursor, cut to SUFFIX_CHARS, LF line endings
    language: str | None  # tree-sitter language id, when the document has one
    shape: Shape
    line_ending: str  # the document's line ending ("\n", "\r\n" or "\r"): suggestions end lines with it
    # One level of the document's indentation: "\t" or some spaces; "" when neither the document
    # (no indented line) nor the language (text/languages.py) decides it: the model's own stays.
    indent_unit: str
    string_quote: str | None = None  # the quote of the string the cursor is in, if it is in one

    @property
    def crlf(self) -> bool:
        return self.line_ending == CRLF

    @property
    def line_before(self) -> str:
        """The cursor line's text before the cursor."""
        return self.prefix[self.prefix.rfind("\n") + 1 :]

    @property
    def line_after(self) -> str:
        """The cursor line's text after the cursor (without the line ending)."""
        end = self.suffix.find("\n")
        return self.suffix if end < 0 else self.suffix[:end]


def build_context(
    text: str, offset: int, language: str | None, context_tokens: int, max_tokens: int, tree: Tree | None
) -> FillContext:
    """The context of a cursor at ``offset`` in ``text`` (any line endings); ``tree`` parses ``text``."""
    return FillContext(
        prefix=to_lf(prefix_window(text, offset, context_tokens)),
        suffix=to_lf(suffix_window(text, offset)),
        language=language,
        shape=decide_shape(text, offset, tree, max_tokens, language),
        line_ending=line_ending_of(
            text[max(0, offset - LINE_ENDING_SAMPLE_CHARS) : offset + LINE_ENDING_SAMPLE_CHARS]
        ),
        indent_unit=indent_unit(text, language),
        string_quote=string_quote_at(text, offset, tree, language),
    )


def prefix_window(text: str, offset: int, context_tokens: int) -> str:
    """Enough of the text before ``offset`` for a prefix budget of ``context_tokens``."""
    return text[max(0, offset - context_tokens * CHARS_PER_TOKEN_BOUND) : offset]


def suffix_window(text: str, offset: int) -> str:
    return text[offset : offset + SUFFIX_CHARS]


def indent_unit(text: str, language: str | None = None) -> str:
    """The document's indentation step: a tab, or the most common increase in leading spaces.
    Without an indented line: the language's convention (Go: a tab; Python: 4 spaces; unknown
    languages: 4 spaces, as before) or "" where it has none (JavaScript: 2 and 4 are both common)."""
    tabs = spaces = 0
    steps: Counter[int] = Counter()
    previous = 0
    for line in LINE_ENDING.split(text, INDENT_SAMPLE_LINES)[:INDENT_SAMPLE_LINES]:
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
        spec = spec_of(language)
        return spec.indent if spec is not None else "    "
    return " " * steps.most_common(1)[0][0]
