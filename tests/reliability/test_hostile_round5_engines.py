"""Issue 62 (hostile inputs, round 5), the engines, through a real ``difill serve``: a vLLM that
answers impossible log-probabilities while names are scored, an invoked request after an automatic
one at the same spot, and (rows 8) canvases wider than the llama.cpp worker's micro-batch.  Each
test failed on f7ad0f7; every wait has a deadline."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_hostile_round2 import open_doc, popups

from difill.engine.native.build import build_native
from lab.fake_vllm import FakeVllm, serve_in_thread

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


# ---------------------------------------------------------------------------- row 11


@pytest.mark.parametrize("fake_vllm", [{"middles": ("a + b", "a - b", "a * b")}], indirect=True)
def test_an_invoked_request_after_an_automatic_one_at_the_same_spot_asks_for_every_candidate(
    start_server, tmp_path, fake_vllm
):
    """The automatic request asks one sample (``n: 1``), and the speculative fill it starts for the
    spot after its ghost text asks one too; the invoked request at the same spot then asks its own
    three (``n: 3``) and shows three candidates, as it does alone.  (Not reproduced on f7ad0f7: the
    ``n: 1`` seen after an automatic request is that speculative fill, at another spot.)"""
    root = tmp_path / "ws"
    root.mkdir()
    server = serve_vllm(start_server, root, fake_vllm.url)
    uri = (root / "add.py").as_uri()
    open_doc(server, uri, "def add(a, b):\n    return \n\nprint(add(1, 2))\n")
    seen = len(fake_vllm.seeded_bodies())  # the warm-up fill's
    automatic = ask(server, uri, 1, len("    return "), invoked=False)["result"]["items"]
    invoked = ask(server, uri, 1, len("    return "), invoked=True)["result"]["items"]
    bodies = fake_vllm.seeded_bodies()[seen:]
    at_spot = [b["n"] for b in bodies if b["prompt"] == bodies[0]["prompt"]]
    assert at_spot == [1, 3], [(b["n"], b["prompt"][-12:]) for b in bodies]
    assert len(automatic) == 1
    assert sorted(item["insertText"] for item in invoked) == ["a * b", "a + b", "a - b"]


# ---------------------------------------------------------------------------- row 8


def worker_pids(server_pid: int) -> list[int]:
    """The server's children that are llama.cpp workers (as tests/server/test_lsp_llamacpp.py)."""
    pids = []
    for task in Path(f"/proc/{server_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if "difill-llama-worker" in Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace"):
                pids.append(int(child))
    return pids


def test_llamacpp_answers_a_45_line_rewrite_and_512_token_ghost_text_without_its_worker_dying(
    start_server, tmp_path
):
    """Canvases wider than the worker's 512-slot micro-batch: on f7ad0f7 each aborted the worker
    (SIGABRT) and the request failed with a popup; torch answered them."""
    build_native(log=lambda line: None)  # a no-op when current; the server exports the shipped GGUF
    server = start_server(None, "--engine", "llamacpp", "--llamacpp-threads", "1")
    server.answers["workspace/applyEdit"] = {"applied": True}
    # editGate off: this is the worker's test; the tiny model's rewrite is noise the gate holds back.
    server.initialize(options={"maxTokens": 512, "steps": 4, "editGate": False})
    ready = server.wait_ready(timeout=180)["params"]
    assert ready["state"] == "ready" and "(llama.cpp)" in ready["message"], ready
    (worker,) = worker_pids(server.proc.pid)

    ghost = tmp_path / "ghost.py"
    open_doc(server, ghost.as_uri(), "def add(a, b):\n    return \n\nprint(add(1, 2))\n")
    answer = ask(server, ghost.as_uri(), 1, len("    return "), invoked=False)
    assert "result" in answer, answer
    assert worker_pids(server.proc.pid) == [worker]  # f7ad0f7: it had died (the answer was empty)

    body = "".join(f"    total_{i} = compute(total_{i - 1}, item_{i})\n" for i in range(1, 46))
    text = f"def run(items):\n    total_0 = 0\n{body}    return total_45\n"
    edited = tmp_path / "edited.py"
    open_doc(server, edited.as_uri(), text)
    selection = {"start": {"line": 2, "character": 0}, "end": {"line": 47, "character": 0}}
    answer = server.request("workspace/executeCommand", {
        "command": "difill.editSelection", "arguments": [{"uri": edited.as_uri(), "version": 1, "range": selection}],
    }, timeout=120)  # fmt: skip
    assert "error" not in answer, answer  # f7ad0f7: the worker died (exit code -6)
    assert [r for r in server.server_requests if r["method"] == "workspace/applyEdit"]
    assert worker_pids(server.proc.pid) == [worker]  # the same worker answered both
    assert not [p for p in popups(server) if "worker" in p], popups(server)
