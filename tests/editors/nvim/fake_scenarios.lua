-- Scenarios against the scripted server (fake_server.lua): its answers are fixed, so the checks
-- in tests/editors/test_neovim_scripted.py are exact.
local T = require("harness")
local F = require("fake_server")
local difill = require("difill")

local GHOST_NS = "difill.ghost"

local function open(name, lines)
  local path = vim.fs.joinpath(vim.env.DIFILL_WORKDIR, name)
  vim.fn.writefile(lines, path)
  vim.cmd.edit(path)
  T.wait(function()
    return vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
  end, 10000, "the difill client to attach")
end

local function cursor()
  return vim.api.nvim_win_get_cursor(0)
end

local S = {}

--- The pieces accept_word / accept_line take, on fixed texts.
S[#S + 1] = { name = "pieces", fn = function(r)
  local ghost = require("difill.ghost")
  r.cases = {}
  for _, text in ipairs({ "sult.value", ".value)", "  x = 1", "\n    return x", "héllo wörld", "x\n", "foo(bar)\nbaz" }) do
    r.cases[#r.cases + 1] = { text = text, word = ghost.piece(text, "word"), line = ghost.piece(text, "line") }
  end
end }

--- A multi-line suggestion taken a word, a word, a line, a line at a time with the default keys;
--- the rest stays shown after each, and no new request is made while it fits.
S[#S + 1] = { name = "partial_accept", fn = function(r)
  F.completion = "sult = compute(x)\n    return result\n"
  open("partial.py", { "def f(x):", "    " })
  T.input("2GA")
  T.input("re")
  r.suggestion = T.wait(difill.suggestion, 5000, "the suggestion")
  r.requests_before = #F.of("textDocument/inlineCompletion")
  r.steps = {}
  for i, key in ipairs({ "<M-Right>", "<M-Right>", "<M-Down>", "<M-Down>", "<M-Down>" }) do
    if i == 5 then
      -- The last piece accepts the whole rest: after it the plugin asks again, as after <M-l>.
      r.requests_after = #F.of("textDocument/inlineCompletion")
      F.completion = nil
    end
    T.input(key)
    T.sleep(100) -- a request, had one been made, would have been answered by now
    local marks = T.ghost_marks(GHOST_NS)
    r.steps[#r.steps + 1] = {
      key = key, lines = T.lines(), cursor = cursor(), shown = difill.suggestion() or vim.NIL,
      marks = marks, mode = vim.api.nvim_get_mode().mode,
    }
  end
  T.input("<Esc>")
  vim.cmd("normal! u")
  r.after_one_undo = T.lines()
  F.completion = nil
end }

local function progress_marks()
  local ns = vim.api.nvim_get_namespaces()["difill.progress"]
  local out = {}
  for _, m in ipairs(ns and vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true }) or {}) do
    out[#out + 1] = { row = m[2], text = m[4].virt_text and m[4].virt_text[1][1] or "", pos = m[4].virt_text_pos }
  end
  return out
end

local function load_progress(kind, message, percentage)
  F.send("$/progress", { token = "difill-load", value = { kind = kind, title = "difill", message = message,
    percentage = percentage } })
  T.sleep(50)
end

--- The model's load while typing: a hint at the cursor (the message area shows -- INSERT --),
--- following the cursor, gone a moment after the load; in normal mode no hint (the echo shows).
S[#S + 1] = { name = "load_hint_in_insert_mode", fn = function(r)
  require("difill.progress").linger_ms = 300
  open("loading.py", { "def f(x):", "    " })
  load_progress("begin", "loading the engine", 0)
  r.normal_mode = progress_marks()
  T.input("2GA")
  r.on_insert = progress_marks()
  load_progress("report", "reading the model", 30)
  r.report = progress_marks()
  T.input("x<CR>")
  r.after_moving = progress_marks()
  r.cursor_row = vim.api.nvim_win_get_cursor(0)[1] - 1
  load_progress("end", "ready (7.7 s)")
  r.at_end = progress_marks()
  T.sleep(600)
  r.after_linger = progress_marks()
  load_progress("begin", "loading the engine", 0)
  T.input("<Esc>")
  r.after_leaving = progress_marks()
  load_progress("end", "ready (0.1 s)")
end }

--- The lines :checkhealth difill writes.
local function checkhealth()
  vim.cmd("checkhealth difill")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd("bwipeout!")
  return lines
end

--- :checkhealth difill after a load and an error the server reported.
S[#S + 1] = { name = "checkhealth", fn = function(r)
  open("health.py", { "x = 1" })
  F.send("difill/status", { state = "ready", message = "model loaded from /models/tiny (llama.cpp) in 1.2 s" })
  F.send("difill/status", { state = "error", message = "the model server failed: 503 Service Unavailable" })
  T.sleep(50)
  r.log = difill.log_file()
  vim.fn.mkdir(vim.fs.dirname(r.log), "p")
  vim.fn.writefile({ "a line" }, r.log)
  r.lines = checkhealth()
end }

local NEXT_EDIT = "textDocument/copilotInlineEdit"
local AREA = { "def area(width, height):", "    half = width / 2", "    return width * height + half" }
--- The rename's next place: `width` on line 2 becomes `w`.
local RENAME = { text = "w", range = { start = { line = 1, character = 11 }, ["end"] = { line = 1, character = 16 } } }

local function textoff()
  return vim.fn.getwininfo(vim.api.nvim_get_current_win())[1].textoff
end

local function signs()
  local ns = vim.api.nvim_get_namespaces()["difill.next_edit"]
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
    if m[4].sign_text then
      out[#out + 1] = vim.trim(m[4].sign_text)
    end
  end
  return out
end

--- The next edit's sign never moves the text: the sign column stays open while difill is on;
--- with sign_column = false and 'signcolumn' auto, the edit is drawn without a sign.
S[#S + 1] = { name = "sign_column", fn = function(r)
  F.next_edits = { RENAME }
  r.global_signcolumn = vim.go.signcolumn
  vim.wo.signcolumn = "auto" -- as in a new window (earlier scenarios' buffers opened the column)
  open("signs.py", AREA)
  r.signcolumn = vim.wo.signcolumn
  r.textoff_before = textoff()
  vim.api.nvim_win_set_cursor(0, { 1, 9 })
  T.input("ciww<Esc>")
  T.wait(function() return require("difill.next_edit").current(0) end, 5000, "the next edit")
  r.signs = signs()
  r.textoff_shown = textoff()
  difill.dismiss_next_edit()
  r.textoff_after = textoff()
  -- Off: 'signcolumn' left as the user has it, and no sign where it would open the column.
  require("difill.next_edit").opts.sign_column = false
  open("signs_off.py", AREA)
  vim.wo.signcolumn = "auto"
  r.textoff_off_before = textoff()
  vim.api.nvim_win_set_cursor(0, { 1, 9 })
  T.input("ciww<Esc>")
  r.shown_off = T.wait(function() return require("difill.next_edit").current(0) end, 5000, "the next edit")
  r.signs_off = signs()
  r.textoff_off_shown = textoff()
  r.signcolumn_off = vim.wo.signcolumn
  require("difill.next_edit").opts.sign_column = true
  difill.dismiss_next_edit()
  F.next_edits = {}
end }

--- Next edits are asked at a pause after a complete token, never while a word is half typed.
S[#S + 1] = { name = "next_edit_not_mid_word", fn = function(r)
  F.next_edits = { RENAME }
  open("midword.py", AREA)
  local asked = function() return #F.of(NEXT_EDIT) end
  local start = asked()
  vim.api.nvim_win_set_cursor(0, { 1, 9 })
  T.input("ciwwi")
  T.sleep(300) -- six times the pause (next_edit_debounce_ms 50)
  r.asked_mid_word = asked() - start
  r.shown_mid_word = require("difill.next_edit").current(0) or vim.NIL
  T.input(" ")
  T.sleep(300)
  r.asked_after_space = asked() - start
  T.input("<BS>")
  T.sleep(300)
  r.asked_after_backspace = asked() - start -- `wi` again: half a word
  T.input("<Esc>")
  T.sleep(300)
  r.asked_after_esc = asked() - start -- leaving insert mode completes it
  r.mode = vim.api.nvim_get_mode().mode
  -- Inside a word in insert mode: `hei|ght` + x.
  vim.api.nvim_win_set_cursor(0, { 3, 22 })
  T.input("ax")
  T.sleep(300)
  r.asked_inside_word = asked() - start
  T.input("<Esc>")
  F.next_edits = {}
end }

--- A proposal's label names the keys that accept and reject it; a running edit's, the key that stops it.
S[#S + 1] = { name = "proposal_label", fn = function(r)
  F.proposal_text = "y = 2"
  open("label.py", { "x = 1" })
  local proposals = require("difill.proposals")
  local range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 5 } }
  proposals.on_preview(nil, { id = "d1", uri = vim.uri_from_bufnr(0), range = range, text = "y", step = 1 },
    { client_id = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1].id })
  r.draft_label = proposals.shown.d1 and vim.api.nvim_buf_get_extmark_by_id(0, proposals.ns, proposals.shown.d1.lines_mark,
    { details = true })[3].virt_lines[1][1][1]
  proposals.on_preview(nil, { id = "d1", uri = vim.uri_from_bufnr(0), range = range, done = true },
    { client_id = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1].id })
  r.draft_dropped = proposals.shown.d1 == nil
  local done = false
  difill.edit(0, range, "add hints", function() done = true end)
  T.wait(function() return done end, 5000, "the proposal")
  local s = proposals.at_cursor(0, false)
  r.label = vim.api.nvim_buf_get_extmark_by_id(0, proposals.ns, s.lines_mark, { details = true })[3].virt_lines[1][1][1]
  vim.cmd("DifillReject")
  F.proposal_text = nil
