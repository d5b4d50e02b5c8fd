"""Where a transformation (generalise.py) applies: the nodes of its example's type, matched
against the example in the edit's scope first, then within a reach of the cursor, nearest first
(issue 63).  Bounded: lines over ``MAX_LINE_BYTES`` are never matched, at most
``MAX_CANDIDATES`` candidates in ``MATCH_MS``, ``MAX_FOUND`` places, and a cancel stops it.
"""

from __future__ import annotations

import functools
import re
import threading

from tree_sitter import Node, Query, QueryCursor, QueryError, Tree

from difill.server.features.next_edit.generalise import (
    BLOCKS,
    STRINGS,
    Match,
    Path,
    Transformation,
    at_path,
    indent,
    kids,
    leaves,
)
from difill.server.features.next_edit.scope import CLASSES, FUNCTIONS
from difill.text.budget import Budget
from difill.text.syntax import grammar_for

MAX_LINE_BYTES = 4000  # a place on a longer line (data, minified code) is never matched
MAX_CANDIDATES = 2000  # nodes matched against the example, nearest first (the budget's steps)
MATCH_MS = 100.0  # the matching, at most: then the places found so far
MAX_FOUND = 64  # places enough: the nearest are answered, and the gate counts at most this many


def matches(
    t: Transformation,
    tree: Tree,
    source: bytes,
    language: str,
    cursor: int,
    cancel: threading.Event | None,
    reach: int,
) -> list[Match]:
    """Where ``t`` applies in ``tree`` (the text after the edit), besides the edit itself: in the
    edit's function or class (or, made outside every one, outside every one), then within
    ``reach`` lines of ``cursor`` (bytes), nearest first; at most ``MAX_CANDIDATES`` candidates
    are matched in ``MATCH_MS``, none on a line over ``MAX_LINE_BYTES``, until ``cancel`` is set."""
    found_nodes = candidates(t, tree, language)
    scope = _scope(t.after)
    row = source.count(b"\n", 0, cursor)
    long_rows = long_lines(source)
    if long_rows:  # a data or minified line has no place, and its nodes are not matched
        found_nodes = [n for n in found_nodes if n.start_point[0] not in long_rows and n.end_point[0] not in long_rows]
    keyed = sorted(
        (((not same_scope(n, scope), abs(n.start_point[0] - row), n.start_byte), n) for n in found_nodes),
        key=lambda pair: pair[0],
    )
    found: list[Match] = []
    budget = Budget(MATCH_MS, MAX_CANDIDATES, cancel)  # the clock starts with the matching
    for (outside, lines, _), node in keyed:
        if len(found) >= MAX_FOUND or (outside and lines > reach) or not budget.spend():
            break  # sorted: every candidate after it is as far or farther
        if node.start_byte < t.after.end_byte and t.after.start_byte < node.end_byte:
            continue  # the edit's own place
        at_indent = indent(source, node.start_byte)
        done = apply(t, node, at_indent)
        if done is None or done[0] == node.text:
            continue
        start, text = node.start_byte, done[0]
        if t.lead and len(at_indent) == node.start_point[1]:
            start, text = start - len(at_indent), b"\n" * t.lead + at_indent + text
        found.append(Match(start, node.end_byte, text, done[1], not outside, node.start_point[0]))
    return found


def long_lines(source: bytes) -> set[int]:
    """The rows of the lines over ``MAX_LINE_BYTES`` (one pass over the text)."""
    return {row for row, line in enumerate(source.split(b"\n")) if len(line) > MAX_LINE_BYTES}


def candidates(t: Transformation, tree: Tree, language: str) -> list[Node]:
    """The nodes of the example's type under a parent of its type, in the field it stands in (a
    tree-sitter query: the walk is the library's, not Python's)."""
    grammar = grammar_for(language)
    if grammar is None:
        return []
    inner = f"({t.before.type}) @n"
    # A name alone, a string or a block needs its parent's kind (``MONTH_NAMES`` as a subscript's
    # value, a docstring, a function's body); any other example has shape enough of its own.
    loose = kids(t.before) and t.before.type not in STRINGS and t.before.type not in BLOCKS
    pattern = (
        f"({t.parent} {t.field_name + ': ' if t.field_name else ''}{inner})"
        if t.parent and not loose
        else inner
    )
    query = _query(language, pattern)
    return [] if query is None else QueryCursor(query).captures(tree.root_node).get("n", [])


