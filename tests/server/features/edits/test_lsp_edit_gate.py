"""Issue 60, item 2, through ``difill serve``: an edit the edit gate holds back (text/edit_gate.py)
changes nothing and reaches the user as one line saying what the model wrote, why it is held
back and how to get useful edits; an edit that passes is applied as before.

The tiny random model writes noise, which is what the gate must hold back.  A fake remote
(the model's answer chosen here) shows both sides on the same selection: a plausible rewrite
goes through, a mangled one does not, and key-shaped text in it never reaches the message."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator

import pytest
import pytest_asyncio
from lsp_helpers import open_document, running_server
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from test_lsp_edits import FUNCTION, actions_for, command, selection

pytestmark = pytest.mark.asyncio(loop_scope="session")

REQUEST_FAILED = -32803


def uri_for(client, name: str) -> str:
    return f"file:///tmp/{client.profile}/gate/{name}.py"


def assert_held_back(refused: JsonRpcException, how: str) -> None:
    """One line: what the model wrote, that it is held back and why, and what to do."""
    message = refused.message
    assert refused.code == REQUEST_FAILED, message
    assert message.startswith('held back the edit: the model wrote "') and "\n" not in message, message
    assert '", but it ' in message and how in message, message
    assert refused.data["heldBack"], refused.data


async def held_back(request) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as refused:
        await request
    return refused.value


async def test_a_noisy_instruction_edit_is_held_back_and_nothing_is_applied(client):
    uri = uri_for(client, "instruction")
    open_document(client, uri, FUNCTION, version=3)
    before = len(client.applied_edits)
    refused = await held_back(
        client.workspace_execute_command_async(
            command(
                "difill.editSelection",
                uri,
                selection(1, 4, 2, 31),
                3,
                instruction="use a generator",
                strength=0.8,
            )  # fmt: skip
        )
    )
    assert_held_back(refused, "select less, or try another instruction")  # a --model was given
    await asyncio.sleep(0.2)
    assert len(client.applied_edits) == before  # no workspace/applyEdit


async def test_a_resolved_rewrite_never_carries_a_held_back_edit(client):
    uri = uri_for(client, "resolve")
    open_document(client, uri, FUNCTION, version=2)
    (rewrite, _) = await actions_for(client, uri, selection(1, 4, 2, 31))
    action = client.protocol._converter.structure(rewrite, types.CodeAction)
    refused = await held_back(client.code_action_resolve_async(action))
    assert_held_back(refused, "select less")


async def test_a_noisy_completed_block_is_held_back(client):
    uri = uri_for(client, "block")
    text = "def later(a, b):\n    pass\n\nx = 1\n"
    open_document(client, uri, text, version=1)
    before = len(client.applied_edits)
    refused = await held_back(
        client.workspace_execute_command_async(command("difill.completeBlock", uri, selection(1, 4, 1, 8), 1))
    )
    assert_held_back(refused, "select less")
    assert len(client.applied_edits) == before


# ---------------------------------------------------------------------------- a fake remote

GOOD = "    subtotal = sum(prices, start=0.0)\n    return subtotal * (1 + tax)"
NOISE = (
    "    subcount = sum(prices) AKIAIOSFODNN7EXAMPLE http://alice:hunter22@example.com\n    return subcount"
)


class Remote:
    """difill serve-http's /v1/fill, answering every rewrite with ``answer``."""

    def __init__(self) -> None:
        self.answer = GOOD
        remote = self

        class Handle(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - the stdlib's name
                self._send({"status": "ok", "server": "difill"})

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                text = remote.answer
                self._send({"text": text, "candidates": [{"text": text, "hole_length": 8, "score": 0.0,
                                                          "complete": True}]})  # fmt: skip

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handle)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def remote() -> Iterator[Remote]:
    fake = Remote()
    yield fake
    fake.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def remote_client(remote):
    async with running_server(None, "neovim", init_options={"remote": remote.url}) as client:
        client.profile = "remote"
        yield client


async def test_through_a_remote_a_plausible_rewrite_is_applied_and_a_mangled_one_is_not(
    remote, remote_client
):
    client = remote_client
    uri = uri_for(client, "both")
    open_document(client, uri, FUNCTION, version=1)
    rng = selection(1, 0, 2, 31)
    before = len(client.applied_edits)
    remote.answer = GOOD
    answer = await client.workspace_execute_command_async(command("difill.editSelection", uri, rng, 1))
    assert answer["applied"] and len(client.applied_edits) == before + 1

    remote.answer = NOISE
    refused = await held_back(
        client.workspace_execute_command_async(command("difill.editSelection", uri, rng, 1))
    )
    assert_held_back(refused, "select less")
    assert "renames" in refused.message and "`tax` gone" in refused.message  # the rename, named
    shown = refused.message + json.dumps(refused.data)
    assert "AKIAIOSFODNN7EXAMPLE" not in shown and "hunter22" not in shown  # redacted and scrubbed
    assert len(client.applied_edits) == before + 1
