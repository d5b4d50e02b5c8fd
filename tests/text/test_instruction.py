"""An edit's instruction as a comment above the selection, in the document's comment syntax
(text/languages.py ``line_comment``: the one table)."""

from __future__ import annotations

import pytest

from difill.text.instruction import with_instruction_comment

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)


@pytest.mark.parametrize(
    ("language", "comment"),
    [
        ("python", "    # use a  list\n"),
        ("go", "    // use a  list\n"),
        ("lua", "    -- use a  list\n"),
        ("sql", "    -- use a  list\n"),  # no grammar: the other languages' table
        ("markdown", "    <!-- use a  list -->\n"),  # prose: "#" would be a heading
        (None, "    # use a  list\n"),
    ],
)
def test_the_instruction_is_a_comment_of_the_documents_language(language, comment):
    prefix = "def f(x):\n    "
    out = with_instruction_comment(prefix, "return x", "use a \n list", language)
    assert out == "def f(x):\n" + comment.replace("a  list", "a list") + "    "
