"""The suggestion pipeline without LSP: staleness, cancellation, cache, candidates per trigger,
fills kept while the user types into them, and speculation."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

from lsprotocol import types

from difill.server.config import Settings
from difill.server.context.found import Retrieval, Snippet
from difill.server.documents import UTF16, Documents
from difill.server.engine_host import EngineHost, Job, JobCancelled, ModelState
from difill.server.feature_handle import FeatureHandle
from difill.server.features.suggestions.service import SuggestionService
from difill.server.suggestion_path import Retrieved
from difill.server.trees import SyntaxTrees

URI = "file:///a.py"
TEXT = "def f(x):\n    return x + \n"
OFFSET = len("def f(x):\n    return x + ")


@dataclass
class FakeCandidate:
    text: str
    hole_length: int = 8
    score: float = 0.0
    complete: bool = True
    source: str = "model"  # Candidate.source: the show gate reads where a text came from


@dataclass
class FakeResult:
    candidates: list[FakeCandidate]
    stats: object = field(default_factory=lambda: type("Stats", (), {"steps": 3})())


class FakeEngine:
    """Answers ``texts``, honouring the option that matters here as the engine does: with a
    ``min_token_prob`` above 0 (ghost text; None is the checkpoint's, which cuts too) each text is
    cut where the model is "unsure", at its first "("."""

    def __init__(self, texts):
        self.texts = texts
        self.calls = 0
        self.prefixes: list[str] = []

    def fill(self, prefix, suffix, options, should_stop=None, on_preview=None):
        self.calls += 1
        self.prefixes.append(prefix)
        self.last_options = options
        cut = options.min_token_prob is None or options.min_token_prob > 0
        return FakeResult([FakeCandidate(t.split("(")[0] if cut else t) for t in self.texts])


class FakeHost:
    """Runs work inline, after ``release`` is set, honouring the job's cancel flag."""

    def __init__(self, engine):
        self.engine = engine
        self.state = ModelState.READY
        self.release = asyncio.Event()
        self.release.set()
        self.started = asyncio.Event()

    async def wait_ready(self, timeout_s):
        return self.engine

    async def run(self, job: Job, work, *args, urgent: bool = False, background: bool = False):
        self.started.set()
        await self.release.wait()
        if job.cancelled:
            raise JobCancelled()
        return work(self.engine, *args)


def service(texts, settings=None, text=TEXT, speculate=False):
    documents = Documents()
    documents.open(URI, "python", 1, text)
    engine = FakeEngine(texts)
    handle = FeatureHandle(documents, FakeHost(engine), lambda: settings or Settings(), SyntaxTrees())
    svc = SuggestionService(handle, speculate=speculate)
    return svc, documents, engine


def insert(documents: Documents, at: int, new: str, uri: str = URI):
    """The user types ``new`` at character ``at`` (a one-line document prefix: columns are offsets)."""
    document = documents.get(uri)
    line = document.text.count("\n", 0, at)
    column = at - (document.text.rfind("\n", 0, at) + 1)
    position = types.Position(line=line, character=column)
    change = types.TextDocumentContentChangePartial(range=types.Range(start=position, end=position), text=new)
    return documents.change(uri, document.version + 1, [change], UTF16)


async def test_invoked_gets_every_candidate_and_automatic_one():
    svc, documents, _ = service(["1", "2", "y"])
    invoked = await svc.suggest(documents.get(URI), OFFSET, invoked=True)
    automatic = await svc.suggest(documents.get(URI), OFFSET, invoked=False)
    assert invoked.texts == ["1", "2", "y"] and automatic.texts == ["1"]


async def test_filters_drop_duplicates_and_empty_candidates():
    svc, documents, _ = service(["1\nprint()", "1", "   ", "\x00"])
    assert (await svc.suggest(documents.get(URI), OFFSET, invoked=True)).texts == ["1"]


async def test_stale_result_is_never_returned_even_when_the_fill_finishes():
    svc, documents, _ = service(["1"])
    svc.document_changed = lambda uri: None  # a change that does not stop the fill in flight
    svc.host.release.clear()
    request = asyncio.ensure_future(svc.suggest(documents.get(URI), OFFSET, invoked=True))
    await svc.host.started.wait()
    at = types.Position(line=1, character=15)
    documents.change(
        URI, 2, [types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text="2")], UTF16
    )
    svc.host.release.set()
    result = await request
    assert result.texts == [] and result.source == "stale"


