"""Settings: what an editor may configure, their defaults, and how raw JSON becomes them.

Settings arrive as camelCase JSON in ``initializationOptions`` and in
``workspace/didChangeConfiguration`` (either flat or nested under a ``difill`` key).  They are
layered: the command line (``--model``, ``--device``) gives the base, ``initializationOptions``
override it, and the latest ``didChangeConfiguration`` section overrides that (each new section
replaces the previous one, so a key removed from the editor's config goes back to its default).

An invalid value never stops the server: it is reported and the value from the layer below is
kept.  ``parse_settings`` returns the problems as sentences for ``window/showMessage``.

Each ``Settings`` field declares its JSON key and its kind (``setting(key, kind, default)``); the
kind alone decides which raw values are valid and what the message says about the others.  A new
setting is one field here, its row in README.md and its entry in editors/vscode/package.json
(tests/editors/test_vscode_extension.py checks keys, defaults, bounds and choices agree).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from difill.engine.names import CANVAS_MODES, ENGINES

if TYPE_CHECKING:
    from difill.engine.backends import BackendSpec

SECTION = "difill"


# ---- kinds: what a setting may hold, and how a raw JSON value becomes it ----
#
# Each Settings field names its kind in its metadata; ``convert`` gives (value as the field's
# type, None) or (None, what is wrong with it).  The problem text completes the sentence
# "<key> ..., got <value>; using <default>" that parse_settings reports.


@runtime_checkable
class Kind(Protocol):
    def convert(self, value: Any) -> tuple[Any, str | None]: ...


def _blank(value: Any) -> bool:
    """None or an empty/whitespace string: "not set", so the field's None default applies."""
    return value is None or (isinstance(value, str) and value.strip() == "")


@dataclass(frozen=True)
class DirectoryPath:
    """A directory path; blank: None (the default)."""

    what = "a directory path"

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        if _blank(value):
            return None, None
        return (value, None) if isinstance(value, str) else (None, f"must be {self.what} (string)")


@dataclass(frozen=True)
class FilePath(DirectoryPath):
    """A file path; blank: None (the default)."""

    what = "a file path"


@dataclass(frozen=True)
class HttpUrl:
    """An http(s) URL, surrounding spaces dropped; blank: None (the default)."""

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        if _blank(value):
            return None, None
        ok = isinstance(value, str) and value.startswith(("http://", "https://"))
        return (value.strip(), None) if ok else (None, "must be an http:// or https:// URL")


@dataclass(frozen=True)
class Choice:
    """One of a few fixed strings."""

    values: tuple[str, ...]

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        ok = isinstance(value, str) and value in self.values
        return (value, None) if ok else (None, f"must be one of {', '.join(self.values)}")


@dataclass(frozen=True)
class Device:
    """A torch device name difill supports: auto, cpu, cuda, cuda:N or mps."""

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        ok = isinstance(value, str) and (
            value in ("auto", "cpu", "cuda", "mps") or (value.startswith("cuda:") and value[5:].isdigit())
        )
        return (value, None) if ok else (None, "must be one of auto, cpu, cuda, cuda:N, mps")


@dataclass(frozen=True)
class LanguageIds:
    """A list of non-empty language ids, kept as a tuple."""

    def convert(self, value: Any) -> tuple[tuple[str, ...] | None, str | None]:
        if isinstance(value, list) and all(isinstance(x, str) and x for x in value):
            return tuple(value), None
        return None, "must be a list of language ids"


@dataclass(frozen=True)
class Globs:
    """A list of gitignore-style patterns (one line each, at most 1024 characters), as a tuple."""

    def convert(self, value: Any) -> tuple[tuple[str, ...] | None, str | None]:
        if (
            isinstance(value, list)
            and len(value) <= 1000
            and all(isinstance(x, str) and x.strip() and "\n" not in x and len(x) <= 1024 for x in value)
        ):
            return tuple(value), None
        return None, "must be a list of at most 1000 one-line glob patterns (gitignore syntax)"


@dataclass(frozen=True)
class Flag:
    """true or false (not 0 or 1, not "true")."""

    def convert(self, value: Any) -> tuple[bool | None, str | None]:
        return (value, None) if isinstance(value, bool) else (None, "must be true or false")


@dataclass(frozen=True)
class OneLine:
    """A non-blank string without a line break."""

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        ok = isinstance(value, str) and value.strip() != "" and "\n" not in value
        return (value, None) if ok else (None, "must be a non-empty one-line string")


@dataclass(frozen=True)
class Probability:
    """A number from 0 to 1, as a float; None allowed (the default: "the checkpoint's choice")."""

    def convert(self, value: Any) -> tuple[float | None, str | None]:
        if value is None:
            return None, None
        # bool is an int in Python: refuse it explicitly.  NaN fails the range check.
        ok = not isinstance(value, bool) and isinstance(value, int | float) and 0.0 <= value <= 1.0
        return (float(value), None) if ok else (None, "must be a number between 0 and 1")


