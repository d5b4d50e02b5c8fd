"""Helpers for the backend tests' small HTTP servers (imported by name: tests have no packages)."""

from __future__ import annotations

import http.server

SERVER_KEY = "test-key-0123456789abcdef"  # a made-up key for the loopback test server


def send(
    request: http.server.BaseHTTPRequestHandler, status: int, body: bytes, kind="application/json"
) -> None:
    request.send_response(status)
    request.send_header("Content-Type", kind)
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


def read_body(request: http.server.BaseHTTPRequestHandler) -> bytes:
    return request.rfile.read(int(request.headers.get("Content-Length") or 0))
