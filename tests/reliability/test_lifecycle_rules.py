"""The LSP lifecycle through the real ``difill serve`` (issue 15, finding 5).

Before the fix (pygls' defaults): requests before ``initialize`` were served, a second
``initialize`` loaded the model again, requests after ``shutdown`` were never answered, and a
``shutdown`` that raced a running command could answer -32603 ("dictionary changed size during
iteration") and make ``exit`` return 1.
"""

from __future__ import annotations

import time

import pytest
from stdio_client import StdioServer

from difill.server.features.edits.commands import APPLY_EDIT_TIMEOUT_S

SERVER_NOT_INITIALIZED, INVALID_REQUEST = -32002, -32600
URI = "file:///tmp/lifecycle/a.py"
TEXT = "def area(width, height):\n    return width * \n"
INLINE = {
    "textDocument": {"uri": URI},
    "position": {"line": 1, "character": 19},
    "context": {"triggerKind": 1},
}


@pytest.fixture
def server(tiny_model_dir, tmp_path):
    server = StdioServer(tiny_model_dir, tmp_path / "stderr.txt")
    yield server
    if server.alive():
        server.proc.kill()


def open_document(server: StdioServer) -> None:
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}})  # fmt: skip


def loads(server: StdioServer) -> int:
    return sum(
        m["method"] == "difill/status" and m["params"]["state"] == "loading" for m in server.notifications
    )


def test_requests_before_initialize_are_refused_and_initialize_counts_once(server):
    early = server.request("textDocument/inlineCompletion", INLINE)
    assert early["error"]["code"] == SERVER_NOT_INITIALIZED, early
    open_document(server)  # a notification before initialize is dropped, not applied

    server.initialize()
    assert server.wait_ready()["params"]["state"] == "ready"
    assert server.request("textDocument/inlineCompletion", INLINE)["result"]["items"] == []  # never opened
    loaded = loads(server)
    again = server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert again["error"]["code"] == INVALID_REQUEST, again
    assert server.responses_within(1.0) == [] and loads(server) == loaded  # the model is not reloaded

    open_document(server)
    assert "result" in server.request("textDocument/inlineCompletion", INLINE)
    assert server.close() == 0


def test_requests_after_shutdown_are_answered_and_exit_is_clean(server):
    server.initialize()
    server.wait_ready()
    open_document(server)
    assert "error" not in server.request("shutdown", None)
    late = server.request("textDocument/inlineCompletion", INLINE, timeout=10)
    assert late["error"]["code"] == INVALID_REQUEST, late
    twice = server.request("shutdown", None, timeout=10)
    assert twice["error"]["code"] == INVALID_REQUEST, twice
    server.notify("exit", None)
    assert server.proc.wait(timeout=20) == 0


def test_shutdown_while_a_command_runs_is_clean(server):
    server.initialize(options={"steps": 64})
    server.wait_ready()
    body = "".join(f"    value_{i} = compute(value_{i - 1}, {i}) + offset\n" for i in range(1, 60))
    server.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python", "version": 1,
                                                             "text": "def chain(value_0, offset):\n" + body}})  # fmt: skip
    argument = {"uri": URI, "version": 1, "strength": 0.9,
                "range": {"start": {"line": 1, "character": 0}, "end": {"line": 59, "character": 0}}}  # fmt: skip
    server.send_request(
        "workspace/executeCommand", {"command": "difill.editSelection", "arguments": [argument]}
    )
    server.wait_for_notification(lambda m: m["method"] == "difill/status" and m["params"]["state"] == "busy")
    answer = server.request("shutdown", None, timeout=30)
    assert "error" not in answer, answer
    server.notify("exit", None)
    assert server.proc.wait(timeout=20) == 0


def test_an_apply_edit_answered_with_null_still_answers_the_command(server):
    """This client answers every server request with null: the command must not hang on it.  The
    edit gate is off: the tiny model's fills are noise it would hold back before any applyEdit."""
    server.initialize(options={"editGate": False})
    server.wait_ready()
    answers = []
    for version, text in enumerate(["x = <|hole|>\ny = <|hole|>\n", "def f(a):\n    return <|hole|>\n",
                                    "values = [<|hole|>]\n"], start=1):  # fmt: skip
        server.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python",
                                                                 "version": version, "text": text}})  # fmt: skip
        argument = {"uri": URI, "version": version,
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": text.count("\n"), "character": 0}}}  # fmt: skip
        started = time.monotonic()
        answers.append(server.request("workspace/executeCommand",
                                      {"command": "difill.fillHoles", "arguments": [argument]}, timeout=60))  # fmt: skip
        answered_s = time.monotonic() - started
        if any(m["method"] == "workspace/applyEdit" for m in server.server_requests):
            break
    assert any(m["method"] == "workspace/applyEdit" for m in server.server_requests), answers
    # null is no ApplyWorkspaceEditResult: the command fails at once, not after its 30 s timeout.
    error = answers[-1]["error"]
    assert error["code"] == -32803 and error["message"].startswith("the editor's answer"), answers[-1]
    assert answered_s < APPLY_EDIT_TIMEOUT_S / 2
    assert server.close() == 0


@pytest.mark.parametrize("line", [2**31, 2**32 + 5, 10**30])
def test_a_range_line_past_the_protocols_integers_is_invalid_params(server, line):
    """LSP positions are uintegers (< 2^31): a larger one used to end in InternalError."""
    server.initialize()
    server.wait_ready()
    open_document(server)
    argument = {"uri": URI, "version": 1,
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": line, "character": 0}}}  # fmt: skip
    answer = server.request(
        "workspace/executeCommand", {"command": "difill.editSelection", "arguments": [argument]}
    )
    assert answer["error"]["code"] == -32602, answer
    assert "Traceback" not in answer["error"]["message"]
    assert "result" in server.request("textDocument/inlineCompletion", INLINE)  # still serving
    assert server.close() == 0
