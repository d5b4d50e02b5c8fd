"""Faults through a real ``difill serve``: a broken checkpoint is reported once and requests are
still answered (empty); an exception in the middle of denoising fails that request only; running
out of memory degrades the fill (one shorter candidate on a smaller canvas) instead of failing it.

Faults inside the model run are injected by hooks/sitecustomize.py, after the warm-up fill.
The model directory that does not exist is tests/server/test_lsp_lifecycle.py's
test_missing_model_is_reported_and_requests_get_empty_results.
"""

from __future__ import annotations

import shutil

import pytest
from server_hooks import hook_env, hook_events
from stdio_client import StdioServer

URI = "file:///tmp/faults/a.py"
TEXT = "def area(width, height):\n    return width * \n"
PARAMS = {
    "textDocument": {"uri": URI},
    "position": {"line": 1, "character": 19},
    "context": {"triggerKind": 1},
}


def open_document(server: StdioServer) -> None:
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}},
    )


def complete_after_an_edit(server: StdioServer, version: int) -> dict:
    """An inline completion on text no earlier request saw (the suggestion cache would answer a
    repeat without running the model)."""
    server.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": URI, "version": version},
            "contentChanges": [{"text": f"# {version}\n" + TEXT}],
        },
    )
    params = {**PARAMS, "position": {"line": 2, "character": 19}}
    return server.request("textDocument/inlineCompletion", params, timeout=30)


def statuses(server: StdioServer) -> list[str]:
    return [n["params"]["state"] for n in server.notifications if n["method"] == "difill/status"]


def shown(server: StdioServer) -> list[dict]:
    return [n["params"] for n in server.notifications if n["method"] == "window/showMessage"]


def test_a_truncated_checkpoint_is_shown_once_and_requests_are_answered_empty(
    start_server, tiny_model_dir, tmp_path
):
    broken = shutil.copytree(tiny_model_dir, tmp_path / "broken-model")
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 3])
    server = start_server(broken)
    server.initialize()
    assert server.wait_ready()["params"]["state"] == "error"
    open_document(server)
    for _ in range(5):  # every request answered, at once and empty
        response = server.request("textDocument/inlineCompletion", PARAMS, timeout=10)
        assert response["result"]["items"] == []
    ((message,),) = [shown(server)]  # one message, not one per request
    assert message["type"] == 1  # Error
    assert str(broken) in message["message"] and "could not load the model" in message["message"]
    assert "--model" in message["message"]  # and it says how to fix it
    assert server.close() == 0


@pytest.fixture()
def faulty_server(start_server, tiny_model_dir, tmp_path):
    def start(fault: str) -> tuple[StdioServer, object]:
        log = tmp_path / "hooks.jsonl"
        server = start_server(tiny_model_dir, env=hook_env(log, fault=fault))
        server.initialize()
        assert server.wait_ready()["params"]["state"] == "ready"
        open_document(server)
        return server, log

    return start


def test_an_exception_in_the_middle_of_denoising_fails_that_request_only(faulty_server):
    server, log = faulty_server("error:1")  # the first fill raises at its second denoising step
    failed = server.request("textDocument/inlineCompletion", PARAMS, timeout=30)
    assert failed["error"]["code"] == -32603 and "injected fault" in failed["error"]["message"]
    assert hook_events(log, "fault") == [{"event": "fault", "kind": "error", "fill": 1, "step": 2}]

    for version in range(2, 5):  # the next requests run the model again and are answered
        response = complete_after_an_edit(server, version)
        assert "error" not in response and isinstance(response["result"]["items"], list)
    assert [e["fill"] for e in hook_events(log, "fill")] == [1, 2, 3, 4]
    assert statuses(server)[-1] == "ready"  # not stuck at "busy" after the failure
    assert shown(server) == []  # a failed completion is no reason to interrupt the user
    assert server.close() == 0


def test_out_of_memory_degrades_to_one_shorter_candidate(faulty_server):
    server, log = faulty_server("oom")  # every pass over more than one candidate runs out of memory
    for version in range(2, 5):
        response = complete_after_an_edit(server, version)
        assert "error" not in response, response
        assert len(response["result"]["items"]) <= 1  # one candidate was left
    fills = hook_events(log, "fill")
    assert len(fills) == 6 and len(hook_events(log, "fault")) == 3  # each request: OOM, then a retry
    for tried, retried in zip(fills[::2], fills[1::2], strict=True):
        assert tried["batch"] == 3 and retried["batch"] == 1
        assert retried["length"] < tried["length"]  # a smaller canvas, too
    assert server.alive() and server.close() == 0
