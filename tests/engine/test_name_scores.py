"""The model's score of a few names at the cursor (engine/name_scores.py, InfillEngine.score_names):
one pass over one canvas row, read back slot by slot."""

from __future__ import annotations

import math

import pytest
import torch

from difill.engine.api import FillOptions, NameScorer
from difill.engine.batcher import BatchingBackend
from difill.engine.decoder import CanvasDecoder
from difill.engine.infill import InfillEngine
from difill.engine.model import DEFAULT_MODEL_DIR, load_model
from difill.engine.name_scores import MAX_NAME_TOKENS, split_partial_word
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.tokens import encode, encode_prefix_window, encode_suffix_window


@pytest.fixture(scope="module")
def shipped():
    return InfillEngine(load_model(DEFAULT_MODEL_DIR, device="cpu"))


def test_the_scores_are_the_first_passs_log_probs_of_each_names_tokens_and_its_word_end(engine):
    """Recomputed here from the decoder itself: the prefix encoded, the hole as noise drawn with
    the options' seed, the suffix clamped; each name's tokens read at slots 0..k-1 and the word
    end (any token that does not start with an identifier character) at slot k."""
    prefix, suffix = "def area(w, h):\n    return ", "\n\nprint(area(2, 3))\n"
    names = ["width", "w", "area_of_it"]
    options = FillOptions(seed=3, suffix_tokens=8)
    scores = engine.score_names(prefix, suffix, names, options)

    loaded, tok = engine.loaded, engine.tokenizer
    prompt = encode_prefix_window(tok, loaded.ids, prefix, loaded.max_prefix_tokens)
    tokens = [encode(tok, name) for name in names]
    hole = max(len(t) for t in tokens) + 1
    suffix_ids, complete = encode_suffix_window(tok, suffix, 8)
    assert not complete  # the suffix is cut, so no eos slot follows it
    noise = torch.randint(0, loaded.ids.vocab_size, (hole,), generator=torch.Generator().manual_seed(3))
    canvas = torch.cat([noise, torch.tensor(suffix_ids)])[None]  # (1, L)
    with torch.inference_mode():
        cache = expand_cache(PrefixCache(loaded.model).encode(prompt).cache, 1)
        decoder = CanvasDecoder(loaded.model, cache)
        slots = (torch.zeros(hole, dtype=torch.long), torch.arange(hole))
        raw = decoder.pass_logits(canvas, None, slots)[:, : loaded.ids.vocab_size].float()  # (H, V), in torch
        raw[:, list(loaded.ids.banned_in_hole)] = -math.inf
        logp = raw.log_softmax(-1)
    texts = loaded.token_texts()
    ends = [i for i, t in enumerate(texts) if not (t[:1].isalnum() or t[:1] == "_") or not t[:1].isascii()]
    expected = [
        sum(logp[j, t].item() for j, t in enumerate(ids)) + logp[len(ids), ends].logsumexp(-1).item()
        for ids in tokens
    ]
    assert scores == pytest.approx(expected, abs=1e-4)


def test_a_partly_typed_word_is_scored_as_the_start_of_every_name(engine):
    assert split_partial_word("x = conf.get_va") == ("x = conf.", "get_va")
    assert split_partial_word("x = (") == ("x = (", "")
    typed = engine.score_names("x = get_va", "\n", ["lue", "riant"], FillOptions(seed=1))
    whole = engine.score_names("x = ", "\n", ["get_value", "get_variant"], FillOptions(seed=1))
    assert typed == pytest.approx(whole)


def test_each_name_scores_the_same_whatever_its_neighbours(engine):
    """One row, one pass: the list's order changes nothing (the hole's length is the longest
    name's, the same in both lists here)."""
    names = ["alpha", "beta", "gamma_delta"]
    forward = engine.score_names("value = ", "\n", names)
    backward = engine.score_names("value = ", "\n", names[::-1])
    assert forward == pytest.approx(backward[::-1])
    assert engine.score_names("value = ", "\n", []) == []


def test_a_long_name_is_scored_on_its_first_tokens_and_no_word_end(engine):
    long_name = "_".join(["segment"] * 12)
    assert len(encode(engine.tokenizer, long_name)) > MAX_NAME_TOKENS
    [score] = engine.score_names("x = ", "\n", [long_name])
    assert math.isfinite(score) and score < 0


def test_the_pooled_backend_scores_as_one_engine_does(loaded):
    backend = BatchingBackend(loaded, max_concurrent=2)
    try:
        assert isinstance(backend, NameScorer)
        names = ["total", "items"]
        assert backend.score_names("x = ", "\n", names) == pytest.approx(
            InfillEngine(loaded).score_names("x = ", "\n", names), abs=1e-4
        )
    finally:
        backend.close()


def test_the_shipped_model_prefers_names_its_context_makes_likely(shipped):
    """The trained model: after ``log.`` the logging methods over a made-up name, and the name
    the prefix defines (``compute_total``) over one it never mentions."""
    prefix = "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef run():\n    log."
    info, debug, junk = shipped.score_names(prefix, "('starting')\n", ["info", "debug", "zzqxv"])
    assert min(info, debug) > junk + 10
    prefix = "def compute_total(items):\n    return sum(items)\n\n\ndef main(items):\n    result = compute_"
    total, zebra = shipped.score_names(prefix, "(items)\n", ["total", "zebra"])
    assert total > zebra
