"""Issue 62: a destination setting (a program, a model, a log, a server) whose value a workspace
settings file chose is refused, unless the client says the user approved it."""

from __future__ import annotations

import json
import os

import pytest

from difill.server.config import Settings, SettingsLayers
from difill.server.workspace_values import (
    read_workspace_values,
    refuse_workspace_values,
    screen,
    string_pairs,
)

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

VSCODE = """{
  // a comment with "difill.remote": "http://not-this" in it
  "editor.tabSize": 2, /* "difill.logFile": "/nor/this" */
  "difill.projectPython": "./tools/python",
  "[python]": {"difill.ggufPath": "m.gguf",},
  "url": "http://x//y",
}"""


def test_the_pairs_of_json_with_comments_trailing_commas_and_nesting_are_read():
    pairs = string_pairs(VSCODE)
    assert ("difill.projectPython", "./tools/python") in pairs
    assert ("difill.ggufPath", "m.gguf") in pairs and ("url", "http://x//y") in pairs
    assert ("editor.tabSize", None) in pairs and ("[python]", None) in pairs
    assert not any(value in ("http://not-this", "/nor/this") for _, value in pairs)  # comments
    broken = '{"lspconfig": {"difill": {"projectPython": "/bin/sh" "x": }'  # not JSON at all
    assert ("projectPython", "/bin/sh") in string_pairs(broken)


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_each_editors_workspace_file_is_read(tmp_path):
    write(tmp_path / "a/.vscode/settings.json", VSCODE)
    write(tmp_path / "b/.neoconf.json", json.dumps({"lspconfig": {"difill": {"remote": "http://theirs"}}}))
    write(tmp_path / "c/.vim/coc-settings.json", json.dumps({"difill.llamacppWorker": "./w"}))
    found = read_workspace_values([str(tmp_path / name) for name in "abc"])
    assert found.file_setting("projectPython", " ./tools/python ") == str(
        tmp_path / "a/.vscode/settings.json"
    )
    assert found.file_setting("remote", "http://theirs") == str(tmp_path / "b/.neoconf.json")
    assert found.file_setting("llamacppWorker", "./w") is not None
    assert found.file_setting("projectPython", "/usr/bin/python3") is None  # another value: the user's


def test_a_fifo_in_place_of_a_settings_file_is_skipped_without_waiting(tmp_path):
    os.mkfifo(tmp_path / ".neoconf.json")
    assert read_workspace_values([str(tmp_path)]).values == {}


def test_a_workspace_value_is_refused_and_an_approved_one_kept(tmp_path):
    write(tmp_path / ".vscode/settings.json", VSCODE)
    found = read_workspace_values([str(tmp_path)])
    section = {"projectPython": "./tools/python", "maxTokens": 8, "ggufPath": "mine.gguf"}
    kept, refused = refuse_workspace_values(section, None, found)
    assert kept == {"maxTokens": 8, "ggufPath": "mine.gguf"}
    assert refused == [
        "projectPython is set by the workspace's .vscode/settings.json; difill does not run programs "
        "a workspace names: set it in your user settings"
    ]
    kept, refused = refuse_workspace_values(section, {"projectPython": "./tools/python"}, found)
    assert kept == section and refused == []


def test_a_workspace_file_cannot_approve_for_the_user(tmp_path):
    write(tmp_path / ".neoconf.json", json.dumps({"lspconfig": {"difill": {
        "projectPython": "./x", "userApproved": {"projectPython": "./x"}}}}))  # fmt: skip
    found = read_workspace_values([str(tmp_path)])
    kept, refused = refuse_workspace_values({"projectPython": "./x"}, {"projectPython": "./x"}, found)
    assert kept == {} and len(refused) == 1


def test_the_layers_keep_the_value_below_a_refused_one(tmp_path):
    write(tmp_path / ".neoconf.json", json.dumps({"difill": {"remote": "http://theirs"}}))
    layers = SettingsLayers(Settings(), screen=screen(lambda: [str(tmp_path)]))
    assert layers.set_initialization({"remote": "http://mine", "userApproved": {}}) == []
    assert layers.set_workspace({"difill": {"remote": "http://theirs", "maxTokens": 9}}) == []
    assert layers.settings().remote == "http://mine" and layers.settings().max_tokens == 9
    assert len(layers.refused) == 1 and "remote is set by" in layers.refused[0]
    layers.set_workspace({"difill": {"remote": "http://theirs", "userApproved": {"remote": "http://theirs"}}})
    assert layers.settings().remote == "http://theirs" and layers.refused == []


def test_a_settings_file_too_large_to_read_is_taken_to_set_every_key(tmp_path, monkeypatch):
    from difill.server import workspace_values

    monkeypatch.setattr(workspace_values, "MAX_FILE_BYTES", 64)
    write(tmp_path / ".neoconf.json", "{" + " " * 100 + '"remote": "http://theirs"}')  # past the bound
    found = read_workspace_values([str(tmp_path)])
    kept, refused = refuse_workspace_values({"remote": "http://anything", "steps": 4}, None, found)
    assert kept == {"steps": 4} and len(refused) == 1