end }

--- Ghost text where a user pauses (issue 66): entering insert mode at a line's end asks, a cursor
--- move in insert mode asks; entering it mid-line does not (the server would answer nothing).
S[#S + 1] = { name = "ask_where_the_cursor_rests", fn = function(r)
  F.completion = "x + 1"
  open("rests.py", { "def f(x):", "    return ", "y = 2" })
  local function asked()
    return vim.tbl_map(function(q) return { q.params.position.line, q.params.position.character } end,
      F.of("textDocument/inlineCompletion"))
  end
  local before = #asked()
  T.input("2GA")
  r.shown_on_enter = T.wait(difill.suggestion, 5000, "ghost text on entering insert mode")
  r.asked_on_enter = vim.list_slice(asked(), before + 1)
  T.input("<Esc>")
  before = #asked()
  T.input("3G0i")
  T.sleep(200)
  r.asked_mid_line = vim.list_slice(asked(), before + 1)
  T.input("<Esc>")
  T.input("2GA")
  T.wait(difill.suggestion, 5000, "ghost text again")
  before = #asked()
  T.input("<Up><End>")
  r.shown_after_move = T.wait(difill.suggestion, 5000, "ghost text after a cursor move")
  r.asked_after_move = vim.list_slice(asked(), before + 1)
  T.input("<Esc>")
  F.completion = nil
end }

