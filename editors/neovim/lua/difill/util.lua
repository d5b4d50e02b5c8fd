-- Position conversions between Neovim (0-based rows, byte columns) and LSP (the client's
-- position encoding, utf-16 unless the server negotiated otherwise).
local M = {}

---@param bufnr integer
---@param row integer 0-based
---@return string
local function line(bufnr, row)
  return vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
end

---@param bufnr integer
---@param row integer 0-based
---@param col integer byte column
---@param encoding string
---@return lsp.Position
function M.to_lsp(bufnr, row, col, encoding)
  local text = line(bufnr, row)
  col = math.min(col, #text)
  return { line = row, character = vim.str_utfindex(text, encoding, col, false) }
end

---@param bufnr integer
---@param pos lsp.Position
---@param encoding string
---@return integer row, integer col 0-based row, byte column
function M.from_lsp(bufnr, pos, encoding)
  local text = line(bufnr, pos.line)
  local ok, col = pcall(vim.str_byteindex, text, encoding, pos.character, false)
  return pos.line, ok and math.min(col, #text) or #text
end

---@param bufnr integer
---@return lsp.Client?
function M.client(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = "difill" })[1]
end

return M
