"""Edits generalised from one example on the syntax tree (issue 63: what Visual Studio
IntelliCode's "repeated edits" does with PROSE; Miltner et al., "On the fly synthesis of edit
suggestions", OOPSLA 2019; REFAZER, Rolim et al., ICSE 2017).

The user's finished edit is the text before and after it.  Its *example* is the smallest pair of
tree-sitter subtrees that explains it: a node of the tree after the edit that covers the change,
and the node of the tree before it that spans the same code less the change
(``total / 100`` -> ``int(total / 100)``).  Anti-unified, the pair is a transformation with holes:

* the after subtree becomes a *template*: its text, where every part copied from the before
  subtree is a reference to that part (``int(`` $0 ``)``), and a string whose quotes or whose
  text at one end changed is a reference with that change (three single quotes to three double
  quotes, ``"x %q"`` -> ``"x %q: %w"``);
* a part of the before subtree that the template copies is a hole: at another place it may read
  anything (``count`` for ``total``); every other part must read the same there (``cls`` in
  ``cls._PATTERN`` -> ``self._PATTERN``, the operator ``/``, the function's name when only the
  argument list was copied).

The other places are the nodes of the example's type under a parent of its type (a tree-sitter
query), in the edit's function or class first, then the file, nearest the cursor first, each one
matched against the example and given the template's text.  A statement added to or removed from
a block is statements.py's.  Pure tree work: the caller gates (gate.py) and parse-checks each
place.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass, field

from tree_sitter import Node, Query, QueryCursor, QueryError, Tree

from difill.server.features.next_edit.scope import CLASSES, FUNCTIONS
from difill.server.features.next_edit.strings import StringEdit, string_edit
from difill.text.budget import Budget
from difill.text.syntax import count_errors, grammar_for

MAX_EXAMPLE_BYTES = 240  # a larger subtree is a paste or a rewrite, not an edit to repeat
MAX_BLOCK_BYTES = 8000  # a block whose statements are compared (statements.py)
MAX_LINE_BYTES = 4000  # a place on a longer line (data, minified code) is never matched
MAX_CANDIDATES = 2000  # nodes matched against the example, nearest first (the budget's steps)
MATCH_MS = 100.0  # the matching, at most: then the places found so far
MAX_FOUND = 64  # places enough: the nearest are answered, and the gate counts at most this many
STRINGS = frozenset({
    "string", "interpreted_string_literal", "raw_string_literal", "template_string", "string_literal",
})  # fmt: skip
ARGUMENTS = frozenset({"argument_list", "arguments"})
CALLS = frozenset({"call", "call_expression", "new_expression"})
BLOCKS = frozenset({"block", "statement_block", "statement_list", "compound_statement"})

Path = tuple[int, ...]  # child indices (comments left out) from the example's root


Piece = bytes | tuple[Path, StringEdit | None]  # template text, or a part of the example copied


@dataclass
class Transformation:
    before: Node  # the example's subtree before the edit
    after: Node  # and after it (in the tree of the text after the edit)
    template: list[Piece]
    holes: frozenset[Path]  # the before subtree's parts the template copies
    edits: dict[Path, StringEdit] = field(default_factory=dict)
    parent: str = ""  # the example's parent's type, and the field it stands in
    field_name: str | None = None
    leaves: int = 0  # named leaves of the example: its size
    constants: int = 0  # of them, those that must read the same elsewhere (the example's anchor)
    indent: bytes = b""  # the whitespace before the after subtree on its line
    lead: int = 0  # blank lines the edit put before it


@dataclass(frozen=True)
class Match:
    start: int  # bytes, in the text after the edit
    end: int
    text: bytes  # the template applied there
    same: int  # the example's named leaves that read the same here
    in_scope: bool  # in the edit's own function or class
    line: int  # the place's first line


def kids(node: Node) -> list[Node]:
    """A node's children, comments left out (a comment is no part of an edit's shape)."""
    return [child for child in node.children if not child.is_extra]


def example(before: Tree, after: Tree, start: int, old_end: int, new_end: int) -> Transformation | None:
    """The smallest subtree pair that explains the edit (bytes: the change is ``before[start:old_end]``
    -> ``after[start:new_end]``), anti-unified; None when the change parses with errors (it is
    being typed), or no pair under ``MAX_EXAMPLE_BYTES`` explains it."""
    if count_errors(after.root_node) > count_errors(before.root_node):
        return None  # the edit leaves the file parsing worse: it is being typed
    delta = new_end - old_end
    node: Node | None = after.root_node.descendant_for_byte_range(start, max(start, new_end))
    while node is not None and node.end_byte - node.start_byte <= MAX_BLOCK_BYTES:
        # An argument list is its call's: the function's name says which calls are places.
        if (
            node.is_named
            and node.start_byte <= start
            and node.end_byte >= new_end
            and node.type not in ARGUMENTS
            and not _in_string(node)  # a string's parts are its text: the string is the example
        ):
            old = _node_at(before.root_node, node.start_byte, node.end_byte - delta, node.type)
            if old is None and node.type in BLOCKS and node.parent is not None:
                old = _block_at(before.root_node, node, delta)  # a statement put first moved its start
            # A leaf alone (``cls`` -> ``self``) is a rename: its parent is the example; a block is
            # paired with a block (a statement deleted leaves its neighbour covering the change).
            if (
                old is not None and (kids(node) or kids(old) or node.type in STRINGS)
                and (old.type in BLOCKS) == (node.type in BLOCKS)
                and (node.type in BLOCKS or node.end_byte - node.start_byte <= MAX_EXAMPLE_BYTES)
            ):  # fmt: skip
                return _checked(old, node, after, start)
        node = node.parent
    return None


def _in_string(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in STRINGS:
            return True
        parent = parent.parent
    return False


def _checked(old: Node, new: Node, after: Tree, start: int) -> Transformation | None:
    """The pair's transformation, or None for a pair that is no edit to repeat."""
    if new.has_error or old.has_error:
        return None  # an edit whose parse fails is never generalised
    # A multi-line pair with one part changed (a decorator put on a function in an ``if``'s
    # block): that part is the example.
    while b"\n" in new.text and (one := _one_changed(old, new)) is not None and kids(one[1]):
        old, new = one
    if _code(new) == _code(old):
        return None  # spaces or comments alone
    t = _anti_unify(old, new)
    if not t.holes and (not kids(old) or old.type in STRINGS):
        return None  # one literal or name for another: the token substitutions' case, not a shape
    # Lines added, moved or re-indented are code being written, but for a line put around the
    # example kept whole (a decorator added); a block's are statements.py's.
    whole = ((), None) in t.template
    if new.type not in BLOCKS and new.type not in STRINGS:
        if (b"\n" in new.text + old.text and not whole) or (len(new.text) > MAX_EXAMPLE_BYTES and not whole):
            return None
        added = b"".join(p for p in t.template if isinstance(p, bytes)).strip()
        if b"\n" in new.text and not added.endswith(b")"):
            return None  # a line put around it is a call when finished (``@six`` -> ``@six.wraps(f)``)
    source = after.root_node.text
    t.indent = indent(source, new.start_byte)
    # Blank lines the edit put before a line it added (``@six.wraps(f)`` after a blank line).
    lead = source[start : new.start_byte]
    if whole and b"\n" in new.text and start < new.start_byte and not lead.strip():
        t.lead = lead.count(b"\n")
    return t
    return t


