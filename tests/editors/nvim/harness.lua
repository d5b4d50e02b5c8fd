-- A tiny coroutine test runner. Scenarios yield to Neovim's main loop between steps, so keys
-- sent with nvim_input are handled like typing (insert mode, TextChangedI, CursorMovedI)
-- and LSP answers arrive. Every wait is bounded.
local T = {}

local function resume(co)
  local ok, err = coroutine.resume(co)
  if not ok then
    error(err)
  end
end

function T.sleep(ms)
  local co = coroutine.running()
  vim.defer_fn(function()
    resume(co)
  end, ms)
  coroutine.yield()
end

--- Wait until cond() returns a truthy value, and return it.
function T.wait(cond, timeout_ms, what)
  local deadline = vim.uv.now() + timeout_ms
  while true do
    local ok, v = pcall(cond)
    if ok and v then
      return v
    end
    if vim.uv.now() > deadline then
      error(("timed out after %d ms waiting for %s"):format(timeout_ms, what), 0)
    end
    T.sleep(25)
  end
end

--- Type keys (<> notation) and let Neovim handle them.
function T.input(keys)
  vim.api.nvim_input(keys)
  T.sleep(30)
  T.wait(function()
    return not vim.api.nvim_get_mode().blocking
  end, 2000, "keys to be handled")
end

function T.lines()
  return vim.api.nvim_buf_get_lines(0, 0, -1, false)
end

--- Marks drawn in a namespace, as {row, col, text} with the virtual text joined.
function T.ghost_marks(ns_name)
  local ns = vim.api.nvim_get_namespaces()[ns_name]
  local out = {}
  for _, m in ipairs(ns and vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true }) or {}) do
    local parts = {}
    for _, chunk in ipairs(m[4].virt_text or {}) do
      parts[#parts + 1] = chunk[1]
    end
    out[#out + 1] = { row = m[2], col = m[3], text = table.concat(parts), virt_lines = #(m[4].virt_lines or {}) }
  end
  return out
end

function T.run(scenarios, out_path, only)
  local selected = {}
  for name in (only or ""):gmatch("[^,]+") do
    selected[name] = true
  end
  local results = {}
  -- Keep what the plugin tells the user: it explains failures (e.g. a refused edit).
  local messages = {}
  T.notifications = function()
    return messages
  end
  local notify = vim.notify
  vim.notify = function(msg, level, opts)
    messages[#messages + 1] = tostring(msg)
    return notify(msg, level, opts)
  end
  -- The server's window/showMessage (echoed by Neovim, not notified): record those too.
  local show = vim.lsp.handlers["window/showMessage"]
  vim.lsp.handlers["window/showMessage"] = function(err, params, ctx, cfg)
    messages[#messages + 1] = "showMessage: " .. tostring(params and params.message)
    return show(err, params, ctx, cfg)
  end
  local co = coroutine.create(function()
    for _, sc in ipairs(scenarios) do
      if next(selected) == nil or selected[sc.name] then
        local started = vim.uv.now()
        local record = {}
        messages = {}
        local ok, err = pcall(sc.fn, record)
        record.notifications = messages
        record.ok, record.error, record.ms = ok, not ok and tostring(err) or nil, vim.uv.now() - started
        results[sc.name] = record
        -- Leave insert mode and any pending state before the next scenario.
        pcall(T.input, "<Esc>")
      end
    end
  end)
  local function finish()
    local f = assert(io.open(out_path, "w"))
    f:write(vim.json.encode(results))
    f:close()
    vim.cmd("qa!")
  end
  local ok, err = coroutine.resume(co)
  if not ok then
    results._runner = { ok = false, error = tostring(err) }
    return finish()
  end
  local timer = vim.uv.new_timer()
  timer:start(50, 50, vim.schedule_wrap(function()
    if coroutine.status(co) == "dead" then
      timer:stop()
      finish()
    end
  end))
end

return T
