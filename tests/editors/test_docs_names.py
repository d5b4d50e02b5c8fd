"""Docs that cannot drift (issue 66 item 7): every setting, command and key README.md and
editors/README.md name exists, and every one that exists is named there.  What exists is read
from server/config.py, editors/vscode/package.json (settings, commands, keybindings) and the
Neovim plugin (config.lua's options and keys, the user commands its Lua defines)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from difill.server import config
from difill.server.features.edits.code_actions import (
    COMPLETE_BLOCK_COMMAND,
    EDIT_SELECTION,
    FILL_HOLES_COMMAND,
)
from difill.server.features.edits.commands import ACCEPT_EDIT, REJECT_EDIT
from difill.server.features.edits.selection import TITLES

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
EDITORS = (ROOT / "editors" / "README.md").read_text()
BOTH = README + EDITORS
MANIFEST = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
CONTRIBUTES = MANIFEST["contributes"]
NEOVIM = ROOT / "editors" / "neovim" / "lua" / "difill"
LUA_DEFAULTS = (NEOVIM / "config.lua").read_text().split("local defaults = {", 1)[1]


def neovim_options() -> set[str]:
    return set(re.findall(r"^  (\w+) = ", LUA_DEFAULTS, re.M))


def neovim_keys() -> dict[str, str]:
    """config.lua's default keymaps: {name: key}, the Lua string unescaped."""
    block = LUA_DEFAULTS.split("keymaps = {", 1)[1].split("}", 1)[0]
    return {name: key.replace("\\\\", "\\") for name, key in re.findall(r'(\w+) = "([^"]+)"', block)}


def neovim_commands() -> set[str]:
    source = "".join(path.read_text() for path in NEOVIM.glob("*.lua"))
    return set(re.findall(r'nvim_create_user_command\(\s*"(\w+)"', source))


def vscode_title(title: str) -> str:
    return title.split(" (", 1)[0]  # "Reject Proposed Edit (or stop the running edit)": its name


# ---- settings ----


def test_every_setting_named_exists():
    """`difill.x` in either README is a VS Code setting, a VS Code command or a server command;
    a Lua `settings = { ... }` or `configure({ ... })` names server settings only."""
    known = set(CONTRIBUTES["configuration"]["properties"]) | {c["command"] for c in CONTRIBUTES["commands"]}
    known |= {EDIT_SELECTION, FILL_HOLES_COMMAND, COMPLETE_BLOCK_COMMAND, ACCEPT_EDIT, REJECT_EDIT}
    named = set(re.findall(r"`(difill\.[A-Za-z][\w.]*)(?:\.\*)?`", BOTH))
    assert "difill.server.pythonPath" in named  # the reading works
    assert {n for n in named if n not in known and not any(k.startswith(n + ".") for k in known)} == set()
    tables = re.findall(r"(?:settings = |init_options = |configure\()\{([^{}]*)\}", BOTH)
    lua_keys = {key for table in tables for key in re.findall(r"(\w+) = ", table)}
    assert lua_keys and lua_keys <= set(config.KEYS), lua_keys - set(config.KEYS)


def test_every_setting_that_exists_is_named():
    """The server's in the README's table (generated), the VS Code client's own and the Neovim
    plugin's options in editors/README.md."""
    assert {key for key in config.KEYS if f"| `{key}` |" not in README} == set()
    own = {key for key in CONTRIBUTES["configuration"]["properties"] if key.startswith("difill.server.")}
    assert {key for key in own if f"`{key}`" not in EDITORS} == set()
    assert {option for option in neovim_options() if not re.search(rf"\b{option}\b", EDITORS)} == set()


def test_every_neovim_option_named_exists():
    """`setup({ x = ... })` in editors/README.md names config.lua's options."""
    named = set(re.findall(r"setup\(\{ (\w+) = ", EDITORS))
    assert named and named <= neovim_options(), named - neovim_options()


# ---- commands ----


def test_every_command_named_exists():
    neovim = neovim_commands()
    assert len(neovim) >= 9  # the reading works: :DifillEdit ... :DifillLog
    assert {c for c in re.findall(r":(Difill\w+)", BOTH) if c not in neovim} == set()
    titles = {vscode_title(c["title"]) for c in CONTRIBUTES["commands"]}
    named = set(re.findall(r"difill: ([A-Z][A-Za-z /]*[a-z.]+)", EDITORS))
    assert "Open Server Log" in named
    assert {n for n in named if n.rstrip(".") not in {t.rstrip(".") for t in titles}} == set()


def test_every_command_that_exists_is_named():
    assert {c for c in neovim_commands() if not re.search(rf":{c}\b", EDITORS)} == set()
    titles = {vscode_title(c["title"]) for c in CONTRIBUTES["commands"]}
    assert {t for t in titles if t not in EDITORS} == set()
    assert {t for t in TITLES.values() if t not in EDITORS} == set()  # the code actions


# ---- keys ----


def test_every_neovim_key_named_exists_and_every_default_is_named():
    defaults = set(neovim_keys().values())
    named = set(re.findall(r"`(<(?:M-[^`>]+|leader>\w+)>?)`", BOTH))
    named = {key if key.endswith(">") or key.startswith("<leader>") else key + ">" for key in named}
    assert "<M-l>" in named and "<leader>dx" in named  # the reading works
    assert named - defaults == set()
    assert {key for key in defaults if f"`{key}`" not in EDITORS} == set()


def test_every_vscode_keybinding_is_named():
    """package.json's keybindings, as editors/README.md spells keys (ctrl+alt+e: `Ctrl+Alt+E`)."""
    spelled = {"escape": "Esc", "enter": "Enter", "tab": "Tab"}

    def words(key: str) -> str:
        return "+".join(spelled.get(part, part.capitalize() if len(part) > 1 else part.upper()) for part in key.split("+"))

    bindings = {words(binding["key"]) for binding in CONTRIBUTES["keybindings"]}
    assert "Ctrl+Alt+E" in bindings
    assert {key for key in bindings if f"`{key}`" not in EDITORS} == set()


def test_the_settings_a_workspace_may_not_set_are_named_as_they_are():
    """The README's sentence on destination settings lists config.DESTINATION_KEYS."""
    sentence = README.split("Settings that name a program", 1)[1].split(")", 1)[0]
    assert sorted(re.findall(r"`(\w+)`", sentence)) == sorted(config.DESTINATION_KEYS)
