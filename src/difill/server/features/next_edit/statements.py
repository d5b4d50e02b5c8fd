"""A statement added to or removed from a block, repeated in its siblings (issue 63: "a statement
deleted or added again in a sibling function or class").

The example is a block before and after the edit whose statements differ by one run added or
removed.  An added run goes into each sibling block (a block of the same kind under a parent of
the same kind: another function's body) right after the statement that stood before it in the
example, read the same there, or right before the one that followed it; a removed run is removed
where the same statements stand.  A block that already has the added statements is no place.
"""

from __future__ import annotations

import threading

from tree_sitter import Node, Tree

from difill.server.features.next_edit.generalise import Match, Transformation, indent, kids
from difill.server.features.next_edit.matching import MATCH_MS, MAX_CANDIDATES, candidates, inside, long_lines
from difill.text.budget import Budget

MAX_STATEMENTS = 3  # a longer run added is code being written, not an edit to repeat
ACTS = frozenset({
    "call", "call_expression", "new_expression", "assignment", "augmented_assignment", "assignment_expression",
    "augmented_assignment_expression", "assignment_statement", "short_var_declaration", "variable_declarator",
    "inc_statement", "dec_statement",
})  # fmt: skip
RETURNS = frozenset({"return_statement", "break_statement", "continue_statement", "pass_statement"})


def statement_matches(
    t: Transformation, tree: Tree, source: bytes, language: str, cursor: int, cancel: threading.Event | None
) -> list[Match] | None:
    """The places of the statements ``t`` adds or removes; None when ``t`` is not such an edit."""
    old, new = _statements(t.before), _statements(t.after)
    head = 0
    while head < min(len(old), len(new)) and old[head].text == new[head].text:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail].text == new[-1 - tail].text:
        tail += 1
    added, removed = new[head : len(new) - tail], old[head : len(old) - tail]
    if bool(added) == bool(removed) or len(added) + len(removed) > MAX_STATEMENTS:
        return None  # a statement changed: the generic transformation's
    if not all(_simple(s) for s in added):
        return None
    prev = old[head - 1].text if head > 0 else None
    following = old[head].text if head < len(old) else None
    run = source[added[0].start_byte : added[-1].end_byte] if added else b""
    # The blocks of the example's kind under a parent of its kind: the other functions' bodies.
    siblings, scope = candidates(t, tree, language), _scope_of(t.after)
    row = source.count(b"\n", 0, cursor)
    siblings.sort(key=lambda n: (not inside(n, scope), abs(n.start_point[0] - row), n.start_byte))
    found, long_rows = [], long_lines(source)
    budget = Budget(MATCH_MS, MAX_CANDIDATES, cancel)
    for block in siblings:
        if not budget.spend():
            break
        if block.start_byte <= t.after.start_byte < block.end_byte or block.start_point[0] in long_rows:
            continue
        place = (
            _added(source, block, added, run, prev, following) if added else _removed(source, block, removed)
        )
        if place is not None:
            found.append(Match(*place, same=1, in_scope=inside(block, scope), line=block.start_point[0]))
    return found


def _statements(block: Node) -> list[Node]:
    return [s for s in kids(block) if s.is_named]


def _simple(statement: Node) -> bool:
    """A statement to add elsewhere: one line that calls or assigns something (``self.log(n)``,
    ``defer mu.Unlock()``).  A name alone (``valid`` on its way to ``validate(x)``), a bare
    ``return`` and a block (an ``if`` with its body) are code being written."""
    if b"\n" in statement.text or statement.type in RETURNS:
        return False
    stack = [statement]
    while stack:
        node = stack.pop()
        if node.type in ACTS:
            return True
        stack.extend(c for c in kids(node) if c.is_named)
    return False


def _scope_of(block: Node) -> Node | None:
    """The siblings' own scope: the class or module the edited function stands in."""
    function = block.parent
    return function.parent if function is not None else None


def _added(
    source: bytes, block: Node, added: list[Node], run: bytes, prev: bytes | None, following: bytes | None
):
    statements = _statements(block)
    texts = [s.text for s in statements]
    if all(a.text in texts for a in added):
        return None  # it has them already
    for statement in statements:
        indent = _indent(source, statement)
        if prev is not None and statement.text == prev:
            return (
                statement.end_byte,
                statement.end_byte,
                b"\n" + indent + _reindent(source, run, added[0], indent),
            )
        if prev is None and following is not None and statement.text == following:
            return (
                statement.start_byte,
                statement.start_byte,
                _reindent(source, run, added[0], indent) + b"\n" + indent,
            )
    return None


def _removed(source: bytes, block: Node, removed: list[Node]):
    statements = _statements(block)
    texts = [s.text for s in removed]
    for i in range(len(statements) - len(removed) + 1):
        if [s.text for s in statements[i : i + len(removed)]] == texts:
            first, last = statements[i], statements[i + len(removed) - 1]
            start = first.start_byte - len(_indent(source, first))
            end = last.end_byte + (source[last.end_byte : last.end_byte + 1] == b"\n")
            return start, end, b""  # the lines, their line breaks with them
    return None


def _indent(source: bytes, statement: Node) -> bytes:
    return indent(source, statement.start_byte)


def _reindent(source: bytes, run: bytes, first: Node, indent: bytes) -> bytes:
    """The added statements as they were typed, each line moved to ``indent``."""
    own = _indent(source, first)
    return run.replace(b"\n" + own, b"\n" + indent) if own else run
