"""Settings: what an editor may configure, their defaults, and how raw JSON becomes them.

Settings arrive as camelCase JSON in ``initializationOptions`` and in
``workspace/didChangeConfiguration`` (either flat or nested under a ``difill`` key).  They are
layered: the command line (``--model``, ``--device``) gives the base, ``initializationOptions``
override it, and the latest ``didChangeConfiguration`` section overrides that (each new section
replaces the previous one, so a key removed from the editor's config goes back to its default).

An invalid value never stops the server: it is reported and the value from the layer below is
kept.  ``parse_settings`` returns the problems as sentences for ``window/showMessage``.

Each ``Settings`` field declares its JSON key, its kind (server/setting_kinds.py), its default and
its description (``setting(key, kind, default, doc=...)``); the kind alone decides which raw values
are valid and what the message says about the others.  **A new setting is one field here**: the
clients' lists (editors/vscode/package.json, editors/vscode/src/settings.ts,
editors/neovim/lua/difill/config.lua) and the README's table are written from these fields by
``python -m difill.server.settings_clients --write``, and tests/editors/test_settings_lists.py
fails while any of them differs.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from difill.engine.names import CANVAS_MODES, ENGINES, REMOTE_KINDS
from difill.server.setting_kinds import (
    BoundedInt,
    Choice,
    Device,
    DirectoryPath,
    FilePath,
    Flag,
    Globs,
    HttpUrl,
    Kind,
    LanguageIds,
    OneLine,
    Probability,
)

if TYPE_CHECKING:
    from difill.engine.backends import BackendSpec

SECTION = "difill"
__all__ = [
    "APPROVED", "DESTINATION_KEYS", "KEYS", "RENAMED", "SECTION", "BoundedInt", "Choice", "Device",
    "DirectoryPath", "FilePath", "Flag", "Globs", "HttpUrl", "Kind", "LanguageIds", "OneLine",
    "Probability", "Settings", "SettingsLayers", "backend_spec", "command_line_settings", "kind_of",
    "needs_reload", "parse_settings", "section_of", "setting", "unknown_setting",
]  # fmt: skip


def setting(
    key: str,
    kind: Kind,
    default: Any,
    destination: str | None = None,
    *,
    doc: str,
    shown_default: str | None = None,
    scope: str | None = None,
) -> Any:
    """A Settings field: its camelCase JSON ``key``, its ``kind``, its default.  Typed Any, as
    ``dataclasses.field`` is, so that the field's annotation stays its value's type.

    ``doc``: what a user reads (markdown; the README's table, package.json, config.lua's first
    sentence).  ``shown_default``: the default in words where the value says little (None: "the
    shipped model").  ``scope``: VS Code's scope, where it is not the default ("machine": user
    settings only).

    ``destination``: the field names a program to run, a file to load or write, or a server to
    send code to; the words say what difill would do ("run programs").  A workspace may not set
    such a field (``DESTINATION_KEYS``, server/workspace_values.py); VS Code lists it in
    ``restrictedConfigurations`` and lets only a machine's settings set it."""
    metadata: dict[str, Any] = {"key": key, "kind": kind, "doc": doc}
    if destination:
        metadata["destination"] = destination
        scope = scope or "machine-overridable"
    if shown_default is not None:
        metadata["shown_default"] = shown_default
    if scope is not None:
        metadata["scope"] = scope
    return field(default=default, metadata=metadata)


def kind_of(spec: dataclasses.Field) -> Kind:
    return spec.metadata["kind"]


# ---- the settings (their order is the README's and the clients') ----