async def test_a_change_outside_the_cursor_cancels_the_fill_in_flight():
    svc, documents, engine = service(["1"])
    svc.host.release.clear()
    request = asyncio.ensure_future(svc.suggest(documents.get(URI), OFFSET, invoked=True))
    await svc.host.started.wait()
    insert(documents, 0, "#")  # an edit above the cursor
    svc.document_changed(URI)
    svc.host.release.set()
    result = await request
    assert result.source == "cancelled" and engine.calls == 0


async def test_second_request_is_served_from_the_cache():
    svc, documents, engine = service(["compute(1)"])
    await svc.suggest(documents.get(URI), OFFSET, invoked=True)
    again = await svc.suggest(documents.get(URI), OFFSET, invoked=True)
    assert again.source == "cache" and engine.calls == 1


async def test_disabled_language_gets_nothing():
    svc, documents, engine = service(["1"], Settings(languages=("rust",)))
    result = await svc.suggest(documents.get(URI), OFFSET, invoked=True)
    assert result.texts == [] and engine.calls == 0


async def test_typing_asks_for_one_hole_length_and_an_invoked_request_for_several():
    svc, documents, engine = service(["1"])
    await svc.suggest(documents.get(URI), OFFSET, invoked=False)
    assert len(engine.last_options.candidate_lengths()) == 1
    await svc.suggest(documents.get(URI), OFFSET, invoked=True)  # not served from the automatic one
    assert len(engine.last_options.candidate_lengths()) == 3 and engine.calls == 2


# ---------------------------------------------------------------- the cache keys on what was asked


async def test_an_explicit_request_after_ghost_text_gets_whole_middles():
    svc, documents, engine = service(["compute(1)", "other(2)"])
    ghost = await svc.suggest(documents.get(URI), OFFSET, invoked=False)
    asked = await svc.suggest(documents.get(URI), OFFSET, invoked=True)
    assert ghost.texts == ["compute"]
    assert asked.texts == ["compute(1)", "other(2)"] and asked.source == "model" and engine.calls == 2


async def test_ghost_text_after_an_explicit_request_gets_the_cut():
    svc, documents, engine = service(["compute(1)"])
    asked = await svc.suggest(documents.get(URI), OFFSET, invoked=True)
    ghost = await svc.suggest(documents.get(URI), OFFSET, invoked=False)
    assert asked.texts == ["compute(1)"] and ghost.texts == ["compute"] and engine.calls == 2
    # and each is then served from its own entry
    assert (await svc.suggest(documents.get(URI), OFFSET, invoked=False)).source == "cache"
    assert (await svc.suggest(documents.get(URI), OFFSET, invoked=True)).texts == ["compute(1)"]


async def test_the_cache_keys_on_the_document_line_endings():
    crlf = "def f(x):\r\n    return x\r\n\r\n\r\nprint(1)\r\n"
    svc, documents, engine = service(["y = 1\nz = 2"], text=crlf)
    first = await svc.suggest(documents.get(URI), len("def f(x):\r\n    return x\r\n\r\n"), invoked=True)
    assert first.texts == ["y = 1\r\nz = 2"]
    lf = crlf.replace("\r\n", "\n")  # the file converted to LF: the same text otherwise
    documents.open(URI, "python", 5, lf)
    after = await svc.suggest(documents.get(URI), len("def f(x):\n    return x\n\n"), invoked=True)
    assert after.texts == ["y = 1\nz = 2"] and after.source == "model" and engine.calls == 2


# ---------------------------------------------------------------- a fill in flight while the user types


