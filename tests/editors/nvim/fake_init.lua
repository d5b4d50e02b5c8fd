-- Headless Neovim entry for tests/editors/test_neovim_scripted.py: the plugin against the
-- scripted server of fake_server.lua (no model, exact answers), scenarios in fake_scenarios.lua.
-- Environment as init.lua's: DIFILL_PLUGIN, DIFILL_WORKDIR, DIFILL_OUT, DIFILL_ONLY.
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
package.path = here .. "/?.lua;" .. package.path
vim.opt.rtp:prepend(vim.env.DIFILL_PLUGIN)
vim.opt.swapfile = false
vim.cmd("filetype on")

require("difill").setup({
  cmd = require("fake_server").cmd,
  debounce_ms = 0,
  next_edit_debounce_ms = 50,
})

local T = require("harness")
vim.schedule(function()
  T.run(require("fake_scenarios"), vim.env.DIFILL_OUT, vim.env.DIFILL_ONLY)
end)
