"""The suggestion pipeline without LSP: staleness, cancellation, cache, candidates per trigger."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from lsprotocol import types

from difill.server.config import Settings
from difill.server.documents import UTF16, Documents
from difill.server.engine_host import Job, JobCancelled, ModelState
from difill.server.features.suggestions.service import SuggestionService

URI = "file:///a.py"


@dataclass
class FakeCandidate:
    text: str
    hole_length: int = 8
    score: float = 0.0
    complete: bool = True


@dataclass
class FakeResult:
    candidates: list[FakeCandidate]
    stats: object = field(default_factory=lambda: type("Stats", (), {"steps": 3})())


class FakeEngine:
    def __init__(self, texts):
        self.texts = texts
        self.calls = 0

    def fill(self, prefix, suffix, options, should_stop=None):
        self.calls += 1
        self.last_options = options
        return FakeResult([FakeCandidate(t) for t in self.texts])


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

    async def run(self, job: Job, work, urgent: bool = False):
        self.started.set()
        await self.release.wait()
        if job.cancelled:
            raise JobCancelled()
        return work(self.engine)


def service(texts, settings=None):
    documents = Documents()
    documents.open(URI, "python", 1, "def f(x):\n    return x + \n")
    engine = FakeEngine(texts)
    svc = SuggestionService(documents, FakeHost(engine), lambda: settings or Settings())
    return svc, documents, engine


OFFSET = len("def f(x):\n    return x + ")


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


async def test_a_change_cancels_the_fill_in_flight():
    svc, documents, engine = service(["1"])
    svc.host.release.clear()
    request = asyncio.ensure_future(svc.suggest(documents.get(URI), OFFSET, invoked=True))
    await svc.host.started.wait()
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
    svc.cache.clear()
    await svc.suggest(documents.get(URI), OFFSET, invoked=True)
    assert len(engine.last_options.candidate_lengths()) == 3
