"""Issue 46's bad input for jedi, through a real ``difill serve`` as an editor drives it: a
50k-line module, syntax errors, an import cycle inside a star-import chain, a module that runs
code at import, a package of 10,000 modules with a symlink loop, and a file the secrets policy
denies.  Each workspace also holds a name only jedi can find (behind a star import or in the
standard library), asked for until it comes: without that answer a test of what does not happen
(no freeze, no import, no leak) would prove nothing.

The model is a fake remote that answers "x" to every fill and records what it is sent: a name
shown comes from the context (the drafts, the index and jedi), and a body sent can be read."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_hostile_round2 import FakeRemote, inline, open_doc

ASK_FOR_S = 60.0  # jedi loads its stubs (about a second) and parses in the background meanwhile
ANSWER_S = 3.0  # any one request: far below a frozen loop, far above a request's usual ms


@pytest.fixture()
def remote() -> Iterator[FakeRemote]:
    fake = FakeRemote()
    yield fake
    fake.close()


def serve(start_server, root: Path, remote: FakeRemote, **options):
    server = start_server(None, "--log-level", "DEBUG", env={"DIFILL_API_KEY": ""})
    server.initialize(options={"remote": remote.url, "contextDrafts": "show", **options}, root_uri=root.as_uri())
    return server


def shown(server, uri: str, line: int, character: int) -> tuple[list[str], float]:
    started = time.perf_counter()
    items = inline(server, uri, line, character)["result"]["items"]
    return [item["insertText"] for item in items], time.perf_counter() - started


def ask_until(server, uri: str, line: int, character: int, wanted: str) -> tuple[list[list[str]], float]:
    """Ask for ghost text at the position until an item starts with ``wanted``; every answer seen
    and the slowest request.  Fails when ``wanted`` never comes."""
    seen: list[list[str]] = []
    slowest, deadline = 0.0, time.monotonic() + ASK_FOR_S
    while time.monotonic() < deadline:
        texts, seconds = shown(server, uri, line, character)
        seen.append(texts)
        slowest = max(slowest, seconds)
        if any(text.startswith(wanted) for text in texts):
            return seen, slowest
        time.sleep(0.1)
    raise AssertionError(f"{wanted!r} never shown; the last answers: {seen[-3:]}")


def still_answers(server) -> None:
    started = time.perf_counter()
    response = server.request(
        "textDocument/hover", {"textDocument": {"uri": "file:///none.py"}, "position": {"line": 0, "character": 0}}
    )
    assert "error" in response or "result" in response
    assert time.perf_counter() - started < ANSWER_S
    assert server.alive()


def type_text(server, uri: str, version: int, line: int, character: int, text: str) -> None:
    server.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [{"range": {"start": {"line": line, "character": character},
                                      "end": {"line": line, "character": character}}, "text": text}],
    })  # fmt: skip


def test_a_50k_line_module_and_a_syntax_error_in_it_neither_freeze_nor_silence_jedi(start_server, tmp_path, remote):
    root = tmp_path / "ws"
    root.mkdir()
    body = "import os\n" + "".join(f"value_{i} = {i}\n" for i in range(50_000))
    last = "stem = os.path.splitex"
    server = serve(start_server, root, remote)
    uri = (root / "big.py").as_uri()
    open_doc(server, uri, body + last)
    _, slowest = ask_until(server, uri, 50_001, len(last), "t")  # the standard library's, from jedi alone
    assert slowest < ANSWER_S
    # A syntax error typed above the cursor: the server answers at once and keeps jedi's names.
    type_text(server, uri, 2, 50_001, 0, "def broken(:\n    return (\n")
    _, slowest = ask_until(server, uri, 50_003, len(last), "t")
    assert slowest < ANSWER_S
    still_answers(server)


def test_a_star_import_cycle_through_a_module_that_runs_code_is_read_never_run(start_server, tmp_path, remote):
    root = tmp_path / "ws"
    root.mkdir()
    marker = tmp_path / "imported.txt"
    (root / "m1.py").write_text("from m2 import *\n\nONE = 1\n")
    (root / "m2.py").write_text("from m1 import *\nfrom runs_code import *\n\nTWO = 2\n")
    (root / "runs_code.py").write_text(
        f"import pathlib\n\npathlib.Path({str(marker)!r}).write_text('imported')\nSTAR_ONLY_NAME = 3\n"
        "raise SystemExit('imported')\n"
    )
    (root / "cyc_a.py").write_text("import cyc_b\n\nA_VALUE = cyc_b.B_VALUE\n")
    (root / "cyc_b.py").write_text("import cyc_a\n\nB_VALUE = cyc_a.A_VALUE\n")
    text = "import cyc_a\nimport m1\n\nx = m1.STAR_ON"
    server = serve(start_server, root, remote)
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, text)
    # Only jedi follows ``from m2 import *`` (the index binds no name from a star import), through
    # the m1 <-> m2 cycle, into a module it must parse and never import.
    _, slowest = ask_until(server, uri, 3, len("x = m1.STAR_ON"), "LY_NAME")
    assert slowest < ANSWER_S
    type_text(server, uri, 2, 3, len("x = m1.STAR_ON"), "LY_NAME\ny = cyc_a.cyc_b.B_")
    ask_until(server, uri, 4, len("y = cyc_a.cyc_b.B_"), "VALUE")
    assert not marker.exists()
    still_answers(server)


def rss_mb(server) -> float:
    for line in Path(f"/proc/{server.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_package_of_10000_modules_with_a_symlink_loop(start_server, tmp_path, remote):
    root = tmp_path / "ws"
    big = root / "big"
    big.mkdir(parents=True)
    for i in range(10_000):
        (big / f"m{i}.py").write_text(f"NAME_{i} = {i}\n")
    (big / "m9999.py").write_text("from big.m9998 import *\n\nDEEP_NAME_HERE = 1\n")
    (big / "__init__.py").write_text("from big.m9999 import *\n")  # re-exports m9999's and m9998's
    (big / "again").symlink_to(big, target_is_directory=True)
    text = "import big\nimport big.again.again.again\n\nx = big.NAME_99"
    server = serve(start_server, root, remote)
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, text)
    _, slowest = ask_until(server, uri, 3, len("x = big.NAME_99"), "98")  # NAME_9998, two stars away
    assert slowest < ANSWER_S
    type_text(server, uri, 2, 3, len("x = big.NAME_99"), "98\ny = big.again.again.m1.")
    texts, seconds = shown(server, uri, 4, len("y = big.again.again.m1."))
    assert seconds < ANSWER_S
    still_answers(server)
    # The 10,000 modules are listed, not all kept parsed: the server stays at a warm server's size
    # (README: 448 MB with the shipped model; here the remote backend loads no model at all).
    assert rss_mb(server) < 1500


def test_a_denied_file_never_reaches_jedis_names_a_remote_or_the_log(start_server, tmp_path, remote):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "settings.py").write_text("from public_conf import *\nfrom secret_conf import *\n")
    (root / "public_conf.py").write_text('API_URL_BASE = "https://example.com"\n')
    (root / "secret_conf.py").write_text('API_ACCESS_TOKEN = "tok"\n\n\ndef API_ACCESS_ROTATE():\n    pass\n')
    server = serve(start_server, root, remote, contextExclude=["secret_conf.py"])
    text = "import settings\n\nurl = settings.API_U\ntoken = settings.API_A"
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, text)
    # The same star imports, one file allowed: jedi's names from it arrive ...
    ask_until(server, uri, 2, len("url = settings.API_U"), "RL_BASE")
    # ... and the denied file's never do, wherever the server shows, sends or logs them.
    for _ in range(20):
        texts, _ = shown(server, uri, 3, len("token = settings.API_A"))
        assert not any("CCESS" in t for t in texts), texts
        time.sleep(0.05)
    still_answers(server)
    assert remote.bodies  # the model was asked at the second cursor: its prompt went out
    for sent in [*remote.bodies, server.stderr_text()]:
        assert "API_ACCESS" not in sent


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def test_jedis_process_ends_with_the_server_even_a_killed_one(start_server, tmp_path, remote):
    root = tmp_path / "ws"
    root.mkdir()
    text = "import os\n\nstem = os.path.splitex"
    for ending in ("exit", "kill"):
        server = serve(start_server, root, remote)
        uri = (root / "app.py").as_uri()
        open_doc(server, uri, text)
        ask_until(server, uri, 2, len("stem = os.path.splitex"), "t")  # jedi's process answered
        jedi = {pid for pid in children(server.proc.pid) if "jedi_process" in Path(f"/proc/{pid}/cmdline").read_text()}
        assert len(jedi) == 1, jedi
        if ending == "exit":
            server.close()
        else:
            server.proc.kill()  # no shutdown: the process reads the end of its pipe
            server.proc.wait()
        deadline = time.monotonic() + 10
        while running(next(iter(jedi))):
            assert time.monotonic() < deadline, f"jedi's process outlived the server ({ending})"
            time.sleep(0.1)


def running(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()  # a zombie has ended
    except FileNotFoundError:
        return False
