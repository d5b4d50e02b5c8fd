-- Ghost text for Neovim 0.11, which has no vim.lsp.inline_completion: ask the server for
-- textDocument/inlineCompletion, draw the current candidate as extmarks at the cursor,
-- keep it while the user types through it, and drop it when the cursor goes elsewhere.
local util = require("difill.util")

local api = vim.api
local M = {}

local ns = api.nvim_create_namespace("difill.ghost")
local AUTOMATIC, INVOKED = 2, 1

---@class difill.Item
---@field text string      full insertText (snippets are inserted as their raw text)
---@field row integer      0-based start of the range it replaces
---@field col integer      byte column of the start
---@field end_row integer
---@field end_col integer

---@class difill.BufState
---@field items difill.Item[]
---@field index integer
---@field request_id? integer
---@field timer? uv.uv_timer_t
---@field kind? integer    trigger kind of the items shown
---@field in_flight? integer  requests sent and not yet answered
---@field spot? string     what the last request asked: kind, changedtick, row, column

---@type table<integer, difill.BufState>
local states = {}

---@type { debounce_ms: integer|"auto", hl_group: string }
M.opts = { debounce_ms = "auto", hl_group = "DifillGhost" }

--- The server's latency of its last answer (difill/status `latencyMs`), set by init.lua.
---@type number?
M.server_latency_ms = nil

--- How long to wait after a keystroke before asking, for debounce_ms = "auto": nothing while the
--- server is idle and answering fast (a typist at 6 keys a second leaves ~170 ms between keys, so
--- any fixed wait eats into the time a suggestion has to reach the screen); while a request of
--- ours is still in flight or the server is slow, wait half its latency (25-250 ms) so keys typed
--- in a burst do not queue requests that the next key makes useless.
---@param latency_ms number? the server's last answer time
---@param in_flight integer requests of this buffer not answered yet
---@return integer ms
function M.debounce_for(latency_ms, in_flight)
  local latency = latency_ms or 0
  if in_flight == 0 and latency <= 150 then
    return 0
  end
  return math.floor(math.min(250, math.max(25, latency / 2)))
end

local function state(bufnr)
  states[bufnr] = states[bufnr] or { items = {}, index = 1 }
  return states[bufnr]
end

local function cursor()
  local pos = api.nvim_win_get_cursor(0)
  return pos[1] - 1, pos[2]
end

