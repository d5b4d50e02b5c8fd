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
  ``cls._PATTERN`` -> ``self._PATTERN``, the operator ``/``, and always the function called).

Where it applies is matching.py's; a statement added to or removed from a block is
statements.py's.  Pure tree work: the caller gates (gate.py) and parse-checks each place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node, Tree

from difill.server.features.next_edit.strings import StringEdit, string_edit
from difill.text.syntax import count_errors

MAX_EXAMPLE_BYTES = 240  # a larger subtree is a paste or a rewrite, not an edit to repeat
MAX_BLOCK_BYTES = 8000  # a block whose statements are compared (statements.py)
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
    callees: set[Path] = set()
    for path, node in _walk(old):
        if path and _callee(node):
            callees.add(path)  # the function called is never a hole, nor any part of it
        if node.is_named and not _under(path, callees):
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
    return _transformation(old, new, template, edits)


def _transformation(old: Node, new: Node, template: list[Piece], edits: dict[Path, StringEdit]) -> Transformation:
    """The pair's template with its holes settled, and what the gate weighs: the example's named
    leaves, those that must read the same elsewhere, and where the before node stands."""
    refs = {piece[0] for piece in template if isinstance(piece, tuple)}
    # A part copied from inside another copied part is the example's own text: at another place
    # the outer part reads anything, and what stands at the inner one's path is unknown.
    nested = {p for p in refs if p and _under(p[:-1], refs)}
    template = [
        at_path(old, piece[0]).text if isinstance(piece, tuple) and piece[0] in nested else piece
        for piece in template
    ]
    holes = frozenset(refs - nested)
    leaves = [
        (path, n) for path, n in _walk(old) if n.is_named and (not kids(n) or n.type in STRINGS)
    ]  # _leaves
    constants = sum(1 for path, _ in leaves if not _under(path, holes))
    parent = old.parent
    field_name = None
    if parent is not None:
        field_name = next(
            (parent.field_name_for_child(i) for i, c in enumerate(parent.children) if c == old), None
        )
    return Transformation(
        old, new, template, holes, edits, parent.type if parent else "", field_name, len(leaves), constants
    )


def _under(path: Path, tops) -> bool:
    """Whether ``path`` is one of ``tops`` or under one (each of its prefixes looked up: a
    block's thousands of nodes against its hundreds of parts, without a scan for each)."""
    return any(path[:k] in tops for k in range(len(path) + 1))


def _callee(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type in CALLS and parent.child_by_field_name("function") == node


def _walk(root: Node, path: Path = ()):
    yield path, root
    if root.type in STRINGS:
        return  # a string is one part: its text
    for i, child in enumerate(kids(root)):
        yield from _walk(child, path + (i,))


def indent(source: bytes, at: int) -> bytes:
    """The whitespace before ``at`` on its line ("" when code stands before it)."""
    head = source[source.rfind(b"\n", 0, at) + 1 : at]
    return head if not head.strip() else b""


def leaves(node: Node):
    for _, leaf in _walk(node):
        if leaf.is_named and (not kids(leaf) or leaf.type in STRINGS):
            yield leaf


def at_path(node: Node, path: Path) -> Node | None:
    for i in path:
        children = kids(node)
        if i >= len(children):
            return None
        node = children[i]
    return node


