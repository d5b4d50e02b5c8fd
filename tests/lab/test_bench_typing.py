"""The typing replay's bookkeeping (lab/bench_typing.py), against a fake server whose answers come
after a set delay: what counts as on screen, accepted, and saved."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from lab.bench_typing import Replay, TypingCase, accepted, replay_case, typing_cases

CASE = TypingCase("a.py", "x = 1\n", "def f(a):\n    return a", "\nprint(f(2))\n")


class OracleServer:
    """Suggests the rest of the current line of the target, ``delay`` seconds after each request;
    a cancelled request gets no answer."""

    def __init__(self, delay: float):
        self.delay = delay
        self.cancelled: list[str] = []
        self._ids = 0

    def open(self, text: str) -> None:
        self.text = text

    def close(self) -> None:
        pass

    def insert(self, text: str, offset: int, new: str) -> str:
        return text[:offset] + new + text[offset:]

    def ask(self, text: str, offset: int):
        self._ids += 1
        done = offset - len(CASE.before)
        rest = CASE.target[done:].split("\n")[0]
        answer = types.InlineCompletionList(
            items=[types.InlineCompletionItem(insert_text=rest)] if rest else []
        )
        future = asyncio.ensure_future(self._later(answer))
        return str(self._ids), future

    async def _later(self, answer):
        await asyncio.sleep(self.delay)
        return answer

    def cancel(self, msg_id: str) -> None:
        self.cancelled.append(msg_id)


async def test_a_fast_exact_server_is_accepted_wherever_it_suggests():
    out = Replay()
    await replay_case(OracleServer(delay=0.0), CASE, None, out)
    # "d" typed, "ef f(a):" accepted, the line break typed, the whole next line accepted
    assert out.accepts == 2 and out.accepted_chars == len("ef f(a):") + len("    return a")
    assert out.keystrokes == 4 and out.on_screen == 2
    summary = out.summary()
    assert summary["net_saved"] == round((out.accepted_chars - 2) / len(CASE.target), 4)
    assert summary["new_line_answers"] == 1
    # The keys with nothing on screen: after "ef f(a):" was accepted its line was done (empty
    # answer), and after the Enter's accept the target was done (empty too).
    assert summary["misses"] == {"empty": 2, "empty_new_line": 0, "late": 0, "late_new_line": 0}
    assert out.on_screen + out.empty + out.late == out.keystrokes


async def test_answers_slower_than_the_typist_are_cancelled_and_never_on_screen():
    server = OracleServer(delay=0.5)
    out = Replay()
    await replay_case(server, CASE, 50.0, out)  # a key every 20 ms
    assert out.accepts == 0 and out.on_screen == 0 and out.keystrokes == len(CASE.target)
    # each key cancels the request before it, and the end the last one
    assert len(server.cancelled) == len(CASE.target)
    assert out.late == out.keystrokes and out.late_new_line == 1 and out.empty == 0  # one Enter


def test_cases_are_three_lines_cut_out_of_the_file():
    body = "".join(f"line_{i} = {i}\n" for i in range(60))
    cases = typing_cases([{"path": "m.py", "text": body}], files=1)
    assert len(cases) == 1
    case = cases[0]
    assert case.before + case.target + case.after == body and case.target.count("\n") == 2


def test_a_suggestion_is_taken_whole_or_by_its_first_words_when_that_saves_keys():
    rest = "self.count += 1\n"
    assert accepted("self.count += 1", rest, by_word=False) == ("self.count += 1", 1)  # Tab
    assert accepted("self.counter = 0", rest, by_word=False) == ("", 0)
    # by word: "self", ".", "count" match; " =" does not ("+=" follows): 3 keys for 10 characters
    assert accepted("self.count = 0", rest, by_word=True) == ("self.count", 3)
    assert accepted("self.counter = 0", rest, by_word=True) == ("self.", 2)  # 5 characters, 2 keys
    assert accepted("s.x", rest, by_word=True) == ("", 0)  # one character for one key: typed instead
    assert accepted("x = 1", rest, by_word=True) == ("", 0)


async def test_word_accepts_count_a_key_a_word():
    class HalfRight(OracleServer):
        """Suggests the rest of the line with its last word wrong."""

        def ask(self, text, offset):
            msg_id, future = super().ask(text, offset)
            future.cancel()
            done = offset - len(CASE.before)
            rest = CASE.target[done:].split("\n")[0]
            wrong = rest.rsplit(" ", 1)[0] + " wrong" if " " in rest else ""
            answer = types.InlineCompletionList(items=[types.InlineCompletionItem(insert_text=wrong)] if wrong else [])
            return msg_id, asyncio.ensure_future(self._later(answer))

    whole, words = Replay(), Replay()
    await replay_case(HalfRight(delay=0.0), CASE, None, whole)
    await replay_case(HalfRight(delay=0.0), CASE, None, words, by_word=True)
    assert whole.accepts == 0
    assert words.accepts > 0 and words.accepted_chars > words.accepts
    assert words.summary()["net_saved"] > whole.summary()["net_saved"]


def test_shown_precision_counts_a_suggestion_once_while_typing_agrees_with_it():
    from lab.bench_typing import Seen

    out, seen = Replay(), Seen()
    target = "value = compute(x)"
    seen.count("value = comp", 0, target, out)  # shown at the start: right (a start of the rest)
    seen.count("lue = comp", 2, target, out)  # "va" typed into it: the same suggestion
    seen.count("wrong", 3, target, out)  # another one: wrong
    seen.count("e = compute(y)", 4, target, out)  # right in its first word only
    assert (out.suggestions, out.right, out.first_word_right) == (3, 1, 2)
    assert out.summary()["shown_precision"] == round(1 / 3, 4)
