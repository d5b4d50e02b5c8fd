"""Issue 66 (item 6): `difill serve` on stdio answers `initialize` before it imports pygls and its
own modules (server/transport/early_answer.py).  The answer must be the one pygls builds from the
server's features, for every client; pygls still reads the request and sets the server up from
it, and its own answer is not sent a second time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from difill.server.transport.early_answer import initialize_result

INVALID_REQUEST = -32600
EVERYTHING = {  # a client that announces what pygls' capability builder reads
    "general": {"positionEncodings": ["utf-16", "utf-8"]},
    "textDocument": {
        "synchronization": {"willSave": True, "willSaveWaitUntil": True, "didSave": True},
        "rename": {"prepareSupport": True}, "inlineCompletion": {}, "completion": {"completionItem": {}},
        "codeAction": {"resolveSupport": {"properties": ["edit"]}}, "diagnostic": {}, "semanticTokens": {
            "requests": {"full": True}, "tokenTypes": [], "tokenModifiers": [], "formats": ["relative"]},
    },
    "notebookDocument": {"synchronization": {"dynamicRegistration": True}},
    "workspace": {"fileOperations": {"didCreate": True, "willCreate": True, "didRename": True,
                                     "willRename": True, "didDelete": True, "willDelete": True},
                  "workspaceFolders": True, "configuration": True, "workspaceEdit": {"documentChanges": True}},
    "window": {"workDoneProgress": True}, "experimental": {"difill": {"editProposals": True}},
}  # fmt: skip
CLIENTS = {
    "none": {},
    "utf-32 first": {"general": {"positionEncodings": ["utf-32", "utf-8"]}},
    "unknown encodings": {"general": {"positionEncodings": ["utf-7", "latin-1"]}},
    "empty general": {"general": {}},
    "everything": EVERYTHING,
}


def initialize_body(capabilities: dict, request_id: int | str = 1) -> bytes:
    params = {"processId": None, "rootUri": None, "capabilities": capabilities, "initializationOptions": {}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}).encode()


def pygls_answer(body: bytes) -> dict:
    """What pygls and difill's handler answer to this `initialize`, built in this process."""
    from lsprotocol import types

    from difill.server.server import create_server

    protocol = create_server().protocol
    params = protocol._converter.structure(json.loads(body)["params"], types.InitializeParams)
    steps = protocol.lsp_initialize(params)
    handler, args, _ = next(steps)  # difill's own initialize handler
    try:
        steps.send(handler(*args))
    except StopIteration as done:
        return protocol._converter.unstructure(done.value, types.InitializeResult)
    raise AssertionError("pygls' initialize asked for more than one handler")


@pytest.mark.parametrize("client", CLIENTS)
def test_the_early_answer_is_the_one_pygls_builds(client):
    body = initialize_body(CLIENTS[client], request_id="abc")
    request_id, result = initialize_result(body)
    assert request_id == "abc"
    assert result == pygls_answer(body)  # a feature added to the server: rebuild capabilities.json


@pytest.mark.parametrize(
    "message",
    [b"not json", b"[1]", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}).encode(),
     json.dumps({"jsonrpc": "2.0", "method": "initialize", "params": {"capabilities": {}}}).encode(),
     initialize_body({"general": {"positionEncodings": "utf-8"}}), initialize_body({"general": []}),
     json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": 3}}).encode()],
)  # fmt: skip
def test_what_the_early_answer_leaves_to_pygls(message):
    """Anything but a well-formed `initialize` request (a notification, another method, a
    capability pygls would refuse) is not answered early: pygls answers it, error or not."""
    assert initialize_result(message) is None


SPY = """
import sys
from difill.server.transport import early_answer

answer = early_answer.answer_initialize


def answer_and_stop(stdin, stdout):  # what was imported when the answer had been written
    answer(stdin, stdout)
    heavy = ("pygls", "lsprotocol", "cattrs", "numpy", "torch", "transformers")
    print(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m == "difill.server.server"), file=sys.stderr)
    sys.exit(0)


early_answer.answer_initialize = answer_and_stop
from difill.cli import main

main(["serve"])
"""


def test_initialize_is_answered_before_pygls_is_imported():
    """The guard of the figure in docs/install.md: `difill serve` writes the answer with neither
    pygls, lsprotocol nor the server's modules imported (before: it imported them first)."""
    body = initialize_body({})
    framed = b"Content-Length: %d\r\n\r\n" % len(body) + body
    done = subprocess.run([sys.executable, "-c", SPY], input=framed, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert b'"positionEncoding": "utf-16"' in done.stdout
    assert done.stderr.decode().strip() == "[]", done.stderr[-2000:]


def test_a_session_after_the_early_answer(start_server):
    """pygls reads the same `initialize` (the client's UTF-8 is the server's; a second one is
    refused), and its answer is not sent again."""
    server = start_server(None, env={"DIFILL_API_KEY": ""})
    capabilities = {"general": {"positionEncodings": ["utf-8"]}}
    answer = server.request("initialize", {"processId": None, "rootUri": None, "capabilities": capabilities,
                                           "initializationOptions": {"remote": "http://127.0.0.1:9"}})  # fmt: skip
    assert answer["result"]["capabilities"]["positionEncoding"] == "utf-8", answer
    server.notify("initialized", {})
    again = server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert again["error"]["code"] == INVALID_REQUEST, again
    assert server.responses_within(1.0) == []  # pygls' answer to the first one was not sent
    server.stop_reading()
    said = [m["params"]["message"] for m in server.notifications if m["method"] == "window/logMessage"]
    assert any("position encoding utf-8" in line for line in said), said
    log = server.stderr_text() + "\n".join(said)
    assert "answered early" not in log, log[-3000:]


def test_pygls_answer_to_the_early_request_is_not_sent_and_a_difference_is_logged(caplog):
    import io

    from difill.server.transport.early_answer import EarlyAnswer
    from difill.server.transport.framing import ResyncingReader
    from difill.server.transport.writer import ClientWriter

    def framed(message: dict) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    out = io.BytesIO()
    writer = ClientWriter(out, EarlyAnswer(ResyncingReader(io.BytesIO()), 7, {"capabilities": {}}))
    log_message = framed(
        {"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 3, "message": "x"}}
    )
    writer.write(log_message)
    writer.write(framed({"jsonrpc": "2.0", "id": 7, "result": {"capabilities": {"hoverProvider": True}}}))
    later = framed({"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "again"}})
    writer.write(later)  # a second request with that id is answered: only the first answer was early
    assert out.getvalue() == log_message + later
    assert "answered early" in caplog.text and "hoverProvider" in caplog.text
