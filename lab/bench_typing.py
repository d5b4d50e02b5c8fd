"""`difill bench --typing`: what a typist gets from `difill serve` at a fixed typing rate.

Three lines inside each of N real files (held-out corpus files), with the rest of the file below,
are typed key by key into `difill serve` over stdio, as an editor drives it: on every key a
``didChange`` and a new Automatic inline-completion request, and ``$/cancelRequest`` for the
request still in flight.  A suggestion is *on screen* for a key when the answer to that key's
request arrived, non-empty, before the next key.  When the text still to type starts with the
suggestion on screen, the typist accepts it (Tab, one keystroke) instead of typing on.  With
``accept="word"`` a typist also takes the words of a suggestion that start right and then go wrong,
one keystroke a word (VS Code's Accept Next Word, Ctrl+Right; Neovim clients map one too): a
suggestion's words as ``WORDS`` splits them.

Reported per rate (4, 6 and 8 characters a second), and for the waited-for replay (each answer
awaited before the next key, no time pressure) for comparison:

* net keystrokes saved: (characters accepted - one keystroke per accept) / characters to type;
* the share of keystrokes with a suggestion on screen before the next key;
* how many answers arrived in time, and the answers' latency.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types

from difill.server.show_gate import TRACE_ENV
from lab.bench_server import URI, BenchClient, position_of
from lab.bench_timing import percentile

HELDOUT = Path("data/corpus/heldout.jsonl")
TYPED_LINES = 3
RATES = (4.0, 6.0, 8.0)  # characters a second


@dataclass(frozen=True)
class TypingCase:
    path: str
    before: str  # the file above the typed lines
    target: str  # the lines to type (without the last line break)
    after: str  # the rest of the file below, from the typed lines' last line break


@dataclass
class Replay:
    chars: int = 0  # characters to type
    keystrokes: int = 0  # characters typed + accepts
    accepts: int = 0
    accepted_chars: int = 0
    on_screen: int = 0  # keystrokes whose answer arrived, non-empty, before the next key
    answered: int = 0  # keystrokes whose answer (empty or not) arrived before the next key
    # Keystrokes with no suggestion on screen, by why (issue 49, item 4): the answer came in time
    # and was empty, or it came after the next key (or never: cancelled); each also counted when
    # the key was Enter (the first request on a new line).
    empty: int = 0
    empty_new_line: int = 0
    late: int = 0
    late_new_line: int = 0
    # Shown precision (issue 60): each distinct suggestion counted once while typing agrees with
    # it; right when what is typed next begins with the whole of it, or with its first word.
    suggestions: int = 0
    right: int = 0
    first_word_right: int = 0
    latencies: list[float] = field(default_factory=list)  # ms, answers that arrived
    new_line: list[float] = field(default_factory=list)  # ms, of those: the first on a new line

    def summary(self) -> dict:
        return {
            "chars": self.chars,
            "keystrokes": self.keystrokes,
            "accepts": self.accepts,
            "net_saved": round((self.accepted_chars - self.accepts) / max(1, self.chars), 4),
            "on_screen_share": round(self.on_screen / max(1, self.keystrokes), 4),
            "suggestions": self.suggestions,
            "shown_precision": round(self.right / max(1, self.suggestions), 4),
            "first_word_right": round(self.first_word_right / max(1, self.suggestions), 4),
            "answered_in_time": self.answered,
            "p50_ms": round(percentile(self.latencies, 50), 1),
            "p95_ms": round(percentile(self.latencies, 95), 1),
            "misses": {
                "empty": self.empty,
                "empty_new_line": self.empty_new_line,
                "late": self.late,
                "late_new_line": self.late_new_line,
            },
            "new_line_answers": len(self.new_line),
            "new_line_p50_ms": round(percentile(self.new_line, 50), 1),
            "new_line_p95_ms": round(percentile(self.new_line, 95), 1),
        }


def typing_sources(heldout: Path = HELDOUT) -> tuple[str, list[dict]]:
    """The files to type into, as {"path", "text"} rows, and where they come from: the corpus's
    held-out files, or (a fresh clone, CI) the installed pygls package, which no corpus holds."""
    if heldout.exists():
        return str(heldout), [json.loads(line) for line in heldout.read_text().splitlines()]
    import pygls

    package = Path(pygls.__file__).parent
    rows = [
        {"path": str(p.relative_to(package.parent)), "text": p.read_text()}
        for p in sorted(package.rglob("*.py"))
    ]
    return f"{package} (no {heldout})", rows


def repos_sources(spec: str) -> tuple[str, list[dict]]:
    """The Python files of projects read from git (``NAME=GIT_DIR@COMMIT,...``, as the fresh-cursor
    eval reads them: no tests, docs or examples), for typing into real files nobody here wrote."""
    import tempfile

    from lab.fresh_cursor import export, parse_repos

    rows = []
    with tempfile.TemporaryDirectory(prefix="difill-typing-") as tmp:
        for name, git_dir, commit in parse_repos(spec):
            project = export(name, git_dir, commit, Path(tmp))
            rows += [{"path": f"{name}/{path}", "text": text} for path, text in project.files.items()]
    return spec, rows


def typing_cases(rows: list[dict], files: int, seed: int = 7) -> list[TypingCase]:
    """``files`` Python files from ``rows``, one run of three non-blank lines of 20-240
    characters in each, picked at random (seeded)."""
    rows = [r for r in rows if r["path"].endswith(".py") and r["text"].count("\n") >= 40]
    rng = random.Random(seed)
    rng.shuffle(rows)
    cases: list[TypingCase] = []
    for row in rows:
        lines = row["text"].splitlines(keepends=True)
        starts = list(range(10, len(lines) - TYPED_LINES - 5))
        rng.shuffle(starts)
        for start in starts[:50]:
            chunk = lines[start : start + TYPED_LINES]
            target = "".join(chunk)[:-1]
            if all(ln.strip() for ln in chunk) and 20 <= len(target) <= 240 and "\r" not in target:
                cases.append(
                    TypingCase(
                        row["path"],
                        "".join(lines[:start]),
                        target,
                        "\n" + "".join(lines[start + TYPED_LINES :]),
                    )
                )
                break
        if len(cases) == files:
            break
    return cases


class TypingClient(BenchClient):
    """The bench's client, started with any Python (another checkout's, for a before/after)."""

    def __init__(self) -> None:
        super().__init__()
        self._ids = 0

    def ask(self, text: str, offset: int) -> tuple[str, asyncio.Future]:
        """An Automatic inline-completion request; its id and the future of its answer."""
        self._ids += 1
        msg_id = f"typing-{self._ids}"
        params = types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=position_of(text, offset),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        )
        future = self.client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=msg_id
        )
        return msg_id, asyncio.ensure_future(future)

    def cancel(self, msg_id: str) -> None:
        self.client.cancel_request(types.CancelParams(id=msg_id))


def first_text(answer: object) -> str:
    items = answer.items if isinstance(answer, types.InlineCompletionList) else (answer or [])
    if not items:
        return ""
    text = items[0].insert_text
    return text if isinstance(text, str) else text.value


@dataclass
class _Asked:
    msg_id: str
    future: asyncio.Future
    sent: float
    new_line: bool  # the key before it was Enter: the first request on a new line
    answer: str | None = None  # once arrived ("" for none)
    ms: float | None = None


async def _answer_of(asked: _Asked) -> None:
    try:
        result = await asked.future
    except Exception:  # noqa: BLE001 - cancelled by us ($/cancelRequest) or failed: no answer
        return
    asked.ms = (time.perf_counter() - asked.sent) * 1000
    asked.answer = first_text(result)


# A suggestion's words as an accept-word key takes them: a word or a run of symbols, with the
# blanks before it (VS Code's word boundaries are near enough for a count of keystrokes).
WORDS = re.compile(r"[ \t\n]*(?:\w+|[^\w\s]+)|[ \t\n]+")


@dataclass
class Seen:
    """The suggestion on screen as a reader sees it: one while typing agrees with it."""

    done: int = -1  # characters of the target typed when it first showed
    text: str = ""  # as it first showed

    def count(self, shown: str, done: int, target: str, out: Replay) -> None:
        """Count ``shown`` (on screen with ``done`` characters typed) if it is a new suggestion."""
        typed = target[self.done : done] if self.done >= 0 else None
        if typed and typed + shown == self.text:
            return  # the same suggestion, typed into
        self.done, self.text = done, shown
        rest = target[done:]
        out.suggestions += 1
        out.right += rest.startswith(shown)
        first = WORDS.match(shown)
        out.first_word_right += bool(first) and rest.startswith(first.group())


def accepted(shown: str, rest: str, by_word: bool) -> tuple[str, int]:
    """What a typist takes of the suggestion ``shown`` when ``rest`` is still to type, and the
    keystrokes it costs: the whole of it (Tab) when ``rest`` starts with it; with ``by_word``,
    else its first words while they are ``rest``'s, a key each, when that saves keystrokes."""
    if shown and rest.startswith(shown):
        return shown, 1
    if not by_word:
        return "", 0
    taken, keys = "", 0
    for word in WORDS.findall(shown):
        if not rest.startswith(taken + word):
            break
        taken, keys = taken + word, keys + 1
    return (taken, keys) if len(taken) > keys else ("", 0)


