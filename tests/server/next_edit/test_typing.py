"""Issue 63: when the document's last edit is a word still being typed (typing.py's half_typed),
on edits made by history.py from keystrokes, with a clock the test moves."""

from __future__ import annotations

from difill.server.features.next_edit.history import EditHistory
from difill.server.features.next_edit.typing import PAUSE_S, Applied, half_typed

LINE = "    requirement = parse(dep_chain[-1])\n"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def typed(*texts: str, clock: Clock | None = None) -> tuple[EditHistory, Clock]:
    """The history after the document went through ``texts`` a keystroke each, 0.15 s apart."""
    clock = clock or Clock()
    history = EditHistory(clock)
    for version, (before, after) in enumerate(zip(texts, texts[1:], strict=False), start=2):
        clock.now += 0.15
        history.changed("u", before, after, version)
    return history, clock


def test_a_name_typed_over_a_word_is_half_typed_until_a_pause():
    history, clock = typed(LINE, LINE.replace("requirement", "r"), LINE.replace("requirement", "re"))
    edit = history.last("u")
    assert half_typed(edit, 6, clock.now)  # `re|`
    assert not half_typed(edit, 4, clock.now)  # the cursor left the word
    assert not half_typed(edit, 6, clock.now + PAUSE_S)  # a pause


def test_a_symbol_after_the_word_ends_it():
    history, clock = typed(LINE, LINE.replace("requirement", "r"), LINE.replace("requirement = parse", "r= parse"))
    assert not half_typed(history.last("u"), 6, clock.now)  # `r=|`: the word was left


def test_backspacing_a_word_is_half_typed_deleting_past_it_is_not():
    history, clock = typed(LINE, LINE.replace("requirement", "requiremen"), LINE.replace("requirement", "requireme"))
    assert half_typed(history.last("u"), 13, clock.now)  # `requireme|`, still being cut
    call = "    f(a, b)\n"
    history, clock = typed(call, "    f(a)\n")
    assert not half_typed(history.last("u"), 7, clock.now)  # `, b` deleted after `a`: not a word


def test_an_applied_next_edit_is_known_as_such():
    applied = Applied()
    text = "w = 1\nprint(width)\n"
    applied.answered("u", 3, [(12, 17, "w")])
    applied.changed("u", (3, text), (4, text.replace("width", "w")))
    assert applied.applied("u", 4)
    applied.changed("u", (4, text.replace("width", "w")), (5, text.replace("width", "wx")))
    assert not applied.applied("u", 5)  # typed, not applied
    applied.answered("u", 5, [(12, 14, "w")])
    applied.changed("u", (5, "other"), (6, "other!"))
    assert not applied.applied("u", 6)