--- The part of `item` still to be typed at the cursor, or nil when the cursor is not inside
--- the item's first line or the text typed since its start does not match it.
---@param bufnr integer
---@param item difill.Item
---@return string?
local function remaining(bufnr, item)
  local row, col = cursor()
  if row ~= item.row or col < item.col then
    return nil
  end
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local typed = line:sub(item.col + 1, col)
  if item.text:sub(1, #typed) ~= typed then
    return nil
  end
  local rest = item.text:sub(#typed + 1)
  return rest ~= "" and rest or nil
end

local function clear_marks(bufnr)
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
  end
end

local function cancel_request(bufnr)
  local s = states[bufnr]
  if s and s.request_id then
    local client = util.client(bufnr)
    if client then
      client:cancel_request(s.request_id)
    end
    s.request_id = nil
  end
end

local function stop_timer(s)
  if s.timer then
    s.timer:stop()
    s.timer:close()
    s.timer = nil
  end
end

--- Draw the current candidate; returns false (and draws nothing) when it no longer fits.
---@param bufnr integer
---@return boolean
function M.render(bufnr)
  clear_marks(bufnr)
  local s = states[bufnr]
  local item = s and s.items[s.index]
  local text = item and remaining(bufnr, item)
  if not text then
    return false
  end
  if vim.fn.pumvisible() == 1 then
    -- A completion menu is open: ghost text behind it reads as part of the menu's word
    -- (`self.def` + `lete(...)`). Keep the item; CompleteDone draws it again if it still fits.
    return true
  end
  local row, col = cursor()
  local lines = vim.split(text, "\n", { plain = true })
  local hl = M.opts.hl_group
  local first = { { lines[1], hl } }
  if #s.items > 1 then
    table.insert(first, { (" (%d/%d)"):format(s.index, #s.items), "NonText" })
  end
  local virt_lines = {}
  for i = 2, #lines do
    virt_lines[#virt_lines + 1] = { { lines[i], hl } }
  end
  api.nvim_buf_set_extmark(bufnr, ns, row, col, {
    virt_text = first,
    virt_text_pos = "inline", -- pushes the rest of the line right, as it will be after accept
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = "combine",
  })
  return true
end

--- Forget the shown candidates (a pending request may still answer).
---@param bufnr integer
local function hide(bufnr)
  local s = states[bufnr]
  if s then
    s.items, s.index = {}, 1
  end
  clear_marks(bufnr)
end

--- Forget the candidates and stop asking.
---@param bufnr integer
function M.dismiss(bufnr)
  local s = states[bufnr]
  if s and s.timer then
    s.timer:stop()
  end
  cancel_request(bufnr)
  hide(bufnr)
end

---@param bufnr integer
---@param client vim.lsp.Client
---@param raw lsp.InlineCompletionItem[]|lsp.InlineCompletionList|nil
---@return difill.Item[]
local function to_items(bufnr, client, raw)
  local items = {}
  local row, col = cursor()
  for _, r in ipairs(raw and (raw.items or raw) or {}) do
    local text = type(r.insertText) == "table" and r.insertText.value or r.insertText
    if type(text) == "string" and text ~= "" then
      local item = { text = text, row = row, col = col, end_row = row, end_col = col }
      if r.range then
        item.row, item.col = util.from_lsp(bufnr, r.range.start, client.offset_encoding)
        item.end_row, item.end_col = util.from_lsp(bufnr, r.range["end"], client.offset_encoding)
      end
      items[#items + 1] = item
    end
  end
  return items
end

--- Ask the server for candidates at the cursor.
---@param bufnr integer
---@param kind integer 1 Invoked (up to 3 candidates) or 2 Automatic (1)
---@param on_items? fun(items: difill.Item[])
function M.request(bufnr, kind, on_items)
  local client = util.client(bufnr)
  if not client then
    return
  end
  local s = state(bufnr)
  local row, col = cursor()
  local tick = api.nvim_buf_get_changedtick(bufnr)
  local spot = ("%d:%d:%d:%d"):format(kind, tick, row, col)
  if kind == AUTOMATIC and s.request_id and s.spot == spot then
    return -- the same question is in flight (InsertEnter and CursorMovedI both ask on `A`)
  end
  if kind == AUTOMATIC and s.request_id and s.spot == ("%d:%d:%d:%d"):format(INVOKED, tick, row, col) then
    return -- the user asked here (trigger): a debounce timer firing now must not replace that ask
  end
  cancel_request(bufnr)
  s.spot = spot
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    position = util.to_lsp(bufnr, row, col, client.offset_encoding),
    context = { triggerKind = kind },
  }
  local ok, id
  ok, id = client:request("textDocument/inlineCompletion", params, function(err, result)
    s.in_flight = math.max(0, (s.in_flight or 1) - 1)
    if s.request_id == id then
      s.request_id = nil
    end
    -- Drop answers to a question that no longer stands: the user typed or moved meanwhile.
    if err or api.nvim_get_current_buf() ~= bufnr or api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return
    end
    local r, c = cursor()
    if r ~= row or c ~= col then
      return
    end
    local items = to_items(bufnr, client, result)
    if on_items then
      on_items(items)
    elseif #items > 0 then
      s.items, s.index, s.kind = items, 1, kind
      M.render(bufnr)
    end
  end, bufnr)
  s.request_id = ok and id or nil
  if ok then
    s.in_flight = (s.in_flight or 0) + 1
  end
end

---@param bufnr integer
function M.schedule(bufnr)
  local s = state(bufnr)
  s.timer = s.timer or vim.uv.new_timer()
  s.timer:stop()
  local wait = M.opts.debounce_ms
  if wait == "auto" then
    wait = M.debounce_for(M.server_latency_ms, s.in_flight or 0)
  end
  s.timer:start(wait, 0, vim.schedule_wrap(function()
    if api.nvim_buf_is_valid(bufnr) and api.nvim_get_current_buf() == bufnr
      and api.nvim_get_mode().mode:sub(1, 1) == "i" and not M.suggestion(bufnr) then
      M.request(bufnr, AUTOMATIC)
    end
  end))
end

---@param bufnr integer
---@return string? text still to be inserted at the cursor
function M.suggestion(bufnr)
  local s = states[bufnr]
  local item = s and s.items[s.index]
  return item and remaining(bufnr, item) or nil
end

---@param bufnr integer
---@return boolean accepted
function M.accept(bufnr)
  local s = states[bufnr]
  local item = s and s.items[s.index]
  if not item or not remaining(bufnr, item) then
    return false
  end
  local row, col = cursor()
  -- Replace from the item's start to the later of its end and the cursor: what the user
  -- typed through is part of the text.
  local end_row, end_col = item.end_row, item.end_col
  if end_row < row or (end_row == row and end_col < col) then
    end_row, end_col = row, col
  end
  M.dismiss(bufnr)
  -- Its own undo step: `u` takes back the suggestion, not the whole insert session. Setting
  -- 'undolevels', even to its own value, closes the undo block (:help undo-break).
  vim.cmd("let &l:undolevels = &l:undolevels")
  local lines = vim.split(item.text, "\n", { plain = true })
  api.nvim_buf_set_text(bufnr, item.row, item.col, end_row, end_col, lines)
  local last_row = item.row + #lines - 1
  local last_col = (#lines == 1 and item.col or 0) + #lines[#lines]
  api.nvim_win_set_cursor(0, { last_row + 1, last_col })
  return true
end

--- The part of `rest` (the ghost text still to type) that accept_part() inserts.
--- "word": the blanks before the next word (at most one line break among them) and the word, or
--- a run of punctuation; bytes of non-ASCII characters count as word characters, so a character
--- is never cut. "line": what is left of the cursor's line; at its end, the next line with the
--- line break before it (so a press never inserts only a line break).
---@param rest string
---@param how "word"|"line"
---@return string
function M.piece(rest, how)
  if how == "line" then
    return rest:match("^\n?[^\n]*")
  end
  local lead = rest:match("^[ \t]*\n?[ \t]*")
  local body = rest:sub(#lead + 1)
  return lead .. (body:match("^[%w_\128-\255]+") or body:match("^[^%w_%s\128-\255]+") or "")
end

--- Insert the next word or line of the suggestion (its own undo step) and keep the rest shown:
--- the item is moved to the new cursor, so typing on through it, or another partial accept, needs
--- no request. Returns false when no suggestion fits the cursor.
---@param bufnr integer
---@param how "word"|"line"
---@return boolean accepted
function M.accept_part(bufnr, how)
  local s = states[bufnr]
  local item = s and s.items[s.index]
  local rest = item and remaining(bufnr, item)
  if not rest then
    return false
  end
  local piece = M.piece(rest, how)
  if piece == rest then
    return M.accept(bufnr) -- the last piece: the item's range (auto-closers) is replaced too
  end
  local row, col = cursor()
  local end_row, end_col = item.end_row, item.end_col
  if end_row < row or (end_row == row and end_col < col) then
    end_row, end_col = row, col
  end
  -- No request while the rest still fits: one scheduled or in flight would only replace it.
  if s.timer then
    s.timer:stop()
  end
  cancel_request(bufnr)
  vim.cmd("let &l:undolevels = &l:undolevels")
  local lines = vim.split(piece, "\n", { plain = true })
  api.nvim_buf_set_text(bufnr, row, col, row, col, lines)
  local new_row = row + #lines - 1
  local new_col = (#lines == 1 and col or 0) + #lines[#lines]
  -- The end of the range it replaces (the cursor, or auto-closers after it) moved with the text.
  if end_row == row then
    end_col = new_col + (end_col - col)
  end
  s.items, s.index = { {
    text = rest:sub(#piece + 1), row = new_row, col = new_col, end_row = end_row + #lines - 1, end_col = end_col,
  } }, 1
  api.nvim_win_set_cursor(0, { new_row + 1, new_col })
  M.render(bufnr)
  return true
end

--- Show the next candidate; after an automatic request (one candidate) ask for more first.
---@param bufnr integer
function M.next(bufnr)
  local s = state(bufnr)
  if #s.items > 1 then
    s.index = s.index % #s.items + 1
    M.render(bufnr)
    return
  end
  local current = s.items[1] and s.items[1].text
  M.request(bufnr, INVOKED, function(items)
    if #items == 0 then
      return
    end
    s.items, s.index, s.kind = items, 1, INVOKED
    for i, item in ipairs(items) do
      if item.text ~= current then
        s.index = i
        break
      end
    end
    M.render(bufnr)
  end)
end

--- Ask at the cursor now, as typing would (one candidate), with no debounce.
---@param bufnr integer
function M.ask(bufnr)
  M.request(bufnr, AUTOMATIC)
end

---@param bufnr integer
function M.trigger(bufnr)
  local s = state(bufnr)
  if s.timer then
    s.timer:stop() -- the debounced automatic ask is superseded by this one
  end
  M.request(bufnr, INVOKED)
end

--- Wire the autocommands for one buffer (called on LspAttach).
---@param bufnr integer
---@param auto_trigger boolean
function M.attach(bufnr, auto_trigger)
  local group = api.nvim_create_augroup("difill.ghost." .. bufnr, { clear = true })
  api.nvim_create_autocmd("TextChangedI", {
    group = group,
    buffer = bufnr,
    callback = function()
      -- Typing through the suggestion keeps it; anything else asks again after a pause.
      if not M.render(bufnr) then
        hide(bufnr)
        if auto_trigger then
          M.schedule(bufnr)
        end
      end
    end,
  })
  api.nvim_create_autocmd("CursorMovedI", {
    group = group,
    buffer = bufnr,
    callback = function()
      -- Not dismiss(): typing also moves the cursor, and must not cancel the request that
      -- TextChangedI just scheduled. Answers for the old position are dropped on arrival.
      if not M.render(bufnr) then
        hide(bufnr)
        -- Where the cursor rests after a move, ask as VS Code does, behind the same debounce (a
        -- keystroke's TextChangedI restarts the same timer). The server answers nothing where the
        -- cursor only moved in front of code (issue 66).
        if auto_trigger then
          M.schedule(bufnr)
        end
      end
    end,
  })
  api.nvim_create_autocmd("InsertEnter", {
    group = group,
    buffer = bufnr,
    callback = function()
      -- `a`, `A`, `o`: the cursor reaches its insert place after InsertEnter; ask there when it is
      -- a line's end (issue 66: ghost text came only after a keystroke).
      vim.schedule(function()
        if auto_trigger and api.nvim_get_current_buf() == bufnr and api.nvim_get_mode().mode:sub(1, 1) == "i" then
          local row, col = cursor()
          if col >= #(api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or "") then
            M.schedule(bufnr)
          end
        end
      end)
    end,
  })
  api.nvim_create_autocmd({ "CompleteChanged", "TextChangedP" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      clear_marks(bufnr) -- the menu is open: see render()
    end,
  })
  api.nvim_create_autocmd("CompleteDone", {
    group = group,
    buffer = bufnr,
    callback = function()
      vim.schedule(function()
        if api.nvim_buf_is_valid(bufnr) and not M.render(bufnr) then
          hide(bufnr)
        end
      end)
    end,
  })
  api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
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
      if s then
        stop_timer(s)
      end
      states[bufnr] = nil
      pcall(api.nvim_del_augroup_by_id, group)
    end,
  })
  -- Attached while the user types (a server restarted after a crash): ask, as typing would.
  if auto_trigger and api.nvim_get_current_buf() == bufnr and api.nvim_get_mode().mode:sub(1, 1) == "i" then
    M.schedule(bufnr)
  end
end

return M