def on_screen(asked: _Asked, seen: Seen, done: int, target: str, out: Replay) -> str:
    """What the previous key's answer shows when the next key is typed ("" for none), counted
    into ``out``: answered (empty or not), or late (no answer yet)."""
    if asked.answer is None:
        out.late += 1
        out.late_new_line += asked.new_line
        return ""
    out.answered += 1
    out.latencies.append(asked.ms or 0.0)
    if asked.new_line:
        out.new_line.append(asked.ms or 0.0)
    if not asked.answer:
        out.empty += 1
        out.empty_new_line += asked.new_line
        return ""
    out.on_screen += 1
    seen.count(asked.answer, done, target, out)
    return asked.answer


async def replay_case(
    bench: TypingClient, case: TypingCase, rate: float | None, out: Replay, by_word: bool = False,
    truth: dict[str, str] | None = None,
) -> None:  # fmt: skip
    """Type ``case.target`` at ``rate`` characters a second (None: wait for every answer);
    ``by_word``: the typist also accepts a suggestion's first words (``accepted``); ``truth``
    gets, for each document asked about, what was still to type there (the gate's traces)."""
    text = case.before + case.after
    offset = len(case.before)
    bench.open(text)
    done = 0
    out.chars += len(case.target)
    loop = asyncio.get_running_loop()
    asked: _Asked | None = None
    waiter: asyncio.Task | None = None
    seen = Seen()
    next_key = loop.time()
    while True:
        if rate is None and waiter is not None:
            await waiter
        elif rate is not None:
            next_key += 1 / rate
            await asyncio.sleep(max(0.0, next_key - loop.time()))
        shown = ""
        if asked is not None:  # the previous key's answer, if it came before this key
            shown = on_screen(asked, seen, done, case.target, out)
            if asked.answer is None and waiter is not None:
                bench.cancel(asked.msg_id)  # the editor drops the request a key made stale
        if done >= len(case.target):
            break
        rest = case.target[done:]
        insert, keys = accepted(shown, rest, by_word)  # Tab, or Ctrl+Right a word at a time
        if insert:
            out.accepts, out.accepted_chars = out.accepts + keys, out.accepted_chars + len(insert)
        else:
            insert = rest[0]
        text = bench.insert(text, offset, insert)
        offset += len(insert)
        done += len(insert)
        out.keystrokes += 1
        if truth is not None:  # traces on: what is still to type at this document
            truth[sha1_of(text)] = case.target[done:]
        msg_id, future = bench.ask(text, offset)
        asked = _Asked(msg_id, future, time.perf_counter(), insert.endswith("\n"))
        waiter = asyncio.ensure_future(_answer_of(asked))
    bench.close()
    await asyncio.sleep(0.3)  # let the server drop the closed document's work


