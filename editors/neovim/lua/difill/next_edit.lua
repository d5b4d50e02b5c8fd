-- Next-edit suggestions (issue 35): after an edit, the server's next edit
-- (textDocument/copilotInlineEdit) is drawn at its place as the proposals' diff - the replaced
-- range struck through (DifillReplaced), the new text after it (DifillAdded) - with a sign on
-- its line and a hint, on the cursor's line when the edit is outside the window. The key
-- (<Plug>(difill-next-edit), default <M-n>) jumps to it, and again applies it as its own undo
-- step. Each edit of the buffer drops what is shown, cancels a request in flight and asks again
-- once the typing pauses; an edit is applied only to the version it was made for.
-- Next edits and ghost text never compete (issue 63): nothing is asked while a word may still be
-- typed (until the cursor leaves it or insert mode ends) or while ghost text is shown.
local util = require("difill.util")

local api = vim.api
local M = {}

M.METHOD = "textDocument/copilotInlineEdit"
M.SHOWN = "textDocument/didShowInlineEdit"
M.ns = api.nvim_create_namespace("difill.next_edit")
local AUTOMATIC = 2 -- InlineCompletionTriggerKind: asked because the user edited
local INVOKED = 1 -- asked because the user ended the edit (Esc): the server answers at once

--- debounce_ms: quiet time after an edit before asking (drafts answer in a few ms: this is about
--- not asking on every keystroke of a word). setting(): the nextEdit setting; key: how hints
--- name the key; sign_column: keep the sign column open where the sign is drawn; ghost_shown(bufnr):
--- ghost text is on screen there (ghost.lua), when nothing is asked. init.lua sets them.
M.opts = {
  debounce_ms = 250,
  sign_column = true,
  ghost_shown = function()
    return false
  end,
  setting = function()
    return nil
  end,
  key = ":DifillNextEdit",
}

---@class difill.NextEditState
---@field timer? uv.uv_timer_t
---@field request_id? integer
---@field client_id? integer
---@field edit? table         the edit shown: {text, range, textDocument = {uri, version}}
---@field tick? integer       the buffer's changedtick it was shown for
---@field hint_mark? integer
---@field deferred? boolean  an ask skipped mid-word, made when insert mode ends

---@type table<integer, difill.NextEditState>
local states = {}

