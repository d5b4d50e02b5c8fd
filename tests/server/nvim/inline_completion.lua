-- Headless Neovim 0.11 with plain vim.lsp.start (no plugin): start `difill serve`, open a Python
-- file, wait for difill/status "ready", ask for an inline completion, write the answer as JSON.
-- Arguments come from the environment: DIFILL_PYTHON, DIFILL_MODEL, DIFILL_FILE, DIFILL_OUT.
local out = os.getenv("DIFILL_OUT")
local function finish(result)
  local f = assert(io.open(out, "w"))
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd("qa!")
end

local ok, err = pcall(function()
  vim.cmd.edit(os.getenv("DIFILL_FILE"))
  local bufnr = vim.api.nvim_get_current_buf()
  local ready = false
  local client_id = vim.lsp.start({
    name = "difill",
    cmd = { os.getenv("DIFILL_PYTHON"), "-m", "difill", "serve", "--model", os.getenv("DIFILL_MODEL") },
    root_dir = vim.fs.dirname(os.getenv("DIFILL_FILE")),
    handlers = {
      ["difill/status"] = function(_, params)
        if params.state == "ready" then ready = true end
      end,
    },
  }, { bufnr = bufnr })
  assert(client_id, "vim.lsp.start returned no client")
  assert(vim.wait(90000, function() return ready end, 50), "difill never became ready")
  local client = assert(vim.lsp.get_client_by_id(client_id))
  -- The end of line 2, after "return w * " (a normal-mode cursor cannot sit there, so no cursor).
  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    position = { line = 1, character = 15 },
    context = { triggerKind = 1 },
  }
  local response = client:request_sync("textDocument/inlineCompletion", params, 30000, bufnr)
  assert(response, "no response to textDocument/inlineCompletion")
  finish({
    encoding = client.offset_encoding,
    server = client.server_info and client.server_info.name,
    capable = client.server_capabilities.inlineCompletionProvider ~= nil,
    err = response.err,
    result = response.result,
  })
end)
if not ok then finish({ error = tostring(err) }) end
