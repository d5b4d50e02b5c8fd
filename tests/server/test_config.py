"""Settings: camelCase JSON -> Settings, problems as sentences, and the three layers."""

from __future__ import annotations

import pytest

from difill.server.config import Settings, SettingsLayers, parse_settings, section_of

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)


def test_valid_settings_are_taken():
    settings, problems = parse_settings(
        {"modelPath": "/m", "device": "cpu", "maxTokens": 48, "steps": 8, "candidates": 2,
         "languages": ["python"], "contextTokens": 512, "previews": True, "holeMarker": "??", "debounceMs": 30,
         "minTokenProb": 0.25},
        Settings(),
    )  # fmt: skip
    assert problems == []
    assert settings == Settings(
        model_path="/m", device="cpu", max_tokens=48, steps=8, candidates=2, languages=("python",),
        context_tokens=512, previews=True, hole_marker="??", debounce_ms=30, min_token_prob=0.25,
    )  # fmt: skip


def test_invalid_values_are_reported_and_the_default_kept():
    settings, problems = parse_settings(
        {"maxTokens": "many", "steps": 0, "candidates": True, "device": "gpu", "languages": "python",
         "drafts": "yes", "holeMarker": "", "colour": "blue", "minTokenProb": 1.5},
        Settings(),
    )  # fmt: skip
    assert settings == Settings()
    assert len(problems) == 9
    assert any("minTokenProb must be a number between 0 and 1" in p for p in problems)
    assert any("maxTokens" in p and "'many'" in p and "using 32" in p for p in problems)
    assert any("unknown setting 'colour'" in p for p in problems)


def test_settings_may_be_nested_under_difill():
    assert section_of({"difill": {"steps": 3}}) == {"steps": 3}
    assert section_of({"steps": 3}) == {"steps": 3}
    assert section_of({"pyright": {"x": 1}}) is None
    assert section_of(None) is None and section_of({}) is None


def test_layers_command_line_then_initialization_then_workspace():
    layers = SettingsLayers(Settings(model_path="/cli", device="cpu"))
    assert layers.set_initialization({"difill": {"steps": 5, "maxTokens": 10}}) == []
    assert layers.set_workspace({"difill": {"maxTokens": 20}}) == []
    settings = layers.settings()
    assert (settings.model_path, settings.steps, settings.max_tokens) == ("/cli", 5, 20)
    # A new workspace section replaces the previous one: maxTokens falls back to the init value.
    layers.set_workspace({"difill": {}})
    assert layers.settings().max_tokens == 10


def test_a_payload_for_another_server_changes_nothing():
    layers = SettingsLayers(Settings())
    layers.set_workspace({"difill": {"steps": 5}})
    assert layers.set_workspace({"rust-analyzer": {"checkOnSave": True}}) is None
    assert layers.settings().steps == 5


def test_languages_empty_means_every_language():
    assert Settings().enabled_for("rust")
    assert Settings(languages=("python",)).enabled_for("python")
    assert not Settings(languages=("python",)).enabled_for("rust")


def test_remote_must_be_an_http_url():
    settings, problems = parse_settings({"remote": "https://gpu-box.example:8765"}, Settings())
    assert problems == [] and settings.remote == "https://gpu-box.example:8765"
    settings, problems = parse_settings({"remote": "gpu-box:8765"}, Settings())
    assert settings.remote is None and any("remote" in p and "URL" in p for p in problems)
    assert parse_settings({"remote": ""}, Settings(remote="http://x"))[0].remote is None


def test_remote_canvas_is_auto_seeded_or_plain_and_reloads():
    from difill.server.config import needs_reload

    assert Settings().remote_canvas == "auto" and needs_reload(Settings(), Settings(remote_canvas="plain"))
    assert parse_settings({"remoteCanvas": "seeded"}, Settings())[0].remote_canvas == "seeded"
    settings, problems = parse_settings({"remoteCanvas": "always"}, Settings(remote_canvas="plain"))
    assert settings.remote_canvas == "plain" and "auto, seeded, plain" in problems[0]


# ---- the declarative model: every field a key and a kind, every kind its values and messages ----


