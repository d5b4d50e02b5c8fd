"""The remote backend against a fake vLLM (lab/fake_vllm.py) that follows vLLM 0.33.0's request
validation (the seeded canvas as released), and against one from before it."""

from __future__ import annotations

import time

import pytest

from difill.engine.api import BackendError, Cancelled, FillOptions, RewriteRequest
from difill.engine.backends import RemoteConfig, connect
from difill.engine.backends.openai_remote import OpenAIRemote
from difill.engine.backends.vllm import CANVAS_SIZES, canvas_size
from difill.text.context import build_context
from difill.text.pipeline import shown_texts
from lab.fake_vllm import (
    COMPLETION_FIELDS,
    PAD,
    RELEASE_XARGS,
    VOCAB,
    FakeVllm,
    read_body,
    send,
    tokenize,
)

PREFIX = "def add(a, b):\n    return "
SUFFIX = "\n\nprint(add(1, 2))\n"
TYPING = FillOptions(max_hole_tokens=8, hole_candidates=(8,), suffix_tokens=16, max_steps=6, seed=2)


def backend(url: str, canvas: str = "auto", **kwargs) -> OpenAIRemote:
    kwargs = {"canvas_length": 64, "vocab_size": VOCAB, "backoff_s": 0.01, **kwargs}
    return connect(RemoteConfig(url, protocol="openai", canvas=canvas, **kwargs))


def shown(result, prefix=PREFIX, suffix=SUFFIX) -> list[str]:
    ctx = build_context(prefix + suffix, len(prefix), None, context_tokens=1024, max_tokens=16, tree=None)
    return shown_texts(result.candidates, ctx)


@pytest.fixture()
def vllm(fake_server):
    """Start a FakeVllm; returns (fake, url)."""

    def start(**kwargs) -> tuple[FakeVllm, str]:
        fake = FakeVllm(**kwargs)
        return fake, fake_server(fake)

    return start


def test_a_fill_is_a_seeded_canvas_sized_to_the_request_with_the_suffix_pinned(vllm):
    fake, url = vllm()
    remote = backend(url)
    try:
        result = remote.fill(PREFIX, SUFFIX, TYPING)
        assert result.text == "a + b" and shown(result) == ["a + b"]
        (body,) = fake.seeded_bodies()
        xargs = body["vllm_xargs"]
        suffix_ids = tokenize(SUFFIX)  # 19 ids, of which the nearest 16 are pinned
        assert xargs["diffusion_canvas_length"] == 32 == len(xargs["diffusion_seed_canvas"])  # 8 + 16 -> 32
        assert xargs["diffusion_pinned"] == list(range(8, 24))
        assert xargs["diffusion_seed_canvas"][8:24] == suffix_ids[:16]
        assert xargs["diffusion_max_steps"] == 6 and xargs["diffusion_read_only"] is True
        assert body["n"] == 1  # typing: one suggestion
        # the release refuses any other temperature, and any seed, for a diffusion model
        assert body["temperature"] == 1.0 and "seed" not in body
        assert body["prompt"] == PREFIX and body["return_token_ids"] is True and "suffix" not in body
        assert fake.paths()[:2] == ["/version", "/v1/models"]
        assert "seeded canvas (vLLM 0.33.0)" in remote.describe_path()
        assert "sized to each request" in remote.describe_path()
    finally:
        remote.close()


def test_an_invoked_fill_gets_its_candidates_as_samples_of_one_request(vllm):
    fake, url = vllm(middles=("a + b", "b + a", "sum((a, b))"))
    remote = backend(url)
    try:
        result = remote.fill(PREFIX, SUFFIX, FillOptions(max_hole_tokens=12))  # invoked: 3 hole lengths
        assert [c.text for c in result.candidates] == ["a + b", "b + a", "sum((a, b))"]
        (body,) = fake.seeded_bodies()
        assert body["n"] == 3 and set(body["vllm_xargs"]) <= RELEASE_XARGS  # not diffusion_samples
        assert body["vllm_xargs"]["diffusion_pinned"]  # with the seeded canvas, the suffix pinned
        assert fake.paths().count("/v1/completions") == 1 and fake.ignored == []
    finally:
        remote.close()