@dataclass(frozen=True)
class Settings:
    model_path: str | None = setting(
        "modelPath", DirectoryPath(), None, "load models from folders", shown_default="the shipped model",
        doc="A local DiffusionGemma checkpoint directory (`config.json`, `*.safetensors`, `tokenizer.json`); "
        "empty: the model shipped with difill. Changing it reloads the model; `--model` on the command line.",
    )  # fmt: skip
    device: str = setting(
        "device", Device(), "auto",
        doc="Where the model runs: `auto` (CUDA when present, else CPU), `cpu`, `cuda`, `cuda:N` or `mps`. "
        "Changing it reloads the model; `--device` on the command line.",
    )  # fmt: skip
    engine: str = setting(
        "engine", Choice(ENGINES), "auto",
        doc="Which engine runs the model: `torch`, `llamacpp` (llama.cpp's DiffusionGemma in a worker process; "
        "`difill build-native` first: `docs/llamacpp.md`), `mlx` (mlx-vlm on a Mac, `pip install \"difill[mlx]\"`: "
        "`docs/mlx.md`) or `auto` (llama.cpp where `ggufPath` names a GGUF, or for the shipped model once "
        "`difill build-native` has built the worker with difill's patches; else torch). Changing it reloads; "
        "`--engine` on the command line.",
    )  # fmt: skip
    gguf_path: str | None = setting(
        "ggufPath", FilePath(), None, "load models from files",
        doc="The model's GGUF for the llama.cpp engine; empty: the shipped model's, exported on first use. "
        "Changing it reloads; `--gguf` on the command line.",
    )  # fmt: skip
    llamacpp_worker: str | None = setting(
        "llamacppWorker", FilePath(), None, "run programs", shown_default="the built one", scope="machine",
        doc="The `difill-llama-worker` binary; empty: the one `difill build-native` built. Changing it reloads; "
        "`--llamacpp-worker` on the command line.",
    )  # fmt: skip
    # llama.cpp threads (0: half the cores, as torch takes) and layers offloaded to a GPU.
    llamacpp_threads: int = setting(
        "llamacppThreads", BoundedInt(0, 256), 0,
        doc="llama.cpp threads; 0: half the cores, as torch takes. Changing it reloads.",
    )
    llamacpp_gpu_layers: int = setting(
        "llamacppGpuLayers", BoundedInt(0, 1000), 0,
        doc="Layers llama.cpp offloads to a GPU, for a worker built with `--cuda` or `--metal`. Changing it reloads.",
    )
    # The API key comes from the DIFILL_API_KEY environment variable, never from a setting.
    remote: str | None = setting(
        "remote", HttpUrl(), None, "send code to servers",
        doc="URL of a `difill serve-http`, an OpenAI-compatible (vLLM) server or Inception's Mercury that runs "
        "the model instead of this machine (`remoteKind`); the API key comes from the server process's "
        "`DIFILL_API_KEY` environment variable. Empty: run the model locally. Changing it reloads "
        "(`docs/remote.md`).",
    )  # fmt: skip
    # engine/backends/remote.py PROTOCOLS; not a destination: the URL says where code goes.
    remote_kind: str = setting(
        "remoteKind", Choice(REMOTE_KINDS), "auto", scope="machine-overridable",
        doc="What the `remote` is: `difill` (`difill serve-http`), `openai` (an OpenAI-compatible server such "
        "as vLLM), `mercury` (Inception's Mercury: its fill-in-the-middle endpoint for ghost text, its "
        "next-edit endpoint for next edits and rewrites; the key in `DIFILL_API_KEY` or `INCEPTION_API_KEY`; "
        "`docs/remote.md`), or `auto`: Mercury on `api.inceptionlabs.ai`, else asked of the server on the "
        "first fill. Changing it reloads.",
    )  # fmt: skip
    # vLLM 0.32 or later (released) takes the seeded canvas; difill is tested against 0.33.0's rules.
    remote_canvas: str = setting(
        "remoteCanvas", Choice(CANVAS_MODES), "auto", scope="machine-overridable",
        doc="How fills reach a vLLM `remote`: `seeded` sends difill's own canvas with the code after the cursor "
        "pinned (vLLM 0.32 or later; tested against 0.33.0's rules), `plain` the chat prompt, `auto` tries "
        "seeded first and falls back, remembered, when the server refuses it; the status says which. Changing "
        "it reloads; `--remote-canvas` for `difill fill`.",
    )  # fmt: skip
    # server/context/drafts.py finds the drafts; "auto" reads the checkpoint's About.drafts.
    context_drafts: str = setting(
        "contextDrafts", Choice(("auto", "show", "seed", "off")), "auto",
        doc="How drafts from the context (what followed the same text elsewhere in the file, the open files "
        "and the workspace) reach a suggestion: `show` (a draft that matched 4 or more tokens before the "
        "cursor, or an import draft, is the ghost text as it stands, no model run; a draft on a shorter match "
        "only where the model's text is empty; an explicit request gets the long-match drafts first, then the "
        "model's middles, then the rest), `seed` (drafts seed canvas rows beside the noise-seeded ones), "
        "`off`, or `auto`: the checkpoint's own choice (`show` for the shipped model, `seed` for others).",
    )  # fmt: skip
    # Single-line suggestions use at most this; an empty block body up to twice it (text/shape.py).
    max_tokens: int = setting(
        "maxTokens", BoundedInt(1, 512), 32,
        doc="Longest suggestion, in tokens (an empty block body may use twice this).",
    )
    # None: the value chosen for the loaded checkpoint (lab/scripts/tune_truncation.py on training files).
    min_token_prob: float | None = setting(
        "minTokenProb", Probability(), None, shown_default="the model's",
        doc="Ghost text ends before the first token the model gave less than this probability (it shows what "
        "the model is sure of): 0.25 for the shipped model (its config), 0 (whole middles) for a checkpoint "
        "that names none; invoked completions are never cut.",
    )  # fmt: skip
    # server/show_gate.py; None: the calibration's threshold (docs/show_gate.md).
    min_show_probability: float | None = setting(
        "minShowProbability", Probability(), None, shown_default="the calibration's",
        doc="Ghost text is shown only when the show gate's estimate that it is right reaches this; a long "
        "suggestion is cut to a likely first line or word. The default keeps what was right at least half the "
        "time on the tuning projects (`docs/show_gate.md`); 0 shows everything; invoked completions are not "
        "gated; the log says why a suggestion was held back.",
    )  # fmt: skip
    comment_suggestions: bool = setting(
        "commentSuggestions", Flag(), True,
        doc="Ghost text in comments, strings and docstrings (above a higher bar than code: the model's prose "
        "is rarely what a person writes); false: none there.",
    )  # fmt: skip
    # The edit gate: text/edit_gate.py, docs/edits.md.
    edit_gate: bool = setting(
        "editGate", Flag(), True,
        doc="An edit (rewrite, instruction, fill holes, complete block) is applied only when it parses at least "
        "as well as the selection, repeats nothing new, renames nothing used outside it, keeps its indentation "
        "and (instructed) changes something; otherwise one line says what the model wrote and why it was held "
        "back (`docs/edits.md`). false: every edit is shown, noise included.",
    )  # fmt: skip
    steps: int = setting(
        "steps", BoundedInt(1, 1024), 12, doc="Cap on denoising steps (decoder passes) per fill: fewer is faster, more is better."
    )
    candidates: int = setting(
        "candidates", BoundedInt(1, 3), 3,
        doc="Distinct suggestions for an explicitly invoked completion (automatic requests get one).",
    )
    languages: tuple[str, ...] = setting(
        "languages", LanguageIds(), (), shown_default="all",
        doc="Language ids that get suggestions, as the editor names them (`python`); empty: every language.",
    )
    context_tokens: int = setting(
        "contextTokens", BoundedInt(16, 32768), 1024,
        doc="Prefix budget in tokens; the model's own limit caps it (256 for the shipped model).",
    )
    # Called `drafts` until issue 48 (still read: RENAMED).
    previews: bool = setting(
        "previews", Flag(), False,
        doc="Send `difill/preview` `{token, text, step}` notifications (the partly denoised text) while an edit "
        "denoises; `drafts`, its old name, is still read.",
    )  # fmt: skip
    hole_marker: str = setting(
        "holeMarker", OneLine(), "<|hole|>", doc="The marker *Fill holes* (and `difill.fillHoles`) fills."
    )
    debounce_ms: int = setting(
        "debounceMs", BoundedInt(0, 5000), 0,
        doc="Server-side wait after a completion request before running the model; a newer request for the same "
        "document replaces the waiting one. 0: at once.",
    )  # fmt: skip
    load_wait_ms: int = setting(
        "loadWaitMs", BoundedInt(0, 120000), 3000,
        doc="While the model loads, how long a request waits for it before answering empty.",
    )
    # The clients send a default location, so that the server always keeps a log they can open.
    log_file: str | None = setting(
        "logFile", FilePath(), None, "write to files", scope="machine",
        shown_default="none (the clients send one: Neovim `stdpath(\"log\")/difill-server.log`, VS Code its log folder's `server.log`)",
        doc="A file the server also writes its log to, beside stderr and `--log-file` (`:DifillLog` and "
        "**difill: Open Server Log** open it).",
    )  # fmt: skip
    # server/context, docs/context.md; the index is read on a worker thread.
    workspace_index: bool = setting(
        "workspaceIndex", Flag(), True,
        doc="Index the open documents and the workspace folders for snippets and drafts from other files "
        "(`docs/context.md`). With a remote, that text is sent to it.",
    )  # fmt: skip
    # Caps on the workspace index; changing one rebuilds it.
    index_max_files: int = setting(
        "indexMaxFiles", BoundedInt(0, 1_000_000), 20000, doc="Files the workspace index holds at most."
    )
    index_max_bytes: int = setting(
        "indexMaxBytes", BoundedInt(0, 8 * 1024**3), 128 * 1024 * 1024,
        doc="Memory the workspace index may hold, in bytes (text plus an estimate of its tables).",
    )
    index_max_file_bytes: int = setting(
        "indexMaxFileBytes", BoundedInt(0, 256 * 1024**2), 1024 * 1024, doc="A larger file is not indexed."
    )
    snippet_tokens: int = setting(
        "snippetTokens", BoundedInt(0, 8192), 64,
        doc="Token budget (estimated) of the block of workspace snippets the model reads before the prefix; "
        "a block over half the model's prefix budget is left out; 0: none.",
    )  # fmt: skip
    # server/context/jedi_names.py runs it; only a file named like a Python interpreter is run.
    project_python: str | None = setting(
        "projectPython", FilePath(), None, "run programs", shown_default="the server's own Python",
        doc="The project's Python interpreter (a virtual environment's `bin/python`): names after `x.` and on "
        "import lines come from its standard library and packages. Only a file named like `python3.12` runs.",
    )  # fmt: skip
    # Matched by server/context/policy.py beside its built-in deny list; changing it rebuilds the index.
    context_exclude: tuple[str, ...] = setting(
        "contextExclude", Globs(), (),
        doc="Files never read, indexed, offered or sent, beyond the built-in secrets deny list (`.env`, SSH and "
        "cloud keys, credential files), as gitignore patterns (`secrets/`, `*.tfvars`); no suggestions inside them.",
    )  # fmt: skip
    # textDocument/copilotInlineEdit.  The default stays "drafts": the shipped model's edits are noise
    # that its gate keeps off screen (docs/next_edit.md).
    next_edit: str = setting(
        "nextEdit", Choice(("on", "drafts", "model", "off")), "drafts",
        doc="Next-edit suggestions (`textDocument/copilotInlineEdit`): `drafts` your last edit again where else "
        "it applies (a rename, an inserted argument; no model), `on` also the model's edits of the ~10 lines "
        "around the cursor with the drafts seeded on its canvas (for a real checkpoint or a remote: the shipped "
        "model's are noise, kept off screen by a gate; `docs/next_edit.md`), `model` the model's alone (a "
        "measurement), or `off` (the method is then not offered; turning it back on takes a server restart).",
    )  # fmt: skip

    def enabled_for(self, language_id: str | None) -> bool:
        return not self.languages or (language_id or "") in self.languages