async def start_ghost_request(svc, documents):
    """A ghost-text request whose fill is on the worker, not yet finished, with its first draft."""
    svc.host.release.clear()
    request = asyncio.ensure_future(svc.suggest(documents.get(URI), OFFSET, invoked=False))
    await svc.host.started.wait()
    fill = svc.running[URI]
    fill.on_preview("compute(1)", 1)  # what the worker reports after its first denoising step
    return request, fill


async def test_typing_what_the_fill_writes_is_served_from_that_fill_when_it_finishes():
    svc, documents, engine = service(["compute(1)"])
    first, fill = await start_ghost_request(svc, documents)
    typed = insert(documents, OFFSET, "co")
    svc.document_changed(URI)
    first.cancel()  # the client cancels the superseded request ($/cancelRequest)
    second = asyncio.ensure_future(svc.suggest(typed, OFFSET + 2, invoked=False))
    await asyncio.sleep(0)
    assert not fill.job.cancelled
    svc.host.release.set()
    result = await second
    assert result.texts == ["mpute"] and result.source == "in flight"
    assert engine.calls == 1 and engine.prefixes[0].endswith("return x + ")


async def test_a_request_again_at_the_same_spot_waits_for_the_fill_even_when_it_finds_nothing():
    svc, documents, engine = service(["   "])  # nothing survives the filters
    first, fill = await start_ghost_request(svc, documents)
    first.cancel()
    again = asyncio.ensure_future(svc.suggest(documents.get(URI), OFFSET, invoked=False))
    await asyncio.sleep(0)
    svc.host.release.set()
    result = await again
    assert result.texts == [] and result.source == "in flight" and engine.calls == 1


async def test_typing_something_else_cancels_the_fill_and_starts_one_for_the_new_text():
    svc, documents, engine = service(["compute(1)"])
    first, fill = await start_ghost_request(svc, documents)
    typed = insert(documents, OFFSET, "z")
    svc.document_changed(URI)
    assert fill.job.cancelled
    second = asyncio.ensure_future(svc.suggest(typed, OFFSET + 1, invoked=False))
    svc.host.release.set()
    assert (await first).source == "cancelled"
    result = await second
    assert result.source == "model" and engine.calls == 1 and engine.prefixes[0].endswith("return x + z")


async def test_a_request_elsewhere_cancels_the_fill_in_flight():
    svc, documents, engine = service(["compute(1)"])
    first, fill = await start_ghost_request(svc, documents)
    elsewhere = asyncio.ensure_future(svc.suggest(documents.get(URI), len("def f("), invoked=False))
    await asyncio.sleep(0)
    assert fill.job.cancelled
    svc.host.release.set()
    assert (await first).source == "cancelled" and (await elsewhere).source == "model"


async def test_a_cancelled_request_fill_finishes_into_the_cache():
    svc, documents, engine = service(["compute(1)"])
    first, fill = await start_ghost_request(svc, documents)
    first.cancel()  # $/cancelRequest, with nothing typed
    await asyncio.sleep(0)
    assert not fill.job.cancelled
    svc.host.release.set()
    await fill.task
    again = await svc.suggest(documents.get(URI), OFFSET, invoked=False)
    assert again.texts == ["compute"] and again.source == "cache" and engine.calls == 1


async def test_work_nobody_waits_for_is_bounded():
    svc, documents, _ = service(["compute(1)"])
    svc.host.release.clear()
    fills = []
    for n in range(4):  # four documents, each with a fill whose request the client cancelled
        uri = f"file:///{n}.py"
        documents.open(uri, "python", 1, TEXT)
        request = asyncio.ensure_future(svc.suggest(documents.get(uri), OFFSET, invoked=False))
        await asyncio.sleep(0)
        fills.append(svc.running[uri])
        request.cancel()
        await asyncio.sleep(0)
    assert [f.job.cancelled for f in fills] == [True, True, False, False]
    svc.host.release.set()


# ---------------------------------------------------------------- speculation


