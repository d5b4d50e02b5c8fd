"""Tree-sitter: does a fill leave the code parseable?  Used to rank candidate fills and in eval.

Grammars are optional: a language without an installed grammar simply gets no parse signal.
A tree-sitter ``Parser`` is not thread-safe, so each thread gets its own (``parser_for``): the
event loop, a model worker and an eval thread never share one.
"""

from __future__ import annotations

import functools
import threading
from importlib import import_module

from tree_sitter import Language, Node, Parser, Tree

from difill.text.languages import spec_of

_per_thread = threading.local()


@functools.cache
def grammar_for(language: str | None) -> Language | None:
    """The tree-sitter grammar of ``language`` (as text/languages.py names it); None when it has
    none or it is not installed.  Languages are immutable and safe to share between threads."""
    spec = spec_of(language)
    if spec is None:
        return None
    try:
        module = import_module(spec.grammar_module)
    except ImportError:
        return None
    return Language(getattr(module, spec.grammar_function)())


def parser_for(language: str | None) -> Parser | None:
    """This thread's parser for ``language`` (None without a grammar)."""
    grammar = grammar_for(language)
    if grammar is None:
        return None
    parsers: dict[str, Parser] = _per_thread.__dict__.setdefault("parsers", {})
    if language not in parsers:
        parsers[language] = Parser(grammar)
    return parsers[language]


def count_errors(node: Node) -> int:
    """ERROR and MISSING nodes under ``node``."""
    if not node.has_error:
        return 0
    own = 1 if (node.is_error or node.is_missing) else 0
    return own + sum(count_errors(child) for child in node.children)


def syntax_errors(text: str, language: str | None) -> int | None:
    """Number of syntax errors in ``text``, or None when no grammar is available."""
    parser = parser_for(language)
    if parser is None:
        return None
    return count_errors(parser.parse(text.encode("utf-8")).root_node)


def parses(text: str, language: str | None) -> bool | None:
    errors = syntax_errors(text, language)
    return None if errors is None else errors == 0


# Function nodes of the grammars: a rename walks the innermost (features/next_edit/scope.py); a
# code action at the cursor rewrites the innermost named one, a lambda or closure being part of
# the function around it.
ANONYMOUS_FUNCTIONS = frozenset({"lambda", "arrow_function", "function_expression", "function", "func_literal",
                                 "closure_expression"})  # fmt: skip
NAMED_FUNCTIONS = frozenset({
    "function_definition",  # Python, C
    "function_declaration", "method_definition",  # JavaScript, TypeScript, Go
    "method_declaration",  # Go, Java
    "function_item",  # Rust
})  # fmt: skip
FUNCTIONS = NAMED_FUNCTIONS | ANONYMOUS_FUNCTIONS


def enclosing_function(tree: Tree, text: str, at: int) -> tuple[int, int] | None:
    """The [start, end) character span of the innermost named function around offset ``at`` of
    ``text`` (the text ``tree`` was parsed from); None outside every function."""
    source = text.encode("utf-8")
    byte = len(text[:at].encode("utf-8"))
    node = _named_function_at(tree, byte)
    if node is None and byte > 0:  # a cursor just after the function's last character
        node = _named_function_at(tree, byte - 1)
    if node is None:
        return None
    start = len(source[: node.start_byte].decode("utf-8", errors="ignore"))
    return start, start + len(source[node.start_byte : node.end_byte].decode("utf-8", errors="ignore"))


def _named_function_at(tree: Tree, byte: int) -> Node | None:
    node: Node | None = tree.root_node.descendant_for_byte_range(byte, byte)
    while node is not None and node.type not in NAMED_FUNCTIONS:
        node = node.parent
    return node