KEYS: dict[str, dataclasses.Field] = {f.metadata["key"]: f for f in fields(Settings)}
# The settings a workspace may not set (``setting``'s ``destination``), and what difill would do.
DESTINATION_KEYS: dict[str, str] = {
    key: spec.metadata["destination"] for key, spec in KEYS.items() if "destination" in spec.metadata
}
# Beside the settings: the {key: value} pairs of DESTINATION_KEYS the user chose, as the client
# says (server/workspace_values.py).  Not a setting: SettingsLayers takes it out.
APPROVED = "userApproved"
# Old keys still read as their new ones, so that users' configs keep working ("draft" is text
# retrieved from the context; the partly denoised text of a running edit is a "preview").
RENAMED = {"drafts": "previews"}


def backend_spec(settings: Settings) -> BackendSpec:
    """Where fills run, as ``settings`` say: the one place settings become the backend's
    (engine/backends ``BackendSpec``).  A change that leaves it equal needs no reload."""
    # Imported here: engine/backends loads the HTTP client, and this module stays light.
    from difill.engine.backends import BackendSpec, EngineChoice

    engine = EngineChoice(
        settings.engine, settings.gguf_path, settings.llamacpp_worker,
        settings.llamacpp_threads or None,  # 0: half the cores, as torch takes
        settings.llamacpp_gpu_layers,
    )  # fmt: skip
    return BackendSpec(
        settings.model_path, settings.device, settings.remote, settings.remote_canvas, engine, settings.remote_kind
    )