@functools.lru_cache(maxsize=256)
def _query(language: str, pattern: str) -> Query | None:
    """The compiled query (compiling one takes longer than matching a file's candidates)."""
    try:
        return Query(grammar_for(language), pattern)
    except (QueryError, NameError, ValueError):
        return None


def apply(t: Transformation, node: Node, at_indent: bytes = b"") -> tuple[bytes, int] | None:
    """The template's text at ``node`` (whose line is indented by ``at_indent``) and how many of
    the example's named leaves read the same there; None where the example does not match it."""
    same = _match(t, t.before, node, (), False)
    if same is None:
        return None
    out = []
    for piece in t.template:
        if isinstance(piece, bytes):
            out.append(piece.replace(b"\n" + t.indent, b"\n" + at_indent) if t.indent != at_indent else piece)
            continue
        path, edit = piece
        part = at_path(node, path)
        if part is None:
            return None
        text = part.text if edit is None else edit.apply(part.text)
        if text is None:
            return None
        out.append(text)
    return b"".join(out), same


def _match(t: Transformation, b: Node, c: Node, path: Path, free: bool) -> int | None:
    """The example's node ``b`` against ``c``: None when they differ outside a hole, else how
    many named leaves read the same."""
    if path in t.edits:
        return None if c.type != b.type or t.edits[path].apply(c.text) is None else int(c.text == b.text)
    free = free or path in t.holes
    if not b.is_named:
        return 0 if not c.is_named and c.type == b.type else None
    if free and path:
        return None if not c.is_named else _shared(b, c)
    if c.type != b.type:
        return None
    b_kids, c_kids = kids(b), kids(c)
    if not b_kids or b.type in STRINGS:
        if c.text == b.text:
            return 1
        # The example is one leaf copied whole (a qualifier added): a name of the same kind.
        return 1 if free and same_kind(c.text, b.text) else None
    if len(b_kids) != len(c_kids):
        return None
    same = 0
    for i, (bc, cc) in enumerate(zip(b_kids, c_kids, strict=True)):
        got = _match(t, bc, cc, path + (i,), free)
        if got is None:
            return None
        same += got
    return same


def _shared(b: Node, c: Node) -> int:
    """Of the example's named leaves under ``b``, how many read the same under ``c`` (a hole's
    likeness: ``wrapped_f`` with its own arguments, not any function)."""
    if b.text == c.text:
        return sum(1 for _ in leaves(b))
    theirs = {leaf.text for leaf in leaves(c)}
    return sum(1 for leaf in leaves(b) if leaf.text in theirs)


def same_kind(name: bytes, other: bytes) -> bool:
    """Two names of the same kind: the same case and privacy, and a word in common
    (``MONTH_NAMES`` and ``DAY_NAMES``, ``MonthNames`` and ``DayNames``; not ``values`` and ``fn``)."""
    return shape(name) == shape(other) and bool(words(name) & words(other))


def shape(name: bytes) -> tuple[bool, str]:
    """What kind of name: private or not, and its case."""
    core = name.lstrip(b"_")
    case = "upper" if core.isupper() else "title" if core[:1].isupper() else "lower"
    return name.startswith(b"_"), case


def words(name: bytes) -> set[bytes]:
    """The words of a name, lower case (``MONTH_NAMES``, ``monthNames``: month, names)."""
    spaced = re.sub(rb"([a-z0-9])([A-Z])", rb"\1_\2", name)
    return {w.lower() for w in spaced.split(b"_") if w}


def _scope(node: Node) -> Node | None:
    """The function or class the edit is in (None: the module)."""
    parent = node.parent
    while parent is not None and parent.type not in FUNCTIONS and parent.type not in CLASSES:
        parent = parent.parent
    return parent


def same_scope(node: Node, scope: Node | None) -> bool:
    """In ``scope`` (a function or class), or, for None, outside every function and class."""
    return inside(node, scope) if scope is not None else _scope(node) is None


def inside(node: Node, scope: Node | None) -> bool:
    return scope is None or scope.start_byte <= node.start_byte and node.end_byte <= scope.end_byte
