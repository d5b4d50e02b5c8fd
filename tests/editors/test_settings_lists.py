"""One list per setting (issue 65 item 6): server/config.py's ``Settings`` is the list, and the
clients' lists and the README's table are written from it (server/settings_clients.py).  These
fail while any of them differs, and show that a new setting needs nothing but its field."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from difill.server import config, settings_clients
from difill.server.setting_kinds import BoundedInt

ROOT = Path(__file__).resolve().parents[2]


def test_every_list_is_the_one_config_py_writes():
    """Run `python -m difill.server.settings_clients --write` after changing a setting."""
    assert settings_clients.stale(ROOT) == []


def test_the_neovim_config_names_every_setting():
    """config.lua's ``difill.ServerSettings`` fields are the server's keys (it lacked projectPython)."""
    text = (ROOT / settings_clients.CONFIG_LUA).read_text()
    block = text.split("---@class difill.ServerSettings", 1)[1].split("---@class", 1)[0]
    assert re.findall(r"^---@field (\w+)\?", block, re.M) == list(config.KEYS)


def test_the_readme_table_names_every_setting_with_its_default():
    text = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| ((?:[^|\\]|\\.)*) \|", text.split("## Settings", 1)[1].split("\n## ", 1)[0], re.M)
    assert [key for key, _ in rows] == list(config.KEYS)
    assert dict(rows)["maxTokens"] == str(config.Settings().max_tokens)


def test_a_new_setting_is_its_field_alone(monkeypatch: pytest.MonkeyPatch):
    """A throwaway setting added to the fields reaches package.json, settings.ts, config.lua and
    the README, with its kind's bounds, its default and its description."""
    spec = config.setting("throwawayLimit", BoundedInt(2, 9), 5, doc="A limit nobody uses. Really.")
    extra = dataclasses.make_dataclass(
        "Extra", [("throwaway_limit", int, spec)], bases=(config.Settings,), frozen=True
    )
    keys = dict(config.KEYS) | {"throwawayLimit": dataclasses.fields(extra)[-1]}
    monkeypatch.setattr(settings_clients, "KEYS", keys)
    monkeypatch.setattr(settings_clients, "Settings", extra)
    assert sorted(map(str, settings_clients.stale(ROOT))) == sorted(map(str, settings_clients.WRITERS))
    package = settings_clients.package_json((ROOT / settings_clients.PACKAGE_JSON).read_text())
    assert '"difill.throwawayLimit": {\n          "type": "integer",\n          "minimum": 2,' in package
    assert '"default": 5,\n          "markdownDescription": "A limit nobody uses. Really."' in package
    assert '  "throwawayLimit",\n] as const;\n/** Paths' in settings_clients.settings_ts(
        (ROOT / settings_clients.SETTINGS_TS).read_text()
    )
    lua = settings_clients.config_lua((ROOT / settings_clients.CONFIG_LUA).read_text())
    assert "---@field throwawayLimit? integer  A limit nobody uses.\n" in lua
    readme = settings_clients.readme((ROOT / "README.md").read_text())
    assert "| `throwawayLimit` | 5 | A limit nobody uses. Really. |" in readme


def test_the_check_says_which_file_differs(tmp_path: Path):
    """The command a developer runs: exit 1 naming the stale file, and --write mends it."""
    for path in settings_clients.WRITERS:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((ROOT / path).read_text())
    lua = tmp_path / settings_clients.CONFIG_LUA
    lua.write_text(lua.read_text().replace("---@field projectPython?", "---@field projectPythn?"))
    assert settings_clients.main(["--root", str(tmp_path)]) == 1
    assert settings_clients.main(["--root", str(tmp_path), "--write"]) == 0
    assert settings_clients.stale(tmp_path) == []
