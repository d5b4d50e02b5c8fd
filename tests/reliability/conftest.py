"""Fixtures for the reliability suites: ``difill serve`` subprocesses driven over raw stdio."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from stdio_client import StdioServer


@pytest.fixture()
def start_server(tmp_path) -> Iterator[Callable[..., StdioServer]]:
    """Start ``difill serve`` subprocesses for one test; each is shut down (or killed) afterwards."""
    servers: list[StdioServer] = []

    def start(model_dir, *extra_args: str, env: dict[str, str] | None = None) -> StdioServer:
        server = StdioServer(model_dir, tmp_path / f"stderr-{len(servers)}.txt", extra_args, env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
