"""Mercury through `difill serve` (issue 64 item 6), as an editor drives it, against the fake built
from Inception's published shapes (lab/fake_mercury.py): ghost text from the FIM endpoint, a next
edit from the edit endpoint, the key never logged, and no denied file's text ever sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stdio_client import StdioServer

from lab.fake_mercury import KEY, FakeMercury
from lab.fake_vllm import serve_in_thread

SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c"  # in .env: denied by the built-in secrets policy
SOURCE = "def area(width, height):\n    return width * height\n\n\nprint(area(2, 3))\n"


@pytest.fixture()
def fake() -> FakeMercury:
    def edit(region: str) -> str | None:  # Mercury's edit: a docstring under the def line
        head, newline, rest = region.partition("\n")
        return head + newline + '    """The area."""\n' + rest if head.startswith("def ") else None

    fake = FakeMercury(fim=lambda prompt, suffix: "width * height", edit=edit)
    fake.url, stop = serve_in_thread(fake)
    yield fake
    stop()


def mercury_server(start_server, root: Path, url: str) -> StdioServer:
    log = root.parent / "server.log"
    server = start_server(None, "--log-level", "DEBUG", "--log-file", str(log), env={"DIFILL_API_KEY": KEY})
    options = {"remote": url, "remoteKind": "mercury", "nextEdit": "on", "workspaceIndex": True}
    server.initialize(options=options, root_uri=root.as_uri())
    assert server.wait_ready()["params"]["state"] == "ready"
    return server


def open_doc(server: StdioServer, uri: str, text: str, language: str) -> None:
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}})


def ghost_text(server: StdioServer, uri: str, line: int, character: int) -> list[str]:
    answer = server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 1},
    })  # fmt: skip
    result = answer["result"]
    items = result["items"] if isinstance(result, dict) else result or []
    return [item["insertText"] for item in items]


def test_mercury_serves_ghost_text_and_a_next_edit_through_difill_serve(start_server, tmp_path, fake):
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".env").write_text(f"API_TOKEN={SECRET}\n")
    (root / "geometry.py").write_text(f"def width_of(box):\n    return box.width  # {SECRET[:3]}\n")
    server = mercury_server(start_server, root, fake.url)
    uri = (root / "area.py").as_uri()
    open_doc(server, uri, SOURCE.replace("width * height", ""), "python")
    assert ghost_text(server, uri, 1, 11) == ["width * height"]
    fim = fake.bodies("/v1/fim/completions")[-1]
    assert fim["prompt"].endswith("def area(width, height):\n    return ") and fim["suffix"].startswith("\n")

    # A renamed parameter: the drafts offer the rename again, Mercury adds its own edit.
    other = (root / "rect.py").as_uri()
    open_doc(server, other, SOURCE, "python")
    server.notify("textDocument/didChange", {
        "textDocument": {"uri": other, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 9}, "end": {"line": 0, "character": 14}},
                            "text": "w"}],
    })  # fmt: skip
    answer = server.request("textDocument/copilotInlineEdit", {
        "textDocument": {"uri": other, "version": 2}, "position": {"line": 0, "character": 10},
        "context": {"triggerKind": 1},
    })  # fmt: skip  (asked for: an automatic ask right after `w` is a word still being typed, issue 63)
    texts = [edit["text"] for edit in answer["result"]["edits"]]
    assert any('"""The area."""' in text for text in texts), texts
    (edit_body,) = fake.bodies("/v1/edit/completions")
    content = edit_body["messages"][0]["content"]
    assert "def area(w<|cursor|>, height):" in content and "-def area(width, height):" in content

    # The secrets policy: a denied file gets no request, and its text is in no request sent.
    env_uri = (root / ".env").as_uri()
    before = len(fake.requests)
    open_doc(server, env_uri, f"API_TOKEN={SECRET}\n", "dotenv")
    assert ghost_text(server, env_uri, 0, 10) == []
    assert len(fake.requests) == before
    sent = json.dumps([body for _, body, _ in fake.requests])
    assert SECRET not in sent and "API_TOKEN" not in sent
    # The key travels in the header alone: in no body, no log line, no message.
    assert KEY not in sent
    server.close()
    logged = server.stderr_text() + (tmp_path / "server.log").read_text() + json.dumps(server.notifications)
    assert "Mercury" in logged and KEY not in logged
