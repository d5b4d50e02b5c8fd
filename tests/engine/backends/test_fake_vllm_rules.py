"""lab/fake_vllm.py refuses what vLLM 0.33.0 refuses, in the release's words, and ignores what it
ignores (read from the wheel: vllm/utils/diffusion.py, vllm/sampling_params.py,
vllm/entrypoints/openai/completion/protocol.py)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from lab.fake_vllm import VOCAB, FakeVllm

CANVAS = list(range(97, 97 + 32))  # a 32-slot seed


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        url + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def body(xargs: dict, **fields) -> dict:
    return {"model": "m", "prompt": "x", "max_tokens": 32, "vllm_xargs": xargs, **fields}


SEEDED = {"diffusion_seed_canvas": CANVAS, "diffusion_canvas_length": 32}


@pytest.mark.parametrize(
    ("request_body", "said"),
    [
        (body({"diffusion_canvas_length": 128}), "diffusion_canvas_length must be a positive integer no larger "
         "than the served canvas."),
        (body({"diffusion_canvas_length": 0}), "no larger than the served canvas"),
        (body({"diffusion_seed_canvas": CANVAS}), "diffusion_seed_canvas must hold exactly 64 ids, got 32."),
        (body({"diffusion_seed_canvas": [VOCAB], "diffusion_canvas_length": 1}),
         f"diffusion_seed_canvas ids must be in [0, {VOCAB})."),
        (body({"diffusion_pinned": [0]}), "diffusion_pinned needs a diffusion_seed_canvas to hold."),
        (body({**SEEDED, "diffusion_pinned": [32]}), "diffusion_pinned positions must lie inside the canvas."),
        (body({**SEEDED, "diffusion_max_steps": 0}), "diffusion_max_steps must be a positive integer."),
        (body({**SEEDED, "diffusion_read_only": 2}), "diffusion_read_only must be a boolean (or 0/1)."),
        (body({**SEEDED, "diffusion_constrained": True}),
         "diffusion_constrained needs logprob_token_ids: they are the allowed set."),
        (body(SEEDED, temperature=0), "are not yet supported with diffusion models."),
        (body(SEEDED, seed=3), "are not yet supported with diffusion models."),
        (body(SEEDED, logprob_token_ids=[1]), "when using `logprob_token_ids`, `logprobs` must be set."),
        (body(SEEDED, logprob_token_ids=list(range(129)), logprobs=129),
         "logprob_token_ids of length 129, which is greater than max allowed: 128"),
        (body(SEEDED, n=0), "n must be at least 1, got 0."),
    ],
)  # fmt: skip
def test_the_fake_refuses_as_the_release_does(fake_server, request_body, said):
    status, answer = post(fake_server(FakeVllm()), request_body)
    assert status == 400 and said in answer["error"]["message"]
    assert answer["error"]["type"] == "BadRequestError"


def test_the_fake_ignores_what_the_release_ignores_and_answers_n_canvases(fake_server):
    fake = FakeVllm(canvas_length=32)
    xargs = {**SEEDED, "diffusion_samples": 3, "diffusion_read_only": True}  # a JSON true: 1 in the release
    status, answer = post(fake_server(fake), body(xargs, n=2, best_of_many=1))
    assert status == 200 and len(answer["choices"]) == 2  # n, not diffusion_samples
    assert fake.ignored == ["best_of_many", "vllm_xargs.diffusion_samples"]


def test_a_constrained_read_reports_the_asked_ids_renormalised_at_every_position(fake_server):
    fake = FakeVllm(canvas_length=32, logits={ord("b"): 2.0, (1, ord("a")): 5.0})
    asked = [ord("a"), ord("b")]
    xargs = {**SEEDED, "diffusion_read_only": 1, "diffusion_constrained": 1, "diffusion_max_steps": 1}
    status, answer = post(
        fake_server(fake),
        body(xargs, logprob_token_ids=asked, logprobs=2, return_tokens_as_token_ids=True),
    )
    rows = answer["choices"][0]["logprobs"]["top_logprobs"]
    assert status == 200 and len(rows) == 32 and set(rows[0]) == {f"token_id:{t}" for t in asked}
    assert rows[0]["token_id:98"] > rows[0]["token_id:97"] and rows[1]["token_id:97"] > rows[1]["token_id:98"]
    assert all(abs(sum(2.718281828459045**v for v in row.values()) - 1) < 1e-9 for row in rows)
