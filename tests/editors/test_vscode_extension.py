"""The VS Code extension (editors/vscode): its Node unit tests, and its settings checked against
the server's. `npm ci` is CI's job (editors/vscode/build.sh); without node_modules the npm
tests skip rather than reach for the network."""

from __future__ import annotations

import json
import re
from pathlib import Path

from difill.server import config

EXT = Path(__file__).resolve().parents[2] / "editors" / "vscode"
MANIFEST = json.loads((EXT / "package.json").read_text())
PROPERTIES = MANIFEST["contributes"]["configuration"]["properties"]
CLIENT_ONLY = {"difill.server.command", "difill.server.pythonPath", "difill.server.args"}


def test_contributed_settings_are_exactly_the_servers():
    server_keys = {f"difill.{key}" for key in config.KEYS}
    assert set(PROPERTIES) - CLIENT_ONLY == server_keys


def test_the_extension_sends_every_server_setting():
    """settings.ts lists the keys it sends: a setting missing there never reaches the server
    (projectPython was, when first added)."""
    listed = (EXT / "src" / "settings.ts").read_text().split("SERVER_SETTING_KEYS = [", 1)[1].split("]", 1)[0]
    assert set(re.findall(r'"(\w+)"', listed)) == set(config.KEYS)


def test_contributed_defaults_match_the_servers():
    defaults = config.Settings()
    for key, spec in config.KEYS.items():
        ours = PROPERTIES[f"difill.{key}"]["default"]
        theirs = getattr(defaults, spec.name)
        if isinstance(theirs, tuple):
            theirs = list(theirs)
        if theirs is None and PROPERTIES[f"difill.{key}"]["type"] == "string":
            theirs = ""  # modelPath, remote: an empty string means the server's default
        assert ours == theirs, f"difill.{key}: package.json says {ours!r}, the server {theirs!r}"


def test_contributed_bounds_and_choices_match_the_servers_kinds():
    """VS Code checks what the user types against package.json: the same bounds and choices as the
    server's kinds, so the editor never accepts a value the server then refuses."""
    for key, spec in config.KEYS.items():
        ours = PROPERTIES[f"difill.{key}"]
        kind = config.kind_of(spec)
        if isinstance(kind, config.BoundedInt | config.Probability):
            low, high = (kind.low, kind.high) if isinstance(kind, config.BoundedInt) else (0, 1)
            assert (ours.get("minimum"), ours.get("maximum")) == (low, high), f"difill.{key}"
        if isinstance(kind, config.Choice):
            assert tuple(ours.get("enum", ())) == kind.values, f"difill.{key}"


def test_the_extension_attaches_to_every_language_the_server_has_a_grammar_for():
    """The client's documentSelector filters by scheme only: every file of every language
    (text/languages.py) reaches the server, which decides what it serves."""
    import re

    source = (EXT / "src" / "extension.ts").read_text()
    selector = re.search(r"documentSelector: \[(.*?)\],", source, re.S)
    assert selector is not None
    entries = re.findall(r"\{([^}]*)\}", selector.group(1))
    assert {e.strip() for e in entries} == {'scheme: "file"', 'scheme: "untitled"'}
    assert "language" not in selector.group(1) and "pattern" not in selector.group(1)


def test_the_settings_a_workspace_may_not_set_are_one_list_everywhere():
    """Issue 62: every setting that names a program, a model, a log file or a server is the
    server's config.DESTINATION_KEYS, the extension's approval modal's DESTINATION_KEYS and
    package.json's restrictedConfigurations, and no workspace sets it without the user's say."""
    listed = (EXT / "src" / "settings.ts").read_text().split("DESTINATION_KEYS = [", 1)[1].split("]", 1)[0]
    assert set(re.findall(r'"(\w+)"', listed)) == set(config.DESTINATION_KEYS)
    restricted = MANIFEST["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    assert set(restricted) == {f"difill.{key}" for key in config.DESTINATION_KEYS}
    for key in config.DESTINATION_KEYS:
        assert PROPERTIES[f"difill.{key}"]["scope"] in ("machine", "machine-overridable"), key
    file_kinds = (config.FilePath, config.DirectoryPath, config.HttpUrl)
    names_something = {
        key for key, spec in config.KEYS.items() if isinstance(config.kind_of(spec), file_kinds)
    }
    assert names_something == set(config.DESTINATION_KEYS)  # a new path or URL setting is one too
    # settings.ts's PATH_KEYS (an empty value: the server's default) are the same settings.
    paths = (EXT / "src" / "settings.ts").read_text().split("PATH_KEYS = [", 1)[1].split("]", 1)[0]
    assert set(re.findall(r'"(\w+)"', paths)) == names_something
