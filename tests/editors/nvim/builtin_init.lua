-- Neovim >= 0.12 with no difill plugin: its built-in client (vim.lsp.inline_completion) against
-- `difill serve`, configured as editors/README.md says; the harness runs the one scenario below.
-- Run by tests/editors/test_neovim_builtin_inline_completion.py. Environment: DIFILL_CMD (JSON
-- argv of the server), DIFILL_WORKDIR, DIFILL_OUT.
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
package.path = here .. "/?.lua;" .. package.path
vim.opt.swapfile = false
vim.cmd("filetype on")
local ready = false

-- What editors/README.md gives (the handler is only the test's: to know when the model is ready).
vim.lsp.config("difill", {
  cmd = vim.json.decode(vim.env.DIFILL_CMD),
  filetypes = { "python" },
  root_markers = { ".git" },
  handlers = {
    ["difill/status"] = function(_, params)
      ready = ready or params.state == "ready"
    end,
  },
})
vim.lsp.enable("difill")
vim.lsp.inline_completion.enable()

local T = require("harness")

local S = {}
S[#S + 1] = { name = "builtin", fn = function(r)
  local path = vim.fs.joinpath(vim.env.DIFILL_WORKDIR, "builtin.py")
  vim.fn.writefile({ "def add(a, b):", "    return " }, path)
  vim.cmd.edit(path)
  local client = T.wait(function()
    return vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
  end, 20000, "difill to attach")
  -- What the server answered, as the built-in got it.
  r.answers = {}
  local request = client.request
  client.request = function(self, method, params, handler, bufnr)
    if method ~= "textDocument/inlineCompletion" then
      return request(self, method, params, handler, bufnr)
    end
    return request(self, method, params, function(err, result, ...)
      r.answers[#r.answers + 1] = { position = params.position, result = result or vim.NIL }
      return handler(err, result, ...)
    end, bufnr)
  end
  T.wait(function() return ready end, 120000, "the model to be ready")
  T.input("2GA")
  -- The built-in asks by itself, debounced. The random model may answer nothing: type on then.
  local function shown()
    local ns = vim.api.nvim_get_namespaces()["nvim.lsp.inline_completion"]
    return ns and #vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, {}) > 0
  end
  for _, key in ipairs({ "", "x", "y", "z" }) do
    if key ~= "" then
      T.input(key)
    end
    if pcall(T.wait, shown, 15000, "ghost text") then
      break
    end
  end
  r.shown = shown() or false
  r.before = T.lines()
  r.cursor_before = vim.api.nvim_win_get_cursor(0)
  r.accepted = vim.lsp.inline_completion.get()
  pcall(T.wait, function() return not vim.deep_equal(T.lines(), r.before) end, 2000, "the accept")
  r.after = T.lines()
  r.cursor_after = vim.api.nvim_win_get_cursor(0)
end }

vim.schedule(function()
  T.run(S, vim.env.DIFILL_OUT, nil)
end)
