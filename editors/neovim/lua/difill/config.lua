-- Default options for require("difill").setup(opts). Everything here can be overridden;
-- tables are merged deeply, so `setup({ keymaps = { accept = "<C-l>" } })` keeps the other keys.

---@class difill.ServerSettings
--- Mirrors the server's settings. Sent as initializationOptions and, on change, as
--- workspace/didChangeConfiguration `{ difill = ... }`. Unset keys take the server's defaults.
---@field modelPath? string        model directory (default: the model shipped with difill)
---@field remote? string           URL of a difill serve-http / OpenAI-compatible server to use instead
---@field contextDrafts? "auto"|"show"|"seed"|"off"  drafts from the context: shown as ghost text, seeded into the canvas, or not used
---@field remoteCanvas? "auto"|"seeded"|"plain"  how fills reach a vLLM remote: seeded canvas (vLLM 0.32 or later, released; tested against 0.33.0's rules), chat prompt, or auto
---@field device? "auto"|"cpu"|"cuda"
---@field engine? "auto"|"torch"|"llamacpp"|"mlx"  the engine that runs the model (llamacpp: `difill build-native` first; mlx: `pip install "difill[mlx]"`)
---@field ggufPath? string         the model's GGUF for the llama.cpp engine (default: the shipped model's)
---@field llamacppWorker? string   the difill-llama-worker binary (default: the one built)
---@field llamacppThreads? integer llama.cpp threads (0: half the cores)
---@field llamacppGpuLayers? integer layers llama.cpp offloads to a GPU
---@field maxTokens? integer       longest completion, in tokens
---@field minTokenProb? number     ghost text ends before a token the model is less sure of (0: off; default: the model's)
---@field minShowProbability? number ghost text shown only when P(right) reaches this (default: the calibrated threshold)
---@field commentSuggestions? boolean ghost text in comments, strings and docstrings (default: true)
---@field steps? integer           denoising step cap
---@field candidates? integer      candidates for an invoked completion
---@field languages? string[]      language ids the server completes in
---@field contextTokens? integer   prefix/suffix context budget
---@field previews? boolean        stream difill/preview notifications (the partly denoised text) while an edit denoises (was `drafts`)
---@field editGate? boolean       hold back an edit that parses worse, repeats, renames or moves its indentation (default true)
---@field holeMarker? string       marker that :DifillFill fills (default "<|hole|>")
---@field debounceMs? integer      server-side wait before running the model (client debounces too)
---@field loadWaitMs? integer      how long a request waits for a loading model
---@field logFile? string          the server's log file, opened by :DifillLog (default: difill-server.log in stdpath("log"))
---@field workspaceIndex? boolean  index open documents and workspace folders (docs/context.md)
---@field indexMaxFiles? integer   files the workspace index holds at most
---@field indexMaxBytes? integer   memory the workspace index may hold, in bytes
---@field indexMaxFileBytes? integer a larger file is not indexed
---@field snippetTokens? integer   token budget of the snippets from other files (0: none)
---@field nextEdit? "on"|"drafts"|"model"|"off"  next-edit suggestions after an edit ("drafts": the last edit again where it applies; "on": also the model's; "model": the model's alone, a measurement; "off": none)
---@field contextExclude? string[] gitignore patterns of files never read or sent, beyond the secrets deny list

---@class difill.Keymaps
--- Insert-mode keys; `false` disables one. The defaults avoid <Tab>, <C-n>/<C-p>, <C-y>, <C-e>
--- and <CR>, which nvim-cmp, blink.cmp and the built-in completion menu use.
---@field accept string|false
--- Accept only the next word / the rest of the line of the ghost text; the rest stays shown.
---@field accept_word string|false
---@field accept_line string|false
---@field next string|false
---@field trigger string|false
---@field dismiss string|false
--- Visual-mode key for :DifillEdit.
---@field edit string|false
--- Normal-mode keys for :DifillAccept / :DifillReject (proposed edits, see review_edits).
---@field accept_edit string|false
---@field reject_edit string|false
--- Normal-mode key for :DifillJump (scroll to the newest proposed edit).
---@field jump_edit string|false
--- Normal- and insert-mode key for the next edit: jump to it, again to accept it
--- (<Plug>(difill-next-edit), :DifillNextEdit).
---@field next_edit string|false
--- Normal-mode key to dismiss the next edit (<Plug>(difill-next-edit-dismiss)); in insert mode
--- the `dismiss` key drops it too.
---@field dismiss_next_edit string|false

---@class difill.Config
---@field cmd string[]                  how to start the server (stdio LSP)
---@field filetypes string[]            buffers the client attaches to
---@field root_markers string[]         where a workspace starts (the server works without one)
---@field settings difill.ServerSettings
---@field auto_trigger boolean          ask for ghost text while typing (debounced)
---@field debounce_ms integer|"auto"    quiet time after typing before a request; "auto": none while the server is idle and fast, more when busy
---@field builtin "auto"|boolean        use vim.lsp.inline_completion (Neovim >= 0.12) when "auto"/true
---@field hl_group string               highlight of the ghost text
---@field keymaps difill.Keymaps|false  `false` sets no keymaps at all
---@field review_edits boolean         show each edit for review (:DifillAccept / :DifillReject) before it lands
---@field progress boolean             echo the model's loading progress in the message area
---@field next_edit_debounce_ms integer quiet time after an edit before the next edit is asked for
---@field sign_column boolean          keep the sign column open ('signcolumn' auto -> yes) in windows of attached buffers, so the next edit's sign never shifts the text; false leaves 'signcolumn' alone (the sign is then left out where it would shift the text)
---@field statusline boolean           show difill's state in Neovim's default statusline (left alone once 'statusline' is set; otherwise require("difill").statusline())
local defaults = {
  cmd = { "difill", "serve" },
  -- Every language the server has a grammar for (text/languages.py, docs/languages.md).
  filetypes = {
    "python", "javascript", "javascriptreact", "typescript", "typescriptreact",
    "go", "rust", "java", "kotlin", "c", "cpp", "cs", "ruby", "php", "lua", "sh", "bash",
  },
  root_markers = {
    "pyproject.toml", "setup.py", "package.json", "Cargo.toml", "go.mod", "pom.xml", "build.gradle",
    "build.gradle.kts", "Gemfile", "composer.json", "CMakeLists.txt", ".git",
  },
  settings = {},
  auto_trigger = true,
  debounce_ms = "auto",
  builtin = "auto",
  hl_group = "DifillGhost",
  keymaps = {
    accept = "<M-l>",
    accept_word = "<M-Right>",
    accept_line = "<M-Down>",
    next = "<M-]>",
    trigger = "<M-\\>",
    dismiss = "<C-]>",
    edit = "<leader>de",
    accept_edit = "<leader>da",
    reject_edit = "<leader>dr",
    jump_edit = "<leader>dj",
    next_edit = "<M-n>",
    dismiss_next_edit = "<leader>dx",
  },
  review_edits = true,
  progress = true,
  next_edit_debounce_ms = 250,
  sign_column = true,
  statusline = true,
}

return defaults