def needs_reload(before: Settings, after: Settings) -> bool:
    """Whether ``after`` names another backend than ``before`` (a new model, device, server...)."""
    return backend_spec(before) != backend_spec(after)


def command_line_settings(args: Any, **more: Any) -> Settings:
    """The settings of the command line's model and engine options (``--model``, ``--device``,
    ``--engine``, ``--gguf``, ``--llamacpp-*``; `difill serve` and `difill fill`), and ``more``."""
    return Settings(
        model_path=getattr(args, "model", None),
        device=getattr(args, "device", None) or "auto",
        engine=getattr(args, "engine", None) or "auto",
        gguf_path=getattr(args, "gguf", None),
        llamacpp_worker=getattr(args, "llamacpp_worker", None),
        llamacpp_threads=getattr(args, "llamacpp_threads", None) or 0,
        llamacpp_gpu_layers=getattr(args, "llamacpp_gpu_layers", None) or 0,
        **more,
    )


def section_of(raw: Any) -> dict[str, Any] | None:
    """The difill settings in a raw settings payload: ``{"difill": {...}}`` or a flat dict.

    None when the payload holds nothing for difill (another server's section, null, ``{}``):
    such a ``didChangeConfiguration`` must not reset difill's settings.
    """
    if not isinstance(raw, dict):
        return None
    nested = raw.get(SECTION)
    if isinstance(nested, dict):
        return nested
    if any(key in KEYS for key in raw):
        return raw
    return None


