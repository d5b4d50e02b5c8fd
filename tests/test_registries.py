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


def test_every_local_engine_names_a_loader_that_is_there():
    # A loader is imported only when its engine is chosen (engine/backends local_backend): check
    # on the source, without importing torch, MLX or llama.cpp, that each names a function there.
    import ast

    from difill.engine.names import LOCAL_ENGINES

    for name, engine in LOCAL_ENGINES.items():
        module, function = engine.loader.split(":")
        path = ROOT / "src" / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert function in defined, f"{name}: {engine.loader} is not defined"
        assert len(defined[function].args.args) == 3, f"{name}: {engine.loader} takes (model, device, choice)"