def test_typing_tokenizes_the_suffix_window_once(vllm):
    """While the user types, the suffix stays: a keystroke is one completion and at most one
    detokenize (none here: the middle is cut from the answer's own text)."""
    fake, url = vllm()
    remote = backend(url)
    try:
        remote.fill(PREFIX, SUFFIX, TYPING)
        before = len(fake.requests)
        for typed in ("a", "a ", "a +"):
            assert remote.fill(PREFIX + typed, SUFFIX, TYPING).text == "a + b"
        assert fake.paths(before) == ["/v1/completions"] * 3
        long_suffix = SUFFIX + "x = 1\n" * 200  # only a window of whole lines is tokenized
        remote.fill(PREFIX, long_suffix, TYPING)
        (sent,) = [b["prompt"] for p, b in fake.requests if p == "/tokenize" and b["prompt"] != SUFFIX]
        assert long_suffix.startswith(sent) and len(sent) < 200
    finally:
        remote.close()


def test_a_served_canvas_named_by_the_refusal_is_taken_at_once(vllm):
    """A full canvas (no diffusion_canvas_length) of the assumed 256 slots on a 64-slot server: the
    release's refusal says "must hold exactly 64 ids", and difill sends 64 from then on."""
    fake, url = vllm(canvas_length=64)
    remote = backend(url, canvas_length=256)
    invoked = FillOptions(max_hole_tokens=160, hole_candidates=(160,), suffix_tokens=16)  # 176: the full 256
    try:
        assert remote.fill(PREFIX, SUFFIX, invoked).text == "a + b"
        first, second = fake.seeded_bodies()
        assert len(first["vllm_xargs"]["diffusion_seed_canvas"]) == 256
        assert "diffusion_canvas_length" not in first["vllm_xargs"]
        assert len(second["vllm_xargs"]["diffusion_seed_canvas"]) == 64 and remote.seeded.served_length == 64
    finally:
        remote.close()


def test_a_served_canvas_shorter_than_assumed_is_found_and_kept(vllm):
    """The 24 GB card's server runs canvas 64; difill assumes 256 until the server says otherwise."""
    fake, url = vllm(canvas_length=64)
    remote = backend(url, canvas_length=256)
    invoked = FillOptions(max_hole_tokens=64, suffix_tokens=16)  # 64 + 16 slots: a 128 canvas
    try:
        assert remote.fill(PREFIX, SUFFIX, invoked).text == "a + b"
        first, second = fake.seeded_bodies()
        assert first["vllm_xargs"]["diffusion_canvas_length"] == 128  # refused: more than 64
        assert len(second["vllm_xargs"]["diffusion_seed_canvas"]) == 64
        assert "diffusion_canvas_length" not in second["vllm_xargs"]  # the server's own length
        assert remote.seeded.served_length == 64 and "at most 64 slots" in remote.describe_path()
        remote.fill(PREFIX, SUFFIX, invoked)
        assert len(fake.seeded_bodies()) == 3  # remembered
    finally:
        remote.close()


def test_holes_go_in_one_canvas_with_the_text_between_them_pinned(vllm):
    fake, url = vllm(middles=("1", "2"))
    remote = backend(url)
    text = "x = <|hole|>\ny = <|hole|>\n"
    try:
        result = remote.fill_holes(text, options=FillOptions(max_hole_tokens=4))
        assert result.middles == ["1", "2"] and result.text == "x = 1\ny = 2\n"
        (body,) = fake.seeded_bodies()
        xargs = body["vllm_xargs"]
        between = tokenize("\ny = ")
        assert body["prompt"] == "x = "
        assert xargs["diffusion_pinned"][: len(between)] == list(range(4, 4 + len(between)))
        assert xargs["diffusion_seed_canvas"][4 : 4 + len(between)] == between
        assert fake.paths().count("/v1/completions") == 1
    finally:
        remote.close()


