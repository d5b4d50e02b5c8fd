"""Issue 62 (hostile inputs, round 5), rows 1, 12 and 13, through a real ``difill serve``: a
workspace's settings file never names the program jedi runs, a corrupt stamp of the llama.cpp
worker never stops ``engine: auto`` from loading a model, and jedi's cache folder of a server
killed with SIGKILL is removed by the next one.  Each test failed on f7ad0f7; every wait has a
deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_hostile_round2 import inline, open_doc, popups

CLOSED_REMOTE = "http://127.0.0.1:9"  # a remote on a closed port: no model loads, jedi still runs
EVIL = """#!/bin/sh
env > "{marker}"
exec {python} "$@"
"""


def evil_program(path: Path, marker: Path) -> Path:
    """A program that leaves ``marker`` (with its environment: the user's API key) and then acts
    as Python, so that jedi would take it for one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(EVIL.format(marker=marker, python=sys.executable))
    path.chmod(0o755)
    return path


def serve(start_server, root: Path, options: dict, tmp: Path):
    """A server on ``root`` whose temporary folder is ``tmp``, told ``options`` as Neovim's client
    with neoconf would: as initializationOptions, then again as a change of settings."""
    tmp.mkdir(exist_ok=True)
    server = start_server(None, env={"DIFILL_API_KEY": "sk-user-secret", "TMPDIR": str(tmp)})
    server.initialize(options={"remote": CLOSED_REMOTE, **options}, root_uri=root.as_uri())
    server.notify("workspace/didChangeConfiguration",
                  {"settings": {"difill": {"remote": CLOSED_REMOTE, **options}}})  # fmt: skip
    return server


def jedi_folders(tmp: Path) -> set[Path]:
    return set(tmp.glob("difill-jedi-*"))


def complete_after_os(server, root: Path, tmp: Path) -> set[Path]:
    """Open a Python file and ask for ghost text after ``os.`` until jedi's process has started
    (its cache folder exists); returns the folders then."""
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, "import os\n\nos.")
    deadline = time.monotonic() + 60
    while not jedi_folders(tmp) and time.monotonic() < deadline:
        inline(server, uri, 2, 3)
        time.sleep(0.2)
    assert jedi_folders(tmp), "jedi's process never started: the test would prove nothing"
    return jedi_folders(tmp)


def settle(server, root: Path, seconds: float = 4.0) -> None:
    """Time for jedi to make its environment (and to run a program, where it would)."""
    uri = (root / "app.py").as_uri()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        inline(server, uri, 2, 3)
        time.sleep(0.25)


# ---------------------------------------------------------------------------- row 1


@pytest.mark.parametrize(
    "settings_file, content",
    [
        (".vscode/settings.json", '{{\n  // the project\'s venv\n  "difill.projectPython": "{value}",\n}}\n'),
        (".neoconf.json", '{{"lspconfig": {{"difill": {{"projectPython": "{value}"}}}}}}'),
    ],
)
def test_a_workspace_settings_file_never_names_the_program_jedi_runs(
    start_server, tmp_path, settings_file, content
):
    root, marker = tmp_path / "ws", tmp_path / "ran.txt"
    # Named like an interpreter: only the refusal of the workspace's value stops it.
    program = evil_program(root / ".venv" / "bin" / "python", marker)
    (root / settings_file).parent.mkdir(parents=True, exist_ok=True)
    (root / settings_file).write_text(content.format(value=program))
    server = serve(start_server, root, {"projectPython": str(program)}, tmp_path / "tmp")
    complete_after_os(server, root, tmp_path / "tmp")
    settle(server, root)
    assert not marker.exists(), "the workspace's program ran"  # f7ad0f7: it ran, with the API key
    shown = [p for p in popups(server) if "projectPython is set by" in p]
    assert len(shown) == 1, popups(server)  # once, though the settings came twice
    assert settings_file in shown[0] and "does not run programs a workspace names" in shown[0]
    assert "user settings" in shown[0]


def test_a_program_not_named_like_python_is_never_run_even_from_user_settings(start_server, tmp_path):
    root, marker = tmp_path / "ws", tmp_path / "ran.txt"
    root.mkdir()
    program = evil_program(tmp_path / "elsewhere" / "setup.sh", marker)  # in no workspace file
    server = serve(start_server, root, {"projectPython": str(program)}, tmp_path / "tmp")
    complete_after_os(server, root, tmp_path / "tmp")
    settle(server, root)
    assert not marker.exists()  # f7ad0f7: it ran
    server.close()
    assert "is not run (setup.sh is not named like a Python interpreter)" in server.stderr_text()


