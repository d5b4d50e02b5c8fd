-- Scenarios against the real server with a tiny random model: they check behaviour (ghost
-- text appears, accept inserts exactly it, an edit changes the selection), never content.
local T = require("harness")
local difill = require("difill")

local GHOST_NS = "difill.ghost"
local LOAD_MS = 120000 -- first answer includes loading torch and the model on a busy machine
local ANSWER_MS = 60000

local function open(name, lines)
  vim.cmd.edit(vim.fs.joinpath(vim.env.DIFILL_WORKDIR, name))
  vim.api.nvim_buf_set_lines(0, 0, -1, false, lines)
  vim.cmd.write()
  T.wait(function()
    return vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
  end, 10000, "the difill client to attach")
end

--- trigger() until the (random) model produces something visible; an empty answer is a
--- legitimate model output, so retry a few times before failing.
local function triggered_suggestion(timeout)
  local deadline = vim.uv.now() + timeout
  while vim.uv.now() < deadline do
    difill.trigger()
    local ok, text = pcall(T.wait, difill.suggestion, math.min(15000, math.max(1, deadline - vim.uv.now())), "a suggestion")
    if ok then
      return text
    end
  end
  error("no suggestion within " .. timeout .. " ms", 0)
end

--- The tiny random model may answer an edit with nothing (the server then refuses, leaving the
--- text as it is). Try the same action on a few variants of the text until one changes it.
---@param r table            the scenario's record
---@param variants string[][] buffer contents to try, in order
---@param act fun(i: integer) start the action on the buffer already holding variants[i]
local function until_changed(r, name, variants, act)
  r.attempts = {}
  for i, lines in ipairs(variants) do
    open(("%s_%d.py"):format(name, i), lines)
    local seen = #T.notifications()
    act(i)
    local outcome = T.wait(function()
      if not vim.deep_equal(T.lines(), lines) then
        return "changed"
      end
      if require("difill.proposals").at_cursor(0, false) then
        vim.cmd("DifillAccept") -- edits are proposals to review (review_edits): accept it
      end
      if #T.notifications() > seen then
        return "refused: " .. T.notifications()[#T.notifications()]
      end
    end, ANSWER_MS, "the edit (or the server's refusal)")
    r.attempts[#r.attempts + 1] = outcome
    if outcome == "changed" then
      r.before, r.after = lines, T.lines()
      return
    end
    T.input("<Esc>")
  end
  error("no variant was edited: " .. vim.inspect(r.attempts), 0)
end

--- Nine-line files whose lines 4-6 (the selection) differ.
local function function_variants()
  local bodies = {
    { "    s = 0", "    for x in xs:", "        s += x" },
    { "    if not xs:", "        return 0", "    s = sum(xs)" },
    { "    s = 1", "    while s < 100:", "        s *= 2" },
    { "    items = sorted(xs)", "    s = items[0]", "    s += items[-1]" },
  }
  local variants = {}
  for _, body in ipairs(bodies) do
    variants[#variants + 1] = { "import sys", "", "def total(xs):", body[1], body[2], body[3], "    return s", "", "print(total([1]))" }
  end
  return variants
end

local S = {}

--- First, while the model still loads (loadWaitMs 0: a request made then is answered empty at
--- once, as it is after 3 s by default): text typed then gets its ghost text when the model is
--- ready, with no further keystroke; and the load shows its progress in the message area.
S[#S + 1] = { name = "typing_before_ready", fn = function(r)
  local echo = vim.api.nvim_echo
  r.echoed = {}
  vim.api.nvim_echo = function(chunks, history, opts)
    r.echoed[#r.echoed + 1] = table.concat(vim.tbl_map(function(c) return c[1] end, chunks))
    return echo(chunks, history, opts)
  end
  -- The status line right when the model is ready, before any suggestion was answered.
  local au = vim.api.nvim_create_autocmd("User", { pattern = "DifillStatus", callback = function(ev)
    if ev.data.state == "ready" and not r.status_at_ready then
      r.status_at_ready = difill.status()
    end
  end })
  -- The hint at the cursor while typing (the message area shows -- INSERT -- then).
  r.hints = {}
  local hint_au = vim.api.nvim_create_autocmd("LspProgress", { callback = function()
    if vim.api.nvim_get_mode().mode:sub(1, 1) == "i" then
      local ns = vim.api.nvim_get_namespaces()["difill.progress"]
      for _, m in ipairs(ns and vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true }) or {}) do
        r.hints[#r.hints + 1] = { row = m[2], text = vim.trim(m[4].virt_text[1][1]),
          cursor_row = vim.api.nvim_win_get_cursor(0)[1] - 1 }
      end
    end
  end })
  local ok, err = pcall(function()
    open("early.py", { "def greet(name):", "" })
    difill.configure({ loadWaitMs = 0 })
    T.input("2GA")
    T.input("    re")
    local client = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
    local st = difill.statuses[client.id]
    r.state_when_typed = st and st.state or "starting"
    r.status_when_typed = difill.status()
    r.lines = T.lines()
    T.wait(function()
      local now = difill.statuses[client.id]
      return now and now.state == "ready"
    end, LOAD_MS, "the model to be ready")
    r.suggestion = T.wait(difill.suggestion, ANSWER_MS, "ghost text once the model is ready")
    r.lines_after = T.lines()
  end)
  vim.api.nvim_echo = echo
  vim.api.nvim_del_autocmd(au)
  vim.api.nvim_del_autocmd(hint_au)
  difill.configure({ loadWaitMs = 3000 })
  assert(ok, err)
end }

S[#S + 1] = { name = "server_ready", fn = function(r)
  open("ready.py", { "def add(a, b):", "    " })
  T.wait(function()
    local client = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
    local st = client and difill.statuses[client.id]
    return st and st.state == "ready"
  end, LOAD_MS, "difill/status ready")
  r.status = difill.status()
  -- What the server offers, so tests of a feature it has not grown yet skip instead of fail.
  local caps = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1].server_capabilities
  r.commands = vim.tbl_get(caps, "executeCommandProvider", "commands") or {}
  r.inline_completion = caps.inlineCompletionProvider and true or false
end }

S[#S + 1] = { name = "trigger_then_accept", fn = function(r)
  open("accept.py", { "import os", "", "def add(a, b):", "    return ", "", "print(add(1, 2))" })
  T.input("4GA") -- insert mode at the end of `    return `
  r.before = T.lines()
  r.cursor_before = vim.api.nvim_win_get_cursor(0)
  r.suggestion = triggered_suggestion(ANSWER_MS)
  r.marks = T.ghost_marks(GHOST_NS)
  r.mode = vim.api.nvim_get_mode().mode
  -- The items as a client gets them (what Neovim 0.12's built-in client relies on): asked again
  -- at the cursor, which the server's cache answers.
  local client = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
  local position = vim.lsp.util.make_position_params(0, client.offset_encoding).position
  local answer = client:request_sync("textDocument/inlineCompletion", {
    textDocument = vim.lsp.util.make_text_document_params(0), position = position, context = { triggerKind = 1 },
  }, ANSWER_MS, 0)
  r.raw = { position = position, result = answer and answer.result or vim.NIL }
  r.accepted = difill.accept()
  r.after = T.lines()
  r.cursor_after = vim.api.nvim_win_get_cursor(0)
  r.suggestion_after = difill.suggestion() or vim.NIL
  r.marks_after = T.ghost_marks(GHOST_NS)
end }

--- <M-Right> on the real server's suggestion: its first word inserted, the rest still shown, and
--- no request made for it. A suggestion of one word is retried on other lines.
S[#S + 1] = { name = "partial_accept_real_server", fn = function(r)
  local ghost = require("difill.ghost")
  for i, tail in ipairs({ "    return ", "    total = ", "    print(", "    x = a + " }) do
    open(("partial_%d.py"):format(i), { "def add(a, b):", tail })
    T.input("2GA")
    local text = triggered_suggestion(ANSWER_MS)
    if ghost.piece(text, "word") ~= text then
      r.before, r.suggestion, r.cursor_before = T.lines(), text, vim.api.nvim_win_get_cursor(0)
      break
    end
    T.input("<Esc>")
  end
  assert(r.suggestion, "every suggestion was a single word")
  local client = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
  local sent = 0
  local request = client.request
  client.request = function(self, method, ...)
    if method == "textDocument/inlineCompletion" then
      sent = sent + 1
    end
    return request(self, method, ...)
  end
  local ok, err = pcall(function()
    T.input("<M-Right>")
    T.sleep(300)
    r.after = T.lines()
    r.shown = difill.suggestion() or vim.NIL
    r.marks = T.ghost_marks(GHOST_NS)
  end)
  client.request = request
  r.requests = sent
  assert(ok, err)
end }

S[#S + 1] = { name = "typing_asks_by_itself", fn = function(r)
  open("typing.py", { "def greet(name):", "" })
  T.input("2GA")
  T.input("    re")
  -- No trigger(): the debounced TextChangedI request must bring a suggestion.
  local ok, text = pcall(T.wait, difill.suggestion, ANSWER_MS, "an automatic suggestion")
  if not ok then -- an empty random answer; type one more character and wait again
    T.input("t")
    text = T.wait(difill.suggestion, ANSWER_MS, "an automatic suggestion")
  end
  r.suggestion = text
  r.marks = T.ghost_marks(GHOST_NS)
  -- Moving the cursor away must clear it.
  T.input("<Left>")
  r.after_move = difill.suggestion() or vim.NIL
  r.marks_after_move = T.ghost_marks(GHOST_NS)
end }

S[#S + 1] = { name = "leaving_insert_clears", fn = function(r)
  open("leave.py", { "x = 1", "y = " })
  T.input("2GA")
  r.suggestion = triggered_suggestion(ANSWER_MS)
  T.input("<Esc>")
  r.mode = vim.api.nvim_get_mode().mode
  r.after = difill.suggestion() or vim.NIL
  r.marks_after = T.ghost_marks(GHOST_NS)
end }

S[#S + 1] = { name = "dismiss_and_next", fn = function(r)
  open("next.py", { "def mul(a, b):", "    return " })
  T.input("2GA")
  r.first = triggered_suggestion(ANSWER_MS)
  difill.next()
  T.sleep(100)
  r.after_next = T.wait(difill.suggestion, ANSWER_MS, "a suggestion after next()")
  r.marks_after_next = T.ghost_marks(GHOST_NS)
  difill.dismiss()
  r.after_dismiss = difill.suggestion() or vim.NIL
  r.marks_after_dismiss = T.ghost_marks(GHOST_NS)
  r.lines = T.lines()
end }

local function offered(command)
  local caps = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1].server_capabilities
  return vim.list_contains(vim.tbl_get(caps, "executeCommandProvider", "commands") or {}, command)
end

S[#S + 1] = { name = "edit_changes_selection", fn = function(r)
  open("edit.py", { "pass" })
  if not offered("difill.editSelection") then
    error("the server does not offer the difill.editSelection command", 0)
  end
  -- Lines 4-6 in linewise visual mode, then the command on the selection.
  until_changed(r, "edit", function_variants(), function()
    T.input("4GVjj:DifillEdit use the sum builtin<CR>")
  end)
end }

S[#S + 1] = { name = "fill_replaces_holes", fn = function(r)
  open("fill.py", { "pass" })
  if not offered("difill.fillHoles") then
    error("the server does not offer the difill.fillHoles command", 0)
  end
  local variants = {}
  for _, expr in ipairs({ "w * <|hole|>", "<|hole|>", "abs(<|hole|>) * h", "round(w * <|hole|>, 2)" }) do
    variants[#variants + 1] = { "def area(w, h):", "    return " .. expr, "", "print(area(2, 3))" }
  end
  until_changed(r, "fill", variants, function()
    T.input(":DifillFill<CR>")
  end)
end }

--- Code actions on lines 4-6 of a small function, through Neovim's own code action UI.
local function code_action(r, title)
  r.titles = {}
  until_changed(r, "action" .. #title, function_variants(), function()
    vim.lsp.buf.code_action({
      apply = true,
      range = { start = { 4, 0 }, ["end"] = { 6, #vim.api.nvim_buf_get_lines(0, 5, 6, false)[1] } },
      filter = function(action)
        r.titles[#r.titles + 1] = action.title
        return action.title == title
      end,
    })
  end)
end

S[#S + 1] = { name = "code_action_rewrite", fn = function(r)
  code_action(r, "Rewrite selection")
end }

S[#S + 1] = { name = "code_action_with_instruction_asks", fn = function(r)
  local input = vim.ui.input
  r.prompts = {}
  vim.ui.input = function(opts, on_confirm)
    r.prompts[#r.prompts + 1] = opts.prompt
    on_confirm("use the sum builtin")
  end
  local ok, err = pcall(code_action, r, "Edit selection with instruction...")
  vim.ui.input = input
  assert(ok, err)
end }

--- The `gra` menu as a user meets it: a linewise selection, Neovim's own code-action menu
--- (inputlist), "1<CR>" for "Rewrite selection"; the time from that choice to the first draft
--- drawn in the buffer. With codeAction/resolve in the path Neovim ended the keystroke in Visual
--- mode after the menu's message and paused ~4 s before drawing anything (issue 40).
S[#S + 1] = { name = "code_action_menu_to_first_draft", fn = function(r)
  local proposals = require("difill.proposals")
  local select, on_preview = vim.ui.select, proposals.on_preview
  local chosen_at, drawn_at
  vim.ui.select = function(items, opts, on_choice)
    r.titles = vim.tbl_map(opts.format_item or tostring, items)
    vim.api.nvim_input("1<CR>") -- what the user types at the menu's prompt: read by inputlist()
    return select(items, opts, function(item, idx)
      chosen_at = vim.uv.hrtime()
      return on_choice(item, idx)
    end)
  end
  proposals.on_preview = function(err, params, ctx)
    on_preview(err, params, ctx)
    local drawn = #vim.api.nvim_buf_get_extmarks(0, proposals.ns, 0, -1, {}) > 0
    if chosen_at and not drawn_at and drawn then
      drawn_at = vim.uv.hrtime()
    end
  end
  local ok, err = pcall(function()
    open("menu_action.py", function_variants()[1])
    vim.api.nvim_input("4GVjjgra") -- a linewise selection, then Neovim's default code-action key
    T.wait(function()
      return drawn_at
    end, ANSWER_MS, "the first draft after the menu")
    r.first_draft_ms = (drawn_at - chosen_at) / 1e6
    r.mode = vim.api.nvim_get_mode().mode
    T.wait(function()
      return proposals.at_cursor(0, false) or #T.notifications() > 0
    end, ANSWER_MS, "the edit to end")
    if proposals.at_cursor(0, false) then
      vim.cmd("DifillReject")
    end
  end)
  vim.ui.select, proposals.on_preview = select, on_preview
  r.chosen = chosen_at ~= nil
  assert(ok, err)
end }

--- `gra` in normal mode with no selection (issue 66): the actions for what is under the cursor.
S[#S + 1] = { name = "code_actions_at_the_cursor", fn = function(r)
  local select = vim.ui.select
  local menus = {}
  vim.ui.select = function(items, opts, on_choice)
    menus[#menus + 1] = vim.tbl_map(opts.format_item or tostring, items)
    on_choice(nil) -- closed without a choice
  end
  local ok, err = pcall(function()
    open("cursor_actions.py", { "def later(a, b):", "    pass", "", "x = [<|hole|>, 2]", "", "def total(p):",
      "    return sum(p)" })
    local notified = #T.notifications()
    for _, at in ipairs({ { 2, 5 }, { 4, 6 }, { 7, 8 } }) do
      vim.api.nvim_win_set_cursor(0, at)
      local before = #menus
      T.input("gra")
      T.wait(function() return #menus > before or #T.notifications() > notified end, ANSWER_MS, "the menu")
      r[("at_%d_%d"):format(at[1], at[2])] = menus[#menus] or vim.NIL
      r.mode = vim.api.nvim_get_mode().mode
    end
  end)
  vim.ui.select = select
  assert(ok, err)
end }

S[#S + 1] = { name = "ghost_is_drawn_in_its_own_highlight", fn = function(r)
  open("hl.py", { "x = 1", "y = " })
  T.input("2GA")
  r.suggestion = triggered_suggestion(ANSWER_MS)
  local ns = vim.api.nvim_get_namespaces()[GHOST_NS]
  local mark = vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })[1]
  r.mark_hl = mark and mark[4].virt_text[1][2] or vim.NIL
  r.hl = vim.api.nvim_get_hl(0, { name = r.mark_hl ~= vim.NIL and r.mark_hl or "DifillGhost", link = false })
end }

S[#S + 1] = { name = "completion_menu_hides_ghost", fn = function(r)
  open("menu.py", { "alpha_one = 1", "alpha_two = 2", "alpha_three = 3", "value = " })
  T.input("4GA")
  r.suggestion = triggered_suggestion(ANSWER_MS)
  r.marks_before = T.ghost_marks(GHOST_NS)
  T.input("<C-n>") -- the built-in keyword completion menu
  r.pum = vim.fn.pumvisible()
  r.marks_in_menu = T.ghost_marks(GHOST_NS)
  T.input("<C-e>")
end }

S[#S + 1] = { name = "accept_is_its_own_undo_step", fn = function(r)
  open("undo.py", { "def f(a):", "    " })
  T.input("2GA")
  T.input("x = a")
  r.typed = T.lines()
  r.suggestion = triggered_suggestion(ANSWER_MS)
  r.accepted = difill.accept()
  r.after_accept = T.lines()
  T.input("<Esc>")
  T.input("u")
  r.after_undo = T.lines()
end }

S[#S + 1] = { name = "instruction_prompt_leaves_visual_mode", fn = function(r)
  local input = vim.ui.input
  r.modes = {}
  vim.ui.input = function(opts, on_confirm)
    r.modes[#r.modes + 1] = vim.api.nvim_get_mode().mode
    on_confirm("use the sum builtin")
  end
  local ok, err = pcall(until_changed, r, "visual_action", function_variants(), function()
    T.input("4GVjj") -- a linewise visual selection, then the code action picked from it
    r.mode_before = vim.api.nvim_get_mode().mode
    vim.lsp.buf.code_action({
      apply = true,
      filter = function(action)
        return action.title == "Edit selection with instruction..."
      end,
    })
  end)
  vim.ui.input = input
  assert(ok, err)
end }

------------------------------------------------------------------------------------------
-- Proposed edits (review_edits, issue 24): the canvas in place, the diff, accept, reject,
-- and a proposal on a changed buffer refused.
------------------------------------------------------------------------------------------

local proposals = require("difill.proposals")

--- Virtual lines and highlights the proposals namespace draws in the buffer.
local function proposal_marks()
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, proposals.ns, 0, -1, { details = true })) do
    local d = m[4]
    local lines, line_hls = {}, {}
    for _, l in ipairs(d.virt_lines or {}) do
      lines[#lines + 1] = table.concat(vim.tbl_map(function(c) return c[1] end, l))
      line_hls[#line_hls + 1] = l[#l] and l[#l][2] or ""  -- the highlight of the line's last chunk
    end
    out[#out + 1] = { row = m[2], end_row = d.end_row, hl = d.hl_group, lines = lines, line_hls = line_hls }
  end
  return out
end

local function buffer_text()
  return table.concat(T.lines(), "\n")
end

--- :DifillEdit on lines 4-6 until the (random) model proposes something; records the drafts
--- drawn meanwhile. Returns the shown proposal.
local function propose(r, name)
  local seen_drafts = {}
  local on_preview = proposals.on_preview
  proposals.on_preview = function(err, params, ctx)
    on_preview(err, params, ctx)
    if not params.done then
      seen_drafts[#seen_drafts + 1] = { marks = proposal_marks(), text = buffer_text(), params = params }
    end
  end
  r.attempts = {}
  local ok, err = pcall(function()
    for i, lines in ipairs(function_variants()) do
      open(("%s_%d.py"):format(name, i), lines)
      local seen = #T.notifications()
      T.input("4GVjj:DifillEdit use the sum builtin<CR>")
      local outcome = T.wait(function()
        local s = proposals.at_cursor(0, false)
        if s then
          return s
        end
        if #T.notifications() > seen then
          return "refused: " .. T.notifications()[#T.notifications()]
        end
      end, ANSWER_MS, "a proposal (or the server's refusal)")
      if type(outcome) == "table" then
        r.before = lines
        r.drafts = seen_drafts
        return
      end
      r.attempts[#r.attempts + 1] = outcome
      seen_drafts = {}
    end
    error("no variant got a proposal: " .. vim.inspect(r.attempts), 0)
  end)
  proposals.on_preview = on_preview
  assert(ok, err)
  return proposals.at_cursor(0, false)
end

S[#S + 1] = { name = "proposal_accept", fn = function(r)
  difill.configure({ steps = 16 }) -- a few drafts to see
  local shown = propose(r, "accept")
  difill.configure({ steps = 4 })
  r.proposal = shown.proposal
  r.marks = proposal_marks()
  r.lines_while_shown = T.lines()
  vim.cmd("DifillAccept")
  r.after = T.wait(function()
    return not vim.deep_equal(T.lines(), r.before) and T.lines()
  end, ANSWER_MS, "the accepted edit")
  r.marks_after = proposal_marks()
end }

S[#S + 1] = { name = "proposal_reject", fn = function(r)
  local shown = propose(r, "reject")
  r.proposal = shown.proposal
  r.bytes_before = buffer_text()
  r.tick_before = vim.b.changedtick
  vim.cmd("DifillReject")
  T.sleep(500) -- an edit would have arrived by now
  r.bytes_after = buffer_text()
  r.tick_after = vim.b.changedtick
  r.marks_after = proposal_marks()
end }

S[#S + 1] = { name = "proposal_on_changed_buffer_refused", fn = function(r)
  propose(r, "changed")
  -- A change outside the proposal's range: it stays shown, but it was made for the old version.
  vim.api.nvim_buf_set_lines(0, -1, -1, false, { "# a new last line" })
  r.changed = T.lines()
  local seen = #T.notifications()
  vim.cmd("DifillAccept")
  r.refusal = T.wait(function()
    return #T.notifications() > seen and T.notifications()[#T.notifications()]
  end, ANSWER_MS, "the refusal")
  T.sleep(300)
  r.after = T.lines()
end }

--- :DifillEdit on the last two lines in the window: the proposal hangs below it, so the plugin
--- says where it is and :DifillJump brings it into view; the same edit again replaces it.
S[#S + 1] = { name = "offscreen_proposal_then_same_range_again", fn = function(r)
  r.attempts = {}
  local shown
  for i = 1, 4 do
    local lines = {}
    for n = 1, 60 do
      lines[n] = ("value_%d = compute(%d, %d)"):format(n, n * i, n + i)
    end
    open(("offscreen_%d.py"):format(i), lines)
    T.input("gg")
    local last = vim.fn.line("w$")
    r.window = { top = vim.fn.line("w0"), last = last, height = vim.api.nvim_win_get_height(0) }
    local seen = #T.notifications()
    T.input(("%dGV%dG:DifillEdit add type hints<CR>"):format(last - 1, last))
    local outcome = T.wait(function()
      for _, s in pairs(proposals.shown) do
        if s.proposal and s.bufnr == vim.api.nvim_get_current_buf() then
          return s
        end
      end
      if #T.notifications() > seen then
        return "refused: " .. T.notifications()[#T.notifications()]
      end
    end, ANSWER_MS, "a proposal (or the server's refusal)")
    if type(outcome) == "table" then
      shown = outcome
      r.message = T.wait(function()
        return #T.notifications() > seen and T.notifications()[#T.notifications()]
      end, 2000, "the message about the proposal")
      break
    end
    r.attempts[#r.attempts + 1] = outcome
  end
  assert(shown, "no variant got a proposal: " .. vim.inspect(r.attempts))
  r.first_line = shown.proposal.range.start.line + 1
  r.label = proposal_marks()[2] and proposal_marks()[2].lines[1] or vim.NIL
  r.view_before = proposals.out_of_view(0, shown) or vim.NIL
  vim.cmd("DifillJump")
  r.view_after = proposals.out_of_view(0, shown) or vim.NIL
  r.top_after, r.below = vim.fn.line("w0"), shown.below
  r.cursor_after = vim.api.nvim_win_get_cursor(0)[1]
  -- The same edit of the same lines again: one proposal, the new one.
  local first_id = shown.id
  T.input(("%dGV%dG:DifillEdit add type hints<CR>"):format(r.first_line, r.first_line + 1))
  local second = T.wait(function()
    for id, s in pairs(proposals.shown) do
      if id ~= first_id and s.proposal and s.bufnr == vim.api.nvim_get_current_buf() then
        return s
      end
    end
  end, ANSWER_MS, "the second proposal")
  r.ids = {}
  for id, s in pairs(proposals.shown) do
    if s.bufnr == vim.api.nvim_get_current_buf() then
      r.ids[#r.ids + 1] = id
    end
  end
  r.second_id, r.first_id = second.id, first_id
  r.marks = #proposal_marks()
  vim.cmd("DifillReject")
end }

S[#S + 1] = { name = "status_command", fn = function(r)
  open("status.py", { "pass" })
  local messages = {}
  local notify = vim.notify
  vim.notify = function(msg)
    messages[#messages + 1] = msg
  end
  vim.cmd("DifillStatus")
  vim.notify = notify
  r.messages = messages
end }


S[#S + 1] = { name = "commands_without_a_server", fn = function(r)
  -- A scratch buffer with no file and no filetype: difill does not attach to it.
  vim.cmd.enew()
  vim.bo.buftype = "nofile"
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "x = <|hole|>" })
  r.attached = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1] ~= nil
  vim.cmd("DifillFill")
  vim.cmd("DifillEdit use the sum builtin")
  T.sleep(300)
  r.lines = T.lines()
end }

return S
