"""Settings: camelCase JSON -> Settings, problems as sentences, and the three layers."""

from __future__ import annotations

from difill.server.config import Settings, SettingsLayers, parse_settings, section_of


def test_valid_settings_are_taken():
    settings, problems = parse_settings(
        {"modelPath": "/m", "device": "cpu", "maxTokens": 48, "steps": 8, "candidates": 2,
         "languages": ["python"], "contextTokens": 512, "drafts": True, "holeMarker": "??", "debounceMs": 30,
         "minTokenProb": 0.25},
        Settings(),
    )  # fmt: skip
    assert problems == []
    assert settings == Settings(
        model_path="/m", device="cpu", max_tokens=48, steps=8, candidates=2, languages=("python",),
        context_tokens=512, drafts=True, hole_marker="??", debounce_ms=30, min_token_prob=0.25,
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
    from difill.server.config import RELOAD_FIELDS

    assert Settings().remote_canvas == "auto" and "remote_canvas" in RELOAD_FIELDS
    assert parse_settings({"remoteCanvas": "seeded"}, Settings())[0].remote_canvas == "seeded"
    settings, problems = parse_settings({"remoteCanvas": "always"}, Settings(remote_canvas="plain"))
    assert settings.remote_canvas == "plain" and "auto, seeded, plain" in problems[0]
