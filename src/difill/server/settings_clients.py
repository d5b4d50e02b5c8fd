"""The clients' lists of settings, written from server/config.py's ``Settings`` (issue 65 item 6).

One list per setting: its key, kind, default and description live in config.py alone, and these
are written from it:

* editors/vscode/package.json: ``contributes.configuration`` (the server's keys; the client's own
  ``difill.server.*`` stay as they are) and ``restrictedConfigurations``;
* editors/vscode/src/settings.ts: ``SERVER_SETTING_KEYS``, ``PATH_KEYS``, ``DESTINATION_KEYS``;
* editors/neovim/lua/difill/config.lua: the ``difill.ServerSettings`` fields;
* README.md: the Settings table.

``python -m difill.server.settings_clients`` says which of them differ (exit 1), ``--write``
writes them; tests/editors/test_settings_lists.py fails while any differs.  Text files are
rewritten only between their ``generated`` markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from difill.server.config import DESTINATION_KEYS, KEYS, Settings, kind_of
from difill.server.setting_kinds import DirectoryPath, HttpUrl

COMMAND = "python -m difill.server.settings_clients --write"
PACKAGE_JSON = Path("editors/vscode/package.json")
SETTINGS_TS = Path("editors/vscode/src/settings.ts")
CONFIG_LUA = Path("editors/neovim/lua/difill/config.lua")
README = Path("README.md")
CLIENT_ONLY = "difill.server."  # the VS Code client's own settings (how to start the server)


# ---- what each setting is, as the clients say it ----


def _default(spec: dataclasses.Field) -> Any:
    """The default as JSON: a tuple as a list; a path's or URL's None as "" (the clients' "not set")."""
    value = getattr(Settings(), spec.name)
    if isinstance(value, tuple):
        return list(value)
    if value is None and kind_of(spec).schema()["type"] == "string":
        return ""
    return value


def vscode_property(spec: dataclasses.Field) -> dict[str, Any]:
    """The package.json ``contributes.configuration`` entry of one setting."""
    entry = dict(kind_of(spec).schema())
    entry["default"] = _default(spec)
    entry["markdownDescription"] = spec.metadata["doc"]
    if "scope" in spec.metadata:
        entry["scope"] = spec.metadata["scope"]
    return entry


def lua_type(spec: dataclasses.Field) -> str:
    schema = kind_of(spec).schema()
    if "enum" in schema:
        return "|".join(f'"{value}"' for value in schema["enum"])
    kind = schema["type"]
    if kind == "array":
        return "string[]"
    return "number" if isinstance(kind, list) else str(kind)


def first_sentence(doc: str) -> str:
    """The doc up to its first full stop (a Lua annotation is one line)."""
    match = re.search(r"\.(\s|$)", doc)
    return doc[: match.start() + 1] if match else doc


def shown_default(spec: dataclasses.Field) -> str:
    """The README's default column: the words a field gives, else its value."""
    if "shown_default" in spec.metadata:
        return spec.metadata["shown_default"]
    value = getattr(Settings(), spec.name)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"`{value}`"
    return "[]" if value == () else str(value)


def names_a_path(spec: dataclasses.Field) -> bool:
    """A path or URL setting (FilePath is a DirectoryPath): empty means the server's default."""
    return isinstance(kind_of(spec), DirectoryPath | HttpUrl)


# ---- each file ----


def package_json(text: str) -> str:
    manifest = json.loads(text)
    config = manifest["contributes"]["configuration"]
    own = {key: value for key, value in config["properties"].items() if key.startswith(CLIENT_ONLY)}
    config["properties"] = own | {f"difill.{key}": vscode_property(spec) for key, spec in KEYS.items()}
    untrusted = manifest["capabilities"]["untrustedWorkspaces"]
    restricted = [f"difill.{key}" for key in DESTINATION_KEYS]
    untrusted["restrictedConfigurations"] = restricted
    untrusted["description"] = (
        f"In an untrusted workspace difill ignores the workspace's {_and(restricted)}: a cloned repository "
        "must not choose where your code is sent, which files are loaded as a model, which program runs "
        "or which file is written."
    )
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def settings_ts(text: str) -> str:
    def array(name: str, keys: list[str], doc: str) -> str:
        listed = "".join(f'  "{key}",\n' for key in keys)
        return f"/** {doc} */\nexport const {name} = [\n{listed}] as const;\n"

    block = (
        array("SERVER_SETTING_KEYS", list(KEYS), "The server's settings (server/config.py), by their camelCase keys.")
        + array(
            "PATH_KEYS", [k for k, spec in KEYS.items() if names_a_path(spec)],
            "Paths and URLs whose empty value means the server's default.",
        )  # fmt: skip
        + array(
            "DESTINATION_KEYS", list(DESTINATION_KEYS),
            "Settings that choose where code goes, which files load as a model, which program runs or which\n"
            " *  file the server writes: a workspace (a cloned repository's .vscode/settings.json) may not set\n"
            " *  them behind the user's back. The server's config.DESTINATION_KEYS, and package.json's\n"
            " *  restrictedConfigurations.",
        )  # fmt: skip
    )
    return _between(text, "// ", block, SETTINGS_TS)


def config_lua(text: str) -> str:
    lines = [f"---@field {key}? {lua_type(spec)}  {first_sentence(spec.metadata['doc'])}" for key, spec in KEYS.items()]
    return _between(text, "--- ", "\n".join(lines) + "\n", CONFIG_LUA)


def readme(text: str) -> str:
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key, spec in KEYS.items():
        cells = (f"`{key}`", shown_default(spec), spec.metadata["doc"])
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")  # GFM: \| in a cell
    return _between(text, "<!-- ", "\n".join(rows) + "\n", README, close=" -->")


def _between(text: str, comment: str, block: str, path: Path, close: str = "") -> str:
    """``text`` with the lines between its begin and end markers replaced by ``block``."""
    begin = f"{comment}generated from src/difill/server/config.py by `{COMMAND}`: begin{close}\n"
    end = f"{comment}generated: end{close}\n"
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ValueError(f"{path} must hold the lines {begin.strip()!r} and {end.strip()!r} once each")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return head + begin + block + end + tail


def _and(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


WRITERS: dict[Path, Callable[[str], str]] = {
    PACKAGE_JSON: package_json, SETTINGS_TS: settings_ts, CONFIG_LUA: config_lua, README: readme,
}  # fmt: skip


def stale(root: Path) -> list[Path]:
    """The files under ``root`` that differ from what config.py says."""
    return [path for path, write in WRITERS.items() if write(text := (root / path).read_text()) != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--write", action="store_true", help="write the files that differ")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository (default: here)")
    args = parser.parse_args(argv)
    differ = stale(args.root)
    for path in differ:
        if args.write:
            (args.root / path).write_text(WRITERS[path]((args.root / path).read_text()))
        print(f"{'wrote' if args.write else 'differs from server/config.py:'} {path}")
    return 0 if args.write or not differ else 1


if __name__ == "__main__":
    sys.exit(main())
