"""Tree-sitter: does a fill leave the code parseable?  Used to rank candidate fills and in eval.

Grammars are optional: a language without an installed grammar simply gets no parse signal.
"""

from __future__ import annotations

import functools
from importlib import import_module

from tree_sitter import Language, Node, Parser

# language id (as LSP names it) -> python module that ships the grammar
GRAMMAR_MODULES = {"python": "tree_sitter_python"}
EXTENSIONS = {".py": "python", ".pyi": "python"}


@functools.cache
def parser_for(language: str | None) -> Parser | None:
    module_name = GRAMMAR_MODULES.get(language or "")
    if module_name is None:
        return None
    try:
        module = import_module(module_name)
    except ImportError:
        return None
    return Parser(Language(module.language()))


def language_for_path(path: str) -> str | None:
    for ext, language in EXTENSIONS.items():
        if path.endswith(ext):
            return language
    return None


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
