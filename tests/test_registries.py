"""Issue 48, item 4: one list per registry.  The engines and the remote canvas modes are written
once (engine/names.py); the settings, the command line, the VS Code manifest, the Neovim plugin's
option types and the README read or name exactly those."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from difill.cli import build_parser
from difill.engine.names import CANVAS_MODES, ENGINES
from difill.server.config import KEYS, Settings, kind_of

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
REGISTRIES = {"engine": ENGINES, "remoteCanvas": CANVAS_MODES}


@pytest.mark.parametrize("key", sorted(REGISTRIES))
def test_every_manifest_names_the_one_list(key):
    values = REGISTRIES[key]
    assert kind_of(KEYS[key]).values == values  # the settings
    manifest = json.loads((ROOT / "editors/vscode/package.json").read_text())
    assert tuple(manifest["contributes"]["configuration"]["properties"][f"difill.{key}"]["enum"]) == values
    lua = (ROOT / "editors/neovim/lua/difill/config.lua").read_text()
    typed = re.search(rf"---@field {key}\? ([^ ]+)", lua)
    assert typed is not None and tuple(re.findall(r'"([^"]+)"', typed.group(1))) == values
    readme_row = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith(f"| `{key}` |"))
    assert all(f"`{value}`" in readme_row for value in values)


def test_every_engine_has_a_label_for_the_status():
    from difill.engine.names import ENGINE_LABELS

    assert set(ENGINES) - {"auto"} <= set(ENGINE_LABELS)


def test_the_command_line_offers_the_engines():
    parser = build_parser()
    serve = parser._subparsers._group_actions[0].choices["serve"]  # argparse keeps them here
    engine = next(a for a in serve._actions if "--engine" in a.option_strings)
    assert tuple(engine.choices) == ENGINES
    assert Settings().engine in ENGINES
