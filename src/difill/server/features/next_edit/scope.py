"""Where a rename's other places may stand (issue 46: "the same identifier in the same scope").

A rename made inside a function walks that function only: another function that uses the same
name has its own variable (a Neovim user's rename walk crossed into one that only shared the
name).  A renamed attribute (``self.count``) walks its class.  A rename of a function's own name,
or one made outside every function, walks the file.  Tree-sitter finds the function; a language
without a grammar walks the file, as before.  Run off the event loop: it parses the document.
"""

from __future__ import annotations

from tree_sitter import Node, Tree

from difill.text.syntax import FUNCTIONS, parser_for

CLASSES = frozenset({"class_definition", "class_declaration", "class", "impl_item", "type_declaration"})


def rename_scope(
    text: str, at: int, old: str, attribute: bool, language: str | None, tree: Tree | None = None
) -> tuple[int, int] | None:
    """The [start, end) character span a rename of ``old`` made at ``at`` (where the new name
    stands in ``text``) applies in; None for the whole file.  ``tree``: ``text``'s tree, when the
    caller has it (parsed here otherwise)."""
    parser = parser_for(language)
    if parser is None:
        return None
    source = text.encode("utf-8")
    byte = len(text[:at].encode("utf-8"))
    tree = tree if tree is not None else parser.parse(source)
    node: Node | None = tree.root_node.descendant_for_byte_range(byte, byte)
    kinds = CLASSES if attribute else FUNCTIONS
    names = {old.encode("utf-8"), node.text} if node is not None and node.type == "identifier" else set()
    while node is not None:
        if node.type in kinds and not _own_name(node, byte) and (attribute or _binds(node, names)):
            return _chars(source, node.start_byte), _chars(source, node.end_byte)
        node = node.parent
    return None


# Where an identifier binds a name: a parameter, or the target of an assignment or a loop.
PARAMETERS = frozenset({
    "parameters", "typed_parameter", "default_parameter", "typed_default_parameter", "lambda_parameters",
    "list_splat_pattern", "dictionary_splat_pattern", "pattern_list", "tuple_pattern", "as_pattern_target",
    "formal_parameters", "required_parameter", "optional_parameter", "parameter_declaration",
    "variable_declarator", "parameter",
})  # fmt: skip
TARGET_FIELDS = ("left", "name", "pattern")


def _binds(function: Node, names: set[bytes]) -> bool:
    """Whether one of ``names`` (the old name, the new) is the function's own variable (bound in
    it), so that another function's is another variable; a module, a global or a builtin used in
    it is not."""
    stack = [function]
    while stack:
        node = stack.pop()
        if node.type == "identifier" and node.text in names:
            parent = node.parent
            if parent is not None and (
                parent.type in PARAMETERS
                or any(parent.child_by_field_name(f) == node for f in TARGET_FIELDS)
            ):
                return True
        stack.extend(node.children)
    return False


def _own_name(node: Node, byte: int) -> bool:
    """Whether ``byte`` is in the definition's own name (a function renamed at its ``def``)."""
    name = node.child_by_field_name("name")
    return name is not None and name.start_byte <= byte <= name.end_byte


def _chars(source: bytes, byte: int) -> int:
    return len(source[:byte].decode("utf-8", errors="ignore"))
