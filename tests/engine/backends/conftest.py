"""A real ``difill serve-http`` on loopback (the tiny model), and small misbehaving servers."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator

import pytest
from backend_helpers import SERVER_KEY, serve_http_process

from difill.engine.infill import InfillEngine
from difill.engine.model import load_model


@pytest.fixture(scope="session")
def tiny_loaded(tiny_model_dir):
    return load_model(tiny_model_dir, device="cpu")


@pytest.fixture()
def local_engine(tiny_loaded) -> InfillEngine:
    return InfillEngine(tiny_loaded)


@pytest.fixture(scope="session")
def served(tiny_model_dir) -> Iterator[str]:
    """``difill serve-http`` in a subprocess, as a user starts it; yields its base URL."""
    with serve_http_process(tiny_model_dir, {"DIFILL_API_KEY": SERVER_KEY}) as url:
        yield url


Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


@pytest.fixture()
def fake_server() -> Iterator[Callable[[Handler], str]]:
    """Start a stdlib HTTP server on loopback whose every request runs ``handler``; returns its URL."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(handler: Handler) -> str:
        class Handle(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                handler(self)

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args):  # keep test output quiet
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handle)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
