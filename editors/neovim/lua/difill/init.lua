-- difill for Neovim: a thin client of the `difill serve` language server.
-- Ghost text comes from textDocument/inlineCompletion (built-in on Neovim >= 0.12, our own
-- extmarks on 0.11), edits from workspace/executeCommand, code actions are plain LSP.
local util = require("difill.util")
local ghost = require("difill.ghost")
local proposals = require("difill.proposals")
local next_edit = require("difill.next_edit")
local progress = require("difill.progress")
local recover = require("difill.recover")

local api = vim.api
local M = {}

---@type difill.Config
M.config = vim.deepcopy(require("difill.config"))

--- Last difill/status per client id, for :DifillStatus and statuslines.
---@type table<integer, { state: string, message?: string, latencyMs?: number }>
M.statuses = {}

--- The model's loading progress per client id while it loads ("difill: reading the model (30%)").
---@type table<integer, string>
M.progress = {}

local ask_again -- defined with the handlers below

--- For :DifillStatus: what the server said and did last. `loaded`: the ready message of the last
--- load ("model loaded from ... (torch) in 2.1 s"); `error`: its last error; `exit`: how the last
--- server process ended, when it failed, with the end of what it wrote to stderr.
---@type { loaded?: string, error?: string, exit?: { code: integer, signal: integer, stderr: string } }
M.last = {}

local STDERR_KEEP = 4000 -- bytes of the server's stderr kept: argparse's usage and error fit
local stderr_tail = "" -- the newest stderr of the server command

--- Neovim sends a server's stderr only to lsp.log (vim.lsp.log.error("rpc", cmd, "stderr", chunk));
--- keep ours too, so that a server that exits at once can say why where the user looks.
local function capture_stderr()
  local lsp_log = require("vim.lsp.log")
  if lsp_log.difill_wrapped then
    return
  end
  local error_fn = lsp_log.error
  lsp_log.error = function(...)
    local what, cmd, stream, chunk = ...
    if what == "rpc" and stream == "stderr" and type(chunk) == "string" and type(M.config.cmd) == "table"
      and cmd == M.config.cmd[1] then
      stderr_tail = (stderr_tail .. chunk):sub(-STDERR_KEEP)
    end
    return error_fn(...)
  end
  lsp_log.difill_wrapped = true
end

--- The server's log file: the logFile setting, by default next to Neovim's own lsp.log.
---@return string
function M.log_file()
  return M.config.settings.logFile
end

local function builtin()
  local b = M.config.builtin
  return b ~= false and vim.lsp.inline_completion ~= nil and vim.lsp.inline_completion.enable ~= nil
end

local function buf()
  return api.nvim_get_current_buf()
end

------------------------------------------------------------------------------------------
-- Public API: ghost text
--
-- On 0.12 the built-in draws automatic suggestions; explicit asks (trigger, next without
-- a built-in item) go through difill's own renderer, so both paths are checked below.
------------------------------------------------------------------------------------------

--- Ask for a suggestion at the cursor now (an Invoked request: up to 3 candidates).
function M.trigger()
  ghost.trigger(buf())
end

