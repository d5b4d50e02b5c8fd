"""Issue 51 (hostile inputs, round 4) through a real ``difill serve``: secrets in backups, in a
credential folder opened as the workspace, in URLs and in drafts never reach a remote; text scans
that were quadratic answer at once.  Each test failed on f5e909c; every wait has a deadline (far
below the seconds those scans froze the server for, far above what the linear scans take)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from stdio_client import cpu_seconds
from test_hostile_round2 import FakeRemote, inline, open_doc
from test_hostile_round3 import serve as serve_with_remote

from difill.server.context.symbols import symbol_query
from difill.server.context.symbols_go import exported_names

LITERAL = "0x" + "f" * 40_000  # a long run of word characters that does not end the line
UNCLOSED_GROUPS = "package util\n\n" + "var (\n\tX = 1\n" * 14_000  # 180 KB, no closing ")"


def timed(call, *args):
    """``call(*args)`` and the seconds of this thread's CPU it took (other processes on the cores
    do not count)."""
    started = time.thread_time()
    result = call(*args)
    return result, time.thread_time() - started


def test_the_token_before_a_name_after_a_long_literal_is_found_in_linear_time():
    query, seconds = timed(symbol_query, f"mask = {LITERAL} | flags.")
    assert query is not None and query.chain == "flags" and query.token_before == "|"
    assert seconds < 0.1  # f5e909c: seconds (quadratic)


def test_unclosed_go_groups_are_read_in_linear_time_and_closed_ones_still_count():
    names, seconds = timed(exported_names, UNCLOSED_GROUPS)
    assert seconds < 0.2  # f5e909c: seconds (quadratic)
    closed = "package util\n\nvar (\n\tAlpha = 1\n\tbeta = 2\n)\n\nconst (\n\tGamma = 3\n)\n\ntype (\n\tDelta struct {\n\t\tField int\n\t}\n)\n"
    assert exported_names(closed + "var (\n\tUnclosed = 1\n") == ["Alpha", "Gamma", "Delta"]


def serve(start_server, root: Path):
    server = start_server(None, env={"DIFILL_API_KEY": ""})
    # A remote on a closed port: the model is never what the request waits for.
    server.initialize(options={"remote": "http://127.0.0.1:9"}, root_uri=root.as_uri())
    return server


def keystroke(server, uri: str, line: int, text_before: str, typed: str) -> float:
    """Type ``typed`` at the end of ``line`` as an editor does, ask for ghost text there, and
    return the server's CPU seconds to answer both that and a request behind it."""
    started = cpu_seconds(server.proc.pid)
    server.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": line, "character": len(text_before)},
                                      "end": {"line": line, "character": len(text_before)}}, "text": typed}],
    })  # fmt: skip
    inline(server, uri, line, len(text_before) + len(typed))
    server.request(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
    )
    return cpu_seconds(server.proc.pid) - started


def test_a_keystroke_after_a_long_literal_does_not_freeze_the_server(start_server, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    before = f"mask = {LITERAL} | flags"
    text = f"import flags\n\n{before}\n"
    server = serve(start_server, root)
    uri = (root / "bits.py").as_uri()
    open_doc(server, uri, text)
    assert keystroke(server, uri, 2, before, ".") < 3.0  # f5e909c: 6-8.5 s at half this literal


def test_a_name_of_a_go_package_with_unclosed_groups_does_not_freeze_the_server(start_server, tmp_path):
    root = tmp_path / "ws"
    (root / "util").mkdir(parents=True)
    (root / "go.mod").write_text("module example.com/app\n\ngo 1.22\n")
    (root / "util" / "big.go").write_text(UNCLOSED_GROUPS + "\nfunc MaxRetries() int { return 3 }\n")
    text = 'package main\n\nimport "example.com/app/util"\n\nfunc main() {\n\tn := util.Ma'
    server = start_server(None, env={"DIFILL_API_KEY": ""})
    server.initialize(
        options={"remote": "http://127.0.0.1:9", "contextDrafts": "show"}, root_uri=root.as_uri()
    )
    uri = (root / "main.go").as_uri()
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "go", "version": 1, "text": text}})  # fmt: skip
    slowest, deadline, items = 0.0, time.monotonic() + 30, []
    while not items and time.monotonic() < deadline:  # the index reads big.go meanwhile
        started = cpu_seconds(server.proc.pid)  # the server's CPU: other processes do not count
        items = inline(server, uri, 5, len("\tn := util.Ma"))["result"]["items"]
        slowest = max(slowest, cpu_seconds(server.proc.pid) - started)
    assert [item["insertText"] for item in items][:1] == ["xRetries"]  # the package's names were read
    assert slowest < 3.0  # f5e909c: 10-14 s at half this file


