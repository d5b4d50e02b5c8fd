-- Headless Neovim test entry: loads the plugin from this repo, starts the real server, runs
-- the scenarios in scenarios.lua one after another and writes their results as JSON.
-- Environment: DIFILL_PLUGIN (editors/neovim), DIFILL_CMD (JSON argv of the server),
-- DIFILL_WORKDIR (a temp dir for the test files), DIFILL_OUT (results file),
-- DIFILL_ONLY (optional comma-separated scenario names), DIFILL_SCENARIOS (the scenarios'
-- module, default "scenarios"; next_edit_scenarios for tests/editors/test_neovim_next_edit.py).
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
package.path = here .. "/?.lua;" .. package.path
vim.opt.rtp:prepend(vim.env.DIFILL_PLUGIN)
vim.opt.swapfile = false
vim.cmd("filetype on")

require("difill").setup({
  cmd = vim.json.decode(vim.env.DIFILL_CMD),
  -- The tiny random model's edits are noise that the edit gate holds back (text/edit_gate.py);
  -- these scenarios are about how the plugin shows and applies a proposal.
  settings = { maxTokens = 12, steps = 4, editGate = false },
  debounce_ms = 50,
})

local T = require("harness")
vim.schedule(function()
  T.run(require(vim.env.DIFILL_SCENARIOS or "scenarios"), vim.env.DIFILL_OUT, vim.env.DIFILL_ONLY)
end)
