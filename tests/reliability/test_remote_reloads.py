"""A misbehaving remote through the real ``difill serve`` (issue 15, finding 4).

Before the fix: a remote that drip-fed its answer held the model worker in the warm-up fill, so
switching back to the local model never became ready; each reload leaked the old backend's
thread and event loop; settings typed keystroke by keystroke ran one load (and warm-up) each.
"""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
from collections import Counter

import pytest

URI = "file:///tmp/remote/a.py"
FILL = {
    "text": "x",
    "candidates": [{"text": "x", "hole_length": 4, "score": 0.0, "complete": True}],
    "stats": {},
}


@pytest.fixture()
def remote():
    """A loopback server that answers as ``difill serve-http`` does under any path prefix
    (``/r3/health``, ``/r3/v1/fill``), except under ``/drip``, where it sends a byte a second
    and never finishes.  ``fills`` counts the fills per prefix."""
    fills: Counter[str] = Counter()

    class Handle(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output clean
            pass

        def _answer(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _drip(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            for _ in range(600):
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:  # the client hung up: what the fix does
                    return
                time.sleep(1)

        def do_GET(self):  # noqa: N802 - the stdlib's name
            if self.path.startswith("/drip"):
                return self._drip()
            self._answer({"status": "ok", "server": "difill"})

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.startswith("/drip"):
                return self._drip()
            fills[self.path.rsplit("/v1/", 1)[0]] += 1
            self._answer(FILL)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", fills
    server.shutdown()
    server.server_close()


def set_settings(server, settings: dict) -> None:
    server.notify("workspace/didChangeConfiguration", {"settings": {"difill": settings}})


def statuses(server, state: str) -> int:
    return sum(m["method"] == "difill/status" and m["params"]["state"] == state for m in server.notifications)


def wait_ready_after(server, readies: int, timeout: float) -> None:
    server.wait_for_notification(lambda m: statuses(server, "ready") > readies, timeout)


def threads_of(server) -> int:
    return len(os.listdir(f"/proc/{server.proc.pid}/task"))


def test_switching_away_from_a_remote_that_never_answers_is_ready_at_once(
    start_server, remote, tiny_model_dir
):
    url, _ = remote
    server = start_server(tiny_model_dir)
    server.initialize()
    assert server.wait_ready()["params"]["state"] == "ready"
    set_settings(server, {"remote": f"{url}/drip"})
    time.sleep(2)  # the warm-up fill is now waiting on the drip
    readies = statuses(server, "ready")
    started = time.monotonic()
    set_settings(server, {})  # back to the local model (the workspace layer no longer sets remote)
    wait_ready_after(server, readies, timeout=25)
    assert time.monotonic() - started < 25
    assert server.alive()


def test_reloads_coalesce_and_leave_no_thread_behind(start_server, remote, tiny_model_dir):
    url, fills = remote
    server = start_server(tiny_model_dir)
    server.initialize(options={"remote": f"{url}/r0"})
    assert server.wait_ready()["params"]["state"] == "ready"

    # Typed keystroke by keystroke: 16 values in a burst; only the last matters.
    readies = statuses(server, "ready")
    for i in range(1, 17):
        set_settings(server, {"remote": f"{url}/r{i}"})
    wait_ready_after(server, readies, timeout=30)
    time.sleep(0.5)
    warmed = [prefix for prefix in fills if prefix != "/r0"]
    assert "/r16" in warmed and len(warmed) <= 3, fills  # not one warm-up per keystroke

    # Reload after reload: the thread count stays where it was.
    set_settings(server, {"remote": f"{url}/a"})
    wait_ready_after(server, statuses(server, "ready"), timeout=30)
    before = threads_of(server)
    for i in range(8):
        readies = statuses(server, "ready")
        set_settings(server, {"remote": f"{url}/b{i}"})
        wait_ready_after(server, readies, timeout=30)
    time.sleep(0.5)
    assert threads_of(server) <= before + 1, (before, threads_of(server))