--- An explicit ask (trigger) right after `A`: the debounced automatic ask that `A` scheduled must
--- not replace it when its timer fires while the invoked answer is still on its way.
S[#S + 1] = { name = "trigger_outlives_the_debounce", fn = function(r)
  local ghost = require("difill.ghost")
  local debounce = ghost.opts.debounce_ms
  ghost.opts.debounce_ms = 100
  F.completion_by_kind, F.completion_delay_ms = { [1] = "invoked + 1", [2] = "automatic" }, 400
  local before = #F.of("textDocument/inlineCompletion")
  open("trigger.py", { "def f(x):", "    return " })
  T.input("2GA")
  difill.trigger()
  r.shown = T.wait(difill.suggestion, 5000, "ghost text")
  T.sleep(200)
  r.shown_later = difill.suggestion() or vim.NIL
  r.kinds = vim.tbl_map(function(q) return q.params.context.triggerKind end,
    vim.list_slice(F.of("textDocument/inlineCompletion"), before + 1))
  T.input("<Esc>")
  ghost.opts.debounce_ms, F.completion_by_kind, F.completion_delay_ms = debounce, nil, nil
end }

--- The statusline component in Neovim's default statusline: each state the server reports.
S[#S + 1] = { name = "statusline", fn = function(r)
  open("status.py", { "x = 1" })
  r.option = vim.o.statusline
  local client = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
  local function shown()
    return vim.api.nvim_eval_statusline(vim.o.statusline, { winid = 0 }).str
  end
  r.states = {}
  for _, params in ipairs({ { state = "loading" }, { state = "ready" }, { state = "learning", message = "40%" },
    { state = "error", message = "the model server failed" }, { state = "ready", latencyMs = 80 } }) do
    difill.statuses[client.id] = nil
    F.send("difill/status", params)
    T.sleep(30)
    r.states[#r.states + 1] = { sent = params.state, component = difill.statusline(), shown = shown() }
  end
  vim.cmd.enew()
  vim.bo.filetype = "text"
  r.other_buffer = { component = difill.statusline(), shown = shown() }
  vim.cmd("bwipeout!")
end }

--- A server that dies comes back: restarted at once, every open buffer attached to the new one,
--- said once (after leaving insert mode); three tries a minute, then it stays stopped until
--- :DifillRestart.
S[#S + 1] = { name = "recover", fn = function(r)
  local recover = require("difill.recover")
  recover.delays_ms = { 300, 20, 20 } -- the first long enough to see "restarting"
  F.completion = "x + 1"
  open("other.py", { "z = 3" })
  local other = vim.api.nvim_get_current_buf()
  open("crash.py", { "def f(x):", "    return " })
  local bufnr = vim.api.nvim_get_current_buf()
  local function client_of(b)
    local c = vim.lsp.get_clients({ bufnr = b, name = "difill" })[1]
    return c and c.id or vim.NIL
  end
  local first = client_of(bufnr)
  local notified = #T.notifications()
  T.input("2GA")
  T.wait(difill.suggestion, 5000, "ghost text")
  local starts = F.starts
  F.crash()
  T.wait(function() return recover.state ~= nil end, 2000, "the restart to be planned")
  r.statusline_restarting = difill.statusline()
  r.status_restarting = difill.status()
  r.hint = vim.tbl_map(function(m) return m[4].virt_text[1][1] end,
    vim.api.nvim_buf_get_extmarks(bufnr, require("difill.progress").ns, 0, -1, { details = true }))
  r.back = T.wait(difill.suggestion, 5000, "ghost text back with no user action")
  r.mode = vim.api.nvim_get_mode().mode
  r.said_in_insert = vim.list_slice(T.notifications(), notified + 1)
  r.started = F.starts - starts
  r.clients = { first = first, this = client_of(bufnr), other = client_of(other) }
  T.input("<Esc>")
  T.sleep(50)
  r.said = vim.list_slice(T.notifications(), notified + 1)
  -- Three more crashes inside the minute: two more restarts, then it stays stopped.
  notified = #T.notifications()
  for _ = 1, 2 do
    local serving = client_of(bufnr)
    F.crash()
    T.wait(function()
      local c = vim.lsp.get_client_by_id(client_of(bufnr) ~= vim.NIL and client_of(bufnr) or -1)
      return c and c.id ~= serving and c.initialized
    end, 5000, "a restarted server")
  end
  F.crash()
  T.wait(function() return recover.state and recover.state.what == "stopped" end, 2000, "the tries to run out")
  T.sleep(300)
  r.stopped = { state = recover.state, attached = client_of(bufnr), statusline = difill.statusline(),
    status = difill.status(), said = vim.list_slice(T.notifications(), notified + 1) }
  notified = #T.notifications()
  vim.cmd("DifillRestart")
  T.wait(function() return client_of(bufnr) ~= vim.NIL and client_of(other) ~= vim.NIL end, 5000, ":DifillRestart")
  r.after_restart = { state = recover.state or vim.NIL, said = vim.list_slice(T.notifications(), notified + 1) }
  -- :DifillRestart of a running server: stopped on purpose, not a crash; a new one serves both.
  local before, t0 = client_of(bufnr), vim.uv.now()
  vim.cmd("DifillRestart")
  T.wait(function() return client_of(bufnr) ~= before and client_of(bufnr) ~= vim.NIL end, 5000, "a second restart")
  r.second_restart_ms = vim.uv.now() - t0
  r.second_restart = { same_for_both = client_of(bufnr) == client_of(other), state = recover.state or vim.NIL,
    said = vim.list_slice(T.notifications(), notified + 1) }
  recover.delays_ms = { 200, 2000, 10000 }
  F.completion = nil
end }

return S
