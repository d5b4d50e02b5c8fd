"""The remote backend against a real ``difill serve-http`` on loopback, and against servers that fail."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time

import httpx2 as httpx
import pytest
from backend_helpers import SERVER_KEY, read_body, send

from difill import cli
from difill.engine.api import Cancelled, FillOptions, RewriteRequest
from difill.engine.backends import BackendError, RemoteConfig, connect
from difill.server.suggestion_path import ServedModel

PREFIX = "def add(a, b):\n    return"
SUFFIX = "\n\n\nprint(add(1, 2))\n"


@pytest.mark.parametrize("protocol", ["difill", "openai"])
def test_remote_fill_gives_the_local_engines_text_for_the_same_seed(served, local_engine, protocol):
    remote = connect(RemoteConfig(served, protocol=protocol, api_key=SERVER_KEY, fim="suffix"))
    try:
        for seed in (0, 1, 2):
            options = FillOptions(seed=seed, max_hole_tokens=8)
            local = local_engine.fill(PREFIX, SUFFIX, options)
            assert remote.fill(PREFIX, SUFFIX, options).text == local.text
    finally:
        remote.close()


def test_native_protocol_returns_every_candidate_holes_and_rewrites_like_local(served, local_engine):
    remote = connect(RemoteConfig(served, api_key=SERVER_KEY))  # protocol auto: finds a difill server
    try:
        options = FillOptions(seed=5, max_hole_tokens=12)
        local = local_engine.fill(PREFIX, SUFFIX, options)
        got = remote.fill(PREFIX, SUFFIX, options)
        assert remote.protocol == "difill"
        assert [c.text for c in got.candidates] == [c.text for c in local.candidates]
        assert got.stats.decoder_forwards == local.stats.decoder_forwards > 0

        text = "x = <|hole|>\nprint(x)\ny = <|hole|>\n"
        assert (
            remote.fill_holes(text, options=options).middles
            == local_engine.fill_holes(text, options=options).middles
        )

        request = RewriteRequest("def f(x):\n", "    return x * 2\n", "\nf(1)\n", 0.7, "double it")
        local_rewrite = local_engine.rewrite(request, options=options)
        assert remote.rewrite(request, options=options).text == local_rewrite.text
    finally:
        remote.close()


def test_api_key_is_read_from_DIFILL_API_KEY(served, monkeypatch):
    monkeypatch.setenv("DIFILL_API_KEY", SERVER_KEY)
    remote = connect(RemoteConfig(served, protocol="difill"))
    try:
        assert remote.fill(PREFIX, SUFFIX, FillOptions(max_hole_tokens=4)).stats.decoder_forwards > 0
    finally:
        remote.close()


def test_wrong_key_is_a_clear_error_that_never_shows_the_key(served):
    wrong = "sk-wrong-key-do-not-print-me"
    remote = connect(RemoteConfig(served, protocol="difill", api_key=wrong))
    with pytest.raises(BackendError) as caught:
        remote.fill(PREFIX, SUFFIX)
    message = str(caught.value)
    assert "HTTP 401" in message and "DIFILL_API_KEY" in message
    assert wrong not in message and wrong not in repr(remote)
    remote.close()


def test_requests_without_the_key_get_401(served):
    for method, path in (("GET", "/health"), ("POST", "/v1/fill"), ("POST", "/v1/completions")):
        response = httpx.request(method, served + path, json={"prefix": "x"})
        assert response.status_code == 401, path
        assert "API key" in response.json()["error"]["message"]


def test_connection_refused_is_a_clear_error():
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    remote = connect(RemoteConfig(f"http://127.0.0.1:{port}", protocol="difill", retries=1, backoff_s=0.01))
    with pytest.raises(
        BackendError, match=r"cannot connect to http://127\.0\.0\.1:\d+/v1/fill \(connection refused"
    ):
        remote.fill(PREFIX, SUFFIX)
    remote.close()


def test_http_500_is_a_clear_error_with_the_servers_reason_and_is_not_retried(fake_server):
    seen = []

    def fail(request):
        seen.append(request.path)
        send(request, 500, json.dumps({"error": {"message": "CUDA out of memory"}}).encode())

    remote = connect(RemoteConfig(fake_server(fail), protocol="difill", backoff_s=0.01))
    with pytest.raises(BackendError, match=r"/v1/fill failed \(HTTP 500\): CUDA out of memory"):
        remote.fill(PREFIX, SUFFIX)
    assert seen == ["/v1/fill"]
    remote.close()


def test_busy_server_is_retried_with_backoff_and_then_answers(fake_server):
    seen = []

    def busy_then_ok(request):
        seen.append(time.monotonic())
        if len(seen) < 3:
            send(request, 503, b'{"error": "warming up"}')
        else:
            send(request, 200, json.dumps({"text": "a + b", "candidates": [], "stats": {}}).encode())

    remote = connect(RemoteConfig(fake_server(busy_then_ok), protocol="difill", retries=2, backoff_s=0.1))
    assert remote.fill(PREFIX, SUFFIX).text == "a + b"
    assert len(seen) == 3
    assert seen[1] - seen[0] >= 0.075 and seen[2] - seen[1] >= 0.15  # 0.1 s, then 0.2 s, +-25% jitter
    remote.close()

    seen.clear()
    gives_up = connect(
        RemoteConfig(fake_server(lambda r: send(r, 503, b"{}")), protocol="difill", retries=1, backoff_s=0.01)
    )
    with pytest.raises(BackendError, match=r"HTTP 503\) after 2 attempts"):
        gives_up.fill(PREFIX, SUFFIX)
    gives_up.close()


def test_slow_server_times_out_with_a_clear_error(fake_server):
    def slow(request):
        time.sleep(3)
        send(request, 200, b"{}")

    remote = connect(RemoteConfig(fake_server(slow), protocol="difill", timeout_s=0.3))
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"did not answer within 0\.3 s \(timeout\)"):
        remote.fill(PREFIX, SUFFIX)
    assert time.monotonic() - started < 2
    remote.close()


def test_a_server_that_drip_feeds_its_answer_hits_one_deadline(fake_server):
    """A byte every 0.2 s never trips a per-read timeout; the call's one deadline must end it."""

    def drip(request):
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", "1000")
        request.end_headers()
        for _ in range(50):  # 10 s in all, if nobody hangs up
            try:
                request.wfile.write(b" ")
                request.wfile.flush()
            except OSError:
                return
            time.sleep(0.2)

    remote = connect(RemoteConfig(fake_server(drip), protocol="difill", timeout_s=1.0, retries=0))
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"did not answer within 1 s"):
        remote.fill(PREFIX, SUFFIX)
    assert time.monotonic() - started < 6  # a wait, so wall time: the drip lasts 10 s
    remote.close()


