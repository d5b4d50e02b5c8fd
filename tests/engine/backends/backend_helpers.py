"""Helpers for the backend tests: small HTTP servers, ``difill serve-http`` as a user starts it,
and the batcher's padded pass checked against each fill's own (imported by name: tests have no
packages)."""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

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


@contextlib.contextmanager
def serve_http_process(model_dir: Path | str, env: dict[str, str], *extra: str) -> Iterator[str]:
    """``difill serve-http`` on ``model_dir`` in a subprocess, as a user starts it; its base URL."""
    command = [sys.executable, "-m", "difill", "serve-http", "--model", str(model_dir),
               "--device", "cpu", "--port", "0", "--log-level", "warning", *extra]  # fmt: skip
    proc = subprocess.Popen(
        command, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline()
    match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    if not match:
        proc.kill()
        pytest.fail(f"serve-http did not start: {line!r} {proc.stderr.read()[-2000:]}")
    try:
        yield match.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def assert_padded_pass_matches_each_alone(model, calls) -> None:
    """The batcher's padded decoder pass over ``calls`` gives each the hidden states of its own pass."""
    from difill.engine.batcher import padded_hidden

    with torch.inference_mode():
        together = padded_hidden(model, calls)
        for call, got in zip(calls, together, strict=True):
            alone = call.decoder.hidden(call.canvas, call.soft)
            assert got.shape == alone.shape
            torch.testing.assert_close(got, alone, atol=1e-5, rtol=1e-4)
