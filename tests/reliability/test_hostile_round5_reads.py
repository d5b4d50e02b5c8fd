"""Issue 62 (hostile inputs, round 5), rows 2, 3 and 5, through a real ``difill serve``: every read
of a user file resolves the real path first, the target must lie inside a workspace folder and
pass the secrets policy, only regular files are read, and a tab outside every workspace folder is
never sent.  Each test failed on f7ad0f7; every wait has a deadline."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from test_hostile_round2 import FakeRemote, inline, open_doc
from test_hostile_round3 import serve as serve_with_remote

PASSWORD = "tulip-orchard-forty-two"  # unquoted in a .env: no key shape, not redacted
PIN = "PIN_CODE_FOR_VAULT_7731"
HOST = "prod-db-7.corp.example"
APP = """import os

from settings import DATABASE_URL, connect

DATABASE_HOST = os.environ["DATABASE_HOST"]
DATABASE_USER = os.environ["DATABASE_USER"]
DATABASE_PASSWORD = os.environ["DATABASE_PASSWORD"]


def main():
    db = connect(DATABASE_URL, DATABASE_HOST, DATABASE_USER, DATABASE_PASSWORD)
    return db.
"""
APP_LINE, APP_COLUMN = 11, len("    return db.")
SETTINGS = 'DATABASE_URL = "postgresql://db.internal/app"\n\n\ndef connect(url, host, user, password):\n    return url\n'
ENV = f"DATABASE_HOST={HOST}\nDATABASE_USER=app\nDATABASE_PASSWORD={PASSWORD}\n"
PRIVATE = f'INTERNAL_HOST = "{HOST}"\n{PIN} = 7731\n\n\ndef connect(url, host, user, password):\n    return INTERNAL_HOST\n\n\ndef vault_login(pin):\n    return pin\n'


@pytest.fixture()
def fake_remote():
    remote = FakeRemote()  # it records every POST body
    yield remote
    remote.close()


def sent_after(server, fake_remote, uri: str, needle: str, more: int = 4) -> str:
    """Ask for ghost text at the end of APP until a body holding ``needle`` went out (the index
    builds meanwhile: without it a test of what is not sent would prove nothing), then ``more``
    times again (the issue's secrets went out in 2-3 of 4 requests); every body sent."""
    deadline = time.monotonic() + 30
    while needle not in "\n".join(fake_remote.bodies):
        assert time.monotonic() < deadline, f"no request ever carried {needle!r}: {fake_remote.bodies[-1:]}"
        inline(server, uri, APP_LINE, APP_COLUMN)
    for _ in range(more):
        inline(server, uri, APP_LINE, APP_COLUMN)
    return "\n".join(fake_remote.bodies)


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for folder in ("deploy", "app", "private"):
        (root / folder).mkdir(parents=True)
    (root / "settings.py").write_text(SETTINGS)
    (root / "app.py").write_text(APP)
    return root


# ---------------------------------------------------------------------------- row 2: symlinks to secrets


def test_a_symlink_to_the_env_file_never_sends_the_password(start_server, tmp_path, fake_remote):
    root = workspace(tmp_path)
    (root / ".env").write_text(ENV)
    os.symlink("../.env", root / "deploy" / "env_file")  # an innocent name, the .env's text
    server = serve_with_remote(start_server, tmp_path, root, fake_remote.url)
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, APP)
    sent = sent_after(server, fake_remote, uri, "Path: settings.py")
    assert PASSWORD not in sent and HOST not in sent and "env_file" not in sent
    link = (root / "deploy" / "env_file").as_uri()  # the link open in a tab: a .env, nothing is sent
    open_doc(server, link, ENV)
    assert inline(server, link, 2, len("DATABASE_PASSWORD="))["result"] == {"items": []}
    assert PASSWORD not in sent_after(server, fake_remote, uri, "Path: settings.py", more=2)


def test_a_symlink_into_an_excluded_folder_never_sends_what_it_holds(start_server, tmp_path, fake_remote):
    root = workspace(tmp_path)
    (root / "private" / "settings.py").write_text(PRIVATE)
    os.symlink("../private/settings.py", root / "app" / "local_settings.py")
    server = serve_with_remote(start_server, tmp_path, root, fake_remote.url, contextExclude=["private/"])
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, APP)
    sent = sent_after(server, fake_remote, uri, "Path: settings.py")
    assert HOST not in sent and PIN not in sent and "local_settings" not in sent


