"""Shapes from tree-sitter and text rules, and incremental parsing per document version."""

from __future__ import annotations

import pytest

from difill.server.documents import Document
from difill.server.trees import SyntaxTrees
from difill.text.languages import language_of
from difill.text.shape import ShapeKind, decide_shape
from difill.text.syntax import parser_for

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

CURSOR = "█"


def shape_at(marked: str, language: str = "python"):
    offset = marked.index(CURSOR)
    text = marked.replace(CURSOR, "")
    tree = SyntaxTrees().tree_for(Document("file:///a", language, 1, text))
    return decide_shape(text, offset, tree, max_tokens=32, language=language_of(language))


@pytest.mark.parametrize(
    ("marked", "kind"),
    [
        ("x = foo(█)\n", ShapeKind.LINE_REST),
        ("x = █\n", ShapeKind.LINE_REST),
        ("def f(x):\n    █\n\ny = 1\n", ShapeKind.BLOCK),
        ("def f(x):\n    █\n    pass\n", ShapeKind.BLOCK),
        ("def f(x):█\n", ShapeKind.BLOCK),
        ("def f(x):\n    a = 1\n    █\n    return a\n", ShapeKind.LINES),
        ("x = 1  # the █\n", ShapeKind.SHORT),
        ("x = 1  # the end█\n", ShapeKind.SHORT),
        ('x = "a string █ here"\n', ShapeKind.SHORT),
        ('x = "unclosed █\n', ShapeKind.SHORT),
        ('x = "done"█\n', ShapeKind.LINE_REST),
        ('x = "a:"\n█\n', ShapeKind.LINES),  # the ':' is inside a string: no block opens
        ("y = 2  # note:\n█\n", ShapeKind.LINES),  # ... or inside a comment
    ],
)
def test_shape_follows_the_cursor_position(marked, kind):
    assert shape_at(marked).kind is kind


def test_one_line_shapes_and_block_bounds():
    assert shape_at("x = █\n").single_line
    block = shape_at("class A:\n    def f(self):\n        █\n")
    assert not block.single_line and block.max_tokens == 64 and block.scope_indent == 8
    assert shape_at("x = 1  # the █\n").max_tokens <= 12


def test_languages_without_a_grammar_use_text_rules():
    assert shape_at("fn main() {\n    █\n}\n", "zig").kind is ShapeKind.BLOCK
    assert shape_at("const x = 1; // the █\n", "zig").kind is ShapeKind.LINE_REST  # no grammar: by its look
    assert shape_at("// the █\n", "zig").kind is ShapeKind.SHORT


def test_a_grammar_finds_a_comment_after_code():
    assert shape_at("let x = 1; // the █\n", "rust").kind is ShapeKind.SHORT


EDITS = [
    ("def f(x):\n    return x\n", 22, 22, "\ny = f(2)\n"),
    ("def f(x):\n    return x\n", 4, 5, "gg"),
    ("s = 'é😀'\nt = 1\n", 6, 7, "한국"),
    ("a = 1\nb = 2\nc = 3\n", 6, 12, ""),
]


@pytest.mark.parametrize(("text", "start", "end", "new"), EDITS)
def test_incremental_parse_matches_a_fresh_parse(text, start, end, new):
    trees = SyntaxTrees()
    trees.tree_for(Document("file:///a.py", "python", 1, text))
    edited = text[:start] + new + text[end:]
    tree = trees.tree_for(Document("file:///a.py", "python", 2, edited))
    fresh = parser_for("python").parse(edited.encode("utf-8"))
    assert str(tree.root_node) == str(fresh.root_node)
    assert tree.root_node.end_byte == len(edited.encode("utf-8"))


def test_the_same_version_reuses_its_tree():
    trees = SyntaxTrees()
    doc = Document("file:///a.py", "python", 1, "x = 1\n")
    assert trees.tree_for(doc) is trees.tree_for(doc)
    assert trees.tree_for(Document("file:///a.txt", "plaintext", 1, "x")) is None


def test_a_document_past_the_tree_cap_gets_text_rules_not_a_parse():
    from difill.server.trees import MAX_TREE_BYTES

    head = "def f():\n    "
    text = head + "\n" + "x = 1\n" * (MAX_TREE_BYTES // 6 + 10)
    trees = SyntaxTrees()
    assert trees.tree_for(Document("file:///big.py", "python", 1, text)) is None
    # The shape still follows the cursor, from the text rules: an empty block body.
    assert decide_shape(text, len(head), None, max_tokens=32).kind is ShapeKind.BLOCK
    small = Document("file:///big.py", "python", 2, head + "\n")
    assert trees.tree_for(small) is not None  # under the cap again: parsed


def test_a_markdown_heading_is_a_line_to_finish_not_a_comment():
    """Markdown, named by its editor id or its extension, is prose: "## " starts a heading; a "#"
    line of a language difill has no grammar for and does not know (YAML) is still a comment."""
    assert language_of("markdown") == language_of(None, "file:///w/README.md") == "markdown"
    assert shape_at("# difill\n\n## Insta█\n", "markdown").kind is ShapeKind.LINE_REST
    assert shape_at("## What it's █\n", "markdown").kind is ShapeKind.LINE_REST
    assert shape_at("services:\n  # the database █\n", "yaml").kind is ShapeKind.SHORT
