"""Concurrent fills share decoder passes and still get the text they get alone."""

from __future__ import annotations

import inspect
import itertools
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from backend_helpers import assert_padded_pass_matches_each_alone

from difill.engine import batcher as batcher_module
from difill.engine.api import Cancelled, FillOptions, RewriteRequest
from difill.engine.batcher import BatcherError, BatchingBackend, _Call
from difill.engine.decoder import CanvasDecoder
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.tokens import encode

SOURCE = inspect.getsource(textwrap)


def cases(count: int) -> list[tuple[str, str, FillOptions]]:
    """Fills of different prefix, suffix and hole lengths, so batches need padding."""
    out = []
    for i in range(count):
        cut = 300 + 131 * i
        prefix = SOURCE[cut - 30 * (i % 5 + 1) : cut]
        suffix = SOURCE[cut : cut + 25 * (i % 3)]
        out.append((prefix, suffix, FillOptions(seed=i, max_hole_tokens=4 + 4 * (i % 3))))
    return out


@pytest.fixture()
def backend(tiny_loaded):
    backend = BatchingBackend(tiny_loaded, max_concurrent=16, window_ms=20, max_rows=64)
    yield backend
    backend.close()


def test_padded_pass_equals_each_fills_own_pass(tiny_loaded):
    model, tok, ids = tiny_loaded.model, tiny_loaded.tokenizer, tiny_loaded.ids
    generator = torch.Generator().manual_seed(0)
    calls = []
    for prefix, rows, length, with_soft in (
        ("x = 1\n", 3, 9, False),
        (SOURCE[:400], 1, 14, True),
        ("", 2, 5, True),
    ):
        cache = PrefixCache(model).encode([ids.bos, *encode(tok, prefix)]).cache
        decoder = CanvasDecoder(model, expand_cache(cache, rows))
        canvas = torch.randint(0, ids.vocab_size, (rows, length), generator=generator)
        soft = (
            torch.randn(rows, length, model.config.text_config.hidden_size, generator=generator)
            if with_soft
            else None
        )
        calls.append(_Call(decoder, canvas, soft, None))
    assert_padded_pass_matches_each_alone(model, calls)


def test_concurrent_fills_give_their_one_by_one_text_in_fewer_passes(backend, local_engine):
    work = cases(12)
    alone = [local_engine.fill(*case) for case in work]
    with ThreadPoolExecutor(len(work)) as pool:
        together = list(pool.map(lambda case: backend.fill(*case), work))
    for one, batched in zip(alone, together, strict=True):
        assert [c.text for c in batched.candidates] == [c.text for c in one.candidates]
    one_by_one = sum(r.stats.decoder_forwards for r in alone)
    assert backend.stats.calls == one_by_one
    assert backend.stats.forwards < one_by_one / 2
    assert backend.stats.largest_batch > 1


def test_a_lone_fill_is_bit_identical_to_the_engine(backend, local_engine):
    prefix, suffix, options = cases(1)[0]
    alone = local_engine.fill(prefix, suffix, options)
    got = backend.fill(prefix, suffix, options)
    assert [(c.text, c.score) for c in got.candidates] == [(c.text, c.score) for c in alone.candidates]


def test_holes_and_rewrites_go_through_the_batcher_unchanged(backend, local_engine):
    text = "def f(x):\n    <|hole|>\n    return <|hole|>\n"
    options = FillOptions(seed=3, max_hole_tokens=6)
    rewrite = RewriteRequest("def g(y):\n", "    return y + 1\n", "\n", strength=0.6)
    with ThreadPoolExecutor(2) as pool:
        holes = pool.submit(backend.fill_holes, text, "<|hole|>", options)
        rewritten = pool.submit(backend.rewrite, rewrite, options)
        assert holes.result().middles == local_engine.fill_holes(text, options=options).middles
        assert rewritten.result().text == local_engine.rewrite(rewrite, options).text