def unknown_setting(key: str) -> str:
    """The problem of an unknown key: the nearest known ones ("did you mean maxTokens?") when a
    key is near, else where the list is (the 30 keys, twice per popup, hid the typo; issue 52)."""
    near = (
        difflib.get_close_matches(key, KEYS, n=3, cutoff=0.6)
        or [k for k in KEYS if k.lower() == key.lower() or k.lower().startswith(key.lower()[:5])][:3]
    )
    if near:
        return f"unknown setting {key!r}: did you mean {' or '.join(near)}?"
    return f"unknown setting {key!r} (the settings are listed in the README, Settings)"


def parse_settings(raw: Any, base: Settings) -> tuple[Settings, list[str]]:
    """``base`` updated with the valid values in ``raw``, and a sentence per problem found."""
    if raw is None:
        return base, []
    if not isinstance(raw, dict):
        return base, [f"settings must be a JSON object, got {_describe(raw)}"]
    updates: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        if key in RENAMED and RENAMED[key] in raw:
            continue  # both given: the new key wins
        spec = KEYS.get(RENAMED.get(key, key))
        if spec is None:
            problems.append(unknown_setting(str(key)))
            continue
        converted, problem = _convert(spec, value)
        if problem:
            default = getattr(base, spec.name)
            problems.append(f"{key} {problem}, got {_describe(value)}; using {default!r}")
        else:
            updates[spec.name] = converted
    return dataclasses.replace(base, **updates), problems


def _convert(spec: dataclasses.Field, value: Any) -> tuple[Any, str | None]:
    """(value as the field's type, None) or (None, what is wrong with it)."""
    return kind_of(spec).convert(value)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# (a section without APPROVED, the approvals) -> (the section to use, a sentence per value refused)
Screen = Callable[[dict[str, Any], Any], tuple[dict[str, Any], list[str]]]


def _unscreened(section: dict[str, Any], approved: Any) -> tuple[dict[str, Any], list[str]]:
    return section, []


@dataclass
class SettingsLayers:
    """The three layers described in the module docstring, and the settings they add up to.

    ``screen`` drops what a section may not set (the server's: a destination value a workspace
    file chose, server/workspace_values.py); ``refused`` says what it dropped from the layers now."""

    base: Settings
    initialization: dict[str, Any] = field(default_factory=dict)
    workspace: dict[str, Any] = field(default_factory=dict)
    screen: Screen = _unscreened
    _refused: dict[str, list[str]] = field(default_factory=dict)  # layer -> its sentences

    @property
    def refused(self) -> list[str]:
        return [s for layer in ("initialization", "workspace") for s in self._refused.get(layer, [])]

    def _screened(self, layer: str, section: dict[str, Any]) -> dict[str, Any]:
        rest = {k: v for k, v in section.items() if k != APPROVED}
        kept, self._refused[layer] = self.screen(rest, section.get(APPROVED))
        return kept

    def settings(self) -> Settings:
        settings, _ = parse_settings(self.initialization, self.base)
        settings, _ = parse_settings(self.workspace, settings)
        return settings

    def set_initialization(self, raw: Any) -> list[str]:
        """Take ``initializationOptions``; returns its problems."""
        section = section_of(raw) if raw is not None else {}
        if section is None:  # something, but nothing difill knows: say so
            section = raw if isinstance(raw, dict) else {}
            if not isinstance(raw, dict):
                return [f"initializationOptions must be a JSON object, got {_describe(raw)}"]
        self.initialization = section = self._screened("initialization", section)
        return parse_settings(section, self.base)[1]

    def set_workspace(self, raw: Any) -> list[str] | None:
        """Take a ``didChangeConfiguration`` payload; None when it holds nothing for difill."""
        section = section_of(raw)
        if section is None:
            return None
        self.workspace = section = self._screened("workspace", section)
        below, _ = parse_settings(self.initialization, self.base)
        return parse_settings(section, below)[1]
