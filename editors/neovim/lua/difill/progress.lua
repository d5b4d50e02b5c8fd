-- The model's load where you look while typing (issue 52): in insert mode the message area shows
-- "-- INSERT --", so the progress echoed there (init.lua's show_progress) is never seen. A hint
-- at the end of the cursor's line says it instead, follows the cursor while the model loads, and
-- stays a moment after the load ends ("difill: ready (7.7 s)"). Normal mode keeps the echo.
local util = require("difill.util")

local api = vim.api
local M = {}

M.ns = api.nvim_create_namespace("difill.progress")
M.linger_ms = 2000 -- how long the last message ("ready ...") stays

local text ---@type string?  the newest progress message; nil when none is to be shown
local drawn ---@type { bufnr: integer, mark: integer }?
local timer ---@type uv.uv_timer_t?

local function clear()
  if drawn and api.nvim_buf_is_valid(drawn.bufnr) then
    pcall(api.nvim_buf_del_extmark, drawn.bufnr, M.ns, drawn.mark)
  end
  drawn = nil
end

--- Draw the hint on the cursor's line, in insert mode in a buffer difill is attached to.
local function draw()
  clear()
  local bufnr = api.nvim_get_current_buf()
  if not text or api.nvim_get_mode().mode:sub(1, 1) ~= "i" or not util.client(bufnr) then
    return
  end
  local row = api.nvim_win_get_cursor(0)[1] - 1
  drawn = {
    bufnr = bufnr,
    mark = api.nvim_buf_set_extmark(bufnr, M.ns, row, 0, {
      virt_text = { { "  " .. text, "DifillProgress" } },
      virt_text_pos = "eol",
    }),
  }
end

--- A progress message from the server; `done`: the load ended, the message goes after a moment.
---@param message string
---@param done boolean
function M.update(message, done)
  text = message
  timer = timer or vim.uv.new_timer()
  timer:stop()
  draw()
  if done then
    timer:start(M.linger_ms, 0, vim.schedule_wrap(function()
      text = nil
      clear()
    end))
  end
end

--- The message shown now (nil when none), for tests and statuslines.
---@return string?
function M.shown()
  return drawn and text or nil
end

function M.setup()
  api.nvim_set_hl(0, "DifillProgress", { link = "DifillGhost", default = true })
  local group = api.nvim_create_augroup("difill.progress", { clear = true })
  api.nvim_create_autocmd({ "InsertEnter", "CursorMovedI", "BufEnter" }, {
    group = group,
    callback = function()
      if text then
        draw()
      end
    end,
  })
  api.nvim_create_autocmd("InsertLeave", {
    group = group,
    callback = function()
      clear()
      if text then
        api.nvim_echo({ { text } }, false, {}) -- back in normal mode, where the echo is seen
      end
    end,
  })
end

return M
