"""The llama.cpp worker never asserts on input (issue 62, row 8): canvases of every width up to its
context, and past it, against the real worker on the shipped model.

On f7ad0f7 a canvas wider than the 512-slot micro-batch aborted the worker (SIGABRT,
``GGML_ASSERT(n_ubatch >= n_tokens)``): a rewrite of 40 lines, or ghost text with maxTokens 512.
Each width here is answered (its logits, or a refusal) by the same worker process.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from difill.engine.api import FillOptions, RewriteRequest
from difill.engine.decoder import CanvasDecoder
from difill.engine.model import DEFAULT_MODEL_DIR, load_model
from difill.engine.native.build import build_native
from difill.engine.native.engine import load_llamacpp_engine
from difill.engine.native.worker import OPEN, FillRules, WorkerError
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.tokens import encode

WIDTHS = (1, 15, 16, 17, 255, 511, 512, 513, 700, 1024)
PARITY_ATOL = 1e-2  # as test_llamacpp.py: llama.cpp's kernels against torch's, fp32 both


@pytest.fixture(scope="module")
def engine():
    build_native(log=lambda line: None)  # a no-op when current (CI builds it before the suite)
    llama_engine = load_llamacpp_engine(threads=1)
    yield llama_engine
    llama_engine.close()


@pytest.fixture(scope="module")
def prompt(engine) -> list[int]:
    ids = engine.loaded.ids
    return [ids.bos, *encode(engine.loaded.tokenizer, "import os\n\ndef add(a, b):\n    return ")]


def step(worker, canvas: np.ndarray, flags: np.ndarray, use_sc: bool) -> np.ndarray | str:
    """The open slots' logits, or the worker's refusal."""
    try:
        return worker.step(canvas, flags, use_sc, 1.0).values
    except WorkerError as err:
        return str(err)


def test_every_canvas_width_is_answered_by_the_same_worker(engine, prompt):
    worker = engine.worker
    info = worker.start()
    pid = worker.pid
    widest = info.context - len(prompt)
    generator = np.random.default_rng(62)
    for width in (*WIDTHS, widest, widest + 1, info.context + 5):
        rows = 2 if width <= 700 else 1  # two rows: a row wider than a chunk goes alone
        worker.fill(prompt, FillRules(info.vocab_size))
        canvas = generator.integers(8, info.vocab_size, (rows, width)).astype(np.int32)
        flags = np.where(generator.random((rows, width)) < 0.6, OPEN, 0).astype(np.uint8)
        flags[:, 0] = OPEN
        for use_sc in (False, True):  # the second pass self-conditions on the first
            answer = step(worker, canvas, flags, use_sc)
            if width > widest:
                assert "exceed the context" in answer, (width, answer)
            else:
                assert isinstance(answer, np.ndarray), (width, answer)  # f7ad0f7: died past 512
                assert answer.shape == (int(flags.sum()), info.vocab_size)
                assert np.isfinite(answer[:, : engine.loaded.ids.vocab_size].max(axis=1)).all()
        assert worker.pid == pid, f"the worker was restarted at width {width}"


def test_a_canvas_wider_than_the_micro_batch_has_torchs_logits(engine, prompt):
    """One micro-batch holds the whole canvas, so every slot attends to every other, as in torch."""
    loaded = load_model(DEFAULT_MODEL_DIR, device="cpu", dtype="float32")
    width = 700
    canvas = torch.randint(8, loaded.ids.vocab_size, (1, width), generator=torch.Generator().manual_seed(8))
    open_mask = torch.rand(1, width, generator=torch.Generator().manual_seed(9)) < 0.5
    engine.worker.fill(prompt, FillRules(loaded.ids.vocab_size))
    theirs = engine.worker.step(canvas.numpy(), open_mask.numpy().astype(np.uint8) * OPEN, False, 1.0).values
    with torch.inference_mode():
        cache = PrefixCache(loaded.model).encode(prompt).cache
        ours = CanvasDecoder(loaded.model, expand_cache(cache, 1)).open_logits(
            canvas.numpy(), None, open_mask.numpy().nonzero()
        )
    ours, theirs = torch.from_numpy(ours), torch.from_numpy(np.array(theirs))
    assert (ours - theirs).abs().max().item() < PARITY_ATOL
    assert torch.equal(ours.argmax(-1), theirs.argmax(-1))


def test_a_45_line_rewrite_and_a_512_token_fill_are_answered(engine):
    pid = engine.worker.pid
    selection = "".join(f"    total_{i} = compute(total_{i - 1}, item_{i})\n" for i in range(1, 46))
    request = RewriteRequest("def run(items):\n", selection, "    return total_45\n")
    rewritten = engine.rewrite(request, FillOptions(max_steps=2))
    assert rewritten.stats.hole_length > 512 and rewritten.candidates
    filled = engine.fill("def add(a, b):\n    return ", "\n", FillOptions(max_hole_tokens=512, max_steps=2))
    assert filled.stats.hole_length >= 512
    assert engine.worker.pid == pid


def test_a_prompt_and_canvas_past_the_context_are_refused_before_the_worker_sees_them(engine):
    """A canvas under MAX_CANVAS_TOKENS whose prompt takes it past the worker's context (the
    trained length): refused by the engine, saying what to do; the worker never sees it."""
    pid = engine.worker.pid
    selection = "".join(f"value_{i} = {i}\n" for i in range(215))
    assert 1550 < len(encode(engine.loaded.tokenizer, selection)) < 1600  # a canvas of about 2,000
    with pytest.raises(WorkerError, match="llama.cpp worker's context of 2,048 tokens: select less"):
        engine.rewrite(RewriteRequest("def run():\n" * 200, selection, ""), FillOptions(max_steps=1))
    assert engine.worker.pid == pid


def test_a_prompt_that_fills_the_context_leaves_room_for_the_canvases_that_fit(engine):
    """Long prompts against narrow canvases: the keys' padding (patches/06-aligned-keys.patch) and
    the prompt store's end, at each width that fits and the first that does not."""
    worker = engine.worker
    info = worker.start()
    pid = worker.pid
    generator = np.random.default_rng(7)
    for room in (1, 16, 17):
        prompt = [
            engine.loaded.ids.bos,
            *generator.integers(8, info.vocab_size, info.context - room - 1).tolist(),
        ]
        worker.fill(prompt, FillRules(info.vocab_size))
        for width in sorted({1, room - 1, room, room + 1} - {0}):
            canvas = generator.integers(8, info.vocab_size, (1, width)).astype(np.int32)
            answer = step(worker, canvas, np.full((1, width), OPEN, np.uint8), False)
            if width > room:
                assert "exceed the context" in answer, (room, width, answer)
            else:
                assert isinstance(answer, np.ndarray) and answer.shape == (width, info.vocab_size), (
                    room,
                    width,
                )
    assert worker.pid == pid