@pytest.mark.parametrize("strength", [0.0, 0.5, 1.0])
def test_a_rewrite_renoises_a_strength_share_of_the_selection_and_pins_the_rest(vllm, strength):
    fake, url = vllm(middles=("Z",))
    remote = backend(url)
    selection = "a * 2 + b * 2"
    try:
        result = remote.rewrite(
            RewriteRequest("def f(a, b):\n    return ", selection, "\n", strength, "double")
        )
        (body,) = fake.seeded_bodies()
        xargs = body["vllm_xargs"]
        original = tokenize(selection)
        kept = [p for p in xargs["diffusion_pinned"] if p < len(original)]
        assert all(xargs["diffusion_seed_canvas"][p] == original[p] for p in kept)
        if strength == 0.0:
            assert kept == list(range(len(original))) and result.text.startswith(selection)
        elif strength == 1.0:
            assert kept == [] and result.text == "Z"
        else:
            assert 0 < len(kept) < len(original)
        assert "# double" in body["prompt"]  # the instruction, as a comment above the selection
    finally:
        remote.close()


def test_a_vllm_older_than_0_32_gets_the_chat_path_without_a_seed_and_the_status_says_why(vllm):
    fake, url = vllm(contract=False)  # /version: 0.29.0
    remote = backend(url)
    try:
        assert remote.fill(PREFIX, SUFFIX, TYPING).text == "chat(a, b)"
        assert fake.seeded_bodies() == [] and "/tokenize" not in fake.paths()
        path = remote.describe_path()
        assert "plain OpenAI path" in path and "vLLM 0.29.0" in path and "0.32 or later" in path
        before = len(fake.requests)
        remote.fill(PREFIX + "x", SUFFIX, TYPING)
        assert fake.paths(before) == ["/v1/chat/completions"]  # /version is asked once
        holes = remote.fill_holes("x = <|hole|>\ny = <|hole|>\n")
        assert holes.middles == ["chat(a, b)", "chat(a, b)"]
        assert remote.rewrite(RewriteRequest("x = ", "1", "\n")).text == "chat(a, b)"
        assert fake.seeded_bodies() == []
    finally:
        remote.close()


def test_remote_canvas_seeded_on_an_old_vllm_tries_and_fails_with_what_to_run(vllm):
    """seeded: the user asked for the canvas (a /version may be wrong: a build of its own), so it is
    sent; the answer shows it was not kept, and the error names the version needed and the one seen."""
    fake, url = vllm(contract=False)
    remote = backend(url, canvas="seeded")
    try:
        with pytest.raises(BackendError, match=r"0\.32 or later.*remoteCanvas") as caught:
            remote.fill(PREFIX, SUFFIX, TYPING)
        assert "vLLM 0.29.0" in str(caught.value) and len(fake.seeded_bodies()) == 1
    finally:
        remote.close()


@pytest.mark.parametrize(
    "said", [None, b"<html>not found</html>", b'{"version": 33}', b'{"version": "banana"}', b'["0.33.0"]']
)
def test_a_version_that_is_missing_or_garbage_leaves_the_first_fill_to_probe(vllm, said):
    fake, url = vllm(version=None, version_body=said)  # None: /version is a 404
    remote = backend(url)
    try:
        assert remote.fill(PREFIX, SUFFIX, TYPING).text == "a + b"
        assert len(fake.seeded_bodies()) == 1 and remote.seeded.version is None
        assert "seeded canvas (vLLM 0.32 or later)" in remote.describe_path()
    finally:
        remote.close()
    fake, url = vllm(contract=False, version=None, version_body=said)  # an old one says nothing either
    remote = backend(url)
    try:
        assert remote.fill(PREFIX, SUFFIX, TYPING).text == "chat(a, b)"
        assert len(fake.seeded_bodies()) == 1 and "answered a canvas of 5 ids" in remote.seeded.refused
    finally:
        remote.close()


