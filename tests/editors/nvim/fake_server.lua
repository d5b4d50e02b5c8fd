-- A scripted language server inside Neovim, for checks that need exact answers rather than a
-- model's: `cmd` may be a function that returns an RPC client (vim.lsp.rpc.PublicClient), so the
-- plugin talks to this table as it would to `difill serve`. It records every request and
-- notification, answers inlineCompletion with `F.completion` and copilotInlineEdit with
-- `F.next_edits`, and `F.send` pushes a server notification ($/progress, difill/status).
local F = {
  requests = {}, ---@type { method: string, params: table }[]
  notifications = {}, ---@type { method: string, params: table }[]
  completion = nil, ---@type string?  insertText of the one item answered
  next_edits = {}, ---@type table[]  edits answered to textDocument/copilotInlineEdit
  proposal_text = nil, ---@type string?  newText of the proposal difill.editSelection answers
  server_info = { name = "difill", version = "9.8.7" },
}

local dispatchers ---@type vim.lsp.rpc.Dispatchers?
local next_id = 0

local CAPABILITIES = {
  textDocumentSync = 1,
  inlineCompletionProvider = true,
  experimental = { inlineEditProvider = true, difill = { nextEdit = true } },
}

--- Requests of one method, in order.
---@param method string
---@return table[]
function F.of(method)
  return vim.tbl_filter(function(r)
    return r.method == method
  end, F.requests)
end

--- A notification from the server to the client.
function F.send(method, params)
  assert(dispatchers, "the fake server has not been started")
  dispatchers.notification(method, params)
end

local crash ---@type fun()?

--- The server process dies as under `kill -9`: the client sees exit code 0, signal 9.
function F.crash()
  assert(crash, "the fake server has not been started")()
end

F.starts = 0 -- how many servers were started (a restart starts another)

---@param d vim.lsp.rpc.Dispatchers
---@return vim.lsp.rpc.PublicClient
function F.cmd(d)
  dispatchers = d
  F.starts = F.starts + 1
  local closing = false
  crash = function()
    closing = true
    d.on_exit(0, 9)
  end
  return {
    request = function(method, params, callback)
      next_id = next_id + 1
      F.requests[#F.requests + 1] = { method = method, params = params }
      local result = vim.NIL
      if method == "initialize" then
        result = { capabilities = CAPABILITIES, serverInfo = F.server_info }
      elseif method == "textDocument/inlineCompletion" then
        local at = params.position
        local text = F.completion_by_kind and F.completion_by_kind[params.context.triggerKind] or F.completion
        result = { items = text and { { insertText = text, range = { start = at, ["end"] = at } } } or {} }
      elseif method == "workspace/executeCommand" and params.command == "difill.editSelection" then
        local args = params.arguments[1]
        result = { proposal = { id = "p" .. next_id, uri = args.uri, version = args.version, range = args.range,
          newText = F.proposal_text or "", edits = {}, label = "difill: " .. (args.instruction or "rewrite") } }
      elseif method == "textDocument/copilotInlineEdit" then
        -- For the version asked about, as the server answers.
        result = { edits = vim.tbl_map(function(e)
          return vim.tbl_extend("keep", e, { textDocument = params.textDocument })
        end, F.next_edits) }
      end
      local delay = method == "textDocument/inlineCompletion" and F.completion_delay_ms or 0
      vim.defer_fn(function()
        callback(nil, result)
      end, delay)
      return true, next_id
    end,
    notify = function(method, params)
      F.notifications[#F.notifications + 1] = { method = method, params = params }
      if method == "exit" then
        closing = true
        dispatchers.on_exit(0, 0)
      end
      return true
    end,
    is_closing = function()
      return closing
    end,
    terminate = function()
      closing = true
    end,
  }
end

return F
