"""Issue 28 (hostile inputs, round 2) through a real ``difill serve`` and a fake remote on
127.0.0.1, so that the "model's" answers are exactly what each probe needs.  Each test failed on
the code before the fix (the commit before "Issue 28" in ``git log``)."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator

import pytest

FILL = {"text": "x", "candidates": [{"text": "x", "hole_length": 4, "score": 0.0, "complete": True}]}
URI = "file:///tmp/round2/a.py"
REQUEST_FAILED, CONTENT_MODIFIED, INTERNAL_ERROR = -32803, -32801, -32603


class FakeRemote:
    """A difill serve-http stand-in: ``mode`` picks the answer to every fill ("ok", "503", "slow":
    a rewrite answered after ``delay_s``); ``seen`` records (path, Authorization) of each request."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.delay_s = 2.0
        self.seen: list[tuple[str, str | None]] = []
        self.bodies: list[str] = []  # every POST body, as sent
        remote = self

        class Handle(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - the stdlib's name
                remote.seen.append((self.path, self.headers.get("Authorization")))
                self._send(200, {"status": "ok", "server": "difill"})

            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                remote.bodies.append(raw.decode("utf-8", "replace"))
                body = json.loads(raw)
                remote.seen.append((self.path, self.headers.get("Authorization")))
                if remote.mode == "503":
                    return self._send(503, {"error": {"message": "the GPU is busy (fake)"}})
                if remote.mode == "slow" and "selection" in body:
                    time.sleep(remote.delay_s)
                    return self._send(200, {**FILL, "text": body["selection"].replace("1", "2")})
                self._send(200, FILL)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handle)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def fake_remote() -> Iterator[FakeRemote]:
    remote = FakeRemote()
    yield remote
    remote.close()


def open_doc(server, uri: str, text: str, version: int = 1) -> None:
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}})  # fmt: skip


def inline(server, uri: str, line: int, character: int) -> dict:
    return server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 2},
    })  # fmt: skip


def popups(server) -> list[str]:
    return [m["params"]["message"] for m in server.notifications if m["method"] == "window/showMessage"]


def statuses(server) -> list[dict]:
    return [m["params"] for m in server.notifications if m["method"] == "difill/status"]


def everything_shown(server, log_file) -> str:
    """Every status, popup and log line the server wrote: where a secret must never be."""
    sent = json.dumps([m for m in server.notifications if m["method"] != "difill/preview"])
    return sent + server.stderr_text() + (log_file.read_text() if log_file.exists() else "")


def start(start_server, tmp_path, remote_url: str, key: str | None = None):
    log_file = tmp_path / "server.log"
    env = {"DIFILL_API_KEY": key} if key is not None else {"DIFILL_API_KEY": ""}
    server = start_server(None, "--log-level", "DEBUG", "--log-file", str(log_file), env=env)
    server.initialize(options={"remote": remote_url})
    return server, log_file


# ---------------------------------------------------------------------------- secrets (5, 6, 7)


def test_a_key_saved_with_crlf_is_stripped_and_never_shown(start_server, tmp_path, fake_remote):
    server, log_file = start(start_server, tmp_path, fake_remote.url, key="KEYCRLF-0123456789\r\n")
    assert server.wait_ready()["params"]["state"] == "ready"
    assert ("/health", "Bearer KEYCRLF-0123456789") in fake_remote.seen
    server.close()
    assert "KEYCRLF" not in everything_shown(server, log_file)


def test_a_key_with_a_line_break_inside_is_refused_without_quoting_it(start_server, tmp_path, fake_remote):
    server, log_file = start(start_server, tmp_path, fake_remote.url, key="KEYIN-0123\nSIDE-4567")
    status = server.wait_ready()["params"]
    assert status["state"] == "error" and "control character" in status["message"]
    server.close()
    shown = everything_shown(server, log_file)
    assert "KEYIN" not in shown and "SIDE-4567" not in shown


def test_the_password_of_an_unparseable_remote_url_is_never_shown(start_server, tmp_path):
    server, log_file = start(start_server, tmp_path, "http://alice:PASSWORD6X@[::1:8080/")
    status = server.wait_ready()["params"]
    assert status["state"] == "error" and "not a valid URL" in status["message"]
    server.close()
    assert "PASSWORD6X" not in everything_shown(server, log_file)


