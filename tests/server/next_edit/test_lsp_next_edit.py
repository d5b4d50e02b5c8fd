"""Issue 35: textDocument/copilotInlineEdit through the real server with a scripted client:
the edits, Tab-Tab (accept, then the next), versions, a closed document, malformed params."""

from __future__ import annotations

import pytest
from lsp_helpers import _plain, change_text, open_document, running_server, send_raw_request
from lsprotocol import types

METHOD = "textDocument/copilotInlineEdit"
SOURCE = "def area(width, height):\n    half = width / 2\n    return width * height + half\n"


async def ask(client, params: dict, msg_id: str) -> dict:
    return _plain(await send_raw_request(client, METHOD, params, msg_id))


def params(uri: str, version: int, line: int = 0, character: int = 13) -> dict:
    return {"textDocument": {"uri": uri, "version": version}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 1}}  # fmt: skip


async def test_a_rename_is_offered_at_the_other_uses_then_the_next_after_accepting(tiny_model_dir):
    async with running_server(tiny_model_dir) as client:
        assert client.init_result.capabilities.experimental["difill"]["nextEdit"] is True
        uri = "file:///tmp/next_edit/area.py"
        open_document(client, uri, SOURCE)
        change_text(client, uri, 2, 0, 9, 14, "w")  # width -> w in the signature
        answer = await ask(client, params(uri, 2), "ne-1")
        edits = answer["edits"]
        assert [e["text"] for e in edits] == ["w", "w"]
        assert edits[0]["range"] == {
            "start": {"line": 1, "character": 11},
            "end": {"line": 1, "character": 16},
        }
        assert edits[0]["textDocument"] == {"uri": uri, "version": 2}
        # Tab: the client applies the first; the server then offers the one left.
        change_text(client, uri, 3, 1, 11, 16, "w")
        client.protocol.notify("textDocument/didShowInlineEdit", {"item": edits[0]})
        answer = await ask(client, params(uri, 3, 1, 12), "ne-2")
        assert [e["range"]["start"] for e in answer["edits"]] == [{"line": 2, "character": 11}]


async def test_versions_closed_documents_and_malformed_params(tiny_model_dir):
    async with running_server(tiny_model_dir) as client:
        uri = "file:///tmp/next_edit/versions.py"
        open_document(client, uri, SOURCE)
        change_text(client, uri, 2, 0, 9, 14, "w")
        with pytest.raises(Exception) as stale:
            await send_raw_request(client, METHOD, params(uri, 1), "ne-3")
        assert getattr(stale.value, "code", None) == -32801  # ContentModified: never for another version
        for bad in ({"textDocument": {"uri": 3}, "position": {"line": 0, "character": 0}},
                    {"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}},
                    {"textDocument": {"uri": uri, "version": "2"}, "position": {"line": 0, "character": 0}}):  # fmt: skip
            with pytest.raises(Exception) as refused:
                await send_raw_request(client, METHOD, bad, f"ne-bad-{id(bad)}")
            assert getattr(refused.value, "code", None) == -32602
        assert await ask(client, params("file:///tmp/next_edit/closed.py", 1), "ne-4") == {"edits": []}
        # a paste is no pattern: nothing is offered, and the server answers at once
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=SOURCE + "x = 1\n" * 100_000)],
        ))  # fmt: skip
        assert await ask(client, params(uri, 3), "ne-5") == {"edits": []}


async def test_a_document_on_the_secrets_deny_list_gets_no_next_edit(tiny_model_dir):
    """A denied document's text reaches no model and no remote (server/context/policy.py): a
    rename in a ``.env`` file is offered nowhere, while the same edit in a Python file is."""
    async with running_server(tiny_model_dir) as client:
        secret = "file:///tmp/next_edit/.env"
        open_document(client, secret, SOURCE)
        change_text(client, secret, 2, 0, 9, 14, "w")
        assert await ask(client, params(secret, 2), "ne-secret") == {"edits": []}
        plain = "file:///tmp/next_edit/plain.py"
        open_document(client, plain, SOURCE)
        change_text(client, plain, 2, 0, 9, 14, "w")
        assert len((await ask(client, params(plain, 2), "ne-plain"))["edits"]) == 2


TWO_FUNCTIONS = "def grow(size):\n    return scale(size, 2)\n\ndef shrink(size):\n    return scale(size, 2)\n"


async def test_typed_edits_are_right_or_silent(tiny_model_dir):
    """Issue 46, through the server as an editor types: ranged didChanges a word or a symbol at a
    time.  A half-made edit is offered nowhere; the finished one is; a rename walks its own
    function only; taking it back offers nothing."""
    async with running_server(tiny_model_dir) as client:
        uri = "file:///tmp/next_edit/typed.py"
        open_document(client, uri, TWO_FUNCTIONS)
        change_text(client, uri, 2, 1, 24, 24, ",")  # `scale(size, 2,)`: an argument on its way
        assert await ask(client, params(uri, 2, 1, 25), "typed-1") == {"edits": []}
        change_text(client, uri, 3, 1, 25, 25, " 3")
        answer = await ask(client, params(uri, 3, 1, 27), "typed-2")
        assert [(e["range"]["start"], e["text"]) for e in answer["edits"]] == [
            ({"line": 4, "character": 24}, ", 3")
        ]
        # grow's parameter renamed, a word at a time: `size` deleted, then `n` typed.
        change_text(client, uri, 4, 0, 9, 13, "")
        assert await ask(client, params(uri, 4, 0, 9), "typed-3") == {"edits": []}  # `def grow():`
        change_text(client, uri, 5, 0, 9, 9, "n")
        answer = await ask(client, params(uri, 5, 0, 10), "typed-4")
        assert [e["range"]["start"]["line"] for e in answer["edits"]] == [1]  # never shrink()'s `size`
        # Taken back in one change right away (coalesced with the rename: the document is as it
        # was, so no edit is left); an undo after a pause is tests/server/next_edit/test_patterns.py's.
        change_text(client, uri, 6, 0, 9, 10, "size")
        assert await ask(client, params(uri, 6, 0, 13), "typed-5") == {"edits": []}
