"""`difill serve --engine mlx` end to end on the shipped model: what an editor gets over LSP is
what the torch engine gives (the server loads the model on one thread and fills on others)."""

from __future__ import annotations

import sys

import pytest
import pytest_asyncio
from lsp_helpers import assert_inline_as_torch, inline_params, open_document, running_server
from lsprotocol import types

if sys.platform not in ("linux", "darwin"):  # the only platforms with MLX wheels
    pytest.skip("MLX has no wheels for this platform", allow_module_level=True)

DOCUMENT = "def scale(values, k):\n    return [v * \n\nprint(scale([1, 2], 3))\n"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def mlx_client():
    async with running_server(None, "neovim", extra_args=("--engine", "mlx")) as client:
        yield client


@pytest.mark.asyncio(loop_scope="module")
async def test_the_server_says_it_runs_mlx_and_answers_as_torch_does(mlx_client):
    ready = next(s for s in mlx_client.statuses if s.get("state") == "ready")
    assert "(MLX)" in ready["message"]
    await assert_inline_as_torch(mlx_client, "file:///tmp/mlx/inline.py", DOCUMENT, 1, 16)


@pytest.mark.asyncio(loop_scope="module")
async def test_code_actions_and_a_second_document_are_served(mlx_client):
    uri = "file:///tmp/mlx/second.py"
    open_document(mlx_client, uri, DOCUMENT.replace("scale", "grow"))
    answer = await mlx_client.text_document_inline_completion_async(
        inline_params(uri, 1, len("    return [v * "), invoked=True)
    )
    assert answer.items
    actions = await mlx_client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=1, character=0), end=types.Position(line=1, character=14)
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions
