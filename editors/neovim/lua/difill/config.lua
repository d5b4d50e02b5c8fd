-- Default options for require("difill").setup(opts). Everything here can be overridden;
-- tables are merged deeply, so `setup({ keymaps = { accept = "<C-l>" } })` keeps the other keys.

---@class difill.ServerSettings
--- Mirrors the server's settings. Sent as initializationOptions and, on change, as
--- workspace/didChangeConfiguration `{ difill = ... }`. Unset keys take the server's defaults.
--- generated from src/difill/server/config.py by `python -m difill.server.settings_clients --write`: begin
---@field modelPath? string  A local DiffusionGemma checkpoint directory (`config.json`, `*.safetensors`, `tokenizer.json`); empty: the model shipped with difill.
---@field device? string  Where the model runs: `auto` (CUDA when present, else CPU), `cpu`, `cuda`, `cuda:N` or `mps`.
---@field engine? "auto"|"torch"|"llamacpp"|"mlx"  Which engine runs the model: `torch`, `llamacpp` (llama.cpp's DiffusionGemma in a worker process; `difill build-native` first: `docs/llamacpp.md`), `mlx` (mlx-vlm on a Mac, `pip install "difill[mlx]"`: `docs/mlx.md`) or `auto` (llama.cpp where `ggufPath` names a GGUF, or for the shipped model once `difill build-native` has built the worker with difill's patches; else torch).
---@field ggufPath? string  The model's GGUF for the llama.cpp engine; empty: the shipped model's, exported on first use.
---@field llamacppWorker? string  The `difill-llama-worker` binary; empty: the one `difill build-native` built.
---@field llamacppThreads? integer  llama.cpp threads; 0: half the cores, as torch takes.
---@field llamacppGpuLayers? integer  Layers llama.cpp offloads to a GPU, for a worker built with `--cuda` or `--metal`.
---@field remote? string  URL of a `difill serve-http`, an OpenAI-compatible (vLLM) server or Inception's Mercury that runs the model instead of this machine (`remoteKind`); the API key comes from the server process's `DIFILL_API_KEY` environment variable.
---@field remoteKind? "auto"|"difill"|"openai"|"mercury"  What the `remote` is: `difill` (`difill serve-http`), `openai` (an OpenAI-compatible server such as vLLM), `mercury` (Inception's Mercury: its fill-in-the-middle endpoint for ghost text, its next-edit endpoint for next edits and rewrites; the key in `DIFILL_API_KEY` or `INCEPTION_API_KEY`; `docs/remote.md`), or `auto`: Mercury on `api.inceptionlabs.ai`, else asked of the server on the first fill.
---@field remoteCanvas? "auto"|"seeded"|"plain"  How fills reach a vLLM `remote`: `seeded` sends difill's own canvas with the code after the cursor pinned (vLLM 0.32 or later; tested against 0.33.0's rules), `plain` the chat prompt, `auto` tries seeded first and falls back, remembered, when the server refuses it; the status says which.
---@field contextDrafts? "auto"|"show"|"seed"|"off"  How drafts from the context (what followed the same text elsewhere in the file, the open files and the workspace) reach a suggestion: `show` (a draft that matched 4 or more tokens before the cursor, or an import draft, is the ghost text as it stands, no model run; a draft on a shorter match only where the model's text is empty; an explicit request gets the long-match drafts first, then the model's middles, then the rest), `seed` (drafts seed canvas rows beside the noise-seeded ones), `off`, or `auto`: the checkpoint's own choice (`show` for the shipped model, `seed` for others).
---@field maxTokens? integer  Longest suggestion, in tokens (an empty block body may use twice this).
---@field minTokenProb? number  Ghost text ends before the first token the model gave less than this probability (it shows what the model is sure of): 0.25 for the shipped model (its config), 0 (whole middles) for a checkpoint that names none; invoked completions are never cut.
---@field minShowProbability? number  Ghost text is shown only when the show gate's estimate that it is right reaches this; a long suggestion is cut to a likely first line or word.
---@field commentSuggestions? boolean  Ghost text in comments, strings and docstrings (above a higher bar than code: the model's prose is rarely what a person writes); false: none there.
---@field editGate? boolean  An edit (rewrite, instruction, fill holes, complete block) is applied only when it parses at least as well as the selection, repeats nothing new, renames nothing used outside it, keeps its indentation and (instructed) changes something; otherwise one line says what the model wrote and why it was held back (`docs/edits.md`).
---@field steps? integer  Cap on denoising steps (decoder passes) per fill: fewer is faster, more is better.
---@field candidates? integer  Distinct suggestions for an explicitly invoked completion (automatic requests get one).
---@field languages? string[]  Language ids that get suggestions, as the editor names them (`python`); empty: every language.
---@field contextTokens? integer  Prefix budget in tokens; the model's own limit caps it (256 for the shipped model).
---@field previews? boolean  Send `difill/preview` `{token, text, step}` notifications (the partly denoised text) while an edit denoises; `drafts`, its old name, is still read.
---@field holeMarker? string  The marker *Fill holes* (and `difill.fillHoles`) fills.
---@field debounceMs? integer  Server-side wait after a completion request before running the model; a newer request for the same document replaces the waiting one.
---@field loadWaitMs? integer  While the model loads, how long a request waits for it before answering empty.
---@field logFile? string  A file the server also writes its log to, beside stderr and `--log-file` (`:DifillLog` and **difill: Open Server Log** open it).
---@field workspaceIndex? boolean  Index the open documents and the workspace folders for snippets and drafts from other files (`docs/context.md`).
---@field indexMaxFiles? integer  Files the workspace index holds at most.
---@field indexMaxBytes? integer  Memory the workspace index may hold, in bytes (text plus an estimate of its tables).
---@field indexMaxFileBytes? integer  A larger file is not indexed.
---@field snippetTokens? integer  Token budget (estimated) of the block of workspace snippets the model reads before the prefix; a block over half the model's prefix budget is left out; 0: none.
---@field projectPython? string  The project's Python interpreter (a virtual environment's `bin/python`): names after `x.` and on import lines come from its standard library and packages.
---@field contextExclude? string[]  Files never read, indexed, offered or sent, beyond the built-in secrets deny list (`.env`, SSH and cloud keys, credential files), as gitignore patterns (`secrets/`, `*.tfvars`); no suggestions inside them.
---@field nextEdit? "on"|"drafts"|"model"|"off"  Next-edit suggestions (`textDocument/copilotInlineEdit`): `drafts` your last edit again where else it applies (a rename, an inserted argument; no model), `on` also the model's edits of the ~10 lines around the cursor with the drafts seeded on its canvas (for a real checkpoint or a remote: the shipped model's are noise, kept off screen by a gate; `docs/next_edit.md`), `model` the model's alone (a measurement), or `off` (the method is then not offered; turning it back on takes a server restart).
--- generated: end

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
