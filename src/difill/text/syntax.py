"""Tree-sitter: does a fill leave the code parseable?  Used to rank candidate fills and in eval.

Grammars are optional: a language without an installed grammar simply gets no parse signal.
A tree-sitter ``Parser`` is not thread-safe, so each thread gets its own (``parser_for``): the
event loop, a model worker and an eval thread never share one.
"""

from __future__ import annotations

import functools
import threading
from importlib import import_module

from tree_sitter import Language, Node, Parser

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
