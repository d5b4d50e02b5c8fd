"""Edits too large for the model are refused at once, saying how to make them fit (issue 15, finding 3).

Before: a rewrite of a 32 KB selection took 72 s and 1.9 GB, holding the only model worker while
ghost text in every other document waited.
"""

from __future__ import annotations

import time

import pytest
from stdio_client import StdioServer

from difill.server.features.edits.selection import MAX_HOLES, MAX_SELECTION_CHARS

URI = "file:///tmp/caps/a.py"


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    server = StdioServer(tiny_model_dir, tmp_path_factory.mktemp("caps") / "stderr.txt")
    server.initialize()
    assert server.wait_ready()["params"]["state"] == "ready"
    yield server
    assert server.close() == 0, server.stderr_text()[-3000:]


def run_command(server: StdioServer, name: str, text: str, version: int) -> dict:
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": URI, "languageId": "python", "version": version, "text": text}})  # fmt: skip
    lines = text.count("\n")
    argument = {"uri": URI, "version": version,
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": lines, "character": 0}}}  # fmt: skip
    return server.request("workspace/executeCommand", {"command": name, "arguments": [argument]}, timeout=20)


def test_a_huge_rewrite_is_refused_at_once(server):
    text = "".join(f"value_{i} = compute(value_{i - 1}, {i})\n" for i in range(1, 2000))  # ~70 KB
    assert len(text) > MAX_SELECTION_CHARS
    started = time.monotonic()
    answer = run_command(server, "difill.editSelection", text, 1)
    assert "at most" in answer["error"]["message"] and "select less" in answer["error"]["message"], answer
    assert time.monotonic() - started < 5
    assert not [m for m in server.server_requests if m["method"] == "workspace/applyEdit"]


def test_too_many_holes_are_refused(server):
    text = "".join(f"x_{i} = <|hole|>\n" for i in range(MAX_HOLES + 1))
    answer = run_command(server, "difill.fillHoles", text, 2)
    assert f"at most {MAX_HOLES}" in answer["error"]["message"], answer


def test_a_selection_under_the_character_cap_but_past_the_canvas_cap_is_refused_by_the_engine(server):
    """3,900 emoji are under MAX_SELECTION_CHARS but about four byte tokens each: the canvas cap
    (MAX_CANVAS_TOKENS) refuses it before any model work, and says what to do."""
    text = "😀" * 3_900 + "\n"
    assert len(text) <= MAX_SELECTION_CHARS
    started = time.monotonic()
    answer = run_command(server, "difill.editSelection", text, 4)
    message = answer["error"]["message"]
    assert answer["error"]["code"] == -32803 and "canvas slots" in message and "select less" in message, (
        answer
    )
    assert time.monotonic() - started < 10
    assert "result" in server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}, "context": {"triggerKind": 1},
    })  # fmt: skip


def _applied(text: str, edits: list[dict]) -> str:
    """``text`` (ASCII, so columns are offsets) after LSP text edits, applied last first."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def offset(position: dict) -> int:
        return starts[position["line"]] + position["character"]

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = text[: offset(edit["range"]["start"])] + edit["newText"] + text[offset(edit["range"]["end"]) :]
    return text


def test_an_edit_within_the_caps_still_runs(server):
    text = "x = <|hole|>\ny = <|hole|>\n"
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": URI, "languageId": "python", "version": 3, "text": text}})  # fmt: skip
    argument = {"uri": URI, "version": 3,
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}}  # fmt: skip
    asked = len(server.server_requests)
    server.answers["workspace/applyEdit"] = {"applied": True}
    try:
        answer = server.request(
            "workspace/executeCommand", {"command": "difill.fillHoles", "arguments": [argument]}, timeout=60
        )
    finally:
        server.answers.clear()
    # The edit was computed and sent: one applyEdit for this document that fills both holes.
    [apply] = [m for m in server.server_requests[asked:] if m["method"] == "workspace/applyEdit"]
    edits = apply["params"]["edit"]["changes"][URI]
    filled = _applied(text, edits)
    assert "<|hole|>" not in filled and filled.startswith("x = ") and "\ny = " in filled, filled
    assert answer["result"] == {"applied": True, "edits": len(edits), "failureReason": None}, answer
