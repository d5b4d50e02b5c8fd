"""difill serve-http's HTTP surface: auth, binding, validation, cancellation and failures."""

from __future__ import annotations

import threading
import time

import httpx2 as httpx
import pytest

from difill import cli
from difill.engine.api import Cancelled, Candidate, FillOptions, FillResult, FillStats
from difill.server.serve_http import FillService, build_app, check_bind, serve_in_thread

KEY = "local-test-key-42"


class ScriptedBackend:
    """Answers fills with a fixed text, or sleeps until cancelled, or fails, as a test asks."""

    def __init__(self, mode: str = "answer") -> None:
        self.mode = mode
        self.calls: list[tuple] = []
        self.stopped = threading.Event()

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
        self.calls.append((prefix, suffix, options))
        if self.mode == "fail":
            raise RuntimeError("the GPU fell over")
        if self.mode == "slow":
            while not should_stop():
                time.sleep(0.01)
            self.stopped.set()
            raise Cancelled()
        candidates = [Candidate("x + 1)", 8, -0.1, True), Candidate("x + 2", 8, -0.5, False)]
        return FillResult("x + 1)", candidates, FillStats(prefix_tokens=5, hole_tokens=3, decoder_forwards=4))

    fill_holes = rewrite = None


@pytest.fixture()
def serve():
    stops = []

    def start(backend, api_key=None) -> str:
        url, stop = serve_in_thread(build_app(FillService(backend, "tiny", "cpu", 4), api_key))
        stops.append(stop)
        return url

    yield start
    for stop in stops:
        stop()


def test_with_a_key_every_endpoint_answers_401_without_it(serve):
    url = serve(ScriptedBackend(), api_key=KEY)
    for method, path in (
        ("GET", "/health"),
        ("GET", "/v1/models"),
        ("POST", "/v1/fill"),
        ("POST", "/v1/completions"),
    ):
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": KEY}):
            response = httpx.request(method, url + path, json={"prefix": "a"}, headers=headers)
            assert response.status_code == 401, (path, headers)
            assert response.headers["www-authenticate"] == "Bearer"
    ok = httpx.get(url + "/health", headers={"Authorization": f"Bearer {KEY}"})
    assert ok.status_code == 200 and ok.json()["server"] == "difill"


def test_public_address_without_a_key_is_refused_and_loopback_is_fine(monkeypatch, capsys):
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_bind(host, None)
    for host in ("0.0.0.0", "::", "192.168.1.10", "myhost.example"):
        with pytest.raises(SystemExit, match="refusing to listen on .* without an API key"):
            check_bind(host, None)
        check_bind(host, "a-key")
    monkeypatch.delenv("DIFILL_API_KEY", raising=False)
    with pytest.raises(SystemExit, match="DIFILL_API_KEY"):  # before any model is loaded
        cli.main(["serve-http", "--host", "0.0.0.0", "--model", "/nonexistent"])


def test_openai_completions_maps_prompt_suffix_and_options(serve):
    backend = ScriptedBackend()
    url = serve(backend)
    body = {"model": "m", "prompt": "def f(x):\n    return ", "suffix": ")\n", "max_tokens": 8, "seed": 7, "n": 2,
            "stop": ")", "temperature": 0.2, "user": "someone"}  # fmt: skip
    answer = httpx.post(url + "/v1/completions", json=body).json()
    assert backend.calls == [("def f(x):\n    return ", ")\n", FillOptions(max_hole_tokens=8, seed=7))]
    assert answer["object"] == "text_completion" and answer["model"] == "m"
    assert [(c["text"], c["finish_reason"]) for c in answer["choices"]] == [
        ("x + 1", "stop"),
        ("x + 2", "length"),
    ]
    assert answer["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        ("/v1/fill", {"prefix": "a", "options": {"max_steps": 0}}, "max_steps must be between"),
        ("/v1/fill", {"prefix": "a", "options": {"temprature": 1}}, "unknown option(s) temprature"),
        ("/v1/fill", {"prefix": 3}, "'prefix' must be a string"),
        ("/v1/fill", {"prefix": "a", "extra": 1}, "unexpected field(s) extra"),
        ("/v1/fill", {"prefix": "a", "selection": "b", "strength": 2}, "'strength' must be a number"),
        ("/v1/completions", {"prompt": "a", "stream": True}, "'stream' is not supported"),
        ("/v1/completions", {"prompt": "a", "max_tokens": 100000}, "'max_tokens' must be an integer between"),
        ("/v1/completions", {"prompt": ["a", "b"]}, "'prompt' must be a string"),
    ],
)
def test_invalid_requests_get_400_saying_what_to_fix(serve, path, body, reason):
    url = serve(ScriptedBackend())
    response = httpx.post(url + path, json=body)
    assert response.status_code == 400
    assert reason in response.json()["error"]["message"]