def test_a_version_that_lies_is_caught_by_the_answer_and_falls_back(vllm):
    fake, url = vllm(contract=False, version="0.33.0")  # says 0.33.0, ignores vllm_xargs
    remote = backend(url)
    try:
        assert remote.fill(PREFIX, SUFFIX, TYPING).text == "chat(a, b)"
        assert len(fake.seeded_bodies()) == 1 and "plain OpenAI path" in remote.describe_path()
    finally:
        remote.close()


def test_remote_canvas_seeded_makes_a_refusal_a_clear_error(vllm):
    _, url = vllm(fault="change_pins")
    remote = backend(url, canvas="seeded")
    try:
        with pytest.raises(BackendError, match=r"0\.32 or later.*remoteCanvas"):
            remote.fill(PREFIX, SUFFIX, TYPING)
    finally:
        remote.close()


def test_remote_canvas_plain_never_sends_a_seed_and_speaks_to_a_release_as_it_asks(vllm):
    """plain on vLLM 0.33: the chat prompt, with temperature 1 and no seed (else the release's 400)."""
    fake, url = vllm()
    remote = backend(url, canvas="plain")
    try:
        assert remote.fill(PREFIX, SUFFIX, TYPING).text == "chat(a, b)"
        assert remote.rewrite(RewriteRequest("x = ", "1", "\n")).text == "chat(a, b)"
        assert fake.seeded_bodies() == [] and "/tokenize" not in fake.paths()
        chats = [b for p, b in fake.requests if p == "/v1/chat/completions"]
        assert len(chats) == 2 and all(b["temperature"] == 1.0 and "seed" not in b for b in chats)
    finally:
        remote.close()


def test_every_request_to_the_release_holds_only_fields_it_reads(vllm):
    """No key outside 0.33.0's set: the release ignores unknown ones without a word, so a sent
    key it does not know is a feature that silently does nothing (diffusion_samples did)."""
    fake, url = vllm(middles=("1", "2"))
    remote = backend(url)
    try:
        remote.fill(PREFIX, SUFFIX, TYPING)
        remote.fill(PREFIX, SUFFIX, FillOptions(max_hole_tokens=12))  # invoked: n = 3
        remote.fill_holes("x = <|hole|>\ny = <|hole|>\n", options=FillOptions(max_hole_tokens=4))
        remote.rewrite(RewriteRequest("x = ", "1 + 1", "\n", 0.5, "double"))
        bodies = fake.seeded_bodies()
        assert len(bodies) == 4 and fake.ignored == []
        assert all(set(b) <= COMPLETION_FIELDS and set(b["vllm_xargs"]) <= RELEASE_XARGS for b in bodies)
    finally:
        remote.close()


def test_canvas_sizes_round_up_and_stay_within_the_served_canvas():
    assert [canvas_size(n, 256) for n in (1, 32, 33, 100, 200, 300)] == [32, 32, 64, 128, 256, 256]
    assert canvas_size(100, 64) == 64
    assert CANVAS_SIZES == tuple(sorted(CANVAS_SIZES))


# ---------------------------------------------------------------------------- bad servers


@pytest.mark.parametrize("fault", ["wrong_length", "change_pins"])
def test_a_server_that_breaks_the_seed_falls_back_in_auto_and_fails_clearly_in_seeded(vllm, fault):
    fake, url = vllm(fault=fault, middles=("BROKEN",))
    remote = backend(url)
    try:  # auto: nothing of the broken canvas is shown; the chat path answers, from then on
        assert remote.fill(PREFIX, SUFFIX, TYPING).text == "chat(a, b)"
        assert remote.seeded.refused and "/detokenize" not in fake.paths()
    finally:
        remote.close()
    remote = backend(url, canvas="seeded")
    try:
        with pytest.raises(BackendError, match="seeded canvas") as caught:
            remote.fill(PREFIX, SUFFIX, TYPING)
        assert ("canvas of 31 ids" if fault == "wrong_length" else "pinned slot") in str(caught.value)
    finally:
        remote.close()


