-- Headless Neovim with copilot-lsp's next-edit client (not difill's plugin) talking to
-- `difill serve`: copilot-lsp is set up as its README says for Copilot's server, with difill as
-- the server. Environment: COPILOT_LSP (a copilot-lsp checkout), DIFILL_CMD (JSON argv of the
-- server), DIFILL_WORKDIR, DIFILL_OUT. Run by tests/editors/test_neovim_copilot_lsp.py.
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
package.path = here .. "/?.lua;" .. package.path
vim.opt.rtp:prepend(vim.env.COPILOT_LSP)
vim.opt.swapfile = false
vim.cmd("filetype on")
vim.g.copilot_nes_debounce = 100
require("copilot-lsp.util").set_hl()

vim.lsp.config("difill", {
  cmd = vim.json.decode(vim.env.DIFILL_CMD),
  filetypes = { "python" },
  root_markers = { ".git" },
  on_init = function(client)
    -- What copilot-lsp's own lsp/copilot_ls.lua does for Copilot's server.
    local au = vim.api.nvim_create_augroup("copilotlsp.init", { clear = true })
    require("copilot-lsp.nes").lsp_on_init(client, au)
  end,
})
vim.lsp.enable("difill")

local T = require("harness")
local S = {}
S[1] = { name = "copilot_lsp_next_edit", fn = function(r)
  local path = vim.fs.joinpath(vim.env.DIFILL_WORKDIR, "area.py")
  vim.fn.writefile({ "def area(width, height):", "    half = width / 2", "    return width * height + half" }, path)
  vim.cmd.edit(path)
  T.wait(function()
    local c = vim.lsp.get_clients({ bufnr = 0, name = "difill" })[1]
    return c and c.initialized
  end, 60000, "difill to attach")
  vim.api.nvim_win_set_cursor(0, { 1, 9 })
  T.input("ciww<Esc>")
  local state = T.wait(function() return vim.b.nes_state end, 15000, "copilot-lsp's nes_state")
  r.shown = { text = state.text, range = state.range, version = state.textDocument.version }
  local nes = require("copilot-lsp.nes")
  -- copilot-lsp README's <Tab>: walk to the edit's start, then apply it.
  r.walked = nes.walk_cursor_start_edit()
  T.sleep(100)
  r.cursor = vim.api.nvim_win_get_cursor(0)
  r.applied = nes.apply_pending_nes()
  T.sleep(200)
  r.lines = T.lines()
end }

vim.schedule(function()
  T.run(S, vim.env.DIFILL_OUT, nil)
end)
