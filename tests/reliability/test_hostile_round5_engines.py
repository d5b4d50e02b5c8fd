"""Issue 62 (hostile inputs, round 5), the engines, through a real ``difill serve``: a vLLM that
answers impossible log-probabilities while names are scored, an invoked request after an automatic
one at the same spot, and (rows 8) canvases wider than the llama.cpp worker's micro-batch.  Each
test failed on f7ad0f7; every wait has a deadline."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_hostile_round2 import open_doc

from difill.lab.fake_vllm import FakeVllm, serve_in_thread

UTIL = "def alpha_one():\n    return 1\n\n\ndef alpha_two():\n    return 2\n"
MAIN = "import util\n\nx = util.alpha_\n"


@pytest.fixture()
def fake_vllm(request) -> Iterator[FakeVllm]:
    """The fake vLLM 0.33.0 (lab/fake_vllm.py), with the fields the test's parameter gives."""
    fake = FakeVllm(canvas_length=256, **getattr(request, "param", {}))
    fake.url, stop = serve_in_thread(fake)
    yield fake
    stop()


def serve_vllm(start_server, root: Path, url: str):
    server = start_server(None, env={"DIFILL_API_KEY": ""})
    server.initialize(options={"remote": url, "remoteCanvas": "auto"}, root_uri=root.as_uri())
    assert server.wait_ready()["params"]["state"] == "ready"
    return server


def ask(server, uri: str, line: int, character: int, invoked: bool) -> dict:
    return server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 1 if invoked else 2},
    })  # fmt: skip


def logged(server) -> str:
    return "\n".join(
        m["params"]["message"] for m in server.notifications if m["method"] == "window/logMessage"
    )


# ---------------------------------------------------------------------------- row 9


@pytest.mark.parametrize("fake_vllm", [{"fault": "logprobs_huge"}], indirect=True)
def test_a_logprob_of_800_while_names_are_scored_answers_and_keeps_the_workspace_order(
    start_server, tmp_path, fake_vllm
):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "util.py").write_text(UTIL)
    (root / "main.py").write_text(MAIN)
    server = serve_vllm(start_server, root, fake_vllm.url)
    uri = (root / "main.py").as_uri()
    open_doc(server, uri, MAIN)
    answers, version, deadline = [], 1, time.monotonic() + 30
    # The first fill finds the seeded path; names are scored from then on.  Each round changes the
    # text after the cursor, so that no cached answer stands in for the request.
    while not any("logprobs" in b for b in fake_vllm.seeded_bodies()) and time.monotonic() < deadline:
        answers.append(ask(server, uri, 2, len("x = util.alpha_"), invoked=True))
        version += 1
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": MAIN + f"# {version}\n"}],
        })  # fmt: skip
    assert any("logprobs" in b for b in fake_vllm.seeded_bodies()), "no name was ever scored"
    answers.append(ask(server, uri, 2, len("x = util.alpha_"), invoked=True))
    assert [a.get("error") for a in answers] == [None] * len(answers)  # f7ad0f7: OverflowError
    assert all("items" in a["result"] for a in answers)
    assert "800.0, above 0: not a log-probability" in logged(server)