def _code(node: Node) -> bytes:
    """The node's tokens, comments and spaces left out."""
    if not kids(node) or node.type in STRINGS:
        return node.text
    return b" ".join(_code(child) for child in kids(node))


def _one_changed(old: Node, new: Node) -> tuple[Node, Node] | None:
    a, b = [c for c in kids(old) if c.is_named], [c for c in kids(new) if c.is_named]
    changed = [(x, y) for x, y in zip(a, b, strict=False) if x.text != y.text]
    return changed[0] if len(a) == len(b) and len(changed) == 1 else None


def _node_at(root: Node, low: int, high: int, kind: str) -> Node | None:
    """The named node spanning exactly [low, high), under a parent (not the root): of type
    ``kind`` if one is (a docstring is a string, a statement and a block), else the outermost."""
    node: Node | None = root.descendant_for_byte_range(low, max(low, high))
    found = None
    while node is not None and node.start_byte == low and node.end_byte == high and node.parent is not None:
        if node.type == kind:
            return node
        found = node if node.is_named else found
        node = node.parent
    return found


def _block_at(root: Node, block: Node, delta: int) -> Node | None:
    """The before tree's block of ``block``'s parent (found by the parent's span)."""
    parent = block.parent
    old = _node_at(root, parent.start_byte, parent.end_byte - delta, parent.type) if parent else None
    return next((c for c in kids(old) if c.type == block.type), None) if old is not None else None


