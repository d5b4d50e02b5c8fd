"""A change the server cannot apply exactly never leaves a silently different copy behind.

Through the real ``difill serve`` over stdio (issue 15, finding 2). Before the fix, each of these
left the server holding other text than the editor, at the same version, and
``difill.editSelection`` computed edits on it that a version-pinned client would apply:
* a didChange whose range has a character of 2**32 - 1 (fails validation, was dropped with a log
  line; the next valid change applied to the wrong text);
* a didChange whose body is not UTF-8 (unreadable, dropped);
* a change that starts inside a surrogate pair (rounded, the copy ended one unit off).
Now the document is marked out of sync: the user is told once, suggestions for it are empty and
edits are refused, until a didOpen or a full-text change makes the copies equal again.
"""

from __future__ import annotations

import pytest
from stdio_client import StdioServer, frame

TEXT = "total = price * count + tax\n"


@pytest.fixture
def server(tiny_model_dir, tmp_path):
    server = StdioServer(tiny_model_dir, tmp_path / "stderr.txt")
    server.initialize()
    assert server.wait_ready()["params"]["state"] == "ready"
    yield server
    assert server.close() == 0, server.stderr_text()[-3000:]


def open_document(server: StdioServer, uri: str, text: str, version: int = 1) -> None:
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}})  # fmt: skip


def change(server: StdioServer, uri: str, version: int, start, end, text: str) -> None:
    rng = {"start": {"line": start[0], "character": start[1]}, "end": {"line": end[0], "character": end[1]}}
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [{"range": rng, "text": text}]})  # fmt: skip


def edit_selection(server: StdioServer, uri: str, version: int) -> dict:
    argument = {"uri": uri, "version": version, "strength": 0.5,
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 10}}}  # fmt: skip
    return server.request(
        "workspace/executeCommand", {"command": "difill.editSelection", "arguments": [argument]}
    )


def completion_items(server: StdioServer, uri: str) -> list:
    response = server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 8}, "context": {"triggerKind": 1}})  # fmt: skip
    assert "error" not in response, response
    return response["result"]["items"]


def busy_count(server: StdioServer) -> int:
    return sum(
        m["method"] == "difill/status" and m["params"]["state"] == "busy" for m in server.notifications
    )


def out_of_sync_messages(server: StdioServer, uri: str) -> list[dict]:
    name = uri.rsplit("/", 1)[-1]
    return [m for m in server.notifications
            if m["method"] == "window/showMessage" and f"{name} is out of sync" in m["params"]["message"]]  # fmt: skip


def assert_out_of_sync(server: StdioServer, uri: str, version: int) -> None:
    server.wait_for_notification(
        lambda m: m["method"] == "window/showMessage" and "out of sync" in m["params"]["message"]
    )
    refused = edit_selection(server, uri, version)
    assert "out of sync" in refused["error"]["message"], refused
    assert not [m for m in server.server_requests if m["method"] == "workspace/applyEdit"]
    busy = busy_count(server)
    assert completion_items(server, uri) == []
    assert busy_count(server) == busy, "the model was asked about a document that may differ"


def test_an_unreadable_change_marks_the_document_out_of_sync(server):
    uri = "file:///tmp/sync/a.py"
    open_document(server, uri, TEXT)
    change(server, uri, 2, (0, 0), (0, 2**32 - 1), "subtotal = amount * qty + tax")  # fails validation
    change(server, uri, 3, (0, 0), (0, 5), "sub")  # valid, but on a copy that missed version 2
    assert_out_of_sync(server, uri, 3)
    change(server, uri, 4, (0, 0), (0, 1), "S")  # still out of sync: told once only
    assert completion_items(server, uri) == []
    assert len(out_of_sync_messages(server, uri)) == 1

    open_document(server, uri, "subtotal = amount * qty + tax\n", version=5)  # the editor's text again
    busy = busy_count(server)
    completion_items(server, uri)
    assert busy_count(server) > busy, "a reopened document is served again"


def test_a_change_that_is_not_utf8_marks_open_documents_out_of_sync(server):
    uri = "file:///tmp/sync/b.py"
    open_document(server, uri, TEXT)
    head = '{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": "'
    tail = '", "version": 2}, "contentChanges": [{"text": "x = \xff"}]}}'
    body = (head + uri + tail).encode("latin-1")  # byte 0xff: not UTF-8
    server.send_bytes(frame(body))
    assert_out_of_sync(server, uri, 1)
    # A full-text change is the editor's whole copy: in sync again.
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": TEXT}]},
    )
    busy = busy_count(server)
    completion_items(server, uri)
    assert busy_count(server) > busy


def test_a_change_inside_a_surrogate_pair_marks_the_document_out_of_sync(server):
    uri = "file:///tmp/sync/c.py"
    open_document(server, uri, "x = '\U0001f600' + tax\n")  # the emoji is 2 UTF-16 units: 5 and 6
    change(server, uri, 2, (0, 6), (0, 7), "")  # from inside the pair: cannot be applied exactly
    assert_out_of_sync(server, uri, 2)


def test_exact_changes_keep_the_document_in_sync(server):
    uri = "file:///tmp/sync/d.py"
    open_document(server, uri, "x = '\U0001f600' + tax\n")
    change(server, uri, 2, (0, 5), (0, 7), "E")  # the whole pair
    change(server, uri, 3, (0, 99), (0, 99), "  # end")  # past the line end means the line end
    busy = busy_count(server)
    completion_items(server, uri)
    assert busy_count(server) > busy
    assert not out_of_sync_messages(server, uri)
