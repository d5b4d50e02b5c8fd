from __future__ import annotations

import pytest

from difill.engine.canvas import build_canvas, hole_tokens, used_length
from difill.engine.vocab import TokenIds

IDS = TokenIds(pad=0, eos=1, bos=2, filler=(3,), banned_in_hole=(0, 1, 2, 4), vocab_size=100)


def test_hole_then_clamped_suffix_then_eos_then_pad():
    canvas = build_canvas([3, [50, 51]], 8, IDS, document_ends=True)
    assert canvas.ids.tolist() == [3, 3, 3, 50, 51, 1, 0, 0]
    assert canvas.clamp_mask.tolist() == [False, False, False, True, True, True, True, True]
    assert canvas.holes == [(0, 3)]


def test_suffix_that_does_not_fit_is_cut_and_gets_no_eos():
    canvas = build_canvas([2, [10, 11, 12, 13]], 4, IDS, document_ends=True)
    assert canvas.ids.tolist() == [3, 3, 10, 11]
    assert canvas.clamp_mask.tolist() == [False, False, True, True]


def test_several_holes_keep_the_text_between_them_clamped():
    canvas = build_canvas([2, [20], 3, [30, 31]], used_length([2, [20], 3, [30, 31]], False), IDS, False)
    assert canvas.holes == [(0, 2), (3, 6)]
    assert canvas.clamp_mask.tolist() == [False, False, True, False, False, False, True, True]


def test_hole_without_room_is_an_error():
    with pytest.raises(ValueError, match="no room"):
        build_canvas([[5, 6, 7], 2], 3, IDS, False)


def test_hole_tokens_stop_at_the_first_filler():
    canvas = build_canvas([4, [9]], 5, IDS, False)
    canvas.ids[:4] = [40, 41, 3, 42]
    assert hole_tokens(canvas.ids, canvas.holes[0], IDS.filler) == [40, 41]