def test_what_an_interpreter_must_look_like(tmp_path):
    from difill.server.context.jedi_process import not_an_interpreter

    assert not_an_interpreter(sys.executable) is None
    assert not_an_interpreter("/bin/sh") is not None  # jedi's safe=True passes it for a user: root owns it
    assert not_an_interpreter(str(tmp_path / "python")) == "not an executable file"
    script = evil_program(tmp_path / "python3.12", tmp_path / "marker")
    assert not_an_interpreter(str(script)) is None  # the name fits: the workspace screen is the other half


@pytest.mark.parametrize("approved_in_the_modal", [False, True])
def test_the_users_own_interpreter_still_names_its_packages(start_server, tmp_path, approved_in_the_modal):
    """The same setting for a real venv's python, set by the user (no workspace file names it), or
    set by the workspace and allowed in VS Code's modal (the extension sends it as ``userApproved``):
    jedi's names come from it (a name only its packages hold reaches the ghost text)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "onlyhere_pkg").mkdir()
    (site / "onlyhere_pkg" / "__init__.py").write_text("MAGIC_NUMBER_OF_THE_VENV = 1\n")
    python = str(venv / "bin" / "python")
    root = tmp_path / "ws"
    (root / ".vscode").mkdir(parents=True)
    named = {"difill.projectPython": python} if approved_in_the_modal else {}
    (root / ".vscode" / "settings.json").write_text(json.dumps({"editor.tabSize": 4, **named}))
    approvals = {"userApproved": {"projectPython": python}} if approved_in_the_modal else {}
    options = {"projectPython": python, "contextDrafts": "show", **approvals}
    server = serve(start_server, root, options, tmp_path / "tmp")
    uri = (root / "app.py").as_uri()
    typed = "onlyhere_pkg.MAGIC_NUMBER_"
    open_doc(server, uri, f"import onlyhere_pkg\n\n{typed}")
    deadline, items = time.monotonic() + 60, []
    while not items and time.monotonic() < deadline:  # jedi warms up meanwhile
        items = inline(server, uri, 2, len(typed))["result"]["items"]
        time.sleep(0.2)
    assert [item["insertText"] for item in items][:1] == ["OF_THE_VENV"]
    assert not [p for p in popups(server) if "projectPython" in p]


# ---------------------------------------------------------------------------- row 12


@pytest.mark.parametrize("stamp", ["", '{"binary": "/opt/difill/build/difill-ll'])
def test_a_corrupt_worker_stamp_leaves_engine_auto_on_torch(start_server, tmp_path, stamp):
    native = tmp_path / "cache" / "native"
    native.mkdir(parents=True)
    (native / "worker.json").write_text(stamp)  # cut short by a crash or a full disk
    env = {"DIFILL_CACHE_DIR": str(tmp_path / "cache"), "DIFILL_ENGINE": ""}  # "": auto, as users run it
    server = start_server(None, "--engine", "auto", env=env)
    server.initialize()
    status = server.wait_ready(timeout=120)
    assert status["params"]["state"] == "ready", status  # f7ad0f7: error, JSONDecodeError
    uri = (tmp_path / "a.py").as_uri()
    open_doc(server, uri, "def add(a, b):\n    return \n")
    answer = server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": 1, "character": 11},
        "context": {"triggerKind": 1},
    }, timeout=60)  # fmt: skip
    assert "error" not in answer and answer["result"]["items"], answer
    server.close()
    assert "worker.json is unreadable" in server.stderr_text() or "is not a stamp" in server.stderr_text()


# ---------------------------------------------------------------------------- row 13


def processes_naming(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds jedi's process through /proc")
def test_jedis_folder_of_a_killed_server_is_removed_by_the_next_one(start_server, tmp_path):
    root, tmp = tmp_path / "ws", tmp_path / "tmp"
    root.mkdir()
    first = serve(start_server, root, {}, tmp)
    (left,) = complete_after_os(first, root, tmp)
    jedi = processes_naming(str(left))
    assert jedi, "jedi's process was not found"
    for pid in [first.proc.pid, *jedi]:  # as an OOM killer would
        os.kill(pid, signal.SIGKILL)
    first.proc.wait(timeout=10)
    assert left.is_dir()  # nothing could remove it
    second = serve(start_server, root, {}, tmp)
    complete_after_os(second, root, tmp)
    deadline = time.monotonic() + 30
    while left.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left.exists()  # f7ad0f7: left behind, every time
    assert len(jedi_folders(tmp)) == 1  # the live server's own is kept