@dataclass(frozen=True)
class Server:
    """The ``difill serve`` a replay types into."""

    model_dir: str | None = None  # None: the shipped model
    python: str = sys.executable  # another checkout's, for a before/after
    engine: str | None = None  # its --engine (None: the server's default)
    settings: dict | None = None  # its initializationOptions (None: the defaults)


async def _replay_on_a_fresh_server(
    server: Server, cases: list[TypingCase], rate: float | None, by_word: bool = False, trace: Path | None = None
) -> Replay:  # fmt: skip
    """One replay over every case, on a server of its own: its cache starts empty.  ``trace``:
    the show gate's trace of every gated text (server/show_gate.py), labelled with what was typed."""
    if trace is not None:
        trace.unlink(missing_ok=True)
        os.environ[TRACE_ENV] = str(trace)  # the server inherits it
    bench = TypingClient()
    truth: dict[str, str] | None = (
        {} if trace is not None else None
    )  # a document's sha1 -> what is left to type
    try:
        await bench.start(server.model_dir, server.python, server.engine, server.settings)
    finally:
        os.environ.pop(TRACE_ENV, None)
    bench.open(cases[0].before + cases[0].after)
    await asyncio.wait_for(bench.ready.wait(), 300)
    bench.close()
    replay = Replay()
    for case in cases:
        await replay_case(bench, case, rate, replay, by_word, truth)
    await bench.stop()
    if trace is not None and truth is not None:
        labelled(trace, truth)
    return replay


