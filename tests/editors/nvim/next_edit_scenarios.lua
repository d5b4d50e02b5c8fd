-- Next-edit scenarios (issue 35) against the real server: rename a parameter, and the plugin
-- offers the same rename at the other uses; the key jumps, then accepts. Edit drafts need no
-- model, so the checks are exact. Run by tests/editors/test_neovim_next_edit.py.
local T = require("harness")
local difill = require("difill")
local next_edit = require("difill.next_edit")

local NS = "difill.next_edit"
local READY_MS = 120000
local SHOW_MS = 15000
local SOURCE = {
  "def area(width, height):",
  "    half = width / 2",
  "    return width * height + half",
}

local function client()
  return vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
end

--- Open a file that holds `lines` on disk: the server gets them in didOpen, so the rename is
--- the document's first edit (text set after opening would be an edit the rename joins).
local function open(name, lines)
  local path = vim.fs.joinpath(vim.env.DIFILL_WORKDIR, name)
  vim.fn.writefile(lines, path)
  vim.cmd.edit(path)
  T.wait(client, 10000, "the difill client to attach")
end

--- The extmarks of the next edit, as plain data.
local function marks()
  local ns = vim.api.nvim_get_namespaces()[NS]
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
    local d = m[4]
    local text = {}
    for _, chunk in ipairs(d.virt_text or {}) do
      text[#text + 1] = chunk[1]
    end
    out[#out + 1] = {
      row = m[2], col = m[3], end_row = d.end_row, end_col = d.end_col, hl = d.hl_group,
      sign = d.sign_text and vim.trim(d.sign_text) or nil, text = table.concat(text),
      pos = d.virt_text_pos,
    }
  end
  return out
end

--- Record the next-edit requests and cancels the plugin sends through the difill client.
local function spy(r)
  local c = client()
  r.requests, r.cancelled, r.answers = {}, {}, {}
  local request, cancel = c.request, c.cancel_request
  c.request = function(self, method, params, handler, bufnr)
    if method ~= next_edit.METHOD then
      return request(self, method, params, handler, bufnr)
    end
    r.requests[#r.requests + 1] = { version = params.textDocument.version, position = params.position,
      buf_version = vim.lsp.util.buf_versions[bufnr], trigger = params.context.triggerKind }
    return request(self, method, params, function(err, result, ...)
      r.answers[#r.answers + 1] = { err = err and err.code or vim.NIL, edits = result and #result.edits or 0 }
      return handler(err, result, ...)
    end, bufnr)
  end
  c.cancel_request = function(self, id)
    r.cancelled[#r.cancelled + 1] = id
    return cancel(self, id)
  end
  return function()
    c.request, c.cancel_request = request, cancel
  end
end

local function cursor()
  return vim.api.nvim_win_get_cursor(0)
end

local S = {}

S[#S + 1] = { name = "server_ready", fn = function(r)
  open("ready.py", { "x = 1" })
  T.wait(function()
    local st = difill.statuses[client().id]
    return st and st.state == "ready"
  end, READY_MS, "difill/status ready")
  r.capability = vim.tbl_get(client().server_capabilities, "experimental", "difill", "nextEdit") or vim.NIL
  r.maps = { n = vim.fn.maparg("<M-n>", "n"), i = vim.fn.maparg("<M-n>", "i") }
end }

--- Rename `width` in the signature (normal mode: ciw, Esc), then <M-n> <M-n> at each other use.
S[#S + 1] = { name = "rename_then_accept", fn = function(r)
  open("area.py", SOURCE)
  local restore = spy(r)
  local ok, err = pcall(function()
    vim.api.nvim_win_set_cursor(0, { 1, 9 })
    T.input("ciww<Esc>")
    r.after_rename = T.lines()
    r.shown = T.wait(function() return next_edit.current(0) end, SHOW_MS, "the first next edit")
    r.marks = marks()
    r.cursor_shown = cursor()
    T.input("<M-n>")
    r.cursor_after_jump = cursor()
    r.lines_after_jump = T.lines()
    T.input("<M-n>")
    r.lines_after_accept = T.lines()
    r.cursor_after_accept = cursor()
    r.marks_after_accept = marks()
    -- Tab, Tab: the accepted edit is an edit too; the one left is offered next.
    r.second = T.wait(function() return next_edit.current(0) end, SHOW_MS, "the second next edit")
    T.input("<M-n>")
    T.input("<M-n>")
    r.lines_after_second = T.lines()
    T.sleep(800)
    r.third = next_edit.current(0) or vim.NIL -- every use renamed: nothing left to offer
    T.input("u")
    r.lines_after_undo = T.lines()
  end)
  restore()
  assert(ok, err)
end }

--- In insert mode: the same keys, and the accept is its own undo step there too. The edit is
--- asked once the word is complete (here: the cursor leaves it), never while it may still grow.
S[#S + 1] = { name = "insert_mode_accept_is_its_own_undo_step", fn = function(r)
  open("insert.py", SOURCE)
  vim.api.nvim_win_set_cursor(0, { 1, 16 })
  T.input("ciwh")
  T.sleep(800)
  r.shown_mid_word = next_edit.current(0) or vim.NIL
  T.input("<Right>") -- past the `)`: the word `h` is complete
  r.shown = T.wait(function() return next_edit.current(0) end, SHOW_MS, "the next edit")
  r.mode = vim.api.nvim_get_mode().mode
  T.input("<M-n>")
  T.input("<M-n>")
  r.lines_after_accept = T.lines()
  T.input("<Esc>")
  T.input("u")
  r.lines_after_undo = T.lines()
end }

--- Typing within the pause asks nothing; an edit shown goes at the next key; a request in
--- flight is cancelled by the next key (or a dismiss), and its answer is never shown.
S[#S + 1] = { name = "typing_cancels", fn = function(r)
  open("typing.py", SOURCE)
  local restore = spy(r)
  local ok, err = pcall(function()
    vim.api.nvim_win_set_cursor(0, { 1, 9 })
    T.input("ciw")
    for _, key in ipairs({ "w", "i", "d" }) do
      T.input(key) -- 30 ms apart: well within the 250 ms pause
    end
    r.requests_while_typing = #r.requests
    T.sleep(600)
    r.requests_mid_word = #r.requests -- a pause, but `wid` may still grow: nothing asked
    T.input("<Esc>") -- the word is complete
    r.shown = T.wait(function() return next_edit.current(0) end, SHOW_MS, "the next edit after the pause")
    r.requests_after_pause = #r.requests
    T.input("x") -- the user edits on
    r.shown_after_key = next_edit.current(0) or vim.NIL
    r.marks_after_key = marks()
    T.input("<Esc>")
    T.sleep(600)
    -- A request in flight, then a dismiss before its answer: cancelled, never shown.
    local before = #r.answers
    next_edit.request(0)
    next_edit.dismiss(0)
    r.cancelled_in_flight = #r.cancelled > 0
    -- Its answer comes back when the server had started it; when the cancel reached the server
    -- first, the server acknowledges with RequestCancelled, which Neovim's client does not pass
    -- to the handler (a race a loaded machine loses): either way nothing may be shown after it.
    pcall(T.wait, function() return #r.answers > before end, 3000, "the cancelled request's answer")
    T.sleep(200)
    r.shown_after_cancel = next_edit.current(0) or vim.NIL
  end)
  restore()
  assert(ok, err)
end }

--- Issue 63: while ghost text is shown nothing is asked, even once the word is left; Esc ends
--- the edit and asks, as asked for (Invoked: the server answers at once).
S[#S + 1] = { name = "ghost_text_first", fn = function(r)
  open("ghost.py", SOURCE)
  local restore = spy(r)
  local ghost = require("difill.ghost")
  local suggestion = ghost.suggestion
  local ok, err = pcall(function()
    ghost.suggestion = function() return "th" end -- `wid|th` shown at the cursor
    vim.api.nvim_win_set_cursor(0, { 1, 9 })
    T.input("ciwwid<Right>") -- past the `,`: the word is left
    T.sleep(800)
    r.requests_with_ghost = #r.requests
    ghost.suggestion = suggestion -- Esc hides it
    T.input("<Esc>")
    r.shown = T.wait(function() return next_edit.current(0) end, SHOW_MS, "the next edit after Esc")
    r.trigger_after_esc = r.requests[1] and r.requests[1].trigger or vim.NIL
  end)
  ghost.suggestion = suggestion
  restore()
  assert(ok, err)
end }

--- nextEdit = "off": nothing is asked; "on" asks like "drafts".
S[#S + 1] = { name = "setting_off", fn = function(r)
  open("off.py", SOURCE)
  local restore = spy(r)
  local ok, err = pcall(function()
    difill.configure({ nextEdit = "off" })
    vim.api.nvim_win_set_cursor(0, { 1, 9 })
    T.input("ciww<Esc>")
    T.sleep(1000)
    r.requests_off = #r.requests
    r.shown_off = next_edit.current(0) or vim.NIL
    r.marks_off = marks()
    difill.configure({ nextEdit = "drafts" })
    vim.api.nvim_win_set_cursor(0, { 1, 16 })
    T.input("ciwh<Esc>")
    r.shown_on = T.wait(function() return next_edit.current(0) end, SHOW_MS, "a next edit once it is on again")
    difill.configure({ nextEdit = "off" }) -- turning it off drops what is shown
    r.shown_after_off = next_edit.current(0) or vim.NIL
    r.marks_after_off = marks()
  end)
  difill.configure({ nextEdit = "drafts" })
  restore()
  assert(ok, err)
end }

--- A change the plugin has not seen yet (same tick): accept refuses, nothing is applied.
S[#S + 1] = { name = "stale_version_refused", fn = function(r)
  open("stale.py", SOURCE)
  vim.api.nvim_win_set_cursor(0, { 1, 9 })
  T.input("ciww<Esc>")
  r.shown = T.wait(function() return next_edit.current(0) end, SHOW_MS, "the next edit")
  vim.api.nvim_buf_set_lines(0, 2, 3, false, { "    return 0" })
  r.changed = T.lines()
  r.accepted = next_edit.accept(0)
  r.after = T.lines()
end }

--- The edit below the window: the hint on the cursor's line says where; the key jumps there.
S[#S + 1] = { name = "offscreen_hint", fn = function(r)
  local lines = { "def scale(factor, xs):" }
  for i = 1, 60 do
    lines[#lines + 1] = ("    x%d = %d"):format(i, i)
  end
  lines[#lines + 1] = "    return [x * factor for x in xs]"
  open("far.py", lines)
  vim.api.nvim_win_set_cursor(0, { 1, 10 })
  T.input("ciwk<Esc>")
  r.shown = T.wait(function() return next_edit.current(0) end, SHOW_MS, "the next edit")
  r.window = { top = vim.fn.line("w0"), bottom = vim.fn.line("w$") }
  r.marks = marks()
  T.input("<M-n>")
  r.cursor_after_jump = cursor()
  r.marks_after_jump = marks()
  T.input("<M-n>")
  r.last_line = T.lines()[#lines]
end }

return S
