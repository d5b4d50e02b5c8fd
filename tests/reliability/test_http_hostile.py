"""``difill serve-http`` against what a hostile web page or a confused proxy sends (issue 15, finding 6).

Through the real server subprocess (no key: loopback only; with a key: exactly one Bearer header).
Before: a keyless server answered cross-origin ``text/plain`` POSTs and foreign ``Host`` headers
(any page the user visits could run fills, DNS rebinding included), nesting depth 100,000 gave a
500 with a logged traceback, with two ``Authorization`` headers the last one won, and a chunked
body was read whole before the size check.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import httpx2 as httpx
import pytest

FILL = {"prefix": "def add(a, b):\n    return a", "suffix": "\n", "options": {"max_steps": 2}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(model_dir, key: str | None):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DIFILL_API_KEY"}
    if key:
        env["DIFILL_API_KEY"] = key
    process = subprocess.Popen([sys.executable, "-m", "difill.server", "serve-http", "--port", str(port),
                                "--model", str(model_dir)], env=env, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            httpx.get(url + "/health", headers={"authorization": f"Bearer {key}"} if key else {}, timeout=5)
            return process, url
        except httpx.TransportError:
            assert time.monotonic() < deadline and process.poll() is None, "serve-http never listened"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def keyless(tiny_model_dir):
    process, url = start(tiny_model_dir, None)
    yield url
    process.kill()
    process.wait()


@pytest.fixture(scope="module")
def keyed(tiny_model_dir):
    process, url = start(tiny_model_dir, "s3cret-key")
    yield url
    process.kill()
    process.wait()


def test_an_editor_on_this_machine_is_served(keyless):
    assert httpx.post(keyless + "/v1/fill", json=FILL, timeout=60).status_code == 200


def test_a_web_page_cannot_use_a_keyless_server(keyless):
    simple = {"content-type": "text/plain", "origin": "https://evil.example"}  # no preflight needed
    refused = httpx.post(keyless + "/v1/fill", content=json.dumps(FILL), headers=simple, timeout=30)
    assert refused.status_code == 403 and "web pages" in refused.json()["error"]["message"]
    as_json = httpx.post(keyless + "/v1/fill", json=FILL, headers={"origin": "null"}, timeout=30)
    assert as_json.status_code == 403


def test_a_rebound_host_name_is_refused(keyless):
    response = httpx.post(
        keyless + "/v1/fill", json=FILL, headers={"host": "attacker.example:8000"}, timeout=30
    )
    assert response.status_code == 403 and "Host" in response.json()["error"]["message"]


def test_only_json_bodies_are_read(keyless):
    response = httpx.post(
        keyless + "/v1/fill", content=json.dumps(FILL), headers={"content-type": "text/plain"}
    )
    assert response.status_code == 415


def test_deep_nesting_is_a_400_not_a_traceback(keyless):
    deep = "[" * 100_000 + "]" * 100_000
    response = httpx.post(
        keyless + "/v1/fill", content=deep, headers={"content-type": "application/json"}, timeout=60
    )
    assert response.status_code == 400 and "nested too deeply" in response.json()["error"]["message"]


def test_a_chunked_body_over_the_limit_is_cut_off(keyless):
    def chunks():
        for _ in range(12):  # 12 MiB, no Content-Length
            yield b" " * 2**20

    response = httpx.post(
        keyless + "/v1/fill", content=chunks(), headers={"content-type": "application/json"}, timeout=60
    )
    assert response.status_code == 413


def test_two_authorization_headers_are_refused(keyed):
    good = ("authorization", "Bearer s3cret-key")
    assert httpx.post(keyed + "/v1/fill", json=FILL, headers=[good], timeout=60).status_code == 200
    twice = httpx.post(
        keyed + "/v1/fill", json=FILL, headers=[("authorization", "Bearer wrong"), good], timeout=30
    )
    assert twice.status_code == 401