def test_a_query_string_in_remote_is_sent_after_the_path_and_never_shown(start_server, tmp_path, fake_remote):
    server, log_file = start(start_server, tmp_path, fake_remote.url + "/?api-key=QUERYSECRET7")
    assert server.wait_ready()["params"]["state"] == "ready"
    assert fake_remote.seen[0][0] == "/health?api-key=QUERYSECRET7"
    fake_remote.mode = "503"
    open_doc(server, URI, "def f(x):\n    return \n")
    inline(server, URI, 1, 11)
    server.close()
    assert "QUERYSECRET7" not in everything_shown(server, log_file)


# ---------------------------------------------------------------------------- remote errors (10)


def test_remote_errors_in_ghost_text_answer_empty_and_the_status_says_why(
    start_server, tmp_path, fake_remote
):
    server, _ = start(start_server, tmp_path, fake_remote.url)
    assert server.wait_ready()["params"]["state"] == "ready"
    fake_remote.mode = "503"
    open_doc(server, URI, "def f(x):\n    return \n")
    answers = [inline(server, URI, 1, 11) for _ in range(3)]
    assert all(a.get("result") == {"items": []} for a in answers), answers
    errors = [s for s in statuses(server) if s["state"] == "error"]
    assert (
        errors and "HTTP 503" in errors[-1]["message"] and "the GPU is busy (fake)" in errors[-1]["message"]
    )
    assert len([p for p in popups(server) if "503" in p]) == 1  # one popup for one outage
    fake_remote.mode = "ok"
    assert inline(server, URI, 1, 11)["result"]["items"]
    assert statuses(server)[-1]["state"] == "ready"


# ---------------------------------------------------------------------------- popups (17)


def test_one_unreadable_message_with_40_documents_open_is_one_popup(start_server, tmp_path, fake_remote):
    server, _ = start(start_server, tmp_path, fake_remote.url)
    assert server.wait_ready()["params"]["state"] == "ready"
    for i in range(40):
        open_doc(server, f"file:///tmp/round2/doc{i}.py", "x = 1\n")
    before = len(popups(server))
    server.send_bytes(b"Content-Length: 5\r\n\r\n{oops")  # not JSON: any document may have changed
    assert server.next_response(10)["error"]["code"] == -32700
    inline(server, "file:///tmp/round2/doc0.py", 0, 5)  # a round trip: every popup has arrived
    told = popups(server)[before:]
    assert len(told) == 1 and "40 documents" in told[0], told


# ---------------------------------------------------------------------------- didOpen again (1)


def test_a_second_did_open_during_an_edit_fails_it_with_content_modified(start_server, tmp_path, fake_remote):
    server, _ = start(start_server, tmp_path, fake_remote.url)
    assert server.wait_ready()["params"]["state"] == "ready"
    fake_remote.mode = "slow"
    open_doc(server, URI, "a = 1\nb = 1\nkeep_this_line = 1\n")
    edit = server.send_request("workspace/executeCommand", {"command": "difill.editSelection", "arguments": [
        {"uri": URI, "version": 1, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}},
    ]})  # fmt: skip
    time.sleep(0.5)  # the rewrite is on the remote now
    open_doc(server, URI, "zz\nkeep_this_line = 1\nb = 1\n", version=1)  # same version, other text
    answer = server.response_to(edit, timeout=30)
    assert answer.get("error", {}).get("code") == CONTENT_MODIFIED, answer
    assert not [r for r in server.server_requests if r["method"] == "workspace/applyEdit"]


# ---------------------------------------------------------------------------- lone surrogates (13)


def test_an_instruction_holding_a_lone_surrogate_is_not_an_internal_error(
    start_server, tmp_path, fake_remote
):
    server, _ = start(start_server, tmp_path, fake_remote.url)
    assert server.wait_ready()["params"]["state"] == "ready"
    open_doc(server, URI, "a = 1\nb = 1\n")
    arguments = {"uri": URI, "version": 1, "instruction": "make it \ud800 faster",
                 "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}}  # fmt: skip
    server.send_request(
        "workspace/executeCommand", {"command": "difill.editSelection", "arguments": [arguments]}
    )
    answers = server.responses_within(5)  # an InternalError came at once; an edit is sent to apply
    assert not [a for a in answers if a.get("error", {}).get("code") == INTERNAL_ERROR], answers
    assert [r for r in server.server_requests if r["method"] == "workspace/applyEdit"]
    assert server.alive()
