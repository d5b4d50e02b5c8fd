-- Edit proposals (issue 24): an edit is shown for review before it touches the buffer.
-- While the canvas denoises, its text is drawn as virtual lines under the selection, which is
-- highlighted; then the proposal's new text replaces the canvas. :DifillAccept asks the server
-- for the edit (a versioned workspace/applyEdit: one undo step), :DifillReject drops it, or
-- stops the edit while it still denoises. Only Accept changes the buffer.
-- The protocol is in editors/README.md.
local util = require("difill.util")

local api = vim.api
local M = {}

M.ns = api.nvim_create_namespace("difill.proposals")

---@class difill.Shown
---@field id string
---@field bufnr integer
---@field client_id integer
---@field mark integer         the extmark highlighting the replaced range
---@field lines_mark integer   the extmark holding the virtual lines under it
---@field proposal? table      the server's proposal; nil while the canvas still denoises
---@field range lsp.Range      the range it replaces
---@field below integer        the row its virtual lines hang under
---@field height integer       how many virtual lines it draws

--- Proposals and running edits, by id.
---@type table<string, difill.Shown>
M.shown = {}

--- How the message about an off-screen proposal names the way to it (init.lua sets the key).
M.jump_hint = ":DifillJump"
--- How labels name the ways to accept and reject: the keys when mapped (init.lua sets them).
M.accept_hint = ":DifillAccept"
M.reject_hint = ":DifillReject"

local attached = {} ---@type table<integer, boolean>

---@param lines string[]
---@param hl string
local function virt_lines(lines, hl)
  return vim.tbl_map(function(l)
    return { { l == "" and " " or l, hl } }
  end, lines)
end

--- Draw (or redraw) `id`: a highlight on `range`, and `text` as virtual lines under it.
local function draw(id, bufnr, client, range, text, hl_text, label)
  local old = M.shown[id]
  if old then
    pcall(api.nvim_buf_del_extmark, bufnr, M.ns, old.mark)
    pcall(api.nvim_buf_del_extmark, bufnr, M.ns, old.lines_mark)
  end
  local srow, scol = util.from_lsp(bufnr, range.start, client.offset_encoding)
  local erow, ecol = util.from_lsp(bufnr, range["end"], client.offset_encoding)
  local lines = vim.split((text:gsub("\r\n", "\n"):gsub("\n$", "")), "\n", { plain = true })
  table.insert(lines, 1, label)
  local mark = api.nvim_buf_set_extmark(bufnr, M.ns, srow, scol, {
    end_row = erow,
    end_col = ecol,
    hl_group = "DifillReplaced",
  })
  -- A range that ends at column 0 ends with the line above: the lines go under what is replaced.
  local below = (ecol == 0 and erow > srow) and erow - 1 or erow
  local lines_mark = api.nvim_buf_set_extmark(bufnr, M.ns, below, 0, { virt_lines = virt_lines(lines, hl_text) })
  M.shown[id] = {
    id = id, bufnr = bufnr, client_id = client.id, mark = mark, lines_mark = lines_mark,
    proposal = old and old.proposal, range = range, below = below, height = #lines,
  }
  return M.shown[id]
end

--- Forget `id` and clear what it drew.
local function drop(id)
  local s = M.shown[id]
  if s then
    pcall(api.nvim_buf_del_extmark, s.bufnr, M.ns, s.mark)
    pcall(api.nvim_buf_del_extmark, s.bufnr, M.ns, s.lines_mark)
    M.shown[id] = nil
  end
end

--- The buffer changed inside a proposal's range: the server has expired it; clear it here.
local function watch(bufnr)
  if attached[bufnr] then
    return
  end
  attached[bufnr] = true
  api.nvim_buf_attach(bufnr, false, {
    on_lines = function(_, b, _, first, last_old)
      for id, s in pairs(M.shown) do
        if s.bufnr == b and s.proposal then
          local pos = api.nvim_buf_get_extmark_by_id(b, M.ns, s.mark, { details = true })
          local srow, erow = pos[1], pos[3] and pos[3].end_row or pos[1]
          if srow and first <= erow and last_old >= srow then
            vim.schedule(function()
              drop(id)
            end)
          end
        end
      end
    end,
    on_detach = function(_, b)
      attached[b] = nil
      for id, s in pairs(M.shown) do
        if s.bufnr == b then
          M.shown[id] = nil
        end
      end
    end,
  })
end

--- difill/preview from a client that reviews edits: {id, uri, range, text, step} or {done}.
function M.on_preview(_, params, ctx)
  if type(params) ~= "table" or not params.id or not params.uri or not params.range then
    return
  end
  local bufnr = vim.uri_to_bufnr(params.uri)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if not client or not api.nvim_buf_is_loaded(bufnr) then
    return
  end
  if params.done then
    if M.shown[params.id] and not M.shown[params.id].proposal then
      drop(params.id)
    end
    return
  end
  draw(params.id, bufnr, client, params.range, params.text or "", "DifillPreview",
    ("difill: denoising, step %d (%s stops it)"):format(params.step or 0, M.reject_hint))
end

