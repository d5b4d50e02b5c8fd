"""Names scored on a vLLM server (engine/backends/vllm_names.py) against the fake that follows
0.33.0 (lab/fake_vllm.py): one read-only, constrained step over the candidates' first tokens."""

from __future__ import annotations

import logging
import math
import re
import time

import pytest

from difill.engine.api import FillOptions, NameScorer
from difill.engine.backends import RemoteConfig, connect
from difill.engine.backends.vllm_names import NameScoringFailed, asked_slots, scores_of
from difill.server.config import Settings
from difill.server.context.drafts import Draft
from difill.server.context.found import Retrieval
from difill.server.model_request import plan_for
from difill.server.suggestion_path import SuggestionRequest, ranked_by_model
from difill.text.context import build_context
from lab.fake_vllm import COMPLETION_FIELDS, RELEASE_XARGS, VOCAB, FakeVllm

PREFIX = "x = "
SUFFIX = "\nprint(x)\n"
NAMES = ["alpha", "beta", "gamma"]


def lp(logits: dict, asked: set[int], token: int, position: int = 0) -> float:
    """The fake's log-probability of ``token`` at ``position``, renormalised over ``asked``."""
    values = {t: logits.get((position, t), logits.get(t, 0.0)) for t in asked}
    return values[token] - math.log(sum(math.exp(v) for v in values.values()))


@pytest.fixture()
def scorer(fake_server):
    """(fake, remote) with the first fill done: the server's version and path are known."""
    made = []

    def start(protocol: str = "openai", **kwargs):
        fake = FakeVllm(**kwargs)
        config = RemoteConfig(fake_server(fake), protocol=protocol, canvas_length=64, vocab_size=VOCAB)
        remote = connect(config)
        made.append(remote)
        remote.fill(PREFIX, SUFFIX, FillOptions(max_hole_tokens=8, hole_candidates=(8,)))
        return fake, remote

    yield start
    for remote in made:
        remote.close()


def test_names_are_ordered_by_one_constrained_read_of_their_first_tokens(scorer):
    logits = {ord("b"): 3.0, ord("g"): 1.0}
    fake, remote = scorer(logits=logits)
    assert isinstance(remote, NameScorer) and remote.scores_names
    before = len(fake.requests)
    scores = remote.score_names(PREFIX, SUFFIX, NAMES, FillOptions())
    asked = {ord("a"), ord("b"), ord("g")}
    assert scores == pytest.approx([lp(logits, asked, ord(n[0])) for n in NAMES])
    assert scores[1] > scores[2] > scores[0]
    (read,) = [b for p, b in fake.requests[before:] if p == "/v1/completions"]
    xargs = read["vllm_xargs"]
    assert read["logprob_token_ids"] == sorted(asked) and read["logprobs"] == 3 and read["n"] == 1
    assert (
        xargs["diffusion_constrained"] and xargs["diffusion_read_only"] and xargs["diffusion_max_steps"] == 1
    )
    assert xargs["diffusion_pinned"] and read["prompt"] == PREFIX
    assert set(read) <= COMPLETION_FIELDS and set(xargs) <= RELEASE_XARGS and fake.ignored == []


def test_a_shared_first_token_is_split_by_the_next_tokens_in_the_same_request(scorer):
    """alpha and apple share "a": slot 1 asks "l" and "p", and the two split P(a) between them."""
    logits = {ord("a"): 2.0, (1, ord("p")): 3.0}
    fake, remote = scorer(logits=logits)
    before = len(fake.requests)
    alpha, apple, beta = remote.score_names(PREFIX, SUFFIX, ["alpha", "apple", "beta"])
    asked = {ord(c) for c in "abpl"}
    assert apple > alpha and math.exp(alpha) + math.exp(apple) == pytest.approx(
        math.exp(lp(logits, asked, ord("a")))
    )
    assert beta == pytest.approx(lp(logits, asked, ord("b")))
    assert [p for p, _ in fake.requests[before:]].count("/v1/completions") == 1
    assert asked_slots([[1, 2], [1, 3], [4]]) == [{1, 4}, {2, 3}]
    assert asked_slots([[1], [2]]) == [{1, 2}]


