"""`difill serve --engine llamacpp` end to end on the shipped model: what an editor gets over LSP
is what the torch engine gives, and a worker that dies is replaced without the server going down."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import pytest_asyncio
from lsp_helpers import assert_inline_as_torch, inline_params, open_document, running_server
from lsprotocol import types

from difill.engine.native.build import build_native

DOCUMENT = "def scale(values, k):\n    return [v * \n\nprint(scale([1, 2], 3))\n"


def worker_pids(server_pid: int) -> list[int]:
    """The server's children that are llama.cpp workers."""
    pids = []
    for task in Path(f"/proc/{server_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if "difill-llama-worker" in Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace"):
                pids.append(int(child))
    return pids


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def llama_client():
    build_native(log=lambda line: None)  # a no-op when current; the shipped GGUF is exported by the server
    args = ("--engine", "llamacpp", "--llamacpp-threads", "1")
    async with running_server(None, "neovim", extra_args=args) as client:
        yield client


@pytest.mark.asyncio(loop_scope="module")
async def test_the_server_says_it_runs_llama_cpp_and_answers_as_torch_does(llama_client):
    ready = next(s for s in llama_client.statuses if s.get("state") == "ready")
    assert "(llama.cpp)" in ready["message"]
    await assert_inline_as_torch(llama_client, "file:///tmp/llama/inline.py", DOCUMENT, 1, 16)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_worker_that_died_between_requests_is_replaced_before_the_next(llama_client):
    server_pid = llama_client._server.pid
    (first,) = worker_pids(server_pid)
    os.kill(first, signal.SIGKILL)
    # The next request finds it dead before sending it anything and starts a new one (a worker
    # that dies mid-fill fails that fill: tests/engine/native/test_llamacpp.py).  A new text each time:
    # the suggestion cache would answer a repeated request itself.
    for name in ("dies", "replaced"):
        uri = f"file:///tmp/llama/{name}.py"
        open_document(llama_client, uri, DOCUMENT.replace("scale", name))
        column = len("    return [v * ")
        answer = await llama_client.text_document_inline_completion_async(
            inline_params(uri, 1, column, invoked=True)
        )
        assert answer.items
    (second,) = worker_pids(server_pid)
    assert second != first
    actions = await llama_client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=1, character=0), end=types.Position(line=1, character=14)
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions  # the code actions still come