--- Whether all of `s` (the range and the lines under it) is in window `win`: nil when it is (or
--- the window shows another buffer), else "above" or "below".
---@param win integer
---@param s difill.Shown
---@return "above"|"below"|nil
function M.out_of_view(win, s)
  win = win == 0 and api.nvim_get_current_win() or win -- line("w0", 0) knows no window 0
  if api.nvim_win_get_buf(win) ~= s.bufnr then
    return nil
  end
  local pos = api.nvim_buf_get_extmark_by_id(s.bufnr, M.ns, s.mark, {})
  local top = vim.fn.line("w0", win) - 1
  if not pos[1] or pos[1] < top then
    return "above"
  end
  -- Virtual lines under a row are not part of its text height: add them.
  local height = api.nvim_win_text_height(win, { start_row = top, end_row = s.below }).all + s.height
  return height > api.nvim_win_get_height(win) and "below" or nil
end

--- Scroll the current window so that the newest proposal (or running edit) of the buffer is in
--- view, with the cursor on its first line. Returns false when there is none.
---@return boolean
function M.jump()
  local bufnr = api.nvim_get_current_buf()
  local newest
  for _, s in pairs(M.shown) do
    if s.bufnr == bufnr and (not newest or s.mark > newest.mark) then
      newest = s
    end
  end
  if not newest then
    vim.notify("difill: no proposed edit in this buffer", vim.log.levels.WARN)
    return false
  end
  local row = api.nvim_buf_get_extmark_by_id(bufnr, M.ns, newest.mark, {})[1]
  api.nvim_win_set_cursor(0, { row + 1, 0 })
  vim.cmd("normal! zt") -- the range at the top: the lines under it fit when anything can
  return true
end

--- Drop what is shown for the same range as `s` in its buffer (a proposal the new one replaces:
--- the server has dropped it too), and those the server names in `replaces`.
local function drop_replaced(s, replaces)
  for id, other in pairs(M.shown) do
    if id ~= s.id and other.proposal and other.bufnr == s.bufnr
      and (vim.deep_equal(other.range, s.range) or vim.list_contains(replaces or {}, id)) then
      drop(id)
    end
  end
end

--- An edit command's answer: show its proposal, if it is one. Returns true when it was.
---@param bufnr integer
---@param client vim.lsp.Client
---@param result any
---@return boolean
function M.show(bufnr, client, result)
  local p = type(result) == "table" and result.proposal or nil
  if type(p) ~= "table" or type(p.id) ~= "string" then
    if type(result) == "table" and result.proposal == vim.NIL then
      vim.notify("difill: the model proposed no change", vim.log.levels.INFO)
    end
    return false
  end
  bufnr = vim.uri_to_bufnr(p.uri) or bufnr
  watch(bufnr)
  local label = type(p.label) == "string" and p.label or "difill: proposed edit"
  local s = draw(p.id, bufnr, client, p.range, p.newText, "DifillAdded",
    ("%s (accept: %s, reject: %s)"):format(label, M.accept_hint, M.reject_hint))
  s.proposal = p
  drop_replaced(s, p.replaces)
  local where = M.out_of_view(api.nvim_get_current_win(), s)
  if where then
    vim.notify(("%s: proposed at line %d, %s the window (%s shows it)"):format(label, p.range.start.line + 1,
      where, M.jump_hint))
  end
  return true
end

--- The proposal (or running edit) :DifillAccept / :DifillReject act on: the one on the cursor's
--- line, else the newest in the buffer.
---@param bufnr integer
---@param running boolean  also running edits
---@return difill.Shown?
function M.at_cursor(bufnr, running)
  bufnr = bufnr == 0 and api.nvim_get_current_buf() or bufnr
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local best
  for _, s in pairs(M.shown) do
    if s.bufnr == bufnr and (s.proposal or running) then
      local pos = api.nvim_buf_get_extmark_by_id(bufnr, M.ns, s.mark, { details = true })
      if pos[1] and pos[1] <= row and row <= (pos[3] and pos[3].end_row or pos[1]) then
        return s
      end
      if not best or s.mark > best.mark then
        best = s
      end
    end
  end
  return best
end

--- Send difill.acceptEdit or difill.rejectEdit for the proposal at the cursor.
---@param how "accept"|"reject"
---@param bufnr integer
---@param on_done? fun(err: lsp.ResponseError?)
---@return boolean  false when there was nothing to act on
function M.settle(how, bufnr, on_done)
  local s = M.at_cursor(bufnr, how == "reject")
  if not s then
    vim.notify("difill: no proposed edit in this buffer", vim.log.levels.WARN)
    return false
  end
  local client = vim.lsp.get_client_by_id(s.client_id)
  drop(s.id)
  if not client then
    return false
  end
  local command = how == "accept" and "difill.acceptEdit" or "difill.rejectEdit"
  client:request("workspace/executeCommand", { command = command, arguments = { { id = s.id } } }, function(err)
    if err then
      -- e.g. ContentModified: the buffer changed since the proposal was made
      vim.notify(("difill: %s refused: %s"):format(how, err.message), vim.log.levels.WARN)
    end
    if on_done then
      on_done(err)
    end
  end, bufnr)
  return true
end

function M.highlights()
  api.nvim_set_hl(0, "DifillReplaced", { strikethrough = true, fg = "#e06c75", ctermfg = 167, default = true })
  api.nvim_set_hl(0, "DifillAdded", { fg = "#98c379", ctermfg = 114, default = true })
  -- DifillPreview: a running fill's canvas (the preview).  DifillDraft was its name before "draft"
  -- came to mean text found in the context only: it keeps the colour, and the preview links to
  -- it, so a colour a user set for DifillDraft still applies.
  api.nvim_set_hl(0, "DifillDraft", { fg = "#808080", ctermfg = 244, italic = true, default = true })
  api.nvim_set_hl(0, "DifillPreview", { link = "DifillDraft", default = true })
end

return M