def test_cancelling_one_fill_leaves_the_others_to_finish(backend, local_engine):
    work = cases(4)
    asked = itertools.count()

    def cancelled_one():
        # Cancelled before its third pass: no fill can end sooner (the sampler's settled stop
        # needs three passes), so it is always mid-fill, whatever the machine's speed.
        with pytest.raises(Cancelled):
            backend.fill("x = ", "", FillOptions(max_hole_tokens=16, max_steps=64, entropy_bound=0.0),
                         should_stop=lambda: next(asked) >= 2)  # fmt: skip

    with ThreadPoolExecutor(5) as pool:
        doomed = pool.submit(cancelled_one)
        others = [pool.submit(backend.fill, *case) for case in work]
        doomed.result(timeout=30)
        for future, case in zip(others, work, strict=True):
            assert future.result(timeout=30).text == local_engine.fill(*case).text


def test_an_error_in_a_pass_fails_its_fills_and_the_batcher_goes_on(backend, monkeypatch):
    real = batcher_module.padded_hidden
    failures = iter([RuntimeError("simulated device error")])

    def flaky(model, batch):
        error = next(failures, None)
        if error is not None:
            raise error
        return real(model, batch)

    monkeypatch.setattr(batcher_module, "padded_hidden", flaky)
    work = cases(6)
    with ThreadPoolExecutor(len(work)) as pool:
        futures = [pool.submit(backend.fill, *case) for case in work]
        outcomes = [f.exception(timeout=60) for f in futures]
    failed = [e for e in outcomes if e is not None]
    assert failed and all("simulated device error" in str(e) for e in failed)
    assert backend.fill(*work[0]).stats.decoder_forwards > 0  # still serving


def _hold_second_pass(monkeypatch, batcher):
    """Make the batcher's second pass wait for ``release``; ``holding`` is set once it waits."""
    holding, release = threading.Event(), threading.Event()
    real, passes = batcher._pass, []

    def held(batch):
        passes.append(batch)
        if len(passes) == 2:
            holding.set()
            release.wait(timeout=30)
        return real(batch)

    monkeypatch.setattr(batcher, "_pass", held)
    return holding, release


def test_a_fill_still_denoising_when_the_batcher_closes_fails_instead_of_hanging(backend, monkeypatch):
    holding, release = _hold_second_pass(monkeypatch, backend.batcher)
    long_fill = FillOptions(max_hole_tokens=16, max_steps=64, entropy_bound=0.0)
    with ThreadPoolExecutor(1) as pool:
        fill = pool.submit(backend.fill, "x = ", "", long_fill)
        assert holding.wait(timeout=30)
        backend.close()
        release.set()
        with pytest.raises(BatcherError, match="closed"):
            fill.result(timeout=30)
    with pytest.raises(BatcherError, match="closed"):
        backend.fill(*cases(1)[0])


def test_a_pass_that_does_not_answer_in_time_fails_its_fill_and_the_batcher_goes_on(tiny_loaded, monkeypatch):
    backend = BatchingBackend(tiny_loaded, max_concurrent=4, window_ms=5, max_rows=64)
    backend.batcher.wait_timeout_s = 0.3
    holding, release = _hold_second_pass(monkeypatch, backend.batcher)
    try:
        with pytest.raises(BatcherError, match="within 0.3 s"):
            backend.fill("x = ", "", FillOptions(max_hole_tokens=8, max_steps=16, entropy_bound=0.0))
        assert holding.is_set()
        release.set()
        backend.batcher.wait_timeout_s = 30
        assert backend.fill(*cases(1)[0]).stats.decoder_forwards > 0
    finally:
        release.set()
        backend.close()


def test_an_error_while_gathering_fails_the_waiting_fills_and_the_batcher_goes_on(backend, monkeypatch):
    real = backend.batcher._gather
    failures = iter([RuntimeError("simulated gather bug")])

    def flaky():
        batch = real()  # takes the calls off the queue, as a real failure would
        error = next(failures, None)
        if error is not None:
            raise error
        return batch

    monkeypatch.setattr(backend.batcher, "_gather", flaky)
    with pytest.raises(BatcherError, match="simulated gather bug"):
        backend.fill(*cases(1)[0])
    assert backend.fill(*cases(1)[0]).stats.decoder_forwards > 0
