"""The remote backend against OpenAI-compatible servers shaped like vLLM serving DiffusionGemma
(the seeded canvas of vLLM 0.32 or later, released: test_vllm_canvas.py)."""

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


# ---------------------------------------------------------------------------- mlx-vlm 0.7.10

# Every field of mlx-vlm 0.7.10's ChatRequest (mlx_vlm/server/schemas.py: ChatRequest, with what it
# inherits from GenerationRequest, VLMRequest and ImageProcessingRequest).  The release accepts
# any other key and ignores it (FlexibleBaseModel, extra="allow"); this fake records it instead.
MLX_VLM_CHAT_FIELDS = frozenset(
    "min_pixels max_pixels resize_shape model adapter_path max_tokens max_denoising_steps block_length "
    "num_to_transfer max_transfer_per_step editing_threshold max_post_steps stability_steps "
    "diffusion_full_canvas diffusion_min_canvas_length diffusion_max_canvas_length diffusion_sampler "
    "threshold min_threshold temperature top_p top_k min_p top_n_sigma p_less typical_p seed "
    "repetition_penalty repetition_context_size presence_penalty presence_context_size frequency_penalty "
    "frequency_context_size logit_bias enable_thinking reasoning reasoning_effort thinking_budget "
    "thinking_start_token thinking_end_token logprobs top_logprobs response_format stream messages "
    "context_management stream_options tools tool_choice tool_parser".split()
)
SERVED = "/Users/me/models/diffusiongemma-26B-mlx-4bit"


def mlx_vlm_like(requests: list[tuple[str, dict]], listed: list[dict], ignored: list[str]):
    """A handler shaped like ``python -m mlx_vlm server`` 0.7.10 (mlx_vlm/server/app.py, openai.py):

    * ``/health`` answers JSON that is not difill's (``status``, ``loaded_model``, ...);
    * ``/v1/models`` (``models_endpoint``) lists the loaded model *and* every model it could load
      (the Hugging Face cache, ``MLX_VLM_MODEL_PATHS``), sorted by id, each with ``loaded``;
    * no ``/v1/completions``, ``/tokenize`` or ``/version``: 404 ``{"detail": "Not Found"}``;
    * ``/v1/chat/completions`` needs ``model`` and ``messages``, and loads the model it names
      (``get_cached_model``): here, asking for one that is not loaded is recorded in ``requests``.
    """
    loaded = [m["id"] for m in listed if m["loaded"]]

    def handle(request):
        body = json.loads(read_body(request) or b"null")
        requests.append((request.path, body))
        if request.path == "/health":
            send(
                request,
                200,
                json.dumps({"status": "healthy", "loaded_model": (loaded or [None])[0]}).encode(),
            )
        elif request.path in ("/v1/models", "/models"):
            send(request, 200, json.dumps({"object": "list", "data": listed}).encode())
        elif request.path == "/v1/chat/completions":
            ignored.extend(sorted(set(body) - MLX_VLM_CHAT_FIELDS))
            if "model" not in body or "messages" not in body:
                send(request, 422, b'{"detail": [{"type": "missing", "loc": ["body", "model"]}]}')
                return
            message = {"role": "assistant", "content": "a + b<|fill|><|fill|>"}
            choice = {"index": 0, "finish_reason": "stop", "message": message}
            usage = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
            answer = {"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                      "choices": [choice], "usage": usage}  # fmt: skip
            send(request, 200, json.dumps(answer).encode())
        else:
            send(request, 404, b'{"detail": "Not Found"}')

    return handle


def cached(model_id: str) -> dict:
    return {"id": model_id, "object": "model", "created": 1764000000, "loaded": False}


def test_mlx_vlms_server_is_asked_for_the_model_it_has_loaded_not_the_first_it_lists(fake_server):
    """mlx-vlm's /v1/models sorts the Hugging Face cache in with the served model; asking for the
    first entry would make the server load that model instead."""
    requests, ignored = [], []
    listed = [cached("/Users/me/models/a-gemma-3"), cached("google/gemma-3-4b-it"),
              {**cached(SERVED), "loaded": True}, cached("mlx-community/Qwen3-8B-4bit")]  # fmt: skip
    remote = connect(RemoteConfig(fake_server(mlx_vlm_like(requests, listed, ignored))))
    result = remote.fill("print(add(", ")\n", FillOptions(seed=5, max_hole_tokens=8))
    assert result.text == "a + b"
    assert remote.chosen.model == SERVED
    chats = [body for path, body in requests if path == "/v1/chat/completions"]
    assert [body["model"] for body in chats] == [SERVED]
    # Only fields the release's ChatRequest has; no diffusion field is sent.
    assert ignored == []
    assert set(chats[0]) == {"model", "messages", "max_tokens", "temperature", "seed", "stream"}
    remote.close()


def test_a_long_model_list_from_mlx_vlm_is_read(fake_server):
    """A Hugging Face cache of 40 models: the listing is not taken for a flood of candidates."""
    requests, ignored = [], []
    listed = [cached(f"org/model-{i:02d}") for i in range(40)] + [{**cached(SERVED), "loaded": True}]
    remote = connect(RemoteConfig(fake_server(mlx_vlm_like(requests, listed, ignored))))
    assert remote.fill("x = ", "\n", FillOptions(max_hole_tokens=8)).text == "a + b"
    assert remote.chosen.model == SERVED
    remote.close()


def test_mlx_vlm_with_no_model_loaded_is_an_error_that_says_so(fake_server):
    """Started without --model it lists only what it could load: difill names none of them (the
    server would load it), and no chat request is sent."""
    requests, ignored = [], []
    listed = [cached("google/gemma-3-4b-it"), cached("mlx-community/Qwen3-8B-4bit")]
    remote = connect(RemoteConfig(fake_server(mlx_vlm_like(requests, listed, ignored))))
    with pytest.raises(BackendError, match="none loaded"):
        remote.fill("x = ", "\n", FillOptions(max_hole_tokens=8))
    assert "/v1/chat/completions" not in [path for path, _ in requests]
    remote.close()
    # With the model given, /v1/models is not read.
    requests.clear()
    remote = connect(
        RemoteConfig(fake_server(mlx_vlm_like(requests, listed, ignored)), model="google/gemma-3-4b-it")
    )
    remote.fill("x = ", "\n", FillOptions(max_hole_tokens=8))
    assert "/v1/models" not in [path for path, _ in requests]
    remote.close()
