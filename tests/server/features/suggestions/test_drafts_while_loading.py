"""Drafts need no model: while it loads, a suggestion that "show" would answer with a draft alone
is answered at once (issue 40), and nothing else is (the request then waits for the model); when
it could not load (a remote that is down), the same drafts are still shown."""

from __future__ import annotations

import time

from difill.server.config import Settings
from difill.server.documents import Documents
from difill.server.engine_host import EngineHost, ModelState
from difill.server.feature_handle import FeatureHandle
from difill.server.features.suggestions.service import SuggestionService
from difill.server.trees import SyntaxTrees

URI = "file:///a.py"
# "x = 1\ntotal = compute_total(" again: a match long enough to show its draft as it stands.
SEEN = "x = 1\ntotal = compute_total(items, tax)\nprint(total)\nx = 1\ntotal = compute_total("
UNSEEN = "def f(x):\n    return x + "


def service(text: str, settings: Settings) -> tuple[SuggestionService, Documents, EngineHost]:
    host = EngineHost(lambda *args: None)  # never loaded: still loading
    documents = Documents()
    documents.open(URI, "python", 1, text)
    return SuggestionService(FeatureHandle(documents, host, lambda: settings, SyntaxTrees())), documents, host


async def test_a_sure_draft_is_the_ghost_text_before_the_model_is_ready():
    svc, documents, host = service(SEEN, Settings(load_wait_ms=60_000))
    assert host.state is ModelState.LOADING
    try:
        started = time.perf_counter()
        shown = await svc.suggest(documents.get(URI), len(SEEN), invoked=False)
        assert shown.texts == ["items, tax)"] and shown.source == "drafts, the model loading"
        assert time.perf_counter() - started < 10.0  # a wait, so wall time: not after loadWaitMs (60 s here)
    finally:
        svc.shutdown()
        host.shutdown()


async def test_without_a_draft_or_with_drafts_off_the_request_waits_for_the_model():
    for text, settings in (
        (UNSEEN, Settings(load_wait_ms=0)),
        (SEEN, Settings(load_wait_ms=0, context_drafts="off")),
    ):
        svc, documents, host = service(text, settings)
        try:
            shown = await svc.suggest(documents.get(URI), len(text), invoked=False)
            assert shown.texts == [] and shown.source == "loading", (text, settings.context_drafts)
        finally:
            svc.shutdown()
            host.shutdown()


async def test_a_sure_draft_is_the_ghost_text_when_the_model_could_not_load():
    for text, expected, source in ((SEEN, ["items, tax)"], "drafts, the model error"), (UNSEEN, [], "error")):
        svc, documents, host = service(text, Settings(load_wait_ms=0))
        host.state = ModelState.ERROR  # as after a remote refused every attempt (engine_host.load)
        try:
            shown = await svc.suggest(documents.get(URI), len(text), invoked=False)
            assert (shown.texts, shown.source) == (expected, source)
        finally:
            svc.shutdown()
            host.shutdown()
