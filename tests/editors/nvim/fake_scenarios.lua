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

return S