def test_a_tokenize_answer_of_another_shape_falls_back_in_auto(fake_server):
    fake = FakeVllm()

    def odd_tokenize(request):
        if request.path == "/tokenize":
            read_body(request)
            send(request, 200, b"[1, 2, 3]")
        else:
            fake(request)

    remote = backend(fake_server(odd_tokenize))
    try:
        assert remote.fill(PREFIX, SUFFIX, TYPING).text == "chat(a, b)"
        assert "/tokenize answer has no list of token ids" in remote.seeded.refused
    finally:
        remote.close()


def test_ids_outside_the_vocabulary_fail_the_fill_and_show_nothing(vllm):
    fake, url = vllm(fault="out_of_vocab")
    remote = backend(url)
    try:
        with pytest.raises(BackendError, match=rf"outside the vocabulary \[0, {VOCAB}\)"):
            remote.fill(PREFIX, SUFFIX, TYPING)
        assert remote.seeded.active and "/detokenize" not in fake.paths()
    finally:
        remote.close()


def test_a_hanging_server_times_out_with_a_clear_error(vllm):
    _, url = vllm(fault="hang", hang_s=3.0)
    remote = backend(url, timeout_s=0.5)
    try:
        with pytest.raises(BackendError, match="did not answer within 0.5 s"):
            remote.fill(PREFIX, SUFFIX, TYPING)
        assert remote.seeded.active  # a slow answer is not a refusal
    finally:
        remote.close()


def test_a_server_failing_one_request_in_three_fails_those_fills_and_keeps_the_path(vllm):
    fake, url = vllm(fault="flaky")
    remote = backend(url)
    outcomes = []
    try:
        for i in range(6):
            try:
                result = remote.fill(PREFIX + "x" * i, SUFFIX, TYPING)
            except BackendError as err:
                assert "HTTP 500" in str(err) and "EngineCore died" in str(err)
                outcomes.append("error")
            else:
                assert shown(result, PREFIX + "x" * i) == ["a + b"]
                outcomes.append("ok")
        assert outcomes == ["ok", "ok", "error"] * 2
        assert remote.seeded.active and remote.seeded.refused is None
    finally:
        remote.close()


def test_a_fill_cuts_its_middle_from_the_answer_where_the_pinned_suffix_begins(vllm):
    """No /detokenize of the middle: the answer's text up to the suffix's (detokenized once)."""
    fake, url = vllm(middles=("a + b",))
    remote = backend(url)
    try:
        assert remote.fill(PREFIX, SUFFIX, TYPING).text == "a + b"
        detokenized = [b["tokens"] for p, b in fake.requests if p == "/detokenize"]
        assert detokenized == [tokenize(SUFFIX)[:16]]  # the pinned suffix's ids, not the middle's
    finally:
        remote.close()


def test_a_middle_holding_the_suffix_text_is_detokenized_from_its_own_slots(vllm):
    """The suffix's text occurs twice in the answer: cutting at the first would lose "b"."""
    fake, url = vllm(middles=("a\nb",))
    remote = backend(url)
    try:
        assert remote.fill("x = ", "\n", TYPING).text == "a\nb"
        detokenized = [b["tokens"] for p, b in fake.requests if p == "/detokenize"]
        assert detokenized[-1] == tokenize("a\nb") + [PAD] * 5  # the hole's 8 slots
    finally:
        remote.close()


def test_a_fill_cancelled_while_version_is_asked_leaves_it_to_the_next_fill(fake_server):
    fake, asked = FakeVllm(), []

    def first_version_slow(request):
        if request.path == "/version":
            asked.append(time.monotonic())
            if len(asked) == 1:
                time.sleep(1.0)
                return  # the client is gone
        fake(request)

    remote = backend(fake_server(first_version_slow))
    started = time.monotonic()
    try:
        with pytest.raises(Cancelled):
            remote.fill(PREFIX, SUFFIX, TYPING, should_stop=lambda: time.monotonic() - started > 0.2)
        assert remote.seeded.version is None and not remote.seeded.version_checked
        assert remote.fill(PREFIX, SUFFIX, TYPING).text == "a + b"
        assert len(asked) == 2 and remote.seeded.version == "0.33.0"
    finally:
        remote.close()
