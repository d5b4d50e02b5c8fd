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

--- Edit distance (insertions, deletions, substitutions; a swap of two neighbours counts one).
---@param a string
---@param b string
---@return integer
local function distance(a, b)
  local d = {}
  for i = 0, #a do
    d[i] = { [0] = i }
  end
  for j = 0, #b do
    d[0][j] = j
  end
  for i = 1, #a do
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      d[i][j] = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:sub(i, i) == b:sub(j - 1, j - 1) and a:sub(i - 1, i - 1) == b:sub(j, j) then
        d[i][j] = math.min(d[i][j], d[i - 2][j - 2] + 1)
      end
    end
  end
  return d[#a][#b]
end

--- The name in `known` closest to `name` (case-insensitive), when it is close enough to be a typo
--- of it: at most a third of its letters off (2 for short names), else one is a prefix of the other.
---@param name string
---@param known string[]
---@return string?
function M.closest(name, known)
  local best, best_d
  local lower = name:lower()
  for _, k in ipairs(known) do
    local kl = k:lower()
    local d, limit = distance(lower, kl), math.max(2, math.floor(#k / 3))
    if d > limit and (vim.startswith(kl, lower) or vim.startswith(lower, kl)) then
      d = limit + 0.5 -- a prefix: a guess, after any close spelling
    end
    if d <= limit + 0.5 and (not best_d or d < best_d) then
      best, best_d = k, d
    end
  end
  return best
end

--- Warnings for keys of `opts` that `known` (a table of defaults) does not have, each with the
--- closest known key: `keymap` is not `keymaps`, and a typo was silently ignored (issue 52).
---@param opts table
---@param known table
---@param where string  how the warning names the table ("setup()", "keymaps")
---@return string[]
function M.unknown_keys(opts, known, where)
  local names = vim.tbl_keys(known)
  table.sort(names)
  local out = {}
  for key in pairs(opts) do
    if type(key) == "string" and known[key] == nil then
      local guess = M.closest(key, names)
      out[#out + 1] = ("difill: unknown option %q in %s (ignored)%s"):format(key, where,
        guess and ("; did you mean %q?"):format(guess) or ("; the options are " .. table.concat(names, ", ")))
    end
  end
  table.sort(out)
  return out
end

return M