def test_a_body_that_is_not_json_gets_400(serve):
    json_type = {"content-type": "application/json"}
    response = httpx.post(serve(ScriptedBackend()) + "/v1/fill", content=b"{not json", headers=json_type)
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]["message"]


def test_a_failing_fill_is_a_500_and_the_server_keeps_serving(serve):
    backend = ScriptedBackend("fail")
    url = serve(backend)
    response = httpx.post(url + "/v1/fill", json={"prefix": "a"})
    assert response.status_code == 500
    assert "RuntimeError: the GPU fell over" in response.json()["error"]["message"]
    backend.mode = "answer"
    assert httpx.post(url + "/v1/fill", json={"prefix": "a"}).json()["text"] == "x + 1)"


def test_a_client_that_disconnects_cancels_its_fill(serve):
    backend = ScriptedBackend("slow")
    url = serve(backend)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(url + "/v1/fill", json={"prefix": "a"}, timeout=httpx.Timeout(0.3))
    assert backend.stopped.wait(5), "the fill kept running after its client left"
    assert httpx.get(url + "/health").json()["cancelled"] == 1


class EncodingBackend(ScriptedBackend):
    """Encodes its text to UTF-8 as a tokenizer does: a lone surrogate raises there."""

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None):
        (prefix + suffix).encode("utf-8")
        return super().fill(prefix, suffix, options, should_stop, on_preview)

    def rewrite(self, request, options=None, should_stop=None, on_preview=None):
        (request.prefix + request.selection + (request.instruction or "")).encode("utf-8")
        return super().fill(request.prefix, request.suffix, options, should_stop)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/fill", '{"prefix": "a\\ud800", "suffix": ""}', "prefix"),
        ("/v1/fill", '{"prefix": "a", "selection": "b\\udc00", "suffix": ""}', "selection"),
        ("/v1/fill", '{"prefix": "a", "selection": "b", "instruction": "\\ud800"}', "instruction"),
        ("/v1/fill", '{"holes": "x = <|hole|>\\ud800"}', "holes"),
        ("/v1/completions", '{"prompt": "\\ud800"}', "prompt"),
        # Issue 51, item 11: the newer options were checked nowhere and failed as a 500.
        ("/v1/fill", '{"prefix": "a", "options": {"context_block": "# x\\ud800"}}', "options.context_block"),
        ("/v1/fill", '{"prefix": "a", "options": {"drafts": ["ok", "b\\udc00"]}}', "options.drafts[1]"),
        ("/v1/completions", '{"prompt": "a", "stop": ["\\ud800"]}', "stop[0]"),
    ],
    ids=["prefix", "selection", "instruction", "holes", "prompt", "context_block", "drafts", "stop"],
)
def test_a_lone_surrogate_in_any_text_is_a_400_not_a_500(serve, caplog, path, body, field):
    # Issue 28, item 13: it reached the tokenizer and came back as HTTP 500 with a traceback logged.
    url = serve(EncodingBackend())
    answer = httpx.post(url + path, content=body.encode(), headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert f"'{field}' holds a lone surrogate" in answer.json()["error"]["message"]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
