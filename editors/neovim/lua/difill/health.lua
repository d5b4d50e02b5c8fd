-- :checkhealth difill (issue 52): is the server there, which difill runs, which model and engine
-- it loaded, where its log is, and what went wrong last. Read from what the plugin already keeps
-- (init.lua's statuses, last, start_error); only the version of a server not running yet is
-- asked for, with `<cmd> --version`.
local M = {}

--- The command that prints the version: `cmd` up to `serve`, then --version.
---@param cmd string[]
---@return string[]?
local function version_cmd(cmd)
  local out = {}
  for _, arg in ipairs(cmd) do
    if arg == "serve" then
      out[#out + 1] = "--version"
      return out
    end
    out[#out + 1] = arg
  end
end

function M.check()
  local health = vim.health
  local difill = require("difill")
  local util = require("difill.util")
  health.start("difill")

  if vim.fn.has("nvim-0.11") == 0 then
    health.error("Neovim >= 0.11 is needed")
  end
  if not difill.did_setup then
    health.warn('require("difill").setup() has not been called', { "call it from your init.lua" })
  end

  -- The server: found, and which version.
  local cmd = difill.config.cmd
  local client = util.client(vim.api.nvim_get_current_buf()) or vim.lsp.get_clients({ name = "difill" })[1]
  if type(cmd) ~= "table" then
    health.info("cmd is a Lua function (an in-process server)")
  elseif difill.start_error then
    health.error(difill.start_error)
  else
    health.ok(("server command: %s (%s)"):format(table.concat(cmd, " "), vim.fn.exepath(cmd[1])))
  end
  local info = client and client.server_info
  if info and info.version then
    health.ok(("running: %s %s"):format(info.name or "difill", info.version))
  elseif type(cmd) == "table" and not difill.start_error and version_cmd(cmd) then
    local ok, res = pcall(function()
      return vim.system(version_cmd(cmd), { text = true }):wait(15000)
    end)
    if ok and res.code == 0 then
      health.ok("version: " .. vim.trim(res.stdout ~= "" and res.stdout or res.stderr))
    else
      health.error(("`%s` failed: %s"):format(table.concat(version_cmd(cmd), " "),
        ok and vim.trim(res.stderr or "") or tostring(res)))
    end
  end

  -- The model and engine: from the load's own ready message.
  local st = client and difill.statuses[client.id]
  if not client then
    health.info("no server running: open a file of a filetype difill attaches to ("
      .. table.concat(difill.config.filetypes, ", ") .. ")")
  elseif st and st.state == "loading" then
    health.info("the model is loading: " .. (difill.progress[client.id] or "difill: loading"))
  end
  local loaded = difill.last.loaded
  if loaded then
    local where, engine = loaded:match("^model loaded from (.-) %(([^()]+)%) in ")
    if where then
      health.ok("model: " .. where)
      health.ok("engine: " .. engine)
    else
      health.ok(loaded) -- a remote: "model loaded from http://host (...) in 1.0 s"
    end
  elseif client then
    health.info("no model loaded yet (" .. difill.status() .. ")")
  end

  -- Where to look, and what went wrong last.
  local log = difill.log_file()
  if log and vim.uv.fs_stat(log) then
    health.ok("log: " .. log .. " (:DifillLog)")
  else
    health.info("log: " .. tostring(log) .. " (not written yet)")
  end
  if difill.last.error then
    health.error("last error: " .. difill.last.error)
  end
  local exit = difill.last.exit
  if exit then
    health.error(("the server exited with code %d%s"):format(exit.code,
      exit.stderr ~= "" and (": " .. vim.trim(exit.stderr):match("[^\n]*$")) or ""), { ":DifillStatus shows its stderr" })
  end
  if not difill.last.error and not exit and not difill.start_error then
    health.ok("no error")
  end
end

return M