def test_every_setting_declares_a_key_and_a_kind():
    from dataclasses import fields

    from difill.server.config import KEYS, Kind

    keys = []
    for spec in fields(Settings):
        assert isinstance(spec.metadata.get("key"), str) and spec.metadata["key"], spec.name
        assert isinstance(spec.metadata.get("kind"), Kind), spec.name
        keys.append(spec.metadata["key"])
    assert len(set(keys)) == len(keys) == len(KEYS)
    # The default of every field is a value its own kind accepts, unchanged.
    for key, spec in KEYS.items():
        default = getattr(Settings(), spec.name)
        raw = list(default) if isinstance(default, tuple) else default
        assert spec.metadata["kind"].convert(raw) == (default, None), key


KIND_CASES = [
    # (kind, raw value, (converted, problem))
    ("Globs", ["secrets/", "*.tfvars"], (("secrets/", "*.tfvars"), None)),
    ("Globs", [], ((), None)),
    ("Globs", ["a\nb"], (None, "must be a list of at most 1000 one-line glob patterns (gitignore syntax)")),
    ("Globs", "secrets/", (None, "must be a list of at most 1000 one-line glob patterns (gitignore syntax)")),
    (
        "Globs",
        ["x" * 1025],
        (None, "must be a list of at most 1000 one-line glob patterns (gitignore syntax)"),
    ),
    ("DirectoryPath", "/models/m", ("/models/m", None)),
    ("DirectoryPath", "  ", (None, None)),
    ("DirectoryPath", None, (None, None)),
    ("DirectoryPath", 3, (None, "must be a directory path (string)")),
    ("FilePath", "/models/m.gguf", ("/models/m.gguf", None)),
    ("FilePath", "", (None, None)),
    ("FilePath", 3, (None, "must be a file path (string)")),
    ("HttpUrl", "https://gpu:8765 ", ("https://gpu:8765", None)),
    ("HttpUrl", "http://localhost", ("http://localhost", None)),
    ("HttpUrl", "", (None, None)),
    ("HttpUrl", "gpu:8765", (None, "must be an http:// or https:// URL")),
    ("HttpUrl", ["http://x"], (None, "must be an http:// or https:// URL")),
    ("Choice", "seeded", ("seeded", None)),
    ("Choice", "always", (None, "must be one of auto, seeded, plain")),
    ("Choice", ["auto"], (None, "must be one of auto, seeded, plain")),
    ("Device", "cuda:1", ("cuda:1", None)),
    ("Device", "mps", ("mps", None)),
    ("Device", "cuda:", (None, "must be one of auto, cpu, cuda, cuda:N, mps")),
    ("Device", "gpu", (None, "must be one of auto, cpu, cuda, cuda:N, mps")),
    ("LanguageIds", ["python", "rust"], (("python", "rust"), None)),
    ("LanguageIds", [], ((), None)),
    ("LanguageIds", "python", (None, "must be a list of language ids")),
    ("LanguageIds", ["python", ""], (None, "must be a list of language ids")),
    ("Flag", False, (False, None)),
    ("Flag", 1, (None, "must be true or false")),
    ("Flag", "true", (None, "must be true or false")),
    ("OneLine", "??", ("??", None)),
    ("OneLine", " ", (None, "must be a non-empty one-line string")),
    ("OneLine", "a\nb", (None, "must be a non-empty one-line string")),
    ("Probability", 1, (1.0, None)),
    ("Probability", None, (None, None)),
    ("Probability", 1.5, (None, "must be a number between 0 and 1")),
    ("Probability", True, (None, "must be a number between 0 and 1")),
    ("Probability", float("nan"), (None, "must be a number between 0 and 1")),
    ("BoundedInt", 2, (2, None)),
    ("BoundedInt", 3.0, (3, None)),
    ("BoundedInt", 4, (None, "must be between 1 and 3")),
    ("BoundedInt", 2.5, (None, "must be an integer between 1 and 3")),
    ("BoundedInt", True, (None, "must be an integer between 1 and 3")),
    ("BoundedInt", "2", (None, "must be an integer between 1 and 3")),
    # JSON parsed by Python may hold NaN and Infinity: a problem, not an exception.
    ("BoundedInt", float("nan"), (None, "must be an integer between 1 and 3")),
    ("BoundedInt", float("inf"), (None, "must be an integer between 1 and 3")),
]