class SteppingEngine:
    """A fill of ``steps`` steps of 5 ms, each checking ``should_stop`` as the engine does."""

    def __init__(self, text: str, steps: int):
        self.text, self.steps = text, steps
        self.speculating = threading.Event()
        self.stepped = 0  # the speculative fill's steps so far: a clock that load slows as it slows the rest

    def fill(self, prefix, suffix, options, should_stop=None, on_preview=None):
        long = self.text in prefix  # after the suggestion: the speculative fill
        if long:
            self.speculating.set()
        for _ in range(self.steps if long else 1):
            if should_stop():
                from difill.engine.api import Cancelled

                raise Cancelled()
            time.sleep(0.005)
            self.stepped += long
        return FakeResult([FakeCandidate(self.text)])


async def test_speculation_never_delays_a_real_request():
    engine = SteppingEngine("total", steps=400)  # a 2 s speculative fill
    host = EngineHost(lambda *args: None)
    host.engine, host.state = engine, ModelState.READY
    documents = Documents()
    documents.open(URI, "python", 1, TEXT)
    documents.open("file:///b.py", "python", 1, TEXT.replace("x", "y"))
    svc = SuggestionService(FeatureHandle(documents, host, Settings, SyntaxTrees()))
    try:
        shown = await svc.suggest(documents.get(URI), OFFSET, invoked=False)
        assert shown.texts == ["total"]
        await asyncio.to_thread(engine.speculating.wait, 2)
        speculation = svc.running[URI]
        assert speculation.speculative and not speculation.task.done()
        started = engine.stepped
        other = await svc.suggest(documents.get("file:///b.py"), OFFSET, invoked=False)
        assert other.source == "model" and engine.stepped - started < 100  # of its 400: never waited for it
        assert not speculation.task.done()  # answered between two of its steps, not after it
        here = await svc.suggest(documents.get(URI), len("def f("), invoked=False)  # a request elsewhere
        assert here.source == "model" and speculation.job.cancelled
    finally:
        svc.shutdown()
        host.shutdown()


async def test_the_next_line_after_an_accepted_suggestion_is_served_by_the_speculative_fill():
    svc, documents, engine = service(["total"], speculate=True)
    shown = await svc.suggest(documents.get(URI), OFFSET, invoked=False)
    speculation = svc.running[URI]  # "total" ends the line: the fill for the next line
    insert(documents, OFFSET, "total")  # the user accepts: one change inserting it
    svc.document_changed(URI)
    entered = insert(documents, OFFSET + len("total"), "\n")  # and presses Enter
    svc.document_changed(URI)
    assert not speculation.job.cancelled
    await speculation.task
    after = await svc.suggest(entered, OFFSET + len("total\n"), invoked=False)
    assert shown.texts == ["total"] and after.source == "cache" and engine.calls == 2
    assert engine.prefixes[1].endswith("return x + total\n")


async def test_mid_line_speculation_is_after_the_suggestion_and_typing_elsewhere_cancels_it():
    svc, documents, engine = service(["total"], text="def f(x):\n    return x +  + 1\n", speculate=True)
    await svc.suggest(documents.get(URI), OFFSET, invoked=False)
    speculation = svc.running[URI]
    assert speculation.path == "total" and speculation.text.endswith("return x + total + 1\n")
    insert(documents, OFFSET, "tot")  # typing the suggestion keeps it
    svc.document_changed(URI)
    assert not speculation.job.cancelled
    insert(documents, OFFSET + 3, "x")  # leaving it cancels it
    svc.document_changed(URI)
    assert speculation.job.cancelled


async def test_workspace_snippets_reach_the_model_as_the_block_before_the_prefix():
    snippet = Snippet("lib/geo.py", 0, "def area(r):\n    return 3.14 * r * r", "definition", 1.0)
    svc, documents, engine = service(["area(2)"])
    svc.workspace = Retrieved(Retrieval([], [snippet]))
    await svc.suggest(documents.get(URI), OFFSET, invoked=True)
    assert engine.last_options.context_block == (
        "# Path: lib/geo.py\n# def area(r):\n#     return 3.14 * r * r\n"
    )
    svc, documents, engine = service(["area(2)"], settings=Settings(snippet_tokens=0))
    svc.workspace = Retrieved(Retrieval([], [snippet]))
    await svc.suggest(documents.get(URI), OFFSET, invoked=True)
    assert engine.last_options.context_block == ""