def _anti_unify(old: Node, new: Node) -> Transformation | None:
    """The transformation of the pair: the after subtree's text with the before subtree's copied
    parts as references (the holes)."""
    index: dict[tuple[str, bytes], Path] = {}
    strings: list[tuple[Path, Node]] = []
    callees: list[Path] = []
    for path, node in _walk(old):
        if path and _callee(node):
            callees.append(path)  # the function called is never a hole, nor any part of it
        if node.is_named and not any(path[: len(c)] == c for c in callees):
            index.setdefault((node.type, node.text), path)
            if not kids(node):
                index.setdefault(("", node.text), path)
        if node.type in STRINGS:
            strings.append((path, node))
    template: list[Piece] = []
    edits: dict[Path, StringEdit] = {}

    def emit(node: Node) -> None:
        copied = index.get((node.type, node.text)) if node.is_named else None
        if copied is None and node.is_named and not kids(node):
            copied = index.get(("", node.text))  # a name as another kind of leaf (``x`` -> ``c.x``)
        if copied is not None:
            template.append((copied, None))
            return
        if node.type in STRINGS:
            for path, string in strings:
                if (edit := string_edit(string.text, node.text)) is not None:
                    template.append((path, edit))
                    edits[path] = edit
                    return
        children = kids(node)
        if not children or node.type in STRINGS:
            template.append(node.text)
            return
        at = node.start_byte
        for child in children:
            template.append(new.text[at - new.start_byte : child.start_byte - new.start_byte])
            emit(child)
            at = child.end_byte
        template.append(new.text[at - new.start_byte : node.end_byte - new.start_byte])

    emit(new)
    refs = {piece[0] for piece in template if isinstance(piece, tuple)}
    # A part copied from inside another copied part is the example's own text: at another place
    # the outer part reads anything, and what stands at the inner one's path is unknown.
    nested = {p for p in refs if any(p[: len(q)] == q and p != q for q in refs)}
    template = [
        _at(old, piece[0]).text if isinstance(piece, tuple) and piece[0] in nested else piece
        for piece in template
    ]
    holes = frozenset(refs - nested)
    leaves = [
        (path, n) for path, n in _walk(old) if n.is_named and (not kids(n) or n.type in STRINGS)
    ]  # _leaves
    constants = sum(1 for path, _ in leaves if not any(path[: len(h)] == h for h in holes))
    parent = old.parent
    field_name = None
    if parent is not None:
        field_name = next(
            (parent.field_name_for_child(i) for i, c in enumerate(parent.children) if c == old), None
        )
    return Transformation(
        old, new, template, holes, edits, parent.type if parent else "", field_name, len(leaves), constants
    )


def _callee(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type in CALLS and parent.child_by_field_name("function") == node


def _walk(root: Node, path: Path = ()):
    yield path, root
    if root.type in STRINGS:
        return  # a string is one part: its text
    for i, child in enumerate(kids(root)):
        yield from _walk(child, path + (i,))


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


def indent(source: bytes, at: int) -> bytes:
    """The whitespace before ``at`` on its line ("" when code stands before it)."""
    head = source[source.rfind(b"\n", 0, at) + 1 : at]
    return head if not head.strip() else b""


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
        part = _at(node, path)
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


def leaves(node: Node):
    for _, leaf in _walk(node):
        if leaf.is_named and (not kids(leaf) or leaf.type in STRINGS):
            yield leaf


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


def _at(node: Node, path: Path) -> Node | None:
    for i in path:
        children = kids(node)
        if i >= len(children):
            return None
        node = children[i]
    return node


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
