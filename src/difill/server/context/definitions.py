"""Definitions found with tree-sitter: which names a file defines (when it is indexed), and the
short text of one definition (when a name near the cursor needs it).

Only languages with a grammar (text/syntax.py) get definitions; the others get similar
windows alone.  Parsers are per thread (``parser_for``), so the index's worker and a retrieving
thread never share one.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from difill.text.syntax import grammar_for, parser_for

DEFINITION_LINES = (
    10  # a definition snippet: its header, docstring or member headers, this many lines at most
)
DEFINITION_NODES = ("function_definition", "class_definition")


def _definitions(root: Node):
    """(name, node) for module-level functions, classes and assignments, and class members."""
    for child in root.children:
        node = child.child_by_field_name("definition") if child.type == "decorated_definition" else child
        if node is None:
            continue
        if node.type in DEFINITION_NODES:
            name = node.child_by_field_name("name")
            if name is not None and name.text:
                yield name.text.decode("utf-8", "replace"), node
            body = node.child_by_field_name("body")
            if node.type == "class_definition" and body is not None:
                yield from _definitions(body)
        elif node.type == "expression_statement" and node.named_child_count == 1:
            assignment = node.named_children[0]
            target = assignment.child_by_field_name("left") if assignment.type == "assignment" else None
            if target is not None and target.type == "identifier" and target.text:
                yield target.text.decode("utf-8", "replace"), node


# Where a definition may start, by language: found by a line rule when a file is indexed (parsing
# every file of a workspace with tree-sitter took 3x longer than the rest of indexing), then
# confirmed and cut with tree-sitter when a cursor needs it (``definition_at``).
DEFINITION_LINE = {
    "python": re.compile(
        r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)|^()(\w+)[ \t]*(?::[^=\n]*)?=[^=]", re.M
    )
}
MAX_DEFINITION_CHARS = 4000  # the text from a definition's line that is parsed to cut it


def definition_lines(text: str, language: str | None) -> list[tuple[str, int]]:
    """(name, offset of its line) for each line of ``text`` that may start a definition."""
    rule = DEFINITION_LINE.get(language or "")
    if rule is None or grammar_for(language) is None:
        return []
    return [(m.group(2) or m.group(4), m.start()) for m in rule.finditer(text)]


def definition_at(text: str, offset: int, language: str | None, name: str) -> str | None:
    """The short text of the definition of ``name`` on the line at ``offset`` (see
    ``definition_text``), parsed from that line and the more indented lines after it."""
    region = text[offset : offset + MAX_DEFINITION_CHARS].split("\n")
    indent = len(region[0]) - len(region[0].lstrip())
    kept = [region[0][indent:]]
    for line in region[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        kept.append(line[indent:])
    found = definition_text("\n".join(kept), language, name)
    return None if found is None else found[1]


def definition_text(text: str, language: str | None, name: str) -> tuple[int, str] | None:
    """(first line, text) of the first definition of ``name`` in ``text``, cut to its header and
    docstring (a class: its header and its members' headers); None when it has none."""
    parser = parser_for(language)
    if parser is None:
        return None
    source = text.encode("utf-8")
    for found, node in _definitions(parser.parse(source).root_node):
        if found == name:
            return node.start_point[0], _summary(source, node)
    return None


def _summary(source: bytes, node: Node) -> str:
    body = node.child_by_field_name("body")
    if body is None:  # an assignment: the statement itself
        lines = _text(source, node.start_byte, node.end_byte).split("\n")
        return "\n".join(lines[:DEFINITION_LINES])
    lines = _text(source, node.start_byte, body.start_byte).rstrip().split("\n")
    indent = " " * body.start_point[1]
    for statement in body.named_children:
        kind = statement.type
        if kind == "expression_statement" and statement.named_children[0].type == "string":
            lines += [
                indent + line.strip()
                for line in _text(source, statement.start_byte, statement.end_byte).split("\n")
            ]
        elif kind == "expression_statement" and node.type == "class_definition":  # a field
            lines += [indent + _text(source, statement.start_byte, statement.end_byte).split("\n")[0]]
        elif kind in DEFINITION_NODES or kind == "decorated_definition":
            inner = statement.child_by_field_name("definition") or statement
            inner_body = inner.child_by_field_name("body")
            end = inner_body.start_byte if inner_body is not None else inner.end_byte
            lines += [indent + _text(source, inner.start_byte, end).rstrip() + " ..."]
        if len(lines) >= DEFINITION_LINES or node.type == "function_definition":
            break
    return "\n".join(lines[:DEFINITION_LINES])


def _text(source: bytes, start: int, end: int) -> str:
    return source[start:end].decode("utf-8", "replace")
