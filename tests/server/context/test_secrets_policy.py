"""Issue 37: the workspace index keeps secrets in (deny list, the whole git ignore stack,
redaction of snippets) and hostile trees out (a freezing .gitignore, FIFOs).  Each test failed on
main before the issue's fix."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
from workspace_files import write

from difill.engine.api import FillOptions
from difill.server.context import files
from difill.server.context.found import Snippet
from difill.server.context.index import WorkspaceIndex
from difill.server.context.policy import REDACTED, ContextPolicy, redact, to_model
from difill.server.context.prompt import snippet_block

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

KEY = "sk-proj-Zq8vN3xK2mLp9RtY7wEaB4cD6fGh1JkL"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8vN3xK2m"
HOME_SECRETS = {
    ".ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
    ".ssh/config": "Host prod\n  User deploy_secret_user\n",
    ".aws/credentials": f"[default]\naws_secret_access_key = {AWS_SECRET}\n",
    "certs/server.pem": "-----BEGIN CERTIFICATE-----\npem_secret_name\n",
    "certs/server.key": "key_secret_name = 1\n",
    ".netrc": "machine example.com login me password netrc_secret_name\n",
    ".git-credentials": "https://me:git_credential_secret@github.com\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=npm_secret_name\n",
    ".pgpass": "localhost:5432:db:me:pgpass_secret_name\n",
    ".docker/config.json": '{"auths": {"x": {"auth": "docker_secret_name"}}}\n',
    ".kube/config": "users:\n- name: kube_secret_name\n",
    "project/.env": f"OPENAI_API_KEY={KEY}\nDATABASE_URL=postgres://me:db_secret_name@h/db\n",
    "project/.env.production": "PROD_SECRET=env_prod_secret_name\n",
    ".bash_history": "export TOKEN=history_secret_name\n",
}
HOME_CODE = {
    "project/app.py": "import os\n\nAPI_KEY = os.environ['OPENAI_API_KEY']\n",
    "project/.env.example": "OPENAI_API_KEY=\nDATABASE_URL=\n",
}


def built(*folders: Path, policy: ContextPolicy | None = None) -> WorkspaceIndex:
    index = WorkspaceIndex(policy=policy)
    index.start()
    for folder in folders:
        index.add_folder(str(folder))
    assert index.wait_idle(60), "the index never finished"
    return index


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """Every path the index opens (os.open in files.py), resolved."""
    seen: list[str] = []
    real_open = os.open

    def recording_open(path, *args, **kwargs):
        seen.append(os.path.realpath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(files.os, "open", recording_open)
    return seen


def indexed(index: WorkspaceIndex, root: Path) -> set[str]:
    real = os.path.realpath(root)
    return {os.path.relpath(p, real) for p in index.indexed_paths()}


def test_a_home_folder_as_workspace_reads_no_secret_file(tmp_path, opened):
    home = tmp_path / "home"
    for relative, text in {**HOME_SECRETS, **HOME_CODE}.items():
        write(home / relative, text)
    index = built(home)
    try:
        assert indexed(index, home) == set(HOME_CODE)
        real = os.path.realpath(home)
        never = {os.path.join(real, relative) for relative in HOME_SECRETS}
        assert not never & set(opened), sorted(never & set(opened))
        # Typing the template gets no secret from anywhere: not as a source, not as a snippet.
        text = "OPENAI_API_KEY=sk-"
        uri = (home / "project/.env.example").as_uri()
        retrieval = index.retrieve(uri, text, len(text), "dotenv")
        everything = " ".join(t for _, t in retrieval.sources) + " ".join(s.text for s in retrieval.snippets)
        for secret in (KEY, AWS_SECRET, "db_secret_name", "env_prod_secret_name"):
            assert secret not in everything
    finally:
        index.stop()


def test_an_open_secret_file_is_never_a_source_for_another_document(tmp_path):
    root = tmp_path / "ws"
    write(root / "app.py", "x = 1\n")
    index = built(root)
    try:
        env_uri = (root / ".env").as_uri()
        index.set_open(env_uri, "dotenv", f"OPENAI_API_KEY={KEY}\n")
        index.set_open((root / "keys/deploy.pem").as_uri(), "plaintext", f"{KEY}\n")
        text = "OPENAI_API_KEY="
        retrieval = index.retrieve((root / ".env.example").as_uri(), text, len(text), "dotenv")
        assert all(KEY not in source for _, source in retrieval.sources)
    finally:
        index.stop()


def test_context_exclude_extends_the_deny_list(tmp_path):
    root = tmp_path / "ws"
    write(root / "secrets/prod.py", "prod_secret_name = 1\n")
    write(root / "infra/main.tfvars", "tfvars_secret_name = 1\n")
    write(root / "app.py", "x = 1\n")
    index = built(root, policy=ContextPolicy(("secrets/", "*.tfvars")))
    try:
        assert indexed(index, root) == {"app.py"}
    finally:
        index.stop()
    assert ContextPolicy(("secrets/",)).denies_path(str(root / "secrets/prod.py"), [str(root)])
    assert not ContextPolicy().denies_path(str(root / "secrets/prod.py"), [str(root)])


def test_the_whole_git_ignore_stack_is_honoured(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write(repo / ".git/info/exclude", "local_notes.py\n")
    write(repo / ".gitignore", "generated_*.py\n/app/rooted_only.py\n")
    config_home = tmp_path / "config"
    write(config_home / "git/ignore", "*.scratch.py\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    folder = repo / "app"  # the workspace is a subfolder of the repository
    for name in (
        "main.py",
        "local_notes.py",
        "generated_api.py",
        "rooted_only.py",
        "x.scratch.py",
        "sub/rooted_only.py",
    ):
        write(folder / name, "name_here = 1\n")
    index = built(folder)
    try:
        assert indexed(index, folder) == {"main.py", "sub/rooted_only.py"}
    finally:
        index.stop()
    # A file changed on disk is judged by the same stack.
    assert files.admitted(str(folder), str(folder / "generated_b.py")) is None
    assert files.admitted(str(folder), str(folder / "local_notes.py")) is None
    assert files.admitted(str(folder), str(folder / "new.py")) is not None


def test_a_core_excludes_file_in_gitconfig_is_used(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write(
        tmp_path / "home/.gitconfig", f"[user]\n  name = x\n[core]\n  excludesFile = {tmp_path}/my-ignores\n"
    )
    write(tmp_path / "my-ignores", "*.private.py\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty"))
    write(repo / "a.private.py", "x = 1\n")
    write(repo / "a.py", "x = 1\n")
    index = built(repo)
    try:
        assert indexed(index, repo) == {"a.py"}
    finally:
        index.stop()


def test_a_hostile_gitignore_line_does_not_freeze_the_index(tmp_path):
    root = tmp_path / "ws"
    write(root / ".gitignore", "*a*a*a*a*a*a*a*a*a*a*a*a*b\n")
    write(root / ("a" * 60), "x = 1\n")
    write(root / "app.py", "y = 1\n")
    index = WorkspaceIndex()
    index.start()
    try:
        index.add_folder(str(root))
        assert index.wait_idle(10), "the index is stuck on a .gitignore pattern"
        assert indexed(index, root) == {".gitignore", "a" * 60, "app.py"}
    finally:
        index.stop()


def test_a_fifo_is_never_opened_so_its_writer_stays_blocked(tmp_path):
    root = tmp_path / "ws"
    write(root / "app.py", "x = 1\n")
    fifo = root / "pipe.py"
    os.mkfifo(fifo)
    wrote: list[str] = []

    def writer() -> None:  # blocks in open() until a reader opens the FIFO
        try:
            with open(fifo, "w") as handle:
                handle.write("released\n")
            wrote.append("released")
        except OSError as err:
            wrote.append(type(err).__name__)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    index = built(root)
    index.stop()
    thread.join(timeout=0.5)
    assert thread.is_alive() and not wrote, f"the index opened the FIFO: its writer got {wrote}"
    with open(fifo) as handle:  # release the writer ourselves
        assert handle.read() == "released\n"
    thread.join(timeout=5)
    assert wrote == ["released"]


def test_snippets_in_a_prompt_have_keys_redacted():
    secret_lines = (
        f'OPENAI_KEY = "{KEY}"\n'
        'aws_id = "AKIAIOSFODNN7EXAMPLE"\n'
        'db_password = "hunter2hunter2"\n'
        "token = ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"
        "def compute_checksum_for_record(record_id): return record_id\n"
    )
    block = snippet_block([Snippet("config.py", 0, secret_lines, "similar", 1.0)], "python", 4096)
    block = to_model(FillOptions(context_block=block)).context_block  # where it leaves for a model
    for secret in (KEY, "AKIAIOSFODNN7EXAMPLE", "hunter2hunter2", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"):
        assert secret not in block
    assert block.count(REDACTED) == 4
    assert "def compute_checksum_for_record(record_id): return record_id" in block  # code stays
    assert (
        redact("for index, value in enumerate(values_2024_q3):")
        == "for index, value in enumerate(values_2024_q3):"
    )


@pytest.mark.parametrize(
    "name",
    [".env~", ".env.bak", "#.env#", "id_ed25519.bak", ".id_rsa.swp", "server.key.orig",
     ".git-credentials~", ".pgpass.bak", ".netrc~", ".pypirc.bak~", "credentials.json.old"],
)  # fmt: skip
def test_backup_and_editor_copies_of_denied_names_are_denied(name):
    # Issue 51, item 4: the deny list matched exact names, and a password in .env~ reached the remote.
    assert ContextPolicy().denies(name) and ContextPolicy().denies(f"deploy/{name}")


@pytest.mark.parametrize("name", ["main.py.bak", "notes.txt~", "app.py", "~", "#", ".swp", "setup.cfg.orig"])
def test_copies_of_ordinary_files_are_not(name):
    assert not ContextPolicy().denies(name)


def test_a_credential_folder_opened_as_the_workspace_denies_what_it_holds(tmp_path):
    # Issue 51, item 3: matched on folder-relative paths, ~/.config's gh/hosts.yml was read.
    policy = ContextPolicy()
    config, aws = str(tmp_path / ".config"), str(tmp_path / ".aws")
    assert policy.denies_under(config, "gh/hosts.yml") and policy.denies_under(config, "gh", True)
    assert policy.denies_under(config, "gcloud/application_default_credentials.json")
    assert policy.denies_under(aws, "credentials") and policy.denies_path(f"{aws}/credentials", [aws])
    assert not policy.denies_under(config, "nvim/init.lua") and not policy.denies_under(
        str(tmp_path), "app.py"
    )
    write(tmp_path / ".config" / "gh" / "hosts.yml", "github.com:\n    oauth_token: gho_secret\n")
    write(tmp_path / ".config" / "nvim" / "init.lua", "vim.opt.number = true\n")
    listed = {entry.relative for entry in files.walk(config, policy=policy)}
    assert listed == {"nvim/init.lua"}


def test_the_password_of_a_url_is_redacted_and_the_rest_kept():
    # Issue 51, item 5: DATABASE_URL's password went into the snippet block as it was.
    text = 'DATABASE_URL = "postgresql://app:Sup3r-S3cret@db.internal:5432/app"\nDOCS = "https://example.com/a:b@c"\n'
    assert redact(text) == (
        f'DATABASE_URL = "postgresql://app:{REDACTED}@db.internal:5432/app"\nDOCS = "https://example.com/a:b@c"\n'
    )
    assert redact("redis://:hunter2hunter2@cache:6379/0") == f"redis://:{REDACTED}@cache:6379/0"


def test_drafts_leave_for_a_model_redacted_with_the_block():
    # Issue 51, item 1: drafts from another file reached a remote as they were in options.drafts.
    options = to_model(FillOptions(drafts=(f'api_key="{KEY}")', "total + 1"), context_block="# x = 1\n"))
    assert options.drafts == (f'api_key="{REDACTED}")', "total + 1") and options.context_block == "# x = 1\n"


def test_a_long_random_hex_token_is_redacted_and_code_hex_is_not():
    # lab/scripts/secrets_compare.py: a 32-40 character hex key under a name that says nothing
    # (SETTING = "...") stayed under the 4-bit entropy bar that fits mixed-case keys.
    token = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
    assert redact(f'SETTING = "{token}"') == f'SETTING = "{REDACTED}"'
    for code in (
        "color = 0xdeadbeef",
        "MASK = 0xffffffffffffffff",
        "n = 100000000000000000000000000000000000",
    ):
        assert redact(code) == code


# ---------------------------------------------------------------------------- issue 62: the one read


def test_the_one_read_asks_the_policy_about_the_name_and_the_real_target(tmp_path):
    root = os.path.realpath(tmp_path / "ws")
    write(Path(root) / ".env", f"OPENAI_API_KEY={KEY}\n")
    write(Path(root) / "private/settings.py", "PIN = 7731\n")
    write(Path(root) / "app/settings.py", "DEBUG = True\n")
    write(tmp_path / "outside.py", "ELSEWHERE = 1\n")
    os.symlink("../.env", Path(root) / "app/env_file")
    os.symlink("../private/settings.py", Path(root) / "app/local_settings.py")
    os.symlink(str(tmp_path / "outside.py"), Path(root) / "app/outside.py")
    policy = ContextPolicy(["private/"])
    assert files.read_bytes(f"{root}/app/settings.py", [root], 1024, policy) == b"DEBUG = True\n"
    for name in ("env_file", "local_settings.py", "outside.py"):  # f7ad0f7 read all three
        assert files.read_bytes(f"{root}/app/{name}", [root], 1024, policy) is None, name
        assert files.read_text(f"{root}/app/{name}", root, 1024, policy) is None, name
    assert files.denied(f"{root}/app/env_file", [root], policy)
    assert files.denied(f"{root}/app/local_settings.py", [root], policy)
    assert not files.denied(f"{root}/app/settings.py", [root], policy)


def test_a_symlinked_file_is_listed_only_when_its_target_would_be(tmp_path):
    root = tmp_path / "ws"
    write(root / ".gitignore", "secrets.yml\n")
    write(root / "secrets.yml", "token: 1\n")
    write(root / "node_modules/x/index.js", "module.exports = 1\n")
    write(root / "lib/util.py", "def helper():\n    return 1\n")
    os.symlink("../secrets.yml", root / "lib/config.yml")  # git ignores the target
    os.symlink("../node_modules/x/index.js", root / "lib/vendored.js")  # never read
    os.symlink("util.py", root / "lib/alias.py")  # an ordinary file by another name: listed
    listed = {item.relative for item in files.walk(str(root))}
    assert "lib/alias.py" in listed and "lib/util.py" in listed
    assert not {"lib/config.yml", "lib/vendored.js"} & listed
    assert files.admitted(str(root), str(root / "lib/config.yml")) is None
    assert files.admitted(str(root), str(root / "lib/alias.py")) is not None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_the_one_read_never_opens_a_fifo_or_a_device(tmp_path):
    root = os.path.realpath(tmp_path)
    os.mkfifo(os.path.join(root, "tsconfig.json"))  # no writer: an open would wait forever
    os.symlink("/dev/stdin", os.path.join(root, "jsconfig.json"))
    os.symlink("/dev/zero", os.path.join(root, "zero.py"))
    for name in ("tsconfig.json", "jsconfig.json", "zero.py"):
        assert files.read_bytes(os.path.join(root, name), [root], 1024) is None, name
