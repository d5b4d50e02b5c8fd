"""End to end: start-up (capabilities, background loading with progress), a missing model,
invalid initializationOptions, and the TCP transport."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time

import pytest
from lsp_helpers import (
    PROFILES,
    SERVER_ENV,
    inline_params,
    open_document,
    running_server,
    send_raw_request,
    server_command,
    wait_for,
    wait_for_status,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcMethodNotFound
from pytest_lsp import client_capabilities

URI = "file:///tmp/lifecycle/a.py"
TEXT = "def area(w, h):\n    return w * \n"


async def test_capabilities_and_progress_while_the_model_loads(tiny_model_dir):
    async with running_server(
        tiny_model_dir, "visual_studio_code", {"loadWaitMs": 0}, wait_ready=False
    ) as client:
        capabilities = client.init_result.capabilities
        assert capabilities.inline_completion_provider is not None
        assert capabilities.completion_provider is not None
        assert capabilities.text_document_sync.change == types.TextDocumentSyncKind.Incremental
        assert capabilities.position_encoding == types.PositionEncodingKind.Utf16
        assert client.init_result.server_info.name == "difill"

        # While loading (importing torch alone takes seconds): an empty answer, at once, that is
        # before the model is ready (an order, where a clock would count the load's share of the cores).
        open_document(client, URI, TEXT)
        early = await client.text_document_inline_completion_async(inline_params(URI, 1, 15))
        assert len(early.items) == 0
        assert client.statuses[0]["state"] == "loading" and not any(
            s["state"] == "ready" for s in client.statuses
        )

        # With a longer wait, a request made while loading is answered once the model is ready.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"difill": {"loadWaitMs": 60000}})
        )
        waiting = asyncio.ensure_future(
            client.text_document_inline_completion_async(inline_params(URI, 1, 15))
        )
        await wait_for_status(client, "ready")
        result = await asyncio.wait_for(waiting, 30)
        assert result.items

        ((token, reports),) = client.progress_reports.items()
        kinds = [r.kind for r in reports]
        assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds[1:-1]
        percentages = [r.percentage for r in reports if r.kind != "end"]
        assert percentages == sorted(percentages)


async def test_missing_model_is_reported_and_requests_get_empty_results(tmp_path):
    missing = tmp_path / "no-model-here"
    options = {"maxTokens": "lots"}
    async with running_server(missing, "neovim", options, wait_ready=False) as client:
        await wait_for_status(client, "error", timeout=60)
        await wait_for(lambda: len(client.messages) >= 2, 10, "two window/showMessage")
        warning, error = sorted(client.messages, key=lambda m: m.type, reverse=True)
        assert warning.type == types.MessageType.Warning and "maxTokens" in warning.message
        assert error.type == types.MessageType.Error and str(missing) in error.message
        open_document(client, URI, TEXT)
        for _ in range(3):  # every request answered, empty, and no new messages
            result = await client.text_document_inline_completion_async(inline_params(URI, 1, 15))
            assert len(result.items) == 0
        assert len(client.messages) == 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rpc(sock: socket.socket, message: dict) -> dict:
    body = json.dumps(message).encode()
    sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    reader = sock.makefile("rb")
    length = 0
    while line := reader.readline().strip():
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(reader.read(length))


def test_tcp_transport_listens_on_localhost(tmp_path):
    port = _free_port()
    command = server_command(tmp_path / "no-model", "--tcp", "--port", str(port))
    process = subprocess.Popen(command, env=SERVER_ENV, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "the server never listened"
                time.sleep(0.1)
        with sock:
            reply = _rpc(sock, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"processId": None, "rootUri": None, "capabilities": {}}})  # fmt: skip
        assert reply["id"] == 1 and "inlineCompletionProvider" in reply["result"]["capabilities"]
    finally:
        process.kill()
        process.wait()


async def test_a_failure_inside_a_running_server_block_is_reported_not_hung(tiny_model_dir):
    """The harness itself: an assertion that fails while a server runs must surface as that
    failure, and the server must not outlive it (it used to hang the test run instead)."""
    server = None
    with pytest.raises(AssertionError, match="a failed check"):
        async with asyncio.timeout(60):
            async with running_server(tiny_model_dir) as client:
                server = client._server
                raise AssertionError("a failed check")
    assert server is not None and server.returncode is not None


async def test_the_same_settings_problem_is_shown_once(tiny_model_dir):
    """Issue 52: Neovim sends its settings as initializationOptions and again as
    didChangeConfiguration; an unknown key was reported twice.  Once now, and again only when
    the problems change."""
    async with running_server(tiny_model_dir, init_options={"maxToken": 5}) as client:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"difill": {"maxToken": 5}})
        )
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"difill": {"maxToken": 5, "stepz": 2}})
        )
        await wait_for(lambda: any("stepz" in m.message for m in client.messages), 10, "the new problem")
        told = [m.message for m in client.messages if "maxToken" in m.message]
        assert len(told) == 2 and "did you mean" in told[0] and "stepz" in told[1]


async def test_features_are_advertised_as_decided_at_initialize(tmp_path):
    """Issue 65 item 2: what the server advertises is decided once, at initialize, from the
    settings and the client (jedi-language-server's way: a feature registers only when on).
    nextEdit off: no copilotInlineEdit capability and no handler; a client with inline
    completion gets no completion provider (it shows ghost text, a completion list would
    repeat it); one without keeps the fallback."""
    missing = tmp_path / "no-model"  # nothing here loads a model
    plain = client_capabilities(PROFILES["visual_studio_code"])
    async with running_server(missing, init_options={"nextEdit": "off"}, wait_ready=False) as client:
        capabilities = client.init_result.capabilities
        assert "difill" not in (capabilities.experimental or {})
        assert "inlineEditProvider" not in (capabilities.experimental or {})
        assert capabilities.completion_provider is not None  # this client has no inline completion
        with pytest.raises(JsonRpcMethodNotFound):
            await send_raw_request(client, "textDocument/copilotInlineEdit", {}, "ne-off")
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"difill": {"nextEdit": "on"}})
        )
        await wait_for(lambda: any("restart" in m.message for m in client.messages), 10, "restart")
    plain.text_document.inline_completion = types.InlineCompletionClientCapabilities()
    async with running_server(missing, capabilities=plain, wait_ready=False) as client:
        capabilities = client.init_result.capabilities
        assert capabilities.experimental == {"inlineEditProvider": True, "difill": {"nextEdit": True}}
        assert capabilities.completion_provider is None
        assert capabilities.inline_completion_provider is not None
