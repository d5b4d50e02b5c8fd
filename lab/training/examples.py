"""Cut infill examples out of source files: the hole shapes an editor produces.

Every example is text (prefix, middles, betweens, suffix); tokenisation happens afterwards, piece
by piece, exactly as the engine tokenises an editor's prefix and suffix.  The same cases feed
training (random) and evaluation (seeded, from the held-out split).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SHAPES = ("rest_of_line", "whole_line", "multi_line", "span", "continuation", "several_holes")
SHAPE_WEIGHTS = (0.24, 0.24, 0.18, 0.14, 0.10, 0.10)


@dataclass
class InfillExample:
    prefix: str
    middles: list[str]  # one per hole
    betweens: list[str]  # clamped text between consecutive holes (len(middles) - 1 items)
    suffix: str
    shape: str

    @property
    def document(self) -> str:
        parts = [self.prefix]
        for i, middle in enumerate(self.middles):
            parts.append(middle)
            parts.append(self.betweens[i] if i < len(self.betweens) else "")
        return "".join(parts) + self.suffix


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _line_at(text: str, starts: list[int], k: int) -> tuple[int, int]:
    """[start, end) of line k without its newline."""
    start = starts[k]
    end = text.find("\n", start)
    return start, (len(text) if end < 0 else end)


def _content_lines(text: str, starts: list[int]) -> list[int]:
    return [k for k in range(len(starts)) if text[slice(*_line_at(text, starts, k))].strip()]


def sample_example(text: str, rng: random.Random, shape: str | None = None) -> InfillExample | None:
    """One random example of ``shape`` (random shape if None) from ``text``, or None if it has no room."""
    shape = shape or rng.choices(SHAPES, SHAPE_WEIGHTS)[0]
    starts = _line_starts(text)
    lines = _content_lines(text, starts)
    if len(lines) < 3:
        return None
    k = rng.choice(lines[1:])
    start, end = _line_at(text, starts, k)
    line = text[start:end]
    indent = len(line) - len(line.lstrip())

    if shape == "rest_of_line":
        if end - start - indent < 2:
            return None
        col = rng.randrange(indent, end - start)
        return InfillExample(text[: start + col], [text[start + col : end]], [], text[end:], shape)
    if shape == "whole_line":
        if rng.random() < 0.5:  # cursor at column 0 of an existing line: the middle is a whole new line
            line_end = min(end + 1, len(text))
            return InfillExample(text[:start], [text[start:line_end]], [], text[line_end:], shape)
        return InfillExample(text[: start + indent], [text[start + indent : end]], [], text[end:], shape)
    if shape == "multi_line":
        count = rng.randint(2, 10)
        last = min(k + count - 1, len(starts) - 1)
        _, last_end = _line_at(text, starts, last)
        if rng.random() < 0.5:
            stop = min(last_end + 1, len(text))
            return InfillExample(text[:start], [text[start:stop]], [], text[stop:], shape)
        return InfillExample(
            text[: start + indent], [text[start + indent : last_end]], [], text[last_end:], shape
        )
    if shape == "span":
        a = rng.randrange(start, max(start + 1, end))
        b = min(len(text), a + rng.randint(1, 160))
        return InfillExample(text[:a], [text[a:b]], [], text[b:], shape)
    if shape == "continuation":
        a = start + (indent if rng.random() < 0.5 else rng.randrange(indent, max(indent + 1, end - start)))
        b = min(len(text), a + rng.randint(8, 200))
        return InfillExample(text[:a], [text[a:b]], [], "", shape)
    if shape == "several_holes":
        count = rng.randint(2, 3)
        cursor = start + indent
        prefix_end = cursor
        middles: list[str] = []
        betweens: list[str] = []
        for i in range(count):
            a = cursor if i == 0 else cursor + rng.randint(1, 60)
            b = a + rng.randint(1, 40)
            if b >= len(text):
                return None
            if i > 0:
                betweens.append(text[cursor:a])
            middles.append(text[a:b])
            cursor = b
        return InfillExample(text[:prefix_end], middles, betweens, text[cursor:], shape)
    raise ValueError(f"unknown shape {shape!r}")


# What `difill eval` measures: the three shapes an editor asks for most.
EVAL_SHAPES = ("rest_of_line", "whole_line", "multi_line_2_5")


def sample_eval_example(text: str, rng: random.Random, shape: str) -> InfillExample | None:
    """Held-out cases: rest of line, whole line (cursor after the indentation), 2-5 whole lines."""
    starts = _line_starts(text)
    lines = _content_lines(text, starts)
    if len(lines) < 6:
        return None
    k = rng.choice(lines[2:-1])
    start, end = _line_at(text, starts, k)
    line = text[start:end]
    indent = len(line) - len(line.lstrip())
    if shape == "rest_of_line":
        content = end - start - indent
        if content < 4:
            return None
        col = start + indent + rng.randrange(1, content)
        return InfillExample(text[:col], [text[col:end]], [], text[end:], shape)
    if shape == "whole_line":
        return InfillExample(text[: start + indent], [text[start + indent : end]], [], text[end:], shape)
    if shape == "multi_line_2_5":
        last = min(k + rng.randint(1, 4), len(starts) - 1)
        _, last_end = _line_at(text, starts, last)
        stop = min(last_end + 1, len(text))
        return InfillExample(text[:start], [text[start:stop]], [], text[stop:], shape)
    raise ValueError(f"unknown eval shape {shape!r}")
