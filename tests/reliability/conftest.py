"""Fixtures for the reliability suites: ``difill serve`` subprocesses driven over raw stdio, and the
environment that loads ``hooks/sitecustomize.py`` into them (fault injection, inspection, audit)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from stdio_client import BASE_ENV, StdioServer

HOOKS_DIR = Path(__file__).parent / "hooks"


def hook_env(log_path: Path, **settings: str) -> dict[str, str]:
    """Environment for a subprocess that loads the test hooks; they write events to ``log_path``.

    ``settings`` become DIFILL_HOOK_<NAME> variables (see hooks/sitecustomize.py)."""
    path = os.pathsep.join(p for p in (str(HOOKS_DIR), BASE_ENV.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, "DIFILL_HOOK_LOG": str(log_path)}
    env.update({f"DIFILL_HOOK_{name.upper()}": value for name, value in settings.items()})
    return env


def hook_events(log_path: Path, kind: str | None = None) -> list[dict]:
    """The events the hooks wrote, optionally only those of one kind."""
    if not log_path.exists():
        return []
    events = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    return [e for e in events if kind is None or e["event"] == kind]


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
