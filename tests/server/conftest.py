"""The shared ``difill serve`` subprocesses for the end-to-end tests: one per client profile for
the whole session (starting one costs seconds: torch is imported while the model loads)."""

from __future__ import annotations

import pytest_asyncio
from lsp_helpers import running_server


@pytest_asyncio.fixture(scope="session", loop_scope="session", params=["neovim", "visual_studio_code"])
async def client(request, tiny_model_dir, tmp_path_factory):
    log_file = tmp_path_factory.mktemp("logs") / f"{request.param}.log"
    async with running_server(
        tiny_model_dir, request.param, extra_args=("--log-file", str(log_file))
    ) as client:
        client.log_file = log_file
        client.profile = request.param
        yield client