def _kind(name: str):
    from difill.server import config

    arguments = {"Choice": (("auto", "seeded", "plain"),), "BoundedInt": (1, 3)}
    return getattr(config, name)(*arguments.get(name, ()))


@pytest.mark.parametrize(("kind", "raw", "expected"), KIND_CASES)
def test_each_kind_converts_valid_values_and_names_what_is_wrong(kind, raw, expected):
    converted, problem = _kind(kind).convert(raw)
    assert (converted, problem) == expected
    assert type(converted) is type(expected[0])  # 3.0 becomes the int 3, 1 the float 1.0


def test_every_kind_has_cases_in_the_table():
    from difill.server.config import KEYS

    used = {type(spec.metadata["kind"]).__name__ for spec in KEYS.values()}
    tested_valid = {kind for kind, _, (_, problem) in KIND_CASES if problem is None}
    tested_invalid = {kind for kind, _, (_, problem) in KIND_CASES if problem is not None}
    assert used <= tested_valid and used <= tested_invalid


def test_a_non_finite_number_is_reported_not_raised():
    settings, problems = parse_settings({"maxTokens": float("inf"), "steps": float("nan")}, Settings())
    assert settings == Settings()
    assert problems == [
        "maxTokens must be an integer between 1 and 512, got inf; using 32",
        "steps must be an integer between 1 and 1024, got nan; using 12",
    ]


# ---- the backend the settings name: built once (BackendSpec), compared to decide a reload ----


def test_the_backend_spec_carries_every_backend_setting():
    from difill.engine.backends import BackendSpec, EngineChoice
    from difill.server.config import backend_spec

    settings = Settings(
        model_path="/m", device="cpu", remote="http://gpu:8765", remote_canvas="plain", engine="llamacpp",
        gguf_path="/m.gguf", llamacpp_worker="/w", llamacpp_threads=3, llamacpp_gpu_layers=7,
    )  # fmt: skip
    engine = EngineChoice("llamacpp", "/m.gguf", "/w", 3, 7)
    assert backend_spec(settings) == BackendSpec("/m", "cpu", "http://gpu:8765", "plain", engine)
    assert backend_spec(Settings()).engine.threads is None  # 0: half the cores, as torch takes


def test_only_a_setting_of_the_backend_reloads_it():
    from difill.server.config import needs_reload

    for change in (
        {"model_path": "/other"}, {"device": "cpu"}, {"remote": "http://x"}, {"remote_canvas": "seeded"},
        {"engine": "torch"}, {"gguf_path": "/g"}, {"llamacpp_worker": "/w"}, {"llamacpp_threads": 2},
        {"llamacpp_gpu_layers": 1},
    ):  # fmt: skip
        assert needs_reload(Settings(), Settings(**change)), change
    for change in ({"max_tokens": 8}, {"steps": 3}, {"context_drafts": "off"}, {"languages": ("python",)}):
        assert not needs_reload(Settings(), Settings(**change)), change


def test_an_unknown_setting_names_the_nearest_known_ones():
    # Issue 52: `maxToken` printed the list of all 30 keys, twice, and no "did you mean".
    _, problems = parse_settings({"maxToken": 16, "nextedit": "off", "zzz": 1}, Settings())
    assert problems[0] == "unknown setting 'maxToken': did you mean maxTokens or minTokenProb?"
    assert problems[1] == "unknown setting 'nextedit': did you mean nextEdit?"
    assert "maxTokens" not in problems[2] and "README" in problems[2]


def test_a_renamed_setting_is_still_read_and_the_new_name_wins():
    """Issue 48: ``drafts`` (the partly denoised text of an edit) is now ``previews``; users'
    configs that say ``drafts`` keep working."""
    old, problems = parse_settings({"drafts": True}, Settings())
    assert old.previews and problems == []
    both, _ = parse_settings({"drafts": True, "previews": False}, Settings())
    assert not both.previews
