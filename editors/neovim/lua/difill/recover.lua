-- A server that dies comes back (issue 66): after a crash the server is started again, at most
-- three times a minute (after 0.2 s, 2 s, then 10 s), and every open buffer difill serves is
-- attached to it, so ghost text comes back in the same buffer with no :e. :DifillRestart does the
-- same by hand, and starts over after the tries ran out. A crash is said once, where the user
-- looks: at the cursor while in insert mode (where the message area shows "-- INSERT --") and in
-- the message area on leaving it; the statusline says "restarting" meanwhile.
local progress = require("difill.progress")

local api = vim.api
local M = {}

M.window_ms = 60000 -- the window the tries are counted in
M.delays_ms = { 200, 2000, 10000 } -- before the first, second and third try of a window

--- "restarting" while a restart waits, "stopped" once the tries ran out; nil when neither.
---@type { what: "restarting"|"stopped", why: string }?
M.state = nil

--- Called before each new server process starts (init.lua clears the old one's stderr).
---@type fun()?
M.before_start = nil

local tries = {} ---@type integer[]  when (vim.uv.now()) each automatic restart of the window began
local deliberate = {} ---@type table<integer, true>  clients stopped on purpose: no restart
local initialized = {} ---@type table<integer, true>  clients whose server answered initialize

--- A message the user sees once: now, or on leaving insert mode (a hint at the cursor meanwhile).
---@param message string
---@param level integer
function M.report(message, level)
  if not api.nvim_get_mode().mode:match("^[iR]") then
    vim.notify(message, level)
    return
  end
  progress.update(message, true)
  api.nvim_create_autocmd("InsertLeave", {
    group = api.nvim_create_augroup("difill.recover.report", { clear = true }),
    once = true,
    callback = function()
      vim.schedule(function()
        vim.notify(message, level)
      end)
    end,
  })
end

--- Neovim's own "Client difill quit with exit code ..." (scheduled after our on_exit) would say the
--- crash a second time: leave it out, once, and pass every other message on.
local function without_core_exit_message()
  local notify = vim.notify
  local function filter(message, ...)
    if type(message) == "string" and message:find("^Client difill quit with exit code") then
      return
    end
    return notify(message, ...)
  end
  vim.notify = filter
  vim.schedule(function() -- after Neovim's scheduled message
    if vim.notify == filter then
      vim.notify = notify
    end
  end)
end

--- Start (or reuse) a difill client for every loaded buffer that the config covers.
function M.attach_all()
  if M.before_start then
    M.before_start()
  end
  local config = vim.lsp.config.difill
  local started = false
  for _, bufnr in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].buftype == ""
      and vim.tbl_contains(config.filetypes or {}, vim.bo[bufnr].filetype) then
      local c = vim.deepcopy(config)
      c.root_dir = c.root_dir or vim.fs.root(bufnr, c.root_markers or {})
      started = vim.lsp.start(c, { bufnr = bufnr }) ~= nil or started
    end
  end
  if not started then
    M.state = nil -- no buffer to serve: the next one opened starts a server as usual
  end
end

--- Run `after` once the clients `ids` are gone (detached, deleted); stragglers are killed after 3 s.
---@param ids integer[]
---@param after fun()
local function when_gone(ids, after)
  local waited = 0
  local timer = assert(vim.uv.new_timer())
  timer:start(0, 50, vim.schedule_wrap(function()
    local left = vim.tbl_filter(function(c) return c ~= nil end, vim.tbl_map(vim.lsp.get_client_by_id, ids))
    if #left > 0 and waited < 3000 then
      waited = waited + 50
      return
    end
    for _, client in ipairs(left) do
      deliberate[client.id] = true
      client:stop(true)
    end
    timer:stop()
    timer:close()
    after()
  end))
end

--- :DifillRestart: stop the servers, start new ones for every open buffer; the tries start over.
function M.restart()
  tries, M.state = {}, nil
  local ids = {}
  for _, client in ipairs(vim.lsp.get_clients({ name = "difill", _uninitialized = true })) do
    deliberate[client.id] = true
    ids[#ids + 1] = client.id
    client:stop()
  end
  when_gone(ids, M.attach_all)
end

---@param client vim.lsp.Client
function M.on_init(client)
  initialized[client.id] = true
  M.state = nil
  pcall(vim.cmd.redrawstatus)
end

--- The client's on_exit: a server that ran and died is started again, within the tries. Returns
--- whether the exit is handled here (said, restarted); false for one the caller reports itself.
---@param code integer
---@param signal integer
---@param client_id integer
---@param why string  how it ended, for the message ("signal 9", "code 1: <its last stderr line>")
---@return boolean
function M.on_exit(code, signal, client_id, why)
  local was_running = initialized[client_id]
  initialized[client_id] = nil
  if deliberate[client_id] then
    deliberate[client_id] = nil
    return true
  end
  -- Asked to stop (:LspStop, quitting: code 0, or SIGTERM as Neovim's own force stop sends), or a
  -- server that never ran (a wrong cmd: trying again would only fail again; the exit is reported).
  if (code == 0 and (signal == 0 or signal == 15)) or not was_running or vim.v.exiting ~= vim.NIL then
    return false
  end
  vim.schedule(function()
    without_core_exit_message()
    local now = vim.uv.now()
    tries = vim.tbl_filter(function(t) return now - t < M.window_ms end, tries)
    if #tries >= #M.delays_ms then
      M.state = { what = "stopped", why = why }
      pcall(vim.cmd.redrawstatus)
      M.report(("difill: the server stopped again (%s), %d times in a minute: it stays stopped. "
        .. ":DifillRestart once fixed (:DifillStatus, :DifillLog)"):format(why, #tries + 1), vim.log.levels.ERROR)
      return
    end
    if #tries == 0 then -- the first of a window is said; the next ones show in the status only
      M.report(("difill: the server stopped (%s); restarting it (:DifillStatus, :DifillLog)"):format(why),
        vim.log.levels.WARN)
    end
    M.state = { what = "restarting", why = why }
    pcall(vim.cmd.redrawstatus)
    tries[#tries + 1] = now
    vim.defer_fn(function()
      if M.state and M.state.what == "restarting" then
        when_gone({ client_id }, M.attach_all)
      end
    end, M.delays_ms[#tries])
  end)
  return true
end

return M