def test_jedi_reads_no_symlink_into_an_excluded_folder(start_server, tmp_path, fake_remote):
    # The index never lists app/local_settings.py: ``local_settings.`` goes to jedi, whose read of
    # the module asks the server; the link's own path passed the policy, its target did not.
    root = workspace(tmp_path)
    (root / "app" / "__init__.py").write_text("")
    (root / "private" / "settings.py").write_text(PRIVATE)
    os.symlink("../private/settings.py", root / "app" / "local_settings.py")
    text = "from app import local_settings\n\n\ndef main():\n    return local_settings.\n"
    server = serve_with_remote(
        start_server, tmp_path, root, fake_remote.url, contextExclude=["private/"], contextDrafts="show"
    )
    uri = (root / "main.py").as_uri()
    open_doc(server, uri, text)
    shown = []
    deadline = time.monotonic() + 15  # jedi's first completion loads its stubs: ask until it has
    while time.monotonic() < deadline:
        shown += [
            item["insertText"]
            for item in inline(server, uri, 4, len("    return local_settings."))["result"]["items"]
        ]
        time.sleep(0.2)
    assert fake_remote.bodies, "no request went out: the test would prove nothing"
    sent = "\n".join(fake_remote.bodies)
    assert PIN not in sent and "INTERNAL_HOST" not in sent and "vault_login" not in sent
    assert not {"connect", "vault_login"} & set(shown)  # f7ad0f7 showed the excluded file's ``connect``


# ---------------------------------------------------------------------------- row 3: a tab outside the folders


def test_a_tab_outside_every_workspace_folder_never_reaches_the_remote(start_server, tmp_path, fake_remote):
    root = workspace(tmp_path)
    notes = tmp_path / "notes" / "ops.txt"  # ~/notes/ops.txt: no workspace folder holds it
    notes.parent.mkdir()
    notes.write_text(
        f"DATABASE_HOST = {HOST}\nDATABASE_USER = ops\nDATABASE_PASSWORD = {PASSWORD}\n"
        "db = connect(DATABASE_URL, DATABASE_HOST, DATABASE_USER, DATABASE_PASSWORD)\n"
    )
    server = serve_with_remote(start_server, tmp_path, root, fake_remote.url)
    server.notify("textDocument/didOpen", {"textDocument": {
        "uri": notes.as_uri(), "languageId": "plaintext", "version": 1, "text": notes.read_text()}})  # fmt: skip
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, APP)
    sent = sent_after(server, fake_remote, uri, "Path: settings.py")
    assert PASSWORD not in sent and HOST not in sent and "ops.txt" not in sent


# ---------------------------------------------------------------------------- row 5: tsconfig.json that never ends

UTIL_TS = "export function parseArgs(argv: string[]) {\n  return argv;\n}\n\nexport const VERSION = 3;\n"
MAIN_TS = 'import * as u from "./util";\n\nexport function main() {\n  return u.'


def serve_ts(start_server, root: Path):
    server = start_server(None, env={"DIFILL_API_KEY": ""})
    # A remote on a closed port: the model is never what a request waits for.
    server.initialize(options={"remote": "http://127.0.0.1:9"}, root_uri=root.as_uri())
    uri = (root / "main.ts").as_uri()
    server.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "typescript", "version": 1, "text": MAIN_TS}})  # fmt: skip
    return server, uri


def every_request_answered(server, uri: str) -> None:
    """``u.`` is answered, and so are the next twelve requests (6 of 12 went unanswered)."""
    for _ in range(13):  # each waits 30 s at most (stdio_client.py)
        assert "result" in inline(server, uri, 3, len("  return u."))


@pytest.mark.parametrize("kind", ["stdin", "fifo"])
def test_a_tsconfig_that_never_ends_does_not_stop_the_answers(start_server, tmp_path, kind):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "util.ts").write_text(UTIL_TS)
    if kind == "stdin":
        os.symlink("/dev/stdin", root / "tsconfig.json")  # the server's stdin: the editor's pipe
    else:
        os.mkfifo(root / "tsconfig.json")  # no writer: an open waits forever
    server, uri = serve_ts(start_server, root)
    every_request_answered(server, uri)
    assert server.alive()
