"""Settings a workspace chose: refused where they name a program, a model, a log or a server.

A cloned repository carries editor settings: VS Code's ``.vscode/settings.json``, neoconf.nvim's
``.neoconf.json``, coc.nvim's ``.vim/coc-settings.json``.  Some clients push them to the server
as if the user had set them (neoconf and coc, without asking); VS Code asks first, in the
extension's approval modal, for the keys it lists (editors/vscode/src/settings.ts).  A setting
that names a program to run, a model to load, a file to write or a server to send code to
(config.DESTINATION_KEYS) is refused here when a workspace settings file of a folder sets that
key to that very value: the layer below stands, and the user is told why (issue 62: a
repository's ``projectPython`` ran a script of its own, with the user's API key in its
environment).  A defense behind the clients' own, not instead of it.

A value the user approved still arrives: beside the settings the client sends ``userApproved``
(config.APPROVED), the ``{key: value}`` pairs the user chose (the VS Code extension sends the
destination values it sends: the user's own, or a workspace's the user allowed in its modal).  A
workspace file could write that key too, so approvals count only when no workspace settings file
names it.

The files are read whole but bounded (``MAX_FILE_BYTES``; a larger one is taken to set every
key), only when they are regular files (a FIFO or a device in their place is skipped, never
waited on), and scanned for ``"key": "string"`` pairs at any depth, comments and bad JSON
tolerated: a client's lenient parser must not read a pair that this scan misses.  Settings
arrive a few times a session and the files are small, so the read runs where the settings
arrive, on the event loop.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from difill.server.config import APPROVED, DESTINATION_KEYS, Screen

# Where editors keep a folder's settings, and what each is called in a message.
SETTINGS_FILES = (".vscode/settings.json", ".neoconf.json", ".vim/coc-settings.json")
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_FOLDERS = 64  # folders whose files are read; more is no editor's workspace
# A JSON string, a comment (// or /* */, unclosed to the end) or punctuation; the rest (numbers,
# true, false, null, stray text) is skipped.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?(?:\*/|\Z)|[:{}\[\],]', re.S)
EVERY_KEY = "*"  # a file too large to scan: taken to set every key


@dataclass
class WorkspaceValues:
    """The ``"key": "string"`` pairs the workspace settings files set, by key's last dotted part."""

    values: dict[str, dict[str, str]] = field(default_factory=dict)  # key -> value -> the file
    keys: set[str] = field(default_factory=set)  # every key named, whatever its value

    def file_setting(self, key: str, value: Any) -> str | None:
        """The workspace file that sets ``key`` to ``value``, if one does."""
        if EVERY_KEY in self.values:
            return next(iter(self.values[EVERY_KEY].values()))
        if not isinstance(value, str):
            return None
        return self.values.get(key, {}).get(value.strip())

    def add(self, key: str, value: str, where: str) -> None:
        self.values.setdefault(key.rsplit(".", 1)[-1], {}).setdefault(value.strip(), where)


def read_workspace_values(folders: list[str]) -> WorkspaceValues:
    found = WorkspaceValues()
    for folder in folders[:MAX_FOLDERS]:
        for name in SETTINGS_FILES:
            path = os.path.join(folder, *name.split("/"))
            data = _read_bounded(path)
            if data is None:
                continue
            where = f"the workspace's {name}" if len(folders) == 1 else path
            if len(data) > MAX_FILE_BYTES:
                found.add(EVERY_KEY, "", where)
                continue
            for key, value in string_pairs(data.decode("utf-8", "replace")):
                found.keys.add(key.rsplit(".", 1)[-1])
                if isinstance(value, str):
                    found.add(key, value, where)
    return found


def string_pairs(text: str) -> list[tuple[str, str | None]]:
    """Every ``"key": value`` in ``text`` (JSON with comments, maybe broken): the value when it
    is a string, else None."""
    tokens = [t for t in _TOKEN.findall(text) if not t.startswith("/")]
    pairs: list[tuple[str, str | None]] = []
    for i in range(len(tokens) - 1):
        key = _string(tokens[i]) if tokens[i + 1] == ":" else None
        if key is not None:
            pairs.append((key, _string(tokens[i + 2]) if i + 2 < len(tokens) else None))
    return pairs


def _string(token: str) -> str | None:
    if not token.startswith('"'):
        return None
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _read_bounded(path: str) -> bytes | None:
    """The bytes of a regular file, at most one past ``MAX_FILE_BYTES``; None when absent,
    unreadable or not a regular file (opened without blocking: a FIFO there waits for no one)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def screen(folders: Callable[[], list[str]]) -> Screen:
    """The ``SettingsLayers.screen`` of a server whose workspace folders ``folders`` gives."""

    def screened(section: dict[str, Any], approved: Any) -> tuple[dict[str, Any], list[str]]:
        if not any(key in section for key in DESTINATION_KEYS):
            return section, []  # nothing to check: no file is read
        return refuse_workspace_values(section, approved, read_workspace_values(folders()))

    return screened


def refuse_workspace_values(
    section: dict[str, Any], approved: Any, found: WorkspaceValues
) -> tuple[dict[str, Any], list[str]]:
    """``section`` without the destination values a workspace file sets that the user did not
    approve, and a sentence for each one refused."""
    if APPROVED in found.keys:  # a workspace cannot approve for the user
        approved = None
    approved = approved if isinstance(approved, dict) else {}
    kept, refused = dict(section), []
    for key, what in DESTINATION_KEYS.items():
        value = section.get(key)
        where = found.file_setting(key, value) if value is not None else None
        if where is None or _approved(approved, key, value):
            continue
        del kept[key]
        refused.append(
            f"{key} is set by {where}; difill does not {what} a workspace names: set it in your user settings"
        )
    return kept, refused


def _approved(approved: dict[str, Any], key: str, value: Any) -> bool:
    theirs = approved.get(key)
    return isinstance(theirs, str) and isinstance(value, str) and theirs.strip() == value.strip()