def sha1_of(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def labelled(trace: Path, truth: dict[str, str]) -> None:
    """The trace's rows with ``typed``: what was typed next at that document (its first 512
    characters: enough to judge any text the gate may show), in place; a row of a document the
    replay did not type is dropped."""
    rows = []
    for line in trace.read_text(encoding="utf-8").splitlines() if trace.exists() else []:
        row = json.loads(line)
        rest = truth.get(row["sha1"])
        if rest is not None:
            rows.append(json.dumps({**row, "typed": rest[:512]}))
    trace.write_text("".join(r + "\n" for r in rows), encoding="utf-8")


async def _bench_typing(
    server: Server, cases: list[TypingCase], rates: tuple[float, ...], accept: str = "whole", trace: str | None = None
) -> dict:  # fmt: skip
    report: dict = {
        "files": len(cases), "paths": [c.path for c in cases], "python": server.python, "engine": server.engine,
        "accept": accept, "settings": server.settings,
    }  # fmt: skip
    for rate in (None, *rates):
        name = "waited" if rate is None else f"{rate:g}_chars_per_s"
        path = Path(f"{trace}.{name}.jsonl") if trace else None
        replay = await _replay_on_a_fresh_server(server, cases, rate, accept == "word", path)
        report[name] = replay.summary()
        print(f"typing replay {name}: {report[name]}", file=sys.stderr, flush=True)
    return report


def bench_typing(
    files: int, rates: tuple[float, ...] = RATES, repos: str | None = None, accept: str = "whole",
    trace: str | None = None, server: Server = Server(),
) -> dict:  # fmt: skip
    """``files`` files of ``repos`` (None: the corpus's held-out files) typed into ``server``.
    ``accept``: "whole" (Tab takes a suggestion the text to type starts with) or "word" (also
    its first words, Ctrl+Right a word: ``accepted``).  ``trace``: a path prefix for the show
    gate's labelled traces, one file a replay (``TRACE.waited.jsonl``, ``TRACE.6_chars_per_s.jsonl``)."""
    if accept not in ("whole", "word"):
        raise ValueError(f'accept must be "whole" or "word", not {accept!r}')
    source, rows = repos_sources(repos) if repos else typing_sources()
    cases = typing_cases(rows, files)
    if not cases:
        raise SystemExit(f"no Python files with 40+ lines in {source}")
    print(f"typing into {len(cases)} files from {source}", file=sys.stderr, flush=True)
    report = asyncio.run(_bench_typing(server, cases, rates, accept, trace))
    return {"source": source, **report}


def format_typing(report: dict) -> str:
    rows = [
        f"typing replay: 3 lines inside each of {report['files']} files ({report['source']}), through `difill serve`"
        + (", suggestions also accepted a word at a time" if report.get("accept") == "word" else ""),
        "| typing | net keystrokes saved | shown precision: right / first word right (suggestions) "
        "| suggestion on screen before the next key | answers in time | p50 ms | p95 ms "
        "| first on a new line: p50 / p95 ms (answers) | no suggestion: empty in time / late (of them on a new line) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label in [("waited", "every request waited for")] + [
        (k, f"{k.split('_')[0]} chars/s") for k in report if k.endswith("_chars_per_s")
    ]:
        s = report[key]
        on_screen = "-" if key == "waited" else f"{s['on_screen_share']:.0%}"
        rows.append(
            f"| {label} | {s['net_saved']:.1%} | {s['shown_precision']:.1%} / {s['first_word_right']:.1%} "
            f"({s['suggestions']}) | {on_screen} | {s['answered_in_time']} of {s['keystrokes']} | "
            f"{s['p50_ms']} | {s['p95_ms']} | {s['new_line_p50_ms']} / {s['new_line_p95_ms']} ({s['new_line_answers']}) | "
            f"{_misses(s['misses'])} |"
        )
    return "\n".join(rows)


def _misses(misses: dict) -> str:
    return f"{misses['empty']} ({misses['empty_new_line']}) / {misses['late']} ({misses['late_new_line']})"


async def _new_line_latency(
    model_dir: str | None, cases: list[TypingCase], pause_s: float, python: str
) -> dict:
    """The first request on a new line after the user paused at the end of the line before
    (``pause_s``, reading the ghost text): end of line, pause, Enter, request."""
    bench = TypingClient()
    await bench.start(model_dir, python)
    bench.open(cases[0].before + cases[0].after)
    await asyncio.wait_for(bench.ready.wait(), 300)
    bench.close()
    latencies: list[float] = []
    for case in cases:
        first_line = case.target.split("\n")[0]
        text = case.before + first_line + case.after
        offset = len(case.before) + len(first_line)
        bench.open(text)
        _, answer = bench.ask(text, offset)  # the line end, as the typist reaches it
        await answer
        await asyncio.sleep(pause_s)
        text = bench.insert(text, offset, "\n")
        sent = time.perf_counter()
        _, answer = bench.ask(text, offset + 1)
        await answer
        latencies.append((time.perf_counter() - sent) * 1000)
        bench.close()
        await asyncio.sleep(0.3)
    await bench.stop()
    return {
        "files": len(cases),
        "pause_s": pause_s,
        "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "python": python,
    }


if __name__ == "__main__":  # the first request on a new line: python -m lab.bench_typing N [PYTHON]
    source, rows = typing_sources()
    cases = typing_cases(rows, int(sys.argv[1]) if len(sys.argv) > 1 else 20, seed=3)
    python = sys.argv[2] if len(sys.argv) > 2 else sys.executable
    print(json.dumps({"source": source, **asyncio.run(_new_line_latency(None, cases, 1.0, python))}))
