"""Malformed JSON-RPC over stdio: each input is answered as JSON-RPC 2.0 says (an error carrying the
request's id when it has a usable one, ``id: null`` when it does not, nothing for a notification or
for bytes that hold no message at all), and a valid request right afterwards is still answered.

One ``difill serve`` with the tiny model takes every case in turn, as an editor's server would:
a case that kills it, desynchronises its reader or leaves it hung fails that case and the rest.
"""

from __future__ import annotations

import json

import pytest
from stdio_client import StdioServer, encode, frame

URI = "file:///tmp/malformed/a.py"
# The cursor ends the last line, whose start repeats a line above: a draft from the document, so
# the answer is known ("height") whatever the tiny model writes; a server that lost the document
# or its sync cannot give it.
TEXT = "def area(width, height):\n    return width * height\n\n\ndef volume(width, height):\n    return width * \n"
EXPECTED = "height"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
UNKNOWN = {"jsonrpc": "2.0", "id": 77, "method": "difill/noSuchMethod", "params": {}}
UNKNOWN_BODY = json.dumps(UNKNOWN).encode()
VALID_PARAMS = {
    "textDocument": {"uri": URI},
    "position": {"line": 5, "character": 19},
    "context": {"triggerKind": 1},
}


def request(msg_id, method: str, params) -> bytes:
    return encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})


def inline(position: dict, msg_id=5) -> bytes:
    return request(
        msg_id,
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": URI}, "position": position, "context": {"triggerKind": 1}},
    )


# name -> (bytes written to the server's stdin, the responses expected as (id, error code))
CASES: dict[str, tuple[bytes, list[tuple[object, int]]]] = {
    # Bodies that are not JSON-RPC messages
    "invalid JSON": (frame(b'{"jsonrpc": "2.0", "id": 1, "method": '), [(None, PARSE_ERROR)]),
    "invalid UTF-8": (frame(b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}'), [(None, PARSE_ERROR)]),
    "empty JSON object": (frame(b"{}"), [(None, INVALID_REQUEST)]),
    "a JSON array (batch)": (frame(b'[{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}]'), [(None, INVALID_REQUEST)]),
    "a JSON number": (frame(b"42"), [(None, INVALID_REQUEST)]),
    "JSON null": (frame(b"null"), [(None, INVALID_REQUEST)]),
    "no jsonrpc member": (encode({"id": 3, "method": "shutdown"}), [(3, INVALID_REQUEST)]),
    "jsonrpc 1.0": (encode({"jsonrpc": "1.0", "id": 4, "method": "shutdown"}), [(4, INVALID_REQUEST)]),
    "method not a string": (encode({"jsonrpc": "2.0", "id": 8, "method": 17}), [(8, INVALID_REQUEST)]),
    "id an object": (encode({"jsonrpc": "2.0", "id": {"a": 1}, "method": "shutdown"}), [(None, INVALID_REQUEST)]),
    "id a boolean": (encode({"jsonrpc": "2.0", "id": True, "method": "shutdown"}), [(None, INVALID_REQUEST)]),
    # Methods and parameters
    "unknown method": (request(9, "difill/noSuchMethod", {}), [(9, METHOD_NOT_FOUND)]),
    "unknown method, no params": (encode({"jsonrpc": "2.0", "id": "s", "method": "x/y"}), [("s", METHOD_NOT_FOUND)]),
    "unknown notification": (encode({"jsonrpc": "2.0", "method": "difill/nothing", "params": {}}), []),
    "unknown $/ notification": (encode({"jsonrpc": "2.0", "method": "$/somethingNew", "params": {}}), []),
    "params of the wrong type": (request(10, "textDocument/inlineCompletion", {"textDocument": 5}), [(10, INVALID_PARAMS)]),
    "params a string": (request(11, "textDocument/completion", "x"), [(11, INVALID_PARAMS)]),
    "position of the wrong type": (inline({"line": "one", "character": 0}, 12), [(12, INVALID_PARAMS)]),
    "negative position": (inline({"line": -1, "character": -4}, 13), [(13, INVALID_PARAMS)]),
    "missing params": (encode({"jsonrpc": "2.0", "id": 14, "method": "textDocument/inlineCompletion"}), [(14, INVALID_PARAMS)]),
    "notification with wrong types": (encode({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": 1}}), []),
    "cancel of an unknown id": (encode({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 999}}), []),
    "response to nothing": (encode({"jsonrpc": "2.0", "id": 4242, "result": {"x": 1}}), []),
    "response with an object id": (encode({"jsonrpc": "2.0", "id": {"a": 1}, "result": None}), [(None, INVALID_REQUEST)]),
    "response with a list id": (encode({"jsonrpc": "2.0", "id": [1], "result": None}), [(None, INVALID_REQUEST)]),
    # Framing: each of these used to make the server deaf to every later message
    "Content-Length too short": (b"Content-Length: 20\r\n\r\n" + UNKNOWN_BODY, [(None, PARSE_ERROR)]),
    "Content-Length too long": (b"Content-Length: %d\r\n\r\n" % (len(UNKNOWN_BODY) + 30) + UNKNOWN_BODY, [(77, METHOD_NOT_FOUND)]),
    "Content-Length far too long": (b"Content-Length: 4000000\r\n\r\n" + UNKNOWN_BODY, [(77, METHOD_NOT_FOUND)]),
    "Content-Length over the limit": (b"Content-Length: 99999999999999\r\n\r\n" + UNKNOWN_BODY, [(None, PARSE_ERROR)]),
    "Content-Length negative": (b"Content-Length: -5\r\n\r\n" + UNKNOWN_BODY, []),
    "Content-Length zero": (b"Content-Length: 0\r\n\r\n", []),
    "Content-Length not a number": (b"Content-Length: many\r\n\r\n" + UNKNOWN_BODY, []),
    "lower-case header": (b"content-length: %d\r\n\r\n" % len(UNKNOWN_BODY) + UNKNOWN_BODY, [(77, METHOD_NOT_FOUND)]),
    "LF line ends": (b"Content-Length: %d\n\n" % len(UNKNOWN_BODY) + UNKNOWN_BODY, [(77, METHOD_NOT_FOUND)]),
    "extra headers": (b"Content-Type: application/json\r\nX-A: b\r\nContent-Length: %d\r\n\r\n" % len(UNKNOWN_BODY) + UNKNOWN_BODY, [(77, METHOD_NOT_FOUND)]),
    "garbage before a header": (b"hello there\r\n" + frame(UNKNOWN_BODY), [(77, METHOD_NOT_FOUND)]),
    "truncated header": (b"Content-Len", []),
    "header without its blank line": (b"Content-Length: 12\r\n", []),
    "header cut after the number": (b"Content-Length: 12", []),
    "no header at all": (UNKNOWN_BODY, []),
}  # fmt: skip


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    server = StdioServer(tiny_model_dir, tmp_path_factory.mktemp("malformed") / "stderr.txt")
    server.initialize()
    assert server.wait_ready()["params"]["state"] == "ready"
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}},
    )
    yield server
    assert server.close() == 0, server.stderr_text()[-3000:]  # a clean shutdown after all of it


