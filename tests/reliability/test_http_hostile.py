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


def start(model_dir, key: str | None, *extra: str):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DIFILL_API_KEY"}
    if key:
        env["DIFILL_API_KEY"] = key
    process = subprocess.Popen([sys.executable, "-m", "difill", "serve-http", "--port", str(port),
                                "--model", str(model_dir), *extra], env=env, stderr=subprocess.DEVNULL)  # fmt: skip
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


@pytest.fixture(scope="module")
def impatient(tiny_model_dir):
    process, url = start(tiny_model_dir, None, "--header-timeout", "1", "--body-timeout", "1")
    yield url
    process.kill()
    process.wait()


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.settimeout(15)
    return sock


def seconds_until_closed(sock: socket.socket) -> float:
    started = time.monotonic()
    try:
        while sock.recv(4096):  # an answer (the 408) may come before the close
            pass
    except TimeoutError:
        return float("inf")
    return time.monotonic() - started


@pytest.mark.parametrize("sent", [b"", b"POST /v1/fill HTTP/1.1\r\nHost: 127.0.0.1\r\n"])
def test_a_client_slow_to_send_its_headers_is_cut_off(impatient, sent):
    """Slowloris: nothing, or half a header and then a byte now and then, used to hold the
    connection for ever (uvicorn's keep-alive timer is reset by every byte)."""
    sock = connect(impatient)
    sock.sendall(sent)
    started = time.monotonic()
    try:
        for _ in range(6):  # a byte every 0.4 s: never idle, never done
            time.sleep(0.4)
            sock.sendall(b"X")
    except OSError:
        pass  # closed already: that is the point
    assert time.monotonic() - started + seconds_until_closed(sock) < 10  # a wait: wall time; never, uncut
    sock.close()
    assert httpx.post(impatient + "/v1/fill", json=FILL, timeout=60).status_code == 200  # others still served


def test_a_body_that_does_not_arrive_in_time_is_answered_408(impatient):
    sock = connect(impatient)
    sock.sendall(b"POST /v1/fill HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000\r\n\r\n{")  # fmt: skip
    answer = b""
    started = time.monotonic()
    while time.monotonic() - started < 10 and b"\r\n\r\n" not in answer:
        chunk = sock.recv(4096)
        if not chunk:
            break
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
    assert time.monotonic() - started < 5
    sock.close()