# ---------------------------------------------------------------------------- secrets (items 1, 3, 4, 5)

PASSWORD = "Tr0ub4dor-and-3-more-words"
STRIPE_KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
APP = """from settings import DATABASE_URL, connect


def main():
    db = connect(DATABASE_URL)
    return db.
"""


@pytest.fixture()
def fake_remote():
    remote = FakeRemote()  # it records every POST body
    yield remote
    remote.close()


def sent_until(server, fake_remote, uri: str, line: int, character: int, needle: str) -> str:
    """Ask for ghost text until a body holding ``needle`` went out (the index builds meanwhile):
    without it a test of what is not sent would prove nothing."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        inline(server, uri, line, character)
        sent = "\n".join(fake_remote.bodies)
        if needle in sent:
            return sent
    raise AssertionError(f"no request ever carried {needle!r}: {fake_remote.bodies[-1:]}")


def test_backup_copies_of_secret_files_are_never_read(start_server, tmp_path, fake_remote):
    root = tmp_path / "ws"
    root.mkdir()
    for name in (".env~", ".env.bak", ".git-credentials~", ".pgpass.bak", ".netrc~", "#.env#"):
        (root / name).write_text(f"DATABASE_PASSWORD={PASSWORD}\nhost=db.internal password {PASSWORD}\n")
    (root / "id_ed25519.bak").write_text(f"-----BEGIN OPENSSH KEY-----\n{PASSWORD}\n")
    (root / "server.key.orig").write_text(f"{PASSWORD}\n")
    (root / "settings.py").write_text(
        'DATABASE_URL = "postgresql://db.internal/app"\n\n\ndef connect(url):\n    return url\n'
    )
    (root / "app.py").write_text(APP)
    server = serve_with_remote(start_server, tmp_path, root, fake_remote.url)
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, APP)
    sent = sent_until(server, fake_remote, uri, 5, 14, "Path: settings.py")
    assert PASSWORD not in sent
    for name in (".env~", ".git-credentials~", "id_ed25519.bak", "server.key.orig"):
        assert name not in sent, name


def test_the_password_of_a_url_in_another_file_is_redacted(start_server, tmp_path, fake_remote):
    root = tmp_path / "ws"
    root.mkdir()
    url = f"postgresql://app:{PASSWORD}@db.internal/app"
    (root / "settings.py").write_text(f'DATABASE_URL = "{url}"\n\n\ndef connect(url):\n    return url\n')
    (root / "app.py").write_text(APP)
    server = serve_with_remote(start_server, tmp_path, root, fake_remote.url)
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, APP)
    sent = sent_until(server, fake_remote, uri, 5, 14, "Path: settings.py")
    assert PASSWORD not in sent and "postgresql://app:<redacted>@db.internal/app" in sent


def test_a_credential_folder_opened_as_the_workspace_denies_what_it_holds(
    start_server, tmp_path, fake_remote
):
    config = tmp_path / ".config"  # as if ~/.config were opened
    (config / "gh").mkdir(parents=True)
    (config / "gh" / "hosts.yml").write_text(f"github.com:\n    oauth_token: {PASSWORD}\n")
    (config / "gcloud").mkdir()
    (config / "gcloud" / "application_default_credentials.json").write_text(f'{{"secret": "{PASSWORD}"}}\n')
    (config / "settings.py").write_text(
        'DATABASE_URL = "postgresql://db.internal/app"\n\n\ndef connect(url):\n    return url\n'
    )
    (config / "app.py").write_text(APP)
    server = serve_with_remote(start_server, tmp_path, config, fake_remote.url)
    uri = (config / "app.py").as_uri()
    open_doc(server, uri, APP)
    sent = sent_until(server, fake_remote, uri, 5, 14, "Path: settings.py")
    assert PASSWORD not in sent and "hosts.yml" not in sent
    aws = tmp_path / ".aws"  # as if ~/.aws were opened: its credentials file gets nothing, sends nothing
    aws.mkdir()
    (aws / "credentials").write_text(f"[default]\naws_secret_access_key = {PASSWORD}\naws_access_key_id = \n")
    server = serve_with_remote(start_server, tmp_path, aws, fake_remote.url)
    posts_before = len(fake_remote.bodies)
    open_doc(server, (aws / "credentials").as_uri(), (aws / "credentials").read_text())
    answer = inline(server, (aws / "credentials").as_uri(), 2, len("aws_access_key_id = "))
    assert answer["result"] == {"items": []} and len(fake_remote.bodies) == posts_before


def test_drafts_from_another_tab_reach_the_remote_redacted(start_server, tmp_path, fake_remote):
    root = tmp_path / "ws"
    root.mkdir()
    billing = f'import stripe\n\nclient = stripe.Client(api_key="{STRIPE_KEY}")\n'
    typing = "import stripe\n\nclient = stripe.Client(api_key="
    server = serve_with_remote(start_server, tmp_path, root, fake_remote.url)
    open_doc(server, (root / "billing.py").as_uri(), billing)  # an open tab: a draft source
    uri = (root / "checkout.py").as_uri()
    open_doc(server, uri, typing + "\n")
    sent = sent_until(server, fake_remote, uri, 2, len("client = stripe.Client(api_key="), '"drafts":[')
    assert STRIPE_KEY not in sent and "<redacted>" in sent


def test_a_git_ignored_file_open_in_a_tab_is_no_source_and_goes_to_no_remote(
    start_server, tmp_path, fake_remote
):
    # Issue 51, item 6: an open tab of a git-ignored file was a source for other documents, and
    # reached the remote, although docs/remote.md says git-ignored files are never read.
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".gitignore").write_text("local_settings.py\n")
    local = 'INTERNAL_HOST = "prod-db-7.corp.example"\n\n\ndef connect(url):\n    return INTERNAL_HOST\n'
    (root / "local_settings.py").write_text(local)
    (root / "settings.py").write_text(
        'DATABASE_URL = "postgresql://db.internal/app"\n\n\ndef connect(url):\n    return url\n'
    )
    (root / "app.py").write_text(APP)
    server = serve_with_remote(start_server, tmp_path, root, fake_remote.url)
    local_uri, uri = (root / "local_settings.py").as_uri(), (root / "app.py").as_uri()
    open_doc(server, local_uri, local)
    open_doc(server, uri, APP)
    sent = sent_until(server, fake_remote, uri, 5, 14, "Path: settings.py")
    assert "prod-db-7" not in sent and "local_settings.py" not in sent
    assert inline(server, local_uri, 4, len("    return "))["result"] == {"items": []}
    time.sleep(0.5)  # a request about it would have gone out by now
    assert not [body for body in fake_remote.bodies if "INTERNAL_HOST" in body], (
        "the git-ignored file went out"
    )


def test_context_exclude_given_at_initialize_is_the_policy_from_the_start(start_server, tmp_path, fake_remote):
    # contextExclude in initializationOptions (Neovim's init_options) was read into the settings
    # but not into the policy, made before initialize: the excluded files were indexed, sent as
    # snippets and offered by jedi, and an excluded document got suggestions.
    root = tmp_path / "ws"
    (root / "private").mkdir(parents=True)
    (root / "private" / "settings.py").write_text(
        f'DATABASE_URL = "postgresql://db.internal/app"\nINTERNAL_HOST = "{PASSWORD}"\n\n\ndef connect(url):\n    return url\n'
    )
    (root / "settings.py").write_text(
        'DATABASE_URL = "postgresql://db.internal/app"\n\n\ndef connect(url):\n    return url\n'
    )
    (root / "app.py").write_text(APP)
    server = serve_with_remote(start_server, tmp_path, root, fake_remote.url, contextExclude=["private/"])
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, APP)
    sent = sent_until(server, fake_remote, uri, 5, 14, "Path: settings.py")
    assert PASSWORD not in sent and "private/settings.py" not in sent
    private = (root / "private" / "settings.py").as_uri()
    open_doc(server, private, (root / "private" / "settings.py").read_text())
    assert inline(server, private, 5, len("    return "))["result"] == {"items": []}
    time.sleep(0.5)  # a request about it would have gone out by now
    assert not [body for body in fake_remote.bodies if "INTERNAL_HOST" in body or PASSWORD in body]


# ---------------------------------------------------------------------------- next edits (item 9)


def test_next_edits_in_a_900k_module_neither_block_the_loop_nor_parse_the_module_per_place(
    start_server, tmp_path
):
    # f5e909c parsed the whole document on the event loop, once and then once per place: a name
    # retyped through a keyword (every place then fails the parse check, so every place is parsed)
    # blocked every request for 3-4 s in a 300k-character module, 11 s at 0.95 M.
    body = "".join(
        f"def step_{k}(total, count):\n    total = total + count\n    return total * 2\n\n\n"
        for k in range(11_800)
    )
    text = body + "def main(total):\n" + "    total = total + 1\n" * 40 + "    return total\n"
    assert 900_000 < len(text) < 1024 * 1024  # under the parse cap
    server = start_server(None, env={"DIFILL_API_KEY": ""})
    server.initialize(
        options={"remote": "http://127.0.0.1:9", "nextEdit": "drafts"}, root_uri=tmp_path.as_uri()
    )
    uri = (tmp_path / "big.py").as_uri()
    open_doc(server, uri, text)
    line = text.count("\n") - 42  # "def main(total):", then 40 lines that use it

    def rename(version: int, old: str, new: str) -> tuple[list[dict], float]:
        started = cpu_seconds(server.proc.pid)  # the server's CPU: other processes do not count
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": 9},
                                          "end": {"line": line, "character": 9 + len(old)}}, "text": new}],
        })  # fmt: skip
        answer = server.request("textDocument/copilotInlineEdit", {
            "textDocument": {"uri": uri, "version": version}, "position": {"line": line, "character": 10 + len(new)},  # past `)`: the word left (issue 63)
        })["result"]  # fmt: skip
        return answer["edits"], cpu_seconds(server.proc.pid) - started

    edits, seconds = rename(2, "total", "for")  # a keyword: no place may take it
    assert edits == [] and seconds < 1.5  # f5e909c: 11 s at 0.95 M characters
    edits, seconds = rename(3, "for", "amount")  # then a name: the uses below are offered
    assert [edit["text"] for edit in edits] == ["amount"] * 3 and edits[0]["range"]["start"][
        "line"
    ] == line + 1


# ---------------------------------------------------------------------------- checkpoint code (item 2)


@pytest.mark.skipif(sys.platform not in ("linux", "darwin"), reason="MLX has wheels for Linux and macOS only")
def test_serve_with_mlx_refuses_a_checkpoint_that_names_its_own_model_file(
    start_server, tmp_path, tiny_model_dir
):
    # mlx-vlm imported config.json's model_file inside the language server, then served normally.
    import json
    import shutil

    hostile = shutil.copytree(tiny_model_dir, tmp_path / "hostile")
    marker = tmp_path / "the-checkpoint-code-ran"
    (hostile / "modeling.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    config = json.loads((hostile / "config.json").read_text())
    (hostile / "config.json").write_text(json.dumps({**config, "model_file": "modeling.py"}))
    server = start_server(hostile, "--engine", "mlx", env={"DIFILL_API_KEY": ""})
    server.initialize(options={})
    status = server.wait_ready()["params"]
    assert status["state"] == "error" and "model_file='modeling.py'" in status["message"], status
    assert not marker.exists()
