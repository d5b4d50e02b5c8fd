"""Security through the real servers: one test for each promise.

* weights load only from safetensors (no pickle), and
* ``trust_remote_code`` is never on: ``difill serve`` loads a hostile checkpoint (a pickle
  ``pytorch_model.bin`` and custom code behind ``auto_map``, see hostile_checkpoint.py), answers
  completions with it, and neither payload runs; each test also shows its payload is live;
* no network access unless a remote backend is configured: an audit hook in the server records
  every connect and DNS lookup; none without a remote, and with one only its address;
* listeners bind loopback by default: every listening socket ``difill serve --tcp`` and
  ``difill serve-http`` open, read from /proc, is on a loopback address;
* keys never appear in logs: ``DIFILL_API_KEY`` (and a wrong key a client sent) are in no log of
  ``serve-http`` at debug level, and in no log, notification or answer of ``difill serve`` at
  debug level with a remote backend whose server echoes the Authorization header in its errors;
  a password in the remote URL is in neither the status nor the log.

The engine-level versions are tests/engine/test_security.py (no connection while loading and
filling, trust_remote_code=False in both from_pretrained calls, no torch.load),
tests/engine/test_model_loading.py (a directory of pickle weights is refused) and
tests/engine/backends/test_http_server.py (serve-http refuses a public address without a key, and 401s).
"""

from __future__ import annotations

import http.server
import ipaddress
import json
import logging
import os
import pickle
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from hostile_checkpoint import CODE_MARKER, PICKLE_MARKER, build_hostile_checkpoint
from server_hooks import hook_env, hook_events
from stdio_client import BASE_ENV, StdioServer

from difill.engine.backends import BackendSpec
from difill.server.engine_host import EngineHost, LoadProgress

URI = "file:///tmp/security/a.py"
TEXT = "def area(width, height):\n    return width * \n"
ENV_KEY = "sk-env-key-4f1d9c0b7e2a"  # made up; what a user keeps in DIFILL_API_KEY
WRONG_KEY = "sk-wrong-key-88e1a7d3c5"
URL_PASSWORD = "url-password-93b7c1"


def complete(server: StdioServer, version: int) -> dict:
    text = f"# {version}\n" + TEXT  # new text each time: the suggestion cache must not answer
    server.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": URI, "version": version}, "contentChanges": [{"text": text}]},
    )
    params = {
        "textDocument": {"uri": URI},
        "position": {"line": 2, "character": 19},
        "context": {"triggerKind": 1},
    }
    return server.request("textDocument/inlineCompletion", params, timeout=30)


def open_and_complete(server: StdioServer, times: int = 3) -> list[dict]:
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}},
    )
    return [complete(server, version) for version in range(2, 2 + times)]


# ---------------------------------------------------------------------------- a hostile checkpoint


@pytest.fixture(scope="module")
def hostile(tiny_model_dir, tmp_path_factory):
    """``difill serve`` on the hostile checkpoint, audited; it loads, and answers three requests."""
    root = tmp_path_factory.mktemp("hostile")
    markers = root / "markers"
    model = build_hostile_checkpoint(tiny_model_dir, root / "model", markers)
    log = root / "hooks.jsonl"
    server = StdioServer(model, root / "stderr.txt", env=hook_env(log, audit="1", watch=str(model)))
    server.initialize()
    ready = server.wait_ready()
    answers = open_and_complete(server)
    assert server.close() == 0
    return {"model": model, "markers": markers, "log": log, "ready": ready, "answers": answers}


def test_the_hostile_checkpoint_loads_and_serves(hostile):
    """The premise of the next two tests: the model really loaded from that directory and ran."""
    assert hostile["ready"]["params"]["state"] == "ready"
    assert all(isinstance(a["result"]["items"], list) for a in hostile["answers"])


def test_weights_load_only_from_safetensors(hostile):
    opened = {Path(e["path"]).name for e in hook_events(hostile["log"], "open")}
    assert "config.json" in opened  # the watch works: the loader's reads are seen
    assert not opened & {"pytorch_model.bin", "model.pt"}  # the pickle was never even opened
    assert hook_events(hostile["log"], "pickle") == []  # nothing was unpickled at all
    assert not (hostile["markers"] / PICKLE_MARKER).exists()
    # The payload is live: unpickling the file runs it.
    pickle.loads((hostile["model"] / "pytorch_model.bin").read_bytes())  # noqa: S301 - the point
    assert (hostile["markers"] / PICKLE_MARKER).exists()