def test_an_answer_over_the_size_cap_is_refused_while_it_is_read(fake_server, monkeypatch):
    from difill.engine.backends import transport

    monkeypatch.setattr(transport, "MAX_ANSWER_BYTES", 64 * 1024)
    huge = json.dumps({"text": "x" * 200_000, "candidates": [], "stats": {}}).encode()
    for chunked in (False, True):  # with a Content-Length, and without one (read piece by piece)

        def answer(request, chunked=chunked):
            request.send_response(200)
            request.send_header("Content-Type", "application/json")
            if chunked:
                request.send_header("Transfer-Encoding", "chunked")
            else:
                request.send_header("Content-Length", str(len(huge)))
            request.end_headers()
            if chunked:
                for start in range(0, len(huge), 8192):
                    piece = huge[start : start + 8192]
                    request.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                request.wfile.write(b"0\r\n\r\n")
            else:
                request.wfile.write(huge)

        remote = connect(RemoteConfig(fake_server(answer), protocol="difill", retries=0))
        with pytest.raises(BackendError, match=r"sent an answer over 0.0625 MiB"):
            remote.fill(PREFIX, SUFFIX)
        remote.close()


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b'{"text": "unterminated', b""])
def test_malformed_json_is_a_clear_error(fake_server, body):
    remote = connect(RemoteConfig(fake_server(lambda r: send(r, 200, body, "text/html")), protocol="difill"))
    with pytest.raises(BackendError, match="not JSON"):
        remote.fill(PREFIX, SUFFIX)
    remote.close()


def test_json_of_the_wrong_shape_is_a_clear_error(fake_server):
    remote = connect(RemoteConfig(fake_server(lambda r: send(r, 200, b'{"result": 1}')), protocol="difill"))
    with pytest.raises(BackendError, match="unexpected shape"):
        remote.fill(PREFIX, SUFFIX)
    remote.close()


def test_cancelling_a_fill_aborts_its_http_request(fake_server):
    closed = threading.Event()

    def hold_until_client_leaves(request):
        read_body(request)
        request.connection.settimeout(5)
        try:
            if request.connection.recv(1) == b"":  # the client closed the connection
                closed.set()
        except OSError:
            pass

    remote = connect(RemoteConfig(fake_server(hold_until_client_leaves), protocol="difill"))
    stop_at = time.monotonic() + 0.2
    started = time.monotonic()
    with pytest.raises(Cancelled):
        remote.fill(PREFIX, SUFFIX, should_stop=lambda: time.monotonic() > stop_at)
    assert time.monotonic() - started < 3  # a wait, so wall time: the server holds the answer 5 s
    assert closed.wait(2), "the server never saw the connection close"
    remote.close()


@pytest.fixture()
def self_signed_tls_server(tmp_path):
    """An HTTPS server on loopback whose certificate no trust store knows."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            send(self, 200, json.dumps({"text": "ok", "candidates": [], "stats": {}}).encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}", str(cert)
    server.shutdown()
    server.server_close()


def test_tls_certificates_are_verified(self_signed_tls_server):
    url, ca_bundle = self_signed_tls_server
    untrusted = connect(RemoteConfig(url, protocol="difill", retries=0))
    with pytest.raises(BackendError, match="TLS certificate of https://127.0.0.1:\\d+ could not be verified"):
        untrusted.fill(PREFIX, SUFFIX)
    untrusted.close()
    trusted = connect(
        RemoteConfig(url, protocol="difill", verify=ca_bundle)
    )  # the server's CA, given explicitly
    assert trusted.fill(PREFIX, SUFFIX).text == "ok"
    trusted.close()


def test_difill_fill_remote_prints_the_same_fill_as_the_local_engine(
    served, local_engine, tmp_path, monkeypatch, capsys
):
    source = tmp_path / "add.py"
    source.write_text(PREFIX + SUFFIX)
    monkeypatch.setenv("DIFILL_API_KEY", SERVER_KEY)
    assert cli.main(["fill", f"{source}:2:11", "--remote", served, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    # Both through the server's suggestion path, as `difill fill` runs it (an explicit request).
    local = ServedModel(local_engine).suggest(
        PREFIX + SUFFIX, len(PREFIX), source.resolve().as_uri(), invoked=True
    )
    assert printed["model_text"] == local.result.text and printed["text"] == local.text

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(SystemExit, match=r"difill: cannot connect to http://127\.0\.0\.1:\d+"):
        cli.main(["fill", f"{source}:2:11", "--remote", f"http://127.0.0.1:{port}"])