def test_scoring_adds_one_round_trip(scorer):
    fake, remote = scorer(logits={ord("b"): 1.0})
    # The deadline is the next test's: under load a round trip to the fake may take its 300 ms.
    remote.score_deadline_s = 10.0
    remote.score_names(PREFIX, SUFFIX, NAMES)  # tokenizes the names once (cached)
    before = len(fake.requests)
    for _ in range(20):
        remote.score_names(PREFIX + "", SUFFIX, NAMES)
    assert fake.paths(before) == ["/v1/completions"] * 20  # its time is a figure: docs, not a test


def test_a_server_that_hangs_fails_the_scoring_at_the_deadline(scorer):
    _, remote = scorer(fault="hang", hang_s=3.0)
    remote.score_deadline_s = 0.2
    started = time.monotonic()
    with pytest.raises(NameScoringFailed, match="did not answer within 200 ms"):
        remote.score_names(PREFIX, SUFFIX, NAMES)
    assert time.monotonic() - started < 2.0  # a wait, so wall time: the server hangs 3 s


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("logprobs_missing", "has no logprobs"),
        ("logprobs_nan", "is nan, not a finite number"),
        ("logprobs_foreign", f"not asked for ('token_id:{VOCAB - 1}')"),
        ("logprobs_huge", "is 800.0, above 0: not a log-probability"),  # f7ad0f7: OverflowError
    ],
)
def test_logprobs_missing_nan_or_not_asked_fail_the_scoring_and_the_workspace_order_stays(
    scorer, caplog, fault, said
):
    _, remote = scorer(fault=fault)
    with pytest.raises(NameScoringFailed, match=re.escape(said)):
        remote.score_names(PREFIX, SUFFIX, NAMES)
    drafts = [Draft(name, "symbols", kind="symbol", undecided=True) for name in NAMES]
    retrieval = Retrieval([], [], list(drafts))
    with caplog.at_level(logging.WARNING):
        kept = ranked_by_model(remote, Settings(), request(), retrieval, plan_of(remote))
    assert [d.text for d in kept.drafts] == NAMES
    assert any(
        "scoring symbol candidates failed" in r.message and said in r.getMessage() for r in caplog.records
    )


def test_the_server_path_orders_the_workspace_candidates_through_the_auto_protocol(scorer):
    _, remote = scorer(protocol="auto", logits={ord("g"): 4.0, ord("b"): 2.0})
    drafts = [Draft(name, "symbols", kind="symbol", undecided=True) for name in NAMES]
    ordered = ranked_by_model(remote, Settings(), request(), Retrieval([], [], drafts), plan_of(remote))
    assert [d.text for d in ordered.drafts] == ["gamma", "beta", "alpha"]


def test_a_server_without_the_seeded_canvas_is_not_asked(scorer):
    fake, remote = scorer(contract=False)  # vLLM 0.29.0: the chat path
    assert not remote.scores_names
    drafts = [Draft(name, "symbols", kind="symbol", undecided=True) for name in NAMES]
    before = len(fake.requests)
    kept = ranked_by_model(remote, Settings(), request(), Retrieval([], [], drafts), plan_of(remote))
    assert [d.text for d in kept.drafts] == NAMES and fake.paths(before) == []
    with pytest.raises(NameScoringFailed, match="plain OpenAI path"):
        remote.score_names(PREFIX, SUFFIX, NAMES)


def plan_of(remote):
    asked = request()
    return plan_for(remote, Settings(), asked.ctx.language, asked.language_id)


def request() -> SuggestionRequest:
    text = PREFIX + SUFFIX
    ctx = build_context(text, len(PREFIX), None, context_tokens=1024, max_tokens=16, tree=None)
    return SuggestionRequest("file:///x.py", text, len(PREFIX), "python", ctx)


def test_tied_names_are_split_without_overflow_at_any_scale():
    """The split of a shared token is a log-sum-exp shifted by its largest term: the same order
    and differences for log-probabilities near 0 and far below it."""
    names = [[7, 1], [7, 2]]
    near = scores_of(names, [{7: -0.5}, {1: -0.1, 2: -2.0}])
    far = scores_of(names, [{7: -0.5}, {1: -9000.1, 2: -9002.0}])
    assert near == pytest.approx(far)
    assert near[0] > near[1] and math.exp(near[0] + 0.5) + math.exp(near[1] + 0.5) == pytest.approx(1.0)
