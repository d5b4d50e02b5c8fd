"""Issue 52: ghost text while typing stops where a blank line begins; asked for, it is whole."""

from __future__ import annotations

import pytest

from difill.engine.api import Candidate
from difill.text.context import build_context
from difill.text.pipeline import shown_texts, to_blank_line

pytestmark = pytest.mark.unit

BEFORE = "class A:\n    x = 1\n    "
DOCUMENT = BEFORE + "\n"


def test_typing_stops_at_the_blank_line_and_an_explicit_request_does_not():
    ctx = build_context(DOCUMENT, len(BEFORE), "python", 1024, 64, None)
    text = "y = 2\n\n    def f(self):\n        pass"  # the next method, after a blank line
    typed = shown_texts([Candidate(text, 0, 0.0, True)], ctx, invoked=False)
    asked = shown_texts([Candidate(text, 0, 0.0, True)], ctx, invoked=True)
    assert typed == ["y = 2"]
    assert asked == [text]
    assert to_blank_line("\n\nx = 1\ny = 2\n\nz = 3") == "\n\nx = 1\ny = 2"  # blank lines before code stay
