"""The remote backend against OpenAI-compatible servers shaped like vLLM serving DiffusionGemma
(the seeded canvas of vLLM #57250: test_vllm_canvas.py)."""

from __future__ import annotations

import json

import pytest
from backend_helpers import read_body, send

from difill.engine.api import BackendError, FillOptions
from difill.engine.backends import RemoteConfig, connect
from difill.text.context import build_context
from difill.text.pipeline import shown_texts

MODEL = "google/diffusiongemma-26B-A4B-it"


def context(prefix: str, suffix: str):
    return build_context(prefix + suffix, len(prefix), None, context_tokens=1024, max_tokens=16, tree=None)


def vllm_like(requests: list[tuple[str, dict]], accepts_suffix: bool, chat_answer: str = "a + b"):
    """A handler that answers like vLLM: empty /health, /v1/models, completions and chat."""

    def handle(request):
        body = json.loads(read_body(request) or b"null")
        requests.append((request.path, body))
        if request.path == "/health":
            send(request, 200, b"")
        elif request.path == "/v1/models":
            send(request, 200, json.dumps({"object": "list", "data": [{"id": MODEL}]}).encode())
        elif request.path == "/tokenize":
            send(request, 200, json.dumps({"tokens": [11, 12, 13], "count": 3}).encode())
        elif request.path == "/v1/completions":
            if "suffix" in body and not accepts_suffix:
                error = {"object": "error", "message": "suffix is not currently supported", "code": 400}
                send(request, 400, json.dumps(error).encode())
                return
            choice = {"index": 0, "text": "a + b)", "finish_reason": "stop"}
            send(request, 200, json.dumps({"choices": [choice], "usage": {"completion_tokens": 4}}).encode())
        elif request.path == "/v1/chat/completions":
            message = {"role": "assistant", "content": chat_answer}
            send(
                request,
                200,
                json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode(),
            )
        else:
            send(request, 404, b'{"detail": "Not Found"}')

    return handle


def test_auto_finds_an_openai_server_and_sends_prefix_and_suffix(fake_server):
    requests = []
    remote = connect(RemoteConfig(fake_server(vllm_like(requests, accepts_suffix=True))))
    result = remote.fill("print(add(", ")\n", FillOptions(seed=3, max_hole_tokens=10))
    assert remote.protocol == "openai"
    # The middle as the server wrote it; the pipeline trims the closer the suffix already has, as
    # it does for a local fill.
    assert result.text == "a + b)"
    assert shown_texts(result.candidates, context("print(add(", ")\n")) == ["a + b"]
    path, body = requests[-1]
    assert path == "/v1/completions"
    assert (body["model"], body["prompt"], body["suffix"], body["max_tokens"], body["seed"]) == (
        MODEL, "print(add(", ")\n", 10, 3,
    )  # fmt: skip
    remote.close()


def test_a_server_that_refuses_suffix_gets_the_chat_template_fim_prompt(fake_server):
    requests = []
    answer = "```python\na + b\n```"
    remote = connect(RemoteConfig(fake_server(vllm_like(requests, accepts_suffix=False, chat_answer=answer))))
    assert remote.fill("print(add(", ")\n").text == "a + b"
    assert remote.chosen.fim == "chat"  # remembered: later fills go straight to chat
    path, body = requests[-1]
    assert path == "/v1/chat/completions"
    assert body["messages"][1]["content"] == "print(add(<|fill_here|>)\n"
    assert "<|fill_here|>" in body["messages"][0]["content"]
    before = len(requests)
    remote.fill("x = ", "\n")
    assert [p for p, _ in requests[before:]] == ["/v1/chat/completions"]
    remote.close()


def test_holes_over_openai_are_filled_left_to_right(fake_server):
    requests = []
    remote = connect(
        RemoteConfig(fake_server(vllm_like(requests, accepts_suffix=True)), protocol="openai", model=MODEL)
    )
    result = remote.fill_holes("x = <|hole|>\ny = <|hole|>\n")
    assert result.middles == ["a + b)", "a + b)"]
    # The first fill tried a seeded canvas (engine/backends/vllm.py); this server has no token_ids
    fills = [body for path, body in requests if path == "/v1/completions" and "vllm_xargs" not in body]
    assert [(b["prompt"], b["suffix"]) for b in fills] == [("x = ", "\ny = \n"), ("x = a + b)\ny = ", "\n")]
    remote.close()


def test_the_context_block_goes_before_the_prefix_in_an_openai_prompt(fake_server):
    requests = []
    remote = connect(RemoteConfig(fake_server(vllm_like(requests, accepts_suffix=True))))
    block = "# Path: lib/add.py\n# def add(a, b): ...\n"
    remote.fill("print(add(", ")\n", FillOptions(max_hole_tokens=10, context_block=block))
    path, body = requests[-1]
    assert (path, body["prompt"], body["suffix"]) == ("/v1/completions", block + "print(add(", ")\n")
    remote.close()


def test_a_server_without_completions_gets_the_chat_prompt_and_its_markers_are_dropped(fake_server):
    """mlx-vlm's server: /v1/completions answers 404, and its chat answers keep special tokens."""
    requests = []
    answer = "<|hole|>a + b<|fill|><|fill|>)\n<turn|>"
    handler = vllm_like(requests, accepts_suffix=True, chat_answer=answer)

    def no_completions(request):
        if request.path == "/v1/completions":
            requests.append((request.path, json.loads(read_body(request))))
            send(request, 404, b'{"detail": "Not Found"}')
        else:
            handler(request)

    remote = connect(RemoteConfig(fake_server(no_completions)))
    assert remote.fill("print(add(", ")\n").text == "a + b"
    assert remote.chosen.fim == "chat"
    assert [p for p, _ in requests[-2:]] == ["/v1/completions", "/v1/chat/completions"]
    remote.close()


def test_a_404_is_not_taken_for_a_missing_endpoint_when_fim_is_pinned(fake_server):
    requests = []

    def no_completions(request):
        read_body(request)
        requests.append(request.path)
        if request.path == "/v1/models":
            send(request, 200, json.dumps({"object": "list", "data": [{"id": MODEL}]}).encode())
        else:
            send(request, 404, b'{"detail": "Not Found"}')

    remote = connect(
        RemoteConfig(fake_server(no_completions), protocol="openai", fim="suffix", canvas="plain")
    )
    with pytest.raises(BackendError, match="404"):
        remote.fill("x = ", "\n")
    assert "/v1/chat/completions" not in requests
    remote.close()


@pytest.mark.parametrize(
    "answer,text",
    [
        ("a + b<|fill|><|fill|>", "a + b"),
        ("<start_of_turn>a + b<end_of_turn>\nmore", "a + b"),
        ("<|turn>```python\na + b\n```<turn|>", "a + b"),
        ("x<|fill_here|>y<eos>z", "xy"),
        ("a <| b |> c", "a <| b |> c"),  # not a special token: kept
    ],
)
def test_chat_answers_lose_the_models_special_tokens(answer, text):
    from difill.engine.backends.openai import chat_text

    assert chat_text(answer) == text
