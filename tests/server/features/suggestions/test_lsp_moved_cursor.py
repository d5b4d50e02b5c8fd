"""Ghost text where the cursor only moved (issue 66, trap 8): an ArrowDown into an existing line's
indentation showed a whole line as ghost text, and Tab put it in front of the code there.  An
automatic request at a cursor that did not type, with code after it on its line, is answered
empty; typing there, or asking (Invoked), still gets suggestions.  Through `difill serve`, with
the tiny random model's text let through (its noise is shown wherever anything would be)."""

from __future__ import annotations

import pytest
from lsp_helpers import change_text, inline_params, open_document, running_server

pytestmark = pytest.mark.slow

TEXT = (
    "def total(items, tax):\n    subtotal = sum(items)\n    return subtotal * (1 + tax)\n\n\n"
    "def net(items, tax):\n    subtotal = sum(items)\n    print(subtotal)\n"
)
SHOW_ALL = {"minShowProbability": 0.0, "minTokenProb": 0.0, "contextDrafts": "show"}


async def texts(client, uri: str, line: int, character: int, invoked: bool) -> list[str]:
    result = await client.text_document_inline_completion_async(inline_params(uri, line, character, invoked))
    return [item.insert_text for item in result.items]


async def test_a_cursor_that_only_moved_before_code_gets_no_ghost_text(tiny_model_dir):
    async with running_server(tiny_model_dir, init_options=SHOW_ALL) as client:
        uri = "file:///tmp/moved_cursor/net.py"
        open_document(client, uri, TEXT)
        # ArrowDown to `    |print(subtotal)`: nothing, and nothing further along the line either.
        assert await texts(client, uri, 7, 4, invoked=False) == []
        assert await texts(client, uri, 7, 15, invoked=False) == []
        # The same place when asked for (Invoked): the model answers as before.
        assert await texts(client, uri, 7, 4, invoked=True)
        # At the line's end the suggestion pushes no code: asked for, as before.
        assert await texts(client, uri, 7, 19, invoked=False)

        # Typed there: `p` deleted and typed again leaves the same text, the cursor after the `p`.
        change_text(client, uri, 2, 7, 4, 5, "")
        change_text(client, uri, 3, 7, 4, 4, "p")
        assert await texts(client, uri, 7, 5, invoked=False)
        # Moved on from where it typed, in the same text: nothing again.
        assert await texts(client, uri, 6, 8, invoked=False) == []


def test_the_places_where_a_cursor_only_moved_to():
    from difill.server.documents import Document
    from difill.server.features.suggestions.inline_completion import only_moved_to

    opened = Document("file:///a.py", "python", 1, "x = f(a)\ny = 2\n")
    assert only_moved_to(opened, 4)  # before `f(a)`: code would be pushed right
    assert not only_moved_to(opened, 7)  # before `)` alone: an auto-closer, a line's end as shape.py counts
    assert not only_moved_to(opened, 8)  # the line's end
    typed = Document("file:///a.py", "python", 2, "x = f(a)\ny = 2\n", changed=(3, 4))
    assert not only_moved_to(typed, 4) and not only_moved_to(typed, 3)  # where the change put text
    assert only_moved_to(typed, 10)  # elsewhere, before `= 2`