def first_text(response: dict) -> str:
    assert "error" not in response, response
    items = response["result"]["items"]
    assert items, response
    return items[0]["insertText"]


def assert_still_serving(server: StdioServer) -> None:
    """A valid inline completion request right afterwards gets its answer, computed from the
    document.  The document is reopened first: after a message it could not read, the server
    holds every open document out of sync (no model work for it until it is reopened; the lost
    message may have been a change)."""
    server.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}},
    )
    response = server.request("textDocument/inlineCompletion", VALID_PARAMS, timeout=30)
    assert first_text(response) == EXPECTED, response


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_input_is_answered_per_jsonrpc_and_the_next_request_works(server, case):
    data, expected = CASES[case]
    server.send_bytes(data)
    # A broken frame may wait for more bytes (a Content-Length too long, a header cut off): the
    # valid request completes it, as an editor's next message would.  So send that request at once,
    # and read every response up to its answer: the ones before it must be exactly the expected.
    check_id = f"check-{case}"
    server.send(
        {"jsonrpc": "2.0", "id": check_id, "method": "textDocument/inlineCompletion", "params": VALID_PARAMS}
    )
    answers = []
    while (answer := server.next_response(timeout=30)).get("id") != check_id:
        answers.append(answer)
    assert [(a.get("id"), a.get("error", {}).get("code")) for a in answers] == expected, answers
    assert all("id" in a and a.get("jsonrpc") == "2.0" for a in answers)  # the id is there, null or not
    assert "error" not in answer and isinstance(answer["result"]["items"], list), answer
    assert_still_serving(server)


def test_nothing_unexpected_was_answered(server):
    """Cases that expect no answer got none: any stray response would be waiting here."""
    assert server.responses_within(1.0) == []
    assert_still_serving(server)


def test_a_huge_document_is_synced_and_completed(server):
    uri = "file:///tmp/malformed/huge.py"
    text = "value = 1\n" * 800_000  # 8 MB
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )
    response = server.request(
        "textDocument/inlineCompletion",
        {
            "textDocument": {"uri": uri},
            "position": {"line": 800_000, "character": 0},
            "context": {"triggerKind": 1},
        },
        timeout=60,
    )
    assert first_text(response) == "value = 1", response  # the line the document repeats
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert_still_serving(server)


def test_a_huge_request_is_answered(server):
    params = {"padding": "x" * 5_000_000}  # 5 MB of parameters for a method nobody knows
    response = server.request("difill/noSuchMethod", params, timeout=60)
    assert response["error"]["code"] == METHOD_NOT_FOUND
    assert_still_serving(server)


def test_a_message_over_the_size_limit_is_skipped_and_answered(server):
    body = json.dumps({"jsonrpc": "2.0", "id": 31, "method": "difill/x", "params": "y" * (70 * 2**20)})
    server.send_bytes(frame(body))  # 70 MiB sent for real: skipped in bounded pieces, not stored
    answer = server.next_response(timeout=60)
    assert (answer["id"], answer["error"]["code"]) == (None, PARSE_ERROR)
    assert_still_serving(server)


def test_a_document_holding_a_lone_surrogate_still_gets_completions(server):
    uri = "file:///tmp/malformed/surrogate.py"
    # Half a surrogate pair: valid JSON ("\\ud800"), and VS Code's strings may hold one.
    text = "x = \ud800 + 1\n"
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )
    response = server.request(
        "textDocument/inlineCompletion",
        {
            "textDocument": {"uri": uri},
            "position": {"line": 0, "character": 5},
            "context": {"triggerKind": 1},
        },
        timeout=30,
    )
    # Used to be an InternalError (UnicodeEncodeError) for every request in that document.
    assert "error" not in response and isinstance(response["result"]["items"], list), response
    assert_still_serving(server)