--- The ghost text that accept() would insert at the cursor, or nil.
---@return string?
function M.suggestion()
  local text = ghost.suggestion(buf())
  if text or not builtin() then
    return text
  end
  -- vim.lsp.inline_completion keeps its item private; read what it drew.
  local ns = api.nvim_get_namespaces()["nvim.lsp.inline_completion"]
  for _, mark in ipairs(ns and api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true }) or {}) do
    local parts = {}
    for _, chunk in ipairs(mark[4].virt_text or {}) do
      parts[#parts + 1] = chunk[1]
    end
    for _, l in ipairs(mark[4].virt_lines or {}) do
      parts[#parts + 1] = "\n" .. table.concat(vim.tbl_map(function(c) return c[1] end, l))
    end
    return table.concat(parts)
  end
end

--- Insert the current suggestion. Returns false when there is none.
---@return boolean
function M.accept()
  if ghost.accept(buf()) then
    return true
  end
  return builtin() and vim.lsp.inline_completion.get() or false
end

--- On 0.12, the built-in's item: insert its next word or line at the cursor. The built-in then
--- asks again (the cursor moved), and the server answers the rest from its cache, as for typed
--- text (features/suggestions/cache.py, up to 64 characters typed ahead).
---@param how "word"|"line"
---@return boolean
local function builtin_accept_part(how)
  return vim.lsp.inline_completion.get({
    on_accept = function(item)
      local text = type(item.insert_text) == "string" and item.insert_text or item.insert_text.value
      local row, col = unpack(api.nvim_win_get_cursor(0))
      row = row - 1
      local start = item.range and item.range.start
      local typed = ""
      if start and start.row == row and start.col <= col then
        typed = (api.nvim_buf_get_lines(0, row, row + 1, false)[1] or ""):sub(start.col + 1, col)
      end
      if text:sub(1, #typed) ~= typed then
        return
      end
      local piece = ghost.piece(text:sub(#typed + 1), how)
      local lines = vim.split(piece, "\n", { plain = true })
      vim.cmd("let &l:undolevels = &l:undolevels")
      api.nvim_buf_set_text(0, row, col, row, col, lines)
      api.nvim_win_set_cursor(0, { row + #lines, (#lines == 1 and col or 0) + #lines[#lines] })
    end,
  })
end

--- Insert the next word of the suggestion; the rest stays shown. Returns false when there is none.
---@return boolean
function M.accept_word()
  return ghost.accept_part(buf(), "word") or (builtin() and builtin_accept_part("word")) or false
end

--- Insert the rest of the suggestion's line (at its end: the next line); the rest stays shown.
---@return boolean
function M.accept_line()
  return ghost.accept_part(buf(), "line") or (builtin() and builtin_accept_part("line")) or false
end

--- Show the next candidate (asking for more when only one was shown).
function M.next()
  if builtin() and not ghost.suggestion(buf()) and M.suggestion() then
    vim.lsp.inline_completion.select({ count = 1 })
  else
    ghost.next(buf())
  end
end

--- Hide the suggestion (and the next edit).
function M.dismiss()
  ghost.dismiss(buf())
  next_edit.dismiss(buf())
  if builtin() and vim.lsp.inline_completion.is_enabled({ bufnr = buf() }) then
    -- Toggling is the only public way to drop the built-in's current item.
    vim.lsp.inline_completion.enable(false, { bufnr = buf() })
    vim.lsp.inline_completion.enable(true, { bufnr = buf() })
  end
end

------------------------------------------------------------------------------------------
-- Next edits (issue 35): after an edit, the same edit where else it applies
------------------------------------------------------------------------------------------

--- Jump to the next edit shown, or apply it when the cursor is on its lines already (its own
--- undo step). Returns "jump", "accept", or nil when there was none.
---@return "jump"|"accept"|nil
function M.next_edit()
  return next_edit.jump_or_accept()
end

--- The next edit shown in the current buffer, `{text, range, textDocument}`, or nil.
---@return table?
function M.next_edit_shown()
  return next_edit.current(buf())
end

--- Drop the next edit shown.
function M.dismiss_next_edit()
  next_edit.dismiss(buf())
end

------------------------------------------------------------------------------------------
-- Edits: the server computes the text and answers with workspace/applyEdit
------------------------------------------------------------------------------------------

--- The LSP range of a command's range: the visual selection when the command was given
--- from one (charwise for `v`, whole lines otherwise), else the lines it names.
---@param bufnr integer
---@param cmd { range: integer, line1: integer, line2: integer }
---@param encoding string
---@return lsp.Range
local function command_range(bufnr, cmd, encoding)
  local s, e = api.nvim_buf_get_mark(bufnr, "<"), api.nvim_buf_get_mark(bufnr, ">")
  local srow, scol, erow, ecol
  if cmd.range > 0 and s[1] == cmd.line1 and e[1] == cmd.line2 and vim.fn.visualmode() == "v" then
    srow, scol, erow = s[1] - 1, s[2], e[1] - 1
    local last = api.nvim_buf_get_lines(bufnr, erow, erow + 1, false)[1] or ""
    -- '> marks the first byte of the last selected character; the range ends after it.
    ecol = math.min(#last, e[2] + #vim.fn.strcharpart(last:sub(e[2] + 1), 0, 1))
  else
    local l1, l2 = cmd.line1, cmd.line2
    if cmd.range == 0 then
      l1, l2 = 1, api.nvim_buf_line_count(bufnr)
    end
    srow, scol, erow = l1 - 1, 0, l2 - 1
    ecol = #(api.nvim_buf_get_lines(bufnr, erow, erow + 1, false)[1] or "")
  end
  return {
    start = util.to_lsp(bufnr, srow, scol, encoding),
    ["end"] = util.to_lsp(bufnr, erow, ecol, encoding),
  }
end

--- The difill client attached to ``bufnr``; nil, after a warning, when there is none.
---@param bufnr integer
---@return vim.lsp.Client?
local function attached_client(bufnr)
  local client = util.client(bufnr)
  if not client then
    vim.notify("difill: no server attached to this buffer", vim.log.levels.WARN)
  end
  return client
end

--- Send difill.editSelection / difill.fillHoles; the edit itself arrives as applyEdit.
---@param bufnr integer
---@param command string
---@param args table
---@param on_done? fun(err: lsp.ResponseError?)
function M.execute(bufnr, command, args, on_done)
  local client = attached_client(bufnr)
  if not client then
    return
  end
  -- Straight to the server: client:exec_cmd would route difill.editSelection back to the
  -- client-side handler below that asks for an instruction.
  client:request("workspace/executeCommand", { command = command, arguments = { args } }, function(err, result)
    if err then
      vim.notify(("difill: %s failed: %s"):format(command, err.message), vim.log.levels.ERROR)
    else
      proposals.show(bufnr, client, result) -- with review_edits the answer is a proposal
    end
    if on_done then
      on_done(err)
    end
  end, bufnr)
end

--- Leave visual (or select) mode before asking for text: a prompt opened while it is active
--- takes the typed instruction as visual-mode commands (`re...` replaces the selection).
local function leave_visual_mode()
  if api.nvim_get_mode().mode:match("^[vV\22sS\19]") then
    api.nvim_feedkeys(api.nvim_replace_termcodes("<Esc>", true, false, true), "nx", false)
  end
end

--- Ask for an instruction once visual mode is left, on the next turn of the event loop.
---@param on_text fun(text: string)
local function ask_instruction(on_text)
  leave_visual_mode()
  vim.schedule(function()
    vim.ui.input({ prompt = "difill edit: " }, function(text)
      if text and text ~= "" then
        on_text(text)
      end
    end)
  end)
end

---@param bufnr integer
---@param range lsp.Range
---@param instruction? string
---@param on_done? fun(err: lsp.ResponseError?)
function M.edit(bufnr, range, instruction, on_done)
  local function send(text)
    if not text or text == "" then
      return
    end
    M.execute(bufnr, "difill.editSelection", {
      uri = vim.uri_from_bufnr(bufnr),
      range = range,
      -- Client:request flushes pending didChange first, so this is the version the server has.
      version = vim.lsp.util.buf_versions[bufnr],
      instruction = text,
    }, on_done)
  end
  if instruction and instruction ~= "" then
    send(instruction)
  else
    ask_instruction(send)
  end
end

------------------------------------------------------------------------------------------
-- Status
------------------------------------------------------------------------------------------

--- Why the server could not be started, when setup() found its command missing.
---@type string?
M.start_error = nil

--- How a server state reads where it differs from its name. "learning": the server adapts its
--- model to this project (difill/status `{ state = "learning", message? }`).
local STATE_WORDS = { learning = "learning this project" }

--- One line for :DifillStatus: "difill: ready 120ms (model loaded ...)" (the last suggestion's
--- latency), "difill: restarting (the server stopped: signal 9)".
---@return string
function M.status()
  local client = util.client(buf())
  if not client then
    if recover.state then
      return ("difill: %s (the server stopped: %s%s)"):format(recover.state.what, recover.state.why,
        recover.state.what == "stopped" and "; :DifillRestart" or "")
    end
    local exit = M.last.exit
    local why = M.start_error
      or (exit and ("the server exited with code %d%s"):format(exit.code, exit.signal ~= 0 and
        (", signal " .. exit.signal) or ""))
    return "difill: not attached" .. (why and (" (" .. why .. ")") or "")
  end
  local st = M.statuses[client.id]
  if not st then
    return "difill: starting"
  end
  -- While loading, the step it is at says more than the state: "difill: reading the model (30%)".
  local parts = { st.state == "loading" and M.progress[client.id] or ("difill: " .. (STATE_WORDS[st.state] or st.state)) }
  if st.latencyMs then
    parts[#parts + 1] = ("%dms"):format(st.latencyMs)
  end
  if st.message and st.message ~= "" then
    parts[#parts + 1] = "(" .. st.message .. ")"
  end
  return table.concat(parts, " ")
end

--- The statusline component: "difill: ready", "difill: loading the model (30%)", "difill: learning
--- this project", "difill: error", "difill: restarting"; "" in a buffer difill does not serve.
--- setup() puts it into Neovim's default statusline (option `statusline`); lualine and others
--- can call it (editors/README.md).
---@return string
function M.statusline()
  local bufnr = buf()
  local client = util.client(bufnr)
  if not client then
    local served = vim.tbl_contains(M.config.filetypes or {}, vim.bo[bufnr].filetype)
    return served and recover.state and ("difill: " .. recover.state.what) or ""
  end
  local st = M.statuses[client.id]
  if not st then
    return "difill: starting"
  end
  if st.state == "loading" then
    return M.progress[client.id] or "difill: loading"
  end
  return "difill: " .. (STATE_WORDS[st.state] or st.state)
end

-- The default statusline's own items (:help 'statusline', 'ruler') with difill's before the ruler;
-- %( %) leaves nothing where difill says nothing. %{} (not %{%): "30%" is text, not an item.
local COMPONENT = "%(%{v:lua.require'difill'.statusline()}  %)"
local DEFAULT_STATUSLINE = "%<%f %h%w%m%r%=" .. COMPONENT .. "%-14.(%l,%c%V%) %P"

--- Put the component into the statusline when the user left 'statusline' as Neovim sets it.
local function default_statusline()
  local info = api.nvim_get_option_info2("statusline", {})
  if info.was_set or vim.o.statusline ~= info.default then
    return -- theirs: they add require("difill").statusline() where they like
  end
  vim.o.statusline = info.default == "" and DEFAULT_STATUSLINE
    or info.default:gsub("%%=", function() return "%=" .. COMPONENT end, 1)
end

------------------------------------------------------------------------------------------
-- Setup
------------------------------------------------------------------------------------------

local function set_keymaps(bufnr)
  local km = M.config.keymaps
  if not km then
    return
  end
  local function map(mode, lhs, rhs, desc)
    if lhs then
      -- remap: a <Plug> mapping on the right-hand side must be expanded.
      vim.keymap.set(mode, lhs, rhs, { buffer = bufnr, desc = "difill: " .. desc, remap = type(rhs) == "string"
        and rhs:sub(1, 6) == "<Plug>" })
    end
  end
  map("i", km.accept, M.accept, "accept suggestion")
  map("i", km.accept_word, M.accept_word, "accept the next word of the suggestion")
  map("i", km.accept_line, M.accept_line, "accept the next line of the suggestion")
  map("i", km.next, M.next, "next suggestion")
  map("i", km.trigger, M.trigger, "suggest now")
  map("i", km.dismiss, M.dismiss, "dismiss suggestion")
  map("x", km.edit, ":DifillEdit<CR>", "edit selection with instruction")
  map("n", km.accept_edit, "<Cmd>DifillAccept<CR>", "accept the proposed edit")
  map("n", km.reject_edit, "<Cmd>DifillReject<CR>", "reject the proposed edit (or stop it)")
  map("n", km.jump_edit, "<Cmd>DifillJump<CR>", "show the newest proposed edit")
  map({ "n", "i" }, km.next_edit, "<Plug>(difill-next-edit)", "jump to the next edit, again to accept it")
  map("n", km.dismiss_next_edit, "<Plug>(difill-next-edit-dismiss)", "dismiss the next edit")
end

--- A range command's callback: ``run(bufnr, range, cmd)`` with the command's range in the
--- server's position encoding; a warning instead when difill is not attached to the buffer.
---@param run fun(bufnr: integer, range: lsp.Range, cmd: table)
---@return fun(cmd: table)
local function range_command(run)
  return function(cmd)
    local bufnr = buf()
    local client = attached_client(bufnr)
    if client then
      run(bufnr, command_range(bufnr, cmd, client.offset_encoding), cmd)
    end
  end
end

local function create_commands()
  api.nvim_create_user_command("DifillEdit", range_command(function(bufnr, range, cmd)
    M.edit(bufnr, range, cmd.args)
  end), { range = true, nargs = "*", desc = "difill: edit the selection by an instruction" })

  api.nvim_create_user_command("DifillFill", range_command(function(bufnr, range)
    M.execute(bufnr, "difill.fillHoles", {
      uri = vim.uri_from_bufnr(bufnr),
      range = range,
      version = vim.lsp.util.buf_versions[bufnr],
    })
  end), { range = true, desc = "difill: fill the hole markers in the selection (or buffer)" })

  api.nvim_create_user_command("DifillAccept", function()
    proposals.settle("accept", buf())
  end, { desc = "difill: apply the proposed edit at the cursor" })

  api.nvim_create_user_command("DifillReject", function()
    proposals.settle("reject", buf())
  end, { desc = "difill: drop the proposed edit at the cursor, or stop the running one" })

  api.nvim_create_user_command("DifillJump", function()
    proposals.jump()
  end, { desc = "difill: scroll to the newest proposed edit in this buffer" })

  api.nvim_create_user_command("DifillNextEdit", function()
    if not M.next_edit() then
      vim.notify("difill: no next edit in this buffer", vim.log.levels.WARN)
    end
  end, { desc = "difill: jump to the next edit, or accept it when the cursor is on it" })

  api.nvim_create_user_command("DifillNextEditDismiss", function()
    M.dismiss_next_edit()
  end, { desc = "difill: dismiss the next edit" })

  api.nvim_create_user_command("DifillStatus", function()
    local lines = { M.status() }
    -- vim.lsp.status() keeps progress messages until read: only while the model loads are they
    -- news; afterwards they would show a finished load as if it were still going.
    local progress = vim.lsp.status()
    local client = util.client(buf())
    local st = client and M.statuses[client.id]
    if progress ~= "" and st and st.state == "loading" and not M.progress[client.id] then
      lines[#lines + 1] = progress
    end
    if M.last.loaded and not lines[1]:find(M.last.loaded, 1, true) then
      lines[#lines + 1] = M.last.loaded -- "model loaded from /path (torch) in 2.1 s"
    end
    if M.last.error then
      lines[#lines + 1] = "last error: " .. M.last.error
    end
    local exit = M.last.exit
    if exit then
      lines[#lines + 1] = ("the server exited with code %d%s"):format(exit.code,
        exit.stderr ~= "" and (", stderr:\n" .. vim.trim(exit.stderr)) or " (no stderr)")
    end
    lines[#lines + 1] = ("log: %s (:DifillLog); Neovim's: %s (:LspLog)"):format(M.log_file(), vim.lsp.get_log_path())
    vim.notify(table.concat(lines, "\n"))
  end, { desc = "difill: server state, model, last error, log file" })

  api.nvim_create_user_command("DifillRestart", function()
    recover.restart()
  end, { desc = "difill: restart the server and attach it to every open buffer" })

  api.nvim_create_user_command("DifillLog", function()
    local file = M.log_file()
    if vim.fn.filereadable(file) == 0 then
      vim.notify("difill: no server log at " .. file .. " yet", vim.log.levels.WARN)
      return
    end
    vim.cmd.split(vim.fn.fnameescape(file))
    vim.bo.readonly, vim.bo.autoread = true, true
    vim.cmd("normal! G")
  end, { desc = "difill: open the server's log file" })
end

--- The model just became ready: text typed while it loaded got no ghost text (those requests
--- were answered empty), so ask again at the cursor without waiting for another keystroke.
---@param client_id integer
ask_again = function(client_id)
  local bufnr = buf()
  local client = util.client(bufnr)
  if M.config.auto_trigger and client and client.id == client_id and api.nvim_get_mode().mode:sub(1, 1) == "i" then
    ghost.ask(bufnr)
  end
end

--- Model loading ($/progress from the server) in the message area, for the default UI, which
--- shows no LSP progress by itself; statuslines can use status() or vim.lsp.status() instead.
local function show_progress(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  local value = vim.tbl_get(ev.data, "params", "value")
  if not M.config.progress or not client or client.name ~= "difill" or type(value) ~= "table" then
    return
  end
  local text = value.kind == "end" and ("difill: " .. (value.message or "done"))
    or ("difill: %s%s"):format(value.message or value.title or "loading",
      value.percentage and (" (%d%%)"):format(value.percentage) or "")
  M.progress[client.id] = value.kind ~= "end" and text or nil
  api.nvim_echo({ { text } }, false, {})
  progress.update(text, value.kind == "end") -- in insert mode the echo is hidden: a hint at the cursor
end

---@param t table
---@return table
local function json_object(t)
  return next(t) == nil and vim.empty_dict() or t
end

--- Send changed server settings to the running servers.
---@param settings difill.ServerSettings
function M.configure(settings)
  M.config.settings = vim.tbl_deep_extend("force", M.config.settings, settings)
  if not next_edit.enabled() then
    next_edit.dismiss_all() -- nextEdit off: what is shown goes too
  end
  for _, client in ipairs(vim.lsp.get_clients({ name = "difill" })) do
    client.settings = { difill = json_object(M.config.settings) }
    client:notify("workspace/didChangeConfiguration", { settings = client.settings })
  end
end

--- A message naming the server command when it cannot be run, else nil. It names what the user
--- gave: a bare name is looked up on PATH; a path is checked as given (a typo in the file name
--- gets the executable `difill` of that folder suggested), never the docs' placeholder.
---@param cmd string[]|function
---@return string?
local function missing_command(cmd)
  local exe = type(cmd) == "table" and cmd[1] or nil
  if type(exe) ~= "string" or vim.fn.executable(exe) == 1 then
    return nil -- a function (an in-process server) or a command that runs
  end
  if not exe:find("/", 1, true) then
    return ("cannot start the server: %q is not an executable on PATH. Set cmd to the full path of "
      .. "the difill in the environment you installed it in (<venv>/bin/difill)"):format(exe)
  end
  local why = vim.uv.fs_stat(exe) and "is not executable" or "does not exist"
  local dir = vim.fs.dirname(exe)
  local sibling = vim.fs.joinpath(dir, "difill")
  local hint = sibling ~= exe and vim.fn.executable(sibling) == 1 and ("; did you mean %q?"):format(sibling)
    or (vim.uv.fs_stat(dir) == nil and (" (nor does the folder %s)"):format(dir) or "")
  return ("cannot start the server: cmd[1] %q %s%s"):format(exe, why, hint)
end

---@param opts? difill.Config|{}
function M.setup(opts)
  M.did_setup = true -- for :checkhealth difill
  local defaults = require("difill.config")
  -- A typo in an option (`keymap` for `keymaps`) was silently ignored: name it, with a guess.
  -- `settings` are the server's: it warns about those itself.
  local unknown = util.unknown_keys(opts or {}, defaults, "setup()")
  if type((opts or {}).keymaps) == "table" then
    vim.list_extend(unknown, util.unknown_keys(opts.keymaps, defaults.keymaps, "keymaps"))
  end
  for _, warning in ipairs(unknown) do
    vim.notify(warning, vim.log.levels.WARN)
  end
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  local cfg = M.config
  if type(cfg.cmd) == "table" and type(cfg.cmd[1]) == "string" and cfg.cmd[1]:sub(1, 1) == "~" then
    cfg.cmd[1] = vim.fs.normalize(cfg.cmd[1]) -- the server is spawned without a shell: no ~ there
  end
  -- The server always keeps a log that :DifillLog can open: next to Neovim's lsp.log by default.
  cfg.settings.logFile = cfg.settings.logFile or vim.fs.joinpath(vim.fn.stdpath("log"), "difill-server.log")
  capture_stderr()
  ghost.opts = { debounce_ms = cfg.debounce_ms, hl_group = cfg.hl_group }
  -- Ghost text must never look like code: a grey that terminals without truecolor draw too
  -- (Comment has no 256-colour value in the default colourscheme).
  api.nvim_set_hl(0, "DifillGhost", { fg = "#808080", ctermfg = 244, italic = true, default = true })
  api.nvim_set_hl(0, "DifillSuggestion", { link = "DifillGhost", default = true }) -- the old name
  M.start_error = missing_command(cfg.cmd)
  if M.start_error then
    vim.notify("difill: " .. M.start_error, vim.log.levels.ERROR)
  end
  proposals.highlights()
  next_edit.highlights()
  progress.setup()
  if cfg.statusline then
    default_statusline()
  end
  local next_key = cfg.keymaps and cfg.keymaps.next_edit
  next_edit.opts = {
    debounce_ms = cfg.next_edit_debounce_ms,
    setting = function()
      return M.config.settings.nextEdit -- read at each edit: configure() may change it
    end,
    key = next_key and next_key or ":DifillNextEdit",
    sign_column = cfg.sign_column,
    ghost_shown = function(bufnr)
      return ghost.suggestion(bufnr) ~= nil -- Tab is the ghost text's: no next edit competes
    end,
  }
  -- <Plug> mappings, for users who pick their own keys (the defaults map to these).
  vim.keymap.set({ "n", "i" }, "<Plug>(difill-next-edit)", M.next_edit, { desc = "difill: jump to / accept the next edit" })
  vim.keymap.set({ "n", "i" }, "<Plug>(difill-next-edit-dismiss)", M.dismiss_next_edit,
    { desc = "difill: dismiss the next edit" })
  local jump_key = cfg.keymaps and cfg.keymaps.jump_edit
  proposals.jump_hint = jump_key and (jump_key .. " or :DifillJump") or ":DifillJump"
  -- Labels name the keys (the commands only where no key is mapped): issue 52.
  proposals.accept_hint = cfg.keymaps and cfg.keymaps.accept_edit or ":DifillAccept"
  proposals.reject_hint = cfg.keymaps and cfg.keymaps.reject_edit or ":DifillReject"

  vim.lsp.config("difill", {
    cmd = cfg.cmd,
    filetypes = cfg.filetypes,
    root_markers = cfg.root_markers,
    -- initializationOptions carry the settings flat; `settings` (sent by Neovim as
    -- workspace/didChangeConfiguration after initialize, and by configure()) nest them under
    -- `difill`. vim.empty_dict(): an empty Lua table would be sent as a JSON array.
    init_options = json_object(cfg.settings),
    settings = { difill = json_object(cfg.settings) },
    -- 0.11 does not announce inline completion itself.
    capabilities = {
      textDocument = { inlineCompletion = { dynamicRegistration = false } },
      -- Edits come back as proposals to review (proposals.lua) instead of being applied at once.
      experimental = cfg.review_edits and { difill = { editProposals = true } } or nil,
    },
    handlers = {
      ["difill/status"] = function(_, params, ctx)
        local before = M.statuses[ctx.client_id]
        M.statuses[ctx.client_id] = params
        if params.state == "ready" and not params.latencyMs and params.message then
          M.last.loaded = params.message -- the load's own ready: which model, which engine
        elseif params.state == "error" then
          M.last.error = params.message
        end
        if params.state == "ready" and (not before or before.state == "loading") then
          ask_again(ctx.client_id)
        end
        -- recentLatencyMs: the median of the last answers, steadier than one answer's latencyMs.
        local latency = params.recentLatencyMs or params.latencyMs
        if latency then
          ghost.server_latency_ms = latency
        end
        vim.cmd.redrawstatus() -- statuslines showing status() would otherwise lag a keystroke
        api.nvim_exec_autocmds("User", { pattern = "DifillStatus", modeline = false, data = params })
      end,
      -- The denoiser's canvas while an edit runs: drawn in place when edits are reviewed.
      ["difill/preview"] = function(...)
        return proposals.on_preview(...)
      end,
    },
    on_exit = function(code, signal, client_id)
      if code ~= 0 or signal ~= 0 then
        M.last.exit = { code = code, signal = signal, stderr = stderr_tail }
      end
      local last_line = vim.trim(stderr_tail):match("[^\n]*$")
      local why = (signal ~= 0 and ("signal %d"):format(signal) or ("code %d"):format(code))
        .. (last_line ~= "" and (": " .. last_line) or "")
      -- A server that ran and died is started again (recover.lua); one that never ran is reported.
      if recover.on_exit(code, signal, client_id, why) or (code == 0 and signal == 0) then
        return
      end
      vim.schedule(function()
        vim.notify(("difill: the server exited with code %d%s (:DifillStatus, :DifillLog)"):format(code,
          last_line ~= "" and (": " .. last_line) or ""), vim.log.levels.ERROR)
      end)
    end,
    -- Without resolveSupport the server gives applied edits the same commands (review_edits =
    -- false): the edit then also starts inside the keystroke.
    before_init = function(params)
      local code_action = vim.tbl_get(params, "capabilities", "textDocument", "codeAction")
      if code_action then
        code_action.resolveSupport = nil
      end
    end,
    -- Our code actions carry their command (see before_init), so the client never needs
    -- codeAction/resolve: without it, the menu's choice runs the command at
    -- once, inside the `gra` keystroke, where visual mode can still be left before it ends.
    -- (Ending that keystroke in Visual mode after the menu's message makes Neovim pause about
    -- 4 s before it handles anything else, so with resolve the first draft waited 4 s.)
    on_init = function(client)
      -- A new process: what an older one wrote, or how it ended, is not its.
      stderr_tail, M.last.exit, M.last.error = "", nil, nil
      recover.on_init(client)
      local provider = client.server_capabilities.codeActionProvider
      if type(provider) == "table" then
        provider.resolveProvider = false
      end
    end,
    commands = {
      -- The "Edit selection with instruction..." code action carries no instruction: ask.
      -- (A plain rewrite may carry the same command without one; its title tells them apart.)
      ["difill.editSelection"] = function(command, ctx)
        leave_visual_mode()
        local args = vim.deepcopy((command.arguments or {})[1] or {})
        if args.instruction or not (command.title or ""):lower():find("instruction", 1, true) then
          return M.execute(ctx.bufnr, "difill.editSelection", args)
        end
        ask_instruction(function(text)
          args.instruction = text
          M.execute(ctx.bufnr, "difill.editSelection", args)
        end)
      end,
      ["difill.fillHoles"] = function(command, ctx)
        leave_visual_mode()
        M.execute(ctx.bufnr, command.command, vim.deepcopy((command.arguments or {})[1] or {}))
      end,
      ["difill.completeBlock"] = function(command, ctx)
        leave_visual_mode()
        M.execute(ctx.bufnr, command.command, vim.deepcopy((command.arguments or {})[1] or {}))
      end,
    },
  })
  vim.lsp.enable("difill")
  recover.before_start = function()
    stderr_tail = "" -- the new process's own; the last exit keeps the old one's (M.last.exit)
  end

  local group = api.nvim_create_augroup("difill.attach", { clear = true })
  api.nvim_create_autocmd("LspProgress", { group = group, callback = show_progress })
  api.nvim_create_autocmd("LspAttach", {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if not client or client.name ~= "difill" then
        return
      end
      set_keymaps(ev.buf)
      if builtin() then
        vim.lsp.inline_completion.enable(cfg.auto_trigger, { bufnr = ev.buf })
      end
      -- Our renderer always serves trigger()/next(); on 0.12 it leaves typing to the built-in.
      ghost.attach(ev.buf, cfg.auto_trigger and not builtin())
      next_edit.attach(ev.buf)
    end,
  })
  create_commands()
end

return M
