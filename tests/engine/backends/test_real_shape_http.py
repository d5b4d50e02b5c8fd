"""``difill serve-http`` on the real-shape fixture (tests/real_shape.py: DiffusionGemma-26B-A4B's
structure, a 24-token sliding window, a Gemma-4-like tokenizer), and the batcher's padded pass on it.

The model is random: these tests check that requests succeed and what comes back is well formed,
not its text.  The batcher pads every fill's prefix cache to the longest; on this model the
sliding layers hold only their trimmed window, so the padding must work per layer kind.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx2 as httpx
import pytest
import torch
from backend_helpers import assert_padded_pass_matches_each_alone, serve_http_process
from real_shape import GEMMA_SPECIALS, GEMMA_UNUSED, REAL_SLIDING_WINDOW_FOR_TESTS

from difill.engine.batcher import _Call
from difill.engine.decoder import CanvasDecoder
from difill.engine.model import load_model
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.tokens import encode

KEY = "real-shape-test-key-0123"  # a made-up key for the loopback server
HEADERS = {"Authorization": f"Bearer {KEY}"}
CODE = "".join(
    f"def handler_{i}(request, value={i}):\n    return request.get(value) + {i}\n" for i in range(8)
)
OPTIONS = {"max_hole_tokens": 8, "max_steps": 4, "seed": 3}  # small: the LM head spans 262,144 rows


@pytest.fixture(scope="module")
def gemma_served(gemma_model_dir):
    """``difill serve-http`` on the fixture in a subprocess, as a user starts it; its base URL.

    A 200 ms batch window: on a shared CPU, concurrent fills must wait that long to share passes."""
    env = {"DIFILL_API_KEY": KEY, "OMP_NUM_THREADS": "1"}
    with serve_http_process(gemma_model_dir, env, "--batch-window-ms", "200") as url:
        yield url


def post_fill(url: str, body: dict) -> dict:
    response = httpx.post(url + "/v1/fill", json=body, headers=HEADERS, timeout=120)
    assert response.status_code == 200, response.text
    return response.json()


def assert_no_special_tokens(texts: list[str]) -> None:
    for text in texts:
        assert isinstance(text, str)
        for token in (*GEMMA_SPECIALS, *GEMMA_UNUSED):
            assert token not in text, f"{token!r} in {text!r}"
        assert "<unused" not in text, text


def fill_body(i: int) -> dict:
    """A fill after a prefix of ~300 tokens (over ten sliding windows); ``i`` varies its length."""
    prefix = CODE[: len(CODE) - 40 * i] + f"\ndef main_{i}(request):\n    return handler_{i}("
    return {"prefix": prefix, "suffix": ")\n", "options": dict(OPTIONS, seed=i)}


def test_a_fill_after_a_long_prefix_succeeds(gemma_served, gemma_model_dir):
    tokenizer = load_model(gemma_model_dir, device="cpu").tokenizer
    body = fill_body(0)
    assert len(encode(tokenizer, body["prefix"])) > 10 * REAL_SLIDING_WINDOW_FOR_TESTS
    answer = post_fill(gemma_served, body)
    assert answer["candidates"] and answer["text"] == answer["candidates"][0]["text"]
    assert answer["stats"]["prefix_tokens"] > 10 * REAL_SLIDING_WINDOW_FOR_TESTS
    assert_no_special_tokens([c["text"] for c in answer["candidates"]])
    # The same engine again, one character shorter: its prefix cache is cut back, not rebuilt.
    shorter = dict(body, prefix=body["prefix"][:-1])
    again = post_fill(gemma_served, shorter)
    assert_no_special_tokens([c["text"] for c in again["candidates"]])


def test_a_holes_request_succeeds(gemma_served):
    text = CODE + "\ndef main(request):\n    total = <|hole|>\n    return total + <|hole|>\n"
    answer = post_fill(gemma_served, {"holes": text, "options": OPTIONS})
    assert isinstance(answer["middles"], list) and len(answer["middles"]) == 2
    assert "<|hole|>" not in answer["text"] and answer["text"].startswith(CODE)
    assert_no_special_tokens([answer["text"], *answer["middles"]])


def test_concurrent_fills_share_decoder_passes_and_all_succeed(gemma_served):
    """Fills of different prefix lengths through the batcher at once: its padded prefix caches
    mix sliding layers (a trimmed window) with full ones (the whole prefix)."""
    health = httpx.get(gemma_served + "/health", headers=HEADERS).json()["batching"]
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda i: post_fill(gemma_served, fill_body(i)), (1, 2, 3)))
    for answer in answers:
        assert answer["candidates"]
        assert_no_special_tokens([c["text"] for c in answer["candidates"]])
    after = httpx.get(gemma_served + "/health", headers=HEADERS).json()["batching"]
    assert after["largest_batch"] >= 2, after  # the padded path ran
    assert after["forwards"] - health["forwards"] < after["calls"] - health["calls"]


def test_the_padded_pass_equals_each_fills_own_pass_with_sliding_layers(gemma_model_dir):
    """The batcher's one pass over several fills gives each the hidden states it gets alone,
    with prefixes shorter and longer than the sliding window."""
    loaded = load_model(gemma_model_dir, device="cpu")
    model, tok, ids = loaded.model, loaded.tokenizer, loaded.ids
    generator = torch.Generator().manual_seed(0)
    calls = []
    for prefix, rows, length, with_soft in (
        (CODE, 3, 9, False),  # ~300 tokens: sliding layers hold 23 keys, full layers all
        ("x = 1\n", 2, 5, True),  # shorter than the window
        (CODE[:90], 1, 14, True),  # about one window
        (CODE[:400], 2, 7, False),
    ):
        cache = PrefixCache(model).encode([ids.bos, *encode(tok, prefix)]).cache
        decoder = CanvasDecoder(model, expand_cache(cache, rows))
        canvas = torch.randint(0, len(tok), (rows, length), generator=generator)
        hidden_size = model.config.text_config.hidden_size
        soft = torch.randn(rows, length, hidden_size, generator=generator) if with_soft else None
        calls.append(_Call(decoder, canvas, soft, None))
    assert_padded_pass_matches_each_alone(model, calls)