def test_trust_remote_code_is_never_on(hostile, tmp_path):
    assert not (hostile["markers"] / CODE_MARKER).exists()
    # The payload is live: the same directory with trust_remote_code=True runs it.
    code = "from transformers import AutoTokenizer; import sys; AutoTokenizer.from_pretrained(sys.argv[1], trust_remote_code=True)"
    env = {**BASE_ENV, "HF_HOME": str(tmp_path / "hf")}  # transformers copies the code there
    subprocess.run([sys.executable, "-c", code, str(hostile["model"])], env=env, check=True, timeout=120)
    assert (hostile["markers"] / CODE_MARKER).exists()


def test_no_network_access_without_a_remote_backend(hostile):
    events = hook_events(hostile["log"])
    assert [e for e in events if e["event"] in ("connect", "dns", "bind")] == []
    # The audit sees network use when there is some: see test_a_remote_backend_connects_only_to_its_server.


# ---------------------------------------------------------------------------- a remote backend


class EchoingRemote:
    """A difill-shaped HTTP server on loopback: its warm-up fill answers, then its errors repeat
    the Authorization header they got, as a careless proxy might."""

    def __init__(self) -> None:
        self.authorizations: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                self._send(200, {"server": "difill"})

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization", "")
                outer.authorizations.append(auth)
                if len(outer.authorizations) == 1:  # the warm-up
                    candidate = {
                        "text": "x",
                        "hole_length": 1,
                        "score": 0.0,
                        "complete": True,
                    }
                    self._send(200, {"text": "x", "candidates": [candidate], "stats": {}})
                elif len(outer.authorizations) % 2:
                    self._send(401, {"error": {"message": f"key {auth} is not valid here"}})
                else:
                    self._send(500, {"error": {"message": f"upstream failed for {auth}"}})

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def remote(tiny_model_dir, tmp_path_factory):
    """``difill serve`` at debug level with a remote backend whose errors echo the key."""
    root = tmp_path_factory.mktemp("remote")
    echo = EchoingRemote()
    log, log_file = root / "hooks.jsonl", root / "server.log"
    env = {**hook_env(log, audit="1"), "DIFILL_API_KEY": ENV_KEY}
    server = StdioServer(
        tiny_model_dir, root / "stderr.txt", ("--log-level", "DEBUG", "--log-file", str(log_file)), env
    )
    init = server.initialize(options={"remote": f"http://127.0.0.1:{echo.port}"})
    ready = server.wait_ready()
    answers = open_and_complete(server, times=4)
    assert server.close() == 0
    echo.close()
    yield {
        "port": echo.port, "log": log, "log_file": log_file, "ready": ready, "answers": answers,
        "authorizations": echo.authorizations, "stderr": server.stderr_text(),
        "messages": [init, *server.notifications, *answers],
    }  # fmt: skip


def test_a_remote_backend_connects_only_to_its_server(remote):
    assert remote["ready"]["params"]["state"] == "ready"
    connects = {tuple(e["address"]) for e in hook_events(remote["log"], "connect")}
    assert connects == {("127.0.0.1", remote["port"])}  # seen, and nowhere else
    assert {e["host"] for e in hook_events(remote["log"], "dns")} <= {"127.0.0.1"}


def test_keys_never_appear_in_the_language_servers_logs_or_messages(remote):
    assert f"Bearer {ENV_KEY}" in remote["authorizations"]  # the key was used
    # The errors echoing it came back: ghost text answers empty and the status says what the
    # server said (issue 28, item 10; they used to be InternalErrors).
    said = [m["params"]["message"] for m in remote["messages"]
            if m.get("method") == "difill/status" and m["params"]["state"] == "error"]  # fmt: skip
    assert sum("HTTP 401" in s or "HTTP 500" in s for s in said) >= 2, said
    log_text = remote["log_file"].read_text()
    assert "DEBUG" in log_text and "inlineCompletion" in log_text  # a real debug log
    for where in (log_text, remote["stderr"], json.dumps(remote["messages"])):
        assert ENV_KEY not in where