--- `bufnr`, with 0 or nil for the current buffer.
local function resolve(bufnr)
  return (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
end

local function state(bufnr)
  states[bufnr] = states[bufnr] or {}
  return states[bufnr]
end

--- `off` turns the feature off; `on` (model edits) and `drafts` both ask.
function M.enabled()
  return M.opts.setting() ~= "off"
end

local function clear(bufnr)
  local s = states[bufnr]
  if s then
    s.edit, s.tick, s.hint_mark = nil, nil, nil
  end
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
end

--- Stop waiting, and cancel the request in flight ($/cancelRequest); its answer is dropped.
local function cancel(bufnr)
  local s = states[bufnr]
  if not s then
    return
  end
  if s.timer then
    s.timer:stop()
  end
  if s.request_id then
    local client = s.client_id and vim.lsp.get_client_by_id(s.client_id)
    if client then
      client:cancel_request(s.request_id)
    end
    s.request_id = nil
  end
end

--- The edit shown in `bufnr`, or nil.
---@param bufnr? integer
---@return table?
function M.current(bufnr)
  local s = states[resolve(bufnr)]
  return s and s.edit
end

--- The edit's range in the buffer: 0-based rows, byte columns.
local function span(bufnr, client, edit)
  local srow, scol = util.from_lsp(bufnr, edit.range.start, client.offset_encoding)
  local erow, ecol = util.from_lsp(bufnr, edit.range["end"], client.offset_encoding)
  return srow, scol, erow, ecol
end

--- The hint: on the edit's line when the window shows it, else on the cursor's line, saying
--- where the edit is. Redrawn when the cursor moves or the window scrolls.
local function draw_hint(bufnr)
  local s = states[bufnr]
  if not (s and s.edit) or api.nvim_get_current_buf() ~= bufnr then
    return
  end
  if s.hint_mark then
    pcall(api.nvim_buf_del_extmark, bufnr, M.ns, s.hint_mark)
  end
  local row, last = s.edit.range.start.line, s.edit.range["end"].line
  local top, bottom = vim.fn.line("w0") - 1, vim.fn.line("w$") - 1
  local cursor = api.nvim_win_get_cursor(0)[1] - 1
  -- The hint says what the key does next: accept on the edit's lines, else jump there.
  local text = cursor >= row and cursor <= last and ("difill: next edit (%s accepts)"):format(M.opts.key)
    or ("difill: next edit (%s jumps to it, again accepts)"):format(M.opts.key)
  local at = row
  if row < top or row > bottom then
    at = cursor
    text = ("difill: next edit at line %d, %s (%s jumps to it)"):format(row + 1, row < top and "above" or "below",
      M.opts.key)
  end
  s.hint_mark = api.nvim_buf_set_extmark(bufnr, M.ns, at, 0, {
    virt_text = { { "  " .. text, "DifillNextEditHint" } },
    virt_text_pos = "eol",
  })
end

--- Keep the sign column of the windows showing `bufnr` open: with 'signcolumn' "auto" (the
--- default) each » sign that came or went shifted the whole buffer two columns (issue 52).
--- "auto" becomes "yes", "auto:N" and "auto:M-N" "yes:N"; "yes", "no" and "number" stay.
---@param bufnr integer
function M.reserve_sign_column(bufnr)
  if not M.opts.sign_column then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    local value = vim.wo[win].signcolumn
    if value:sub(1, 4) == "auto" then
      local width = value:match("(%d+)$")
      api.nvim_set_option_value("signcolumn", width and ("yes:" .. width) or "yes", { scope = "local", win = win })
    end
  end
end

--- Whether a sign in `bufnr` would open a column and shift the text (a window with 'signcolumn'
--- auto, left so by sign_column = false): then the edit is drawn without a sign.
local function sign_shifts(bufnr)
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    if vim.wo[win].signcolumn:sub(1, 4) == "auto" then
      return true
    end
  end
  return false
end

--- Draw `edit` as a diff at its place.
local function show(bufnr, client, edit)
  local s = state(bufnr)
  clear(bufnr)
  local srow, scol, erow, ecol = span(bufnr, client, edit)
  s.edit, s.tick, s.client_id = edit, api.nvim_buf_get_changedtick(bufnr), client.id
  -- What goes: struck through, with a sign unless it would shift the text; what comes: after
  -- it, the first line inline, the rest below.
  local sign = not sign_shifts(bufnr)
  api.nvim_buf_set_extmark(bufnr, M.ns, srow, scol, {
    end_row = erow,
    end_col = ecol,
    hl_group = "DifillReplaced",
    sign_text = sign and "»" or nil,
    sign_hl_group = sign and "DifillAdded" or nil,
  })
  local lines = vim.split(edit.text, "\n", { plain = true })
  local rest = {}
  for i = 2, #lines do
    rest[#rest + 1] = { { lines[i] == "" and " " or lines[i], "DifillAdded" } }
  end
  api.nvim_buf_set_extmark(bufnr, M.ns, erow, ecol, {
    virt_text = lines[1] ~= "" and { { lines[1], "DifillAdded" } } or nil,
    virt_text_pos = lines[1] ~= "" and "inline" or nil,
    virt_lines = #rest > 0 and rest or nil,
  })
  draw_hint(bufnr)
  client:notify(M.SHOWN, { item = edit })
end

--- Ask the server for the next edit at the cursor now (`trigger`: Automatic unless given).
---@param bufnr? integer
---@param trigger? integer
function M.request(bufnr, trigger)
  bufnr = resolve(bufnr)
  local client = util.client(bufnr)
  if not client or not M.enabled() or not vim.tbl_get(client.server_capabilities, "experimental", "difill", "nextEdit") then
    return
  end
  cancel(bufnr)
  local s = state(bufnr)
  local row, col = unpack(api.nvim_win_get_cursor(0))
  local version = vim.lsp.util.buf_versions[bufnr]
  local tick = api.nvim_buf_get_changedtick(bufnr)
  local params = {
    -- Client:request flushes the pending didChange first: the server has this version.
    textDocument = { uri = vim.uri_from_bufnr(bufnr), version = version },
    position = util.to_lsp(bufnr, row - 1, col, client.offset_encoding),
    context = { triggerKind = trigger or AUTOMATIC },
  }
  local ok, id
  ok, id = client:request(M.METHOD, params, function(err, result)
    if s.request_id ~= id then
      return -- cancelled (the user typed, or dismissed) or replaced by a newer request
    end
    s.request_id = nil
    -- An answer for a buffer that changed since (or a refusal: ContentModified) is dropped.
    if err or type(result) ~= "table" or type(result.edits) ~= "table" or not api.nvim_buf_is_valid(bufnr)
      or api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return
    end
    for _, edit in ipairs(result.edits) do
      if type(edit) == "table" and type(edit.text) == "string" and type(edit.range) == "table"
        and vim.tbl_get(edit, "textDocument", "version") == version then
        show(bufnr, client, edit)
        return
      end
    end
  end, bufnr)
  s.request_id, s.client_id = ok and id or nil, client.id
end

local keyword_end = vim.regex([[\k$]])

--- Whether the cursor ends a token that may still be growing: in insert mode right after a
--- keyword character (`wai` of `wait_fixed`). A next edit asked there would offer the half-typed
--- word elsewhere (issue 52); the change after it (a space, a bracket, leaving insert mode:
--- TextChanged fires then) asks instead. Normal-mode commands are whole edits.
---@param bufnr integer
---@return boolean
function M.mid_word(bufnr)
  if api.nvim_get_mode().mode:sub(1, 1) ~= "i" or api.nvim_get_current_buf() ~= bufnr then
    return false
  end
  local row, col = unpack(api.nvim_win_get_cursor(0))
  local before = (api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1] or ""):sub(1, col)
  return api.nvim_buf_call(bufnr, function()
    return keyword_end:match_str(before) ~= nil
  end)
end

--- Ask after the pause, unless the cursor is then in the middle of a word or ghost text is shown:
--- that ask waits for insert mode to end or the cursor to leave (`deferred`), or the next change.
---@param bufnr integer
---@param trigger? integer
local function schedule(bufnr, trigger)
  local s = state(bufnr)
  s.deferred = false
  s.timer = s.timer or vim.uv.new_timer()
  s.timer:start(M.opts.debounce_ms, 0, vim.schedule_wrap(function()
    if not api.nvim_buf_is_valid(bufnr) or api.nvim_get_current_buf() ~= bufnr then
      return
    end
    if M.mid_word(bufnr) or M.opts.ghost_shown(bufnr) then
      s.deferred = true
    else
      M.request(bufnr, trigger)
    end
  end))
end

--- The buffer changed: drop what is shown and what is asked, and ask again after a pause.
---@param bufnr integer
function M.changed(bufnr)
  cancel(bufnr)
  clear(bufnr)
  if M.enabled() then
    schedule(bufnr)
  end
end

--- Apply the edit shown, if the buffer is still at the version it was made for. Its own undo
--- step. Returns true when it was applied.
---@param bufnr? integer
---@return boolean
function M.accept(bufnr)
  bufnr = resolve(bufnr)
  local s = states[bufnr]
  local edit = s and s.edit
  local client = s and s.client_id and vim.lsp.get_client_by_id(s.client_id)
  if not edit or not client then
    return false
  end
  local now = vim.lsp.util.buf_versions[bufnr]
  if now ~= edit.textDocument.version or api.nvim_buf_get_changedtick(bufnr) ~= s.tick then
    clear(bufnr)
    vim.notify(("difill: the buffer changed since the next edit was made (version %s, now %s); nothing applied")
      :format(edit.textDocument.version, now), vim.log.levels.WARN)
    return false
  end
  local srow, scol, erow, ecol = span(bufnr, client, edit)
  clear(bufnr)
  -- Its own undo step, also in insert mode: setting 'undolevels' closes the undo block.
  vim.cmd("let &l:undolevels = &l:undolevels")
  local lines = vim.split(edit.text, "\n", { plain = true })
  api.nvim_buf_set_text(bufnr, srow, scol, erow, ecol, lines)
  -- The cursor at the end of the new text, as after typing it (the change asks for the next one).
  local last_row = srow + #lines - 1
  local last_col = (#lines == 1 and scol or 0) + #lines[#lines]
  if api.nvim_get_mode().mode:sub(1, 1) ~= "i" then
    last_col = math.max(0, last_col - 1) -- normal mode sits on the last character
  end
  api.nvim_win_set_cursor(0, { last_row + 1, last_col })
  return true
end

--- The key: jump to the edit when the cursor is not on its lines, else apply it.
---@return "jump"|"accept"|nil what it did
function M.jump_or_accept()
  local bufnr = api.nvim_get_current_buf()
  local s = states[bufnr]
  local client = s and s.client_id and vim.lsp.get_client_by_id(s.client_id)
  if not (s and s.edit and client) then
    return nil
  end
  local srow, scol, erow = span(bufnr, client, s.edit)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  if row < srow or row > erow then
    api.nvim_win_set_cursor(0, { srow + 1, scol })
    draw_hint(bufnr)
    return "jump"
  end
  return M.accept(bufnr) and "accept" or nil
end

--- Drop the edit shown and stop asking until the next edit.
---@param bufnr? integer
function M.dismiss(bufnr)
  bufnr = resolve(bufnr)
  cancel(bufnr)
  clear(bufnr)
end

--- Drop what every buffer shows or asks (nextEdit turned off).
function M.dismiss_all()
  for bufnr in pairs(states) do
    M.dismiss(bufnr)
  end
end

--- Wire the autocommands for one buffer (called on LspAttach).
---@param bufnr integer
function M.attach(bufnr)
  local group = api.nvim_create_augroup("difill.next_edit." .. bufnr, { clear = true })
  M.reserve_sign_column(bufnr)
  api.nvim_create_autocmd("BufWinEnter", {
    group = group,
    buffer = bufnr,
    callback = function()
      M.reserve_sign_column(bufnr)
    end,
  })
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.changed(bufnr)
    end,
  })
  -- Leaving insert mode ends the word a deferred ask waited for (it changes no text, so no
  -- TextChanged follows).
  api.nvim_create_autocmd("InsertLeave", {
    group = group,
    buffer = bufnr,
    callback = function()
      local s = states[bufnr]
      if s and s.deferred and M.enabled() then
        schedule(bufnr, INVOKED)
      end
    end,
  })
  api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      draw_hint(bufnr)
      -- Moved out of the word a deferred ask waited for (typing's own moves keep it in the word).
      local s = states[bufnr]
      if s and s.deferred and M.enabled() and not M.mid_word(bufnr) then
        schedule(bufnr)
      end
    end,
  })
  -- WinScrolled's pattern is a window id, not a buffer: check the buffer here.
  api.nvim_create_autocmd("WinScrolled", {
    group = group,
    callback = function()
      if api.nvim_get_current_buf() == bufnr then
        draw_hint(bufnr)
      end
    end,
  })
  api.nvim_create_autocmd("BufLeave", {
    group = group,
    buffer = bufnr,
    callback = function()
      M.dismiss(bufnr)
    end,
  })
  api.nvim_create_autocmd({ "BufWipeout", "LspDetach" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.dismiss(bufnr)
      local s = states[bufnr]
      if s and s.timer then
        s.timer:stop()
        s.timer:close()
      end
      states[bufnr] = nil
      pcall(api.nvim_del_augroup_by_id, group)
    end,
  })
end

function M.highlights()
  api.nvim_set_hl(0, "DifillNextEditHint", { link = "DifillPreview", default = true })
end

return M
