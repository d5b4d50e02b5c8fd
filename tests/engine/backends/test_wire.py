"""The native HTTP API's option encoding: exact round trips, and only what a client changed."""

from __future__ import annotations

import pytest

from difill.engine.api import FillOptions
from difill.engine.backends.wire import options_from_json, options_to_json


@pytest.mark.parametrize(
    "options",
    [
        FillOptions(),
        FillOptions(max_hole_tokens=8, hole_candidates=(4, 8), seed=3),
        FillOptions(min_token_prob=None, revise=True, entropy_bound=0.5, language="python"),
        FillOptions(min_token_prob=0.25, heal=False, prefix_tokens=64, max_steps=2),
        FillOptions(drafts=("x + 1\n", "y")),
    ],
)
def test_options_survive_the_wire(options):
    assert options_from_json(options_to_json(options)) == options


def test_a_client_sends_only_the_options_it_changed():
    # An older server rejects an option it does not know; a request that leaves a newer option
    # at its default must not name it.
    assert options_to_json(FillOptions()) == {}
    assert options_to_json(FillOptions(max_hole_tokens=8, hole_candidates=(8,))) == {
        "max_hole_tokens": 8,
        "hole_candidates": [8],
    }
    assert options_to_json(None) is None


def test_drafts_travel_as_a_bounded_list_of_strings():
    from difill.engine.backends.wire import MAX_DRAFT_CHARS, MAX_DRAFTS

    assert options_from_json({"drafts": ["a", "b"]}) == FillOptions(drafts=("a", "b"))
    for bad in ([1], "abc", ["a"] * (MAX_DRAFTS + 1), ["x" * (MAX_DRAFT_CHARS + 1)]):
        with pytest.raises(ValueError, match="drafts"):
            options_from_json({"drafts": bad})


def test_a_context_block_travels_as_a_bounded_string():
    from difill.engine.backends.wire import MAX_CONTEXT_BLOCK_CHARS

    block = "# Path: a.py\n# def f(): ...\n"
    assert options_from_json({"context_block": block}) == FillOptions(context_block=block)
    for bad in (3, ["a"], "x" * (MAX_CONTEXT_BLOCK_CHARS + 1)):
        with pytest.raises(ValueError, match="context_block"):
            options_from_json({"context_block": bad})
