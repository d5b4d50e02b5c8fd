"""One tree-sitter tree per open document, re-parsed incrementally per version.

A new version is parsed after telling the old tree which bytes changed, so typing re-parses only
around the edit.  Trees are parsed on the event loop only (tree-sitter parsers are per thread,
text/syntax.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tree_sitter import Tree

from difill.server.lifecycle import Feature
from difill.text.characters import common_prefix
from difill.text.syntax import parser_for

if TYPE_CHECKING:  # the CLI parses without the LSP types (lsprotocol takes ~0.4 s to import)
    from difill.server.documents import Document


@dataclass
class _Parsed:
    version: int
    source: bytes
    tree: Tree


# Larger documents get no tree: their shape comes from text rules (text/shape.py). Parsing
# runs on the event loop, and a 20 MB file took 8.7 s to parse and 4.8 s to reparse after one
# keystroke (a 2 MB line 2.3 s); this cap keeps every parse well under a keystroke's budget.
MAX_TREE_BYTES = 1024 * 1024


class SyntaxTrees(Feature):
    """One tree-sitter tree per document, re-parsed incrementally per document version."""

    def __init__(self) -> None:
        self._parsed: dict[str, _Parsed] = {}

    def tree_for(self, document: Document) -> Tree | None:
        return self.tree(document.uri, document.language, document.version, document.text)

    def tree(self, uri: str, language: str | None, version: int, text: str) -> Tree | None:
        """The tree of ``text``, version ``version`` of ``uri`` (in ``language``, as
        text/languages.py names it: ``Document.language``); None without a grammar."""
        parser = parser_for(language)
        if parser is None or len(text) > MAX_TREE_BYTES:  # characters <= bytes: cheap to check first
            self._parsed.pop(uri, None)
            return None
        source = text.encode("utf-8")
        if len(source) > MAX_TREE_BYTES:
            self._parsed.pop(uri, None)
            return None
        old = self._parsed.get(uri)
        if old is not None and old.version == version and old.source == source:
            return old.tree
        if old is None:
            tree = parser.parse(source)
        else:
            edit = byte_edit(old.source, source)
            if edit is not None:
                old.tree.edit(**edit)
            tree = parser.parse(source, old.tree)
        self._parsed[uri] = _Parsed(version, source, tree)
        return tree

    def parse_once(self, document: Document) -> Tree | None:
        """A tree for a throwaway text (nothing to reuse incrementally, nothing kept)."""
        parser = parser_for(document.language)
        source = document.text.encode("utf-8")
        return parser.parse(source) if parser is not None and len(source) <= MAX_TREE_BYTES else None

    def document_closed(self, uri: str) -> None:
        self._parsed.pop(uri, None)


def byte_edit(old: bytes, new: bytes) -> dict | None:
    """The one edit (as ``Tree.edit`` keywords) that turns ``old`` into ``new``; None if equal."""
    if old == new:
        return None
    start = common_prefix(old, new)
    tail = common_prefix(old[start:][::-1], new[start:][::-1])
    old_end, new_end = len(old) - tail, len(new) - tail
    return dict(
        start_byte=start, old_end_byte=old_end, new_end_byte=new_end,
        start_point=_point(old, start), old_end_point=_point(old, old_end), new_end_point=_point(new, new_end),
    )  # fmt: skip


def _point(source: bytes, byte: int) -> tuple[int, int]:
    row = source.count(b"\n", 0, byte)
    return row, byte - (source.rfind(b"\n", 0, byte) + 1)