async def test_a_password_in_the_remote_url_is_never_shown_or_logged(caplog):
    """The model's location goes into difill/status and the log: without the URL's credentials."""
    echo = EchoingRemote()
    statuses: list[tuple] = []
    host = EngineHost(lambda *status: statuses.append(status))
    try:
        with caplog.at_level(logging.DEBUG, logger="difill"):
            await host.load(
                BackendSpec(None, "cpu", f"http://difill:{URL_PASSWORD}@127.0.0.1:{echo.port}"),
                LoadProgress(),
            )
    finally:
        host.shutdown()
        echo.close()
    assert host.state.value == "ready" and echo.authorizations  # it loaded, through that URL
    assert f"127.0.0.1:{echo.port}" in statuses[-1][1]  # the location is shown...
    assert URL_PASSWORD not in repr(statuses) and URL_PASSWORD not in caplog.text  # ...without the password


# ---------------------------------------------------------------------------- listeners


def listening_addresses(pid: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the TCP sockets ``pid`` listens on (from /proc: Linux only)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    addresses = []
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                raw = bytes.fromhex(local.split(":")[0])
                words = [raw[i : i + 4][::-1] for i in range(0, len(raw), 4)]  # little-endian words
                addresses.append(ipaddress.ip_address(b"".join(words)))
    return addresses


def wait_listening(process: subprocess.Popen, timeout: float = 90.0) -> list:
    deadline = time.monotonic() + timeout
    while not (addresses := listening_addresses(process.pid)):
        assert process.poll() is None, "the server exited"
        assert time.monotonic() < deadline, "the server never listened"
        time.sleep(0.1)
    return addresses


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def serve_http(tiny_model_dir, tmp_path_factory):
    """``difill serve-http`` as a user starts it with a key: default host, debug logs; it answers a
    request with the key, one with a wrong key and one without."""
    root = tmp_path_factory.mktemp("serve-http")
    stdout, stderr = root / "stdout.txt", root / "stderr.txt"
    command = [sys.executable, "-m", "difill", "serve-http", "--model", str(tiny_model_dir),
               "--port", "0", "--log-level", "debug"]  # fmt: skip
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        process = subprocess.Popen(
            command, env={**BASE_ENV, "DIFILL_API_KEY": ENV_KEY}, stdout=out, stderr=err
        )
    try:
        addresses = wait_listening(process)
        port = int(re.search(rb"listening on http://127\.0\.0\.1:(\d+)", stdout.read_bytes()).group(1))
        url = f"http://127.0.0.1:{port}/v1/fill"
        body = {"prefix": "def f(x):\n    return ", "suffix": "\n", "options": {"max_steps": 2}}
        statuses = [
            httpx.post(url, json=body, headers=headers, timeout=60).status_code
            for headers in (
                {"Authorization": f"Bearer {ENV_KEY}"},
                {"Authorization": f"Bearer {WRONG_KEY}"},
                {},
            )
        ]
    finally:
        process.terminate()
        process.wait(timeout=30)
    return {"addresses": addresses, "statuses": statuses, "logs": stdout.read_text() + stderr.read_text()}


def test_listeners_bind_loopback_by_default(serve_http, tmp_path):
    command = [sys.executable, "-m", "difill", "serve", "--tcp", "--port", str(free_port()),
               "--model", str(tmp_path / "no-model")]  # fmt: skip
    process = subprocess.Popen(command, env=BASE_ENV, stderr=subprocess.DEVNULL)
    try:
        lsp_addresses = wait_listening(process)
    finally:
        process.kill()
        process.wait(timeout=30)
    for addresses in (lsp_addresses, serve_http["addresses"]):
        assert addresses and all(address.is_loopback for address in addresses), addresses


def test_keys_never_appear_in_serve_http_logs(serve_http):
    assert serve_http["statuses"] == [200, 401, 401]
    logs = serve_http["logs"]
    assert logs.count("POST /v1/fill") == 3  # every request was logged
    assert ENV_KEY not in logs and WRONG_KEY not in logs
