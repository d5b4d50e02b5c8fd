"""``difill serve --tcp`` serves one editor, and nothing else gets in (issue 15, finding 1).

Before: every TCP connection was handed the same protocol object, so a second local connection
(or the HTTP POST a web page's no-cors fetch sends) took the session over: its settings changed
where the victim's code went, the victim got no more answers, and a disconnect left the server
alive but deaf. ``--host 0.0.0.0`` was accepted with a warning.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": None, "rootUri": None, "capabilities": {}}}  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_message(sock: socket.socket) -> dict | None:
    reader = sock.makefile("rb")
    length = None
    while True:
        line = reader.readline()
        if not line:
            return None
        if not line.strip():
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(reader.read(length))


def connect(port: int, timeout: float = 30) -> socket.socket:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection(
                ("127.0.0.1", port), timeout=60
            )  # generous: a loaded 2-core CI machine answered late
        except OSError:
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.1)


@pytest.fixture
def tcp_server(tmp_path):
    port = free_port()
    command = [sys.executable, "-m", "difill", "serve", "--tcp", "--port", str(port),
               "--model", str(tmp_path / "no-model")]  # fmt: skip
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    yield process, port
    process.kill()
    process.wait()


def test_an_http_request_gets_no_reply_and_does_not_become_the_client(tcp_server):
    process, port = tcp_server
    with connect(port) as web:
        web.sendall(b'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n\r\n'
                    + json.dumps({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
                                  "params": {"settings": {"difill": {"remote": "http://evil"}}}}).encode())  # fmt: skip
        assert web.recv(100) == b""  # closed, nothing said
    assert process.poll() is None  # still up, and still waiting for its editor
    with connect(port) as editor:
        editor.sendall(frame(INIT))
        reply = read_message(editor)
        assert reply["id"] == 1 and "inlineCompletionProvider" in reply["result"]["capabilities"]


def test_a_second_connection_is_refused_and_the_session_stays_with_the_first(tcp_server):
    process, port = tcp_server
    editor = connect(port)
    editor.sendall(frame(INIT))
    assert read_message(editor)["id"] == 1
    with connect(port) as intruder:
        intruder.sendall(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        try:
            said = intruder.recv(100)
        except ConnectionResetError:  # closed with its request unread: the kernel resets, no answer
            said = b""
        assert said == b""  # closed without an answer
    editor.sendall(frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
    answer = read_message(editor)
    while answer is not None and answer.get("id") != 3:  # skip the server's notifications
        answer = read_message(editor)
    assert answer == {"jsonrpc": "2.0", "id": 3, "result": None}
    editor.shutdown(socket.SHUT_RDWR)  # the editor goes away (makefile() readers keep the fd open)
    editor.close()  # ... and the server goes too, rather than stay deaf
    assert process.wait(timeout=30) is not None


def test_a_non_loopback_host_needs_an_explicit_flag(tmp_path):
    command = [
        sys.executable,
        "-m",
        "difill",
        "serve",
        "--tcp",
        "--host",
        "0.0.0.0",
        "--port",
        str(free_port()),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (
        done.returncode != 0
        and "refusing to listen on 0.0.0.0" in done.stderr
        and "--allow-remote" in done.stderr
    )