@dataclass(frozen=True)
class BoundedInt:
    """An integer from ``low`` to ``high``; a float with no fraction (2.0) counts as one."""

    low: int
    high: int

    def convert(self, value: Any) -> tuple[int | None, str | None]:
        # bool is an int in Python: refuse it explicitly.  NaN and infinities are no integer.
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value != int(value)
        ):
            return None, f"must be an integer between {self.low} and {self.high}"
        if not self.low <= value <= self.high:
            return None, f"must be between {self.low} and {self.high}"
        return int(value), None


def setting(key: str, kind: Kind, default: Any, destination: str | None = None) -> Any:
    """A Settings field: its camelCase JSON ``key``, its ``kind``, its default.  Typed Any, as
    ``dataclasses.field`` is, so that the field's annotation stays its value's type.

    ``destination``: the field names a program to run, a file to load or write, or a server to
    send code to; the words say what difill would do ("run programs").  A workspace may not set
    such a field (``DESTINATION_KEYS``, server/workspace_values.py)."""
    metadata = {"key": key, "kind": kind} | ({"destination": destination} if destination else {})
    return field(default=default, metadata=metadata)


def kind_of(spec: dataclasses.Field) -> Kind:
    return spec.metadata["kind"]


# ---- the settings ----


@dataclass(frozen=True)
class Settings:
    # Directory of a DiffusionGemma checkpoint (config.json, *.safetensors, tokenizer.json).
    # None: the model shipped with difill.  Changing it reloads the model.
    model_path: str | None = setting("modelPath", DirectoryPath(), None, "load models from folders")

    # URL of a difill serve-http or OpenAI-compatible (vLLM) server; None: run the model in this
    # process.  The API key comes from the DIFILL_API_KEY environment variable.  Changing it reloads.
    remote: str | None = setting("remote", HttpUrl(), None, "send code to servers")

    # How fills reach a vLLM `remote`: "seeded" sends difill's own canvas (vLLM 0.32 or later,
    # released; difill is tested against 0.33.0's rules: the code after the cursor clamped),
    # "plain" the chat/suffix prompt, "auto" tries seeded first and falls back, remembered, when
    # the server refuses it.  Changing it reloads.
    remote_canvas: str = setting("remoteCanvas", Choice(CANVAS_MODES), "auto")

    # "auto" (CUDA when available, else CPU), "cpu", "cuda", "cuda:N" or "mps".  Changing it reloads.
    device: str = setting("device", Device(), "auto")

    # Which in-process engine runs the model: "torch", "llamacpp" (llama.cpp's DiffusionGemma,
    # docs/llamacpp.md; `difill build-native` first), "mlx" (mlx-vlm on a Mac, docs/mlx.md;
    # `pip install "difill[mlx]"`) or "auto" (llama.cpp where `ggufPath` names a GGUF, else torch).
    # Changing it reloads.
    engine: str = setting("engine", Choice(ENGINES), "auto")

    # The GGUF of `modelPath` for the llama.cpp engine (the shipped model's is exported on first
    # use).  Changing it reloads.
    gguf_path: str | None = setting("ggufPath", FilePath(), None, "load models from files")

    # The difill-llama-worker binary; None: the one `difill build-native` built.  Changing it reloads.
    llamacpp_worker: str | None = setting("llamacppWorker", FilePath(), None, "run programs")

    # llama.cpp threads (0: half the cores, as torch takes) and layers offloaded to a GPU (a worker
    # built with `difill build-native --cuda` or `--metal`).  Changing either reloads.
    llamacpp_threads: int = setting("llamacppThreads", BoundedInt(0, 256), 0)
    llamacpp_gpu_layers: int = setting("llamacppGpuLayers", BoundedInt(0, 1000), 0)

    # A file the server also writes its log to (beside stderr and `--log-file`), for :DifillLog
    # and the output channel; the clients send a default location.  None: no such file.
    log_file: str | None = setting("logFile", FilePath(), None, "write to files")

    # Longest suggestion, in tokens.  Single-line suggestions use at most this; an empty block body
    # may use up to twice this (see text/shape.py).
    max_tokens: int = setting("maxTokens", BoundedInt(1, 512), 32)

    # Ghost text (automatic suggestions) ends before the first token the model gave less than this
    # probability: it shows what the model is sure of.  0: whole middles.  None: the value chosen
    # for the loaded checkpoint (0.25 for the shipped model, chosen on training files by
    # scripts/tune_truncation.py; 0 for a checkpoint without one).  Invoked completions are never cut.
    min_token_prob: float | None = setting("minTokenProb", Probability(), None)

    # Ghost text is shown only when the show gate's estimate that it is right (server/show_gate.py)
    # reaches this; a long text that does not is cut to a likely first line or word.  None: the
    # calibration's own threshold (chosen so that at least half of what is shown was right on the
    # tuning projects: docs/show_gate.md).  0 shows everything the filters keep.  Invoked
    # completions are not gated.
    min_show_probability: float | None = setting("minShowProbability", Probability(), None)

    # Ghost text inside comments, strings and docstrings (above a higher bar than code: the
    # model's prose is rarely what a person writes).  false: none there.
    comment_suggestions: bool = setting("commentSuggestions", Flag(), True)

    # Cap on denoising steps (decoder passes) per fill: fewer is faster, more is better.
    steps: int = setting("steps", BoundedInt(1, 1024), 12)

    # Distinct suggestions for an explicitly invoked completion; automatic requests get one.
    candidates: int = setting("candidates", BoundedInt(1, 3), 3)

    # Language ids (as the editor names them, e.g. "python") that get suggestions.
    # Empty: every language.  Shapes and syntax checks use tree-sitter where a grammar is installed.
    languages: tuple[str, ...] = setting("languages", LanguageIds(), ())

    # Prefix budget in tokens; the model's own limit (from its checkpoint) caps it.
    context_tokens: int = setting("contextTokens", BoundedInt(16, 32768), 1024)

    # How drafts from the context (what followed the same text elsewhere: server/context/drafts.py)
    # reach a suggestion: "show" (the best draft is the ghost text, no model run; explicit requests
    # get it first, then the model's), "seed" (they seed canvas rows beside noise-seeded ones),
    # "off", or "auto": the checkpoint's own choice ("show" for difill's shipped model, "seed" else).
    context_drafts: str = setting("contextDrafts", Choice(("auto", "show", "seed", "off")), "auto")

    # Send `difill/preview` notifications (the partly denoised text) while an edit (code action,
    # command) is denoised.  Called `drafts` until issue 48 (still read: RENAMED).
    previews: bool = setting("previews", Flag(), False)

    # The edit gate (text/edit_gate.py, docs/edits.md): an edit that parses worse than the selection,
    # repeats a name or a line, renames a name used outside the selection, moves its indentation,
    # or (with an instruction) changes nothing is held back with a message instead of shown.
    # false: every edit the model writes is shown, noise included (a rename the user asked for).
    edit_gate: bool = setting("editGate", Flag(), True)

    # The text that marks a hole for "Fill holes in selection" and `difill.fillHoles`.
    hole_marker: str = setting("holeMarker", OneLine(), "<|hole|>")

    # Wait this long after a completion request before running the model; a newer request for the
    # same document within the wait replaces it.  0: run at once (newer requests still cancel).
    debounce_ms: int = setting("debounceMs", BoundedInt(0, 5000), 0)

    # While the model loads, a request waits this long for it, then answers empty.
    load_wait_ms: int = setting("loadWaitMs", BoundedInt(0, 120000), 3000)

    # The workspace index (server/context, docs/context.md): the open documents and the workspace
    # folders' files, read on a worker thread, for snippets and drafts from other files.
    workspace_index: bool = setting("workspaceIndex", Flag(), True)

    # Caps on the workspace index: files indexed, bytes kept (text plus an estimate of its
    # postings), and the largest file read (a larger one is skipped).  Changing one rebuilds it.
    index_max_files: int = setting("indexMaxFiles", BoundedInt(0, 1_000_000), 20000)
    index_max_bytes: int = setting("indexMaxBytes", BoundedInt(0, 8 * 1024**3), 128 * 1024 * 1024)
    index_max_file_bytes: int = setting("indexMaxFileBytes", BoundedInt(0, 256 * 1024**2), 1024 * 1024)

    # Files never read, indexed, offered or sent, beyond the built-in secrets deny list (.env,
    # keys, credential files: server/context/policy.py), as gitignore patterns ("secrets/",
    # "*.tfvars").  In such a file difill suggests nothing.  Changing it rebuilds the index.
    context_exclude: tuple[str, ...] = setting("contextExclude", Globs(), ())

    # The project's Python interpreter: jedi names the standard library and the installed
    # packages of this one after ``x.`` and on import lines (server/context/jedi_names.py).
    # None: the server's own.
    project_python: str | None = setting("projectPython", FilePath(), None, "run programs")

    # Next-edit suggestions (textDocument/copilotInlineEdit): "drafts" offers the last edit again
    # at the other places it applies (a rename, an inserted argument; no model), "on" adds the
    # model's edits of the lines around the cursor (the drafts seeded on its canvas), "model" the
    # model's alone (a measurement), "off" none.  The default stays "drafts": the shipped model's
    # edits are noise that its gate keeps off screen (docs/next_edit.md).
    next_edit: str = setting("nextEdit", Choice(("on", "drafts", "model", "off")), "drafts")

    # Budget, in tokens, of the snippets from other files put before the prefix; 0: none.
    snippet_tokens: int = setting("snippetTokens", BoundedInt(0, 8192), 64)

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
    return BackendSpec(settings.model_path, settings.device, settings.remote, settings.remote_canvas, engine)


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
