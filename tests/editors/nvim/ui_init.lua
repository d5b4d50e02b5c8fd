-- Neovim with a UI (in tmux) for the real-editor test and the README screenshots.
-- Environment: DIFILL_PLUGIN, DIFILL_CMD (JSON argv of the server).
vim.opt.rtp:prepend(vim.env.DIFILL_PLUGIN)
vim.o.swapfile = false
vim.o.termguicolors = true
vim.o.number = true
vim.o.laststatus = 2
vim.o.shortmess = vim.o.shortmess .. "IF"
vim.o.statusline = " %f %m%=%{v:lua.require'difill'.status()} "
vim.cmd("filetype on")
require("difill").setup({
  cmd = vim.json.decode(vim.env.DIFILL_CMD),
  settings = vim.json.decode(vim.env.DIFILL_SETTINGS or "{}"),
})
