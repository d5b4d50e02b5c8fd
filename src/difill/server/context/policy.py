"""The secrets policy: which files difill never reads, indexes, offers or sends, and the redaction
of key-shaped text in every snippet put into a prompt.

One policy, applied where text enters the context (issue 37):

* ``DENIED``: secret files by name, built in (SSH and cloud keys, key stores, ``.env`` files
  except the ``.example`` / ``.sample`` / ``.template`` ones, credential files of common tools,
  shell histories), extended by the ``contextExclude`` setting (gitignore syntax).  The workspace
  index never opens them (files.py lists, then reads), an open document matching them is never a
  source for another document, and in such a document difill suggests nothing, so that its
  text never goes to a remote.
* the git ignore stack (files.py): every ``.gitignore`` in the folder and above it up to the
  repository root, ``.git/info/exclude`` and the global excludes file.
* ``redact``: known key shapes (private key blocks, AWS, GitHub, Slack, OpenAI, Google, Stripe
  keys, JWTs, ``password = "..."`` assignments, the password of a URL) and long high-entropy
  tokens, replaced by ``REDACTED`` in the text from other files that goes to a model, whatever the
  backend: ``to_model`` redacts the snippet block and every draft that seeds the canvas, for
  suggestions (model_request.py ``suggestion_options``) and next edits (next_edit/model.py ``region_rewrite``).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from difill.engine.api import FillOptions
from difill.server.context.ignore import RuleSet, decide, parse

# gitignore syntax; a pattern without "/" matches at any depth, "**/" makes one with "/" do so.
DENIED_PATTERNS = (
    # environment files: every variant but the documented templates
    ".env", ".env.*", "*.env", ".envrc",
    "!.env.example", "!.env.*.example", "!.env.sample", "!.env.*.sample",
    "!.env.template", "!.env.*.template",
    # SSH, GPG and cloud credentials
    ".ssh/", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
    ".gnupg/", ".aws/", ".azure/", "**/.config/gcloud/", "**/.config/gh/", ".kube/config",
    ".docker/config.json", "credentials.json", "service-account*.json",
    # keys and key stores
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.ppk", "*.kdbx",
    # tools' credential files
    ".netrc", "_netrc", ".git-credentials", ".npmrc", ".yarnrc.yml", ".pypirc", ".pgpass",
    ".my.cnf", ".htpasswd", ".vault-token", "*.tfstate", "*.tfstate.backup",
    # shell and REPL histories: what was typed at a prompt, passwords included
    ".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
    ".node_repl_history",
)  # fmt: skip

# Names editors and tools give the copies they keep: ``name~``, ``#name#``, ``.name.swp``,
# ``name.bak``.  A copy of a denied name is denied (``.env~``, ``id_ed25519.bak``).
SWAP_SUFFIXES = (".swp", ".swo", ".swn")
BACKUP_SUFFIXES = (".bak", ".backup", ".orig", ".old", ".save", ".tmp", ".rej", ".copy", *SWAP_SUFFIXES)

REDACTED = "<redacted>"
# Known key shapes.  Each is bounded (no nested repetition): linear on any text.
KEY_SHAPES = re.compile(
    r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,8192}?(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|$)"
    r"|\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\bgh[pousr]_[A-Za-z0-9]{30,255}\b|\bgithub_pat_[A-Za-z0-9_]{30,255}\b"  # GitHub tokens
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,255}"  # Slack
    r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,255}"  # OpenAI, Anthropic
    r"|\bAIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,255}"  # Stripe
    r"|\beyJ[A-Za-z0-9_-]{8,2048}\.eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,2048}"  # JWT
)
# name = "value" where the name says secret: the value goes, the name stays.
SECRET_ASSIGNMENT = re.compile(
    r"(?i)((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth)"
    r"\w{0,32}[\"']?[ \t]{0,8}[:=][ \t]{0,8})([\"'])([^\"'\n]{8,512})\2"
)
# The password of a URL's userinfo (``postgresql://app:PASSWORD@db/app``): the password goes, the
# scheme, user and host stay.  Bounded parts: linear on any text.
URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/@]{0,128}:)([^\s@/]{1,256})@")
# A token that may be random: letters and digits (and + / _ - =), 24 characters or more.
TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{24,1024}")
MIN_ENTROPY_BITS = 4.0  # per character; English words and identifiers stay below about 3.5
HEX_DIGITS = frozenset("0123456789abcdef")
MIN_HEX_CHARS = 32  # a hex token this long (128 bits) with letters and digits: a key or a hash
MIN_HEX_ENTROPY_BITS = 3.0


def denied_rules(extra: Sequence[str] = ()) -> RuleSet:
    """The deny list, built in plus ``extra`` (the contextExclude setting's globs), as one rule set."""
    return RuleSet(parse("\n".join((*DENIED_PATTERNS, *extra))))


class ContextPolicy:
    """Whether a path may enter the context: not on the deny list (``denied_rules``)."""

    def __init__(self, exclude: Sequence[str] = ()) -> None:
        self.exclude = tuple(exclude)  # the ``contextExclude`` patterns it was made with
        self.rules = denied_rules(exclude)
        # A directory's answer, kept: every file below asks it again (each read asks about a file
        # as named and as its target, files.py ``denied``), and a decision walks every rule.
        self._directories: dict[str, bool] = {}

    def denies(self, relative: str, is_dir: bool = False) -> bool:
        """``relative``: '/'-separated, from the workspace folder (or an absolute path's parts).
        A path is denied when it or any directory above it is, or when its name is a backup or
        editor copy of a denied name (``.env~``, ``id_ed25519.bak``, ``.netrc.swp``)."""
        parts = [part for part in relative.split("/") if part]
        if not is_dir and parts:
            for original in original_names(parts[-1]):
                if self._denies_parts([*parts[:-1], original], False):
                    return True
        return self._denies_parts(parts, is_dir)

    def _denies_parts(self, parts: list[str], is_dir: bool) -> bool:
        for depth in range(1, len(parts) + 1):
            below = "/".join(parts[:depth])
            if is_dir or depth < len(parts):
                if self._denies_directory(below):
                    return True
            elif decide((self.rules,), below, False) is True:
                return True
        return False

    def _denies_directory(self, below: str) -> bool:
        found = self._directories.get(below)
        if found is None:
            if len(self._directories) >= CACHED_DIRECTORIES:
                self._directories.clear()
            found = self._directories[below] = decide((self.rules,), below, True) is True
        return found

    def denies_under(self, root: str, relative: str, is_dir: bool = False) -> bool:
        """A path below the folder ``root``, read both ways: from the folder, and as what it is on
        disk (below the folder's own last folders, and from the home folder).  A folder that is
        itself a credential folder (``~/.aws``, ``~/.config`` holding ``gh/``) then denies what it
        holds."""
        if self.denies(relative, is_dir):
            return True
        above = folders_above(root)
        return bool(above) and any(self.denies(f"{folders}/{relative}", is_dir) for folders in above)

    def denies_path(self, path: str, folders: Sequence[str]) -> bool:
        """An absolute path: relative to the workspace folder holding it, and as what it is on disk."""
        path = os.path.normpath(path)
        for folder in folders:
            folder = os.path.normpath(folder)
            if path.startswith(folder.rstrip(os.sep) + os.sep):
                return self.denies_under(folder, os.path.relpath(path, folder).replace(os.sep, "/"))
        return self.denies(path.replace(os.sep, "/")) or any(
            self.denies(f"{above}/{os.path.basename(path)}") for above in folders_above(os.path.dirname(path))
        )


CACHED_DIRECTORIES = 65536  # directory answers kept per policy (``_denies_directory``)
# How many of a folder's own folders are read above a path in it: the deny list's longest
# pattern over folders is ".config/gcloud/", two deep.
FOLDERS_ABOVE = 2


@functools.lru_cache(maxsize=64)
def folders_above(root: str) -> tuple[str, ...]:
    """A workspace folder as the deny list reads what it holds: its last ``FOLDERS_ABOVE`` folders
    (``u/.config``, ``u/.aws``), and its path from the home folder when it is inside it (the
    anchored ``.kube/config`` matches from there).  Empty, and so free for the index to ask per
    file, unless one of those folders is hidden: every credential folder on the built-in list is
    (``.aws``, ``.ssh``, ``.config/gh``, ``.kube``...).  Computed once per folder."""
    root = os.path.normpath(root)
    parts = [part for part in root.split(os.sep) if part][-FOLDERS_ABOVE:]
    if not any(part.startswith(".") for part in parts):
        return ()
    found = ["/".join(parts)]
    home = os.path.normpath(os.path.expanduser("~"))
    if home not in ("~", os.sep) and root.startswith(home.rstrip(os.sep) + os.sep):
        found.append(os.path.relpath(root, home).replace(os.sep, "/"))
    return tuple(dict.fromkeys(found))


def original_names(name: str) -> set[str]:
    """The names a backup or editor copy may have been made from (empty when ``name`` is none)."""
    found: set[str] = set()
    layer = {name}
    for _ in range(4):  # ".env.bak~" and the like: a few layers, never a loop
        layer = {o for n in layer for o in _one_layer(n)} - found - {name}
        if not layer:
            break
        found |= layer
    return found


def _one_layer(name: str) -> set[str]:
    if name.startswith("#") and name.endswith("#") and len(name) > 2:  # Emacs' auto-save
        return {name[1:-1]}
    if name.endswith("~") and name.rstrip("~"):
        return {name.rstrip("~")}
    for suffix in BACKUP_SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            stem = name[: -len(suffix)]
            if suffix in SWAP_SUFFIXES and stem.startswith(".") and len(stem) > 1:
                return {stem, stem[1:]}  # vim's swap file of "id_rsa" is ".id_rsa.swp", of ".env" ".env.swp"
            return {stem}
    return set()


def to_model(options: FillOptions) -> FillOptions:
    """``options`` as they may leave for a model, local or remote: the one place where the text
    of other files and tabs a request carries (the snippet block, the drafts that seed canvas
    rows) is redacted.  The document's own prefix and suffix are the user's and are sent as
    they are; a document on the deny list sends nothing at all (``ContextPolicy``)."""
    return replace(
        options,
        context_block=redact(options.context_block),
        drafts=tuple(redact(draft) for draft in options.drafts),
    )


def redact(text: str) -> str:
    """``text`` with every key-shaped and high-entropy token replaced by REDACTED."""
    text = KEY_SHAPES.sub(REDACTED, text)
    text = URL_PASSWORD.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    text = SECRET_ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}{m.group(2)}", text)
    return TOKEN.sub(lambda m: REDACTED if _random_looking(m.group()) else m.group(), text)


def _random_looking(token: str) -> bool:
    """Mixed letters and digits with a high Shannon entropy: a key, not a word or a path."""
    if not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
        return False
    if not (any(c.isupper() for c in token) or sum(c.isdigit() for c in token) >= 6):
        return False  # snake_case names with a digit or two (test_case_2_of_3_passes) are code
    counts = Counter(token)
    entropy = -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
    if len(token) >= MIN_HEX_CHARS and set(token.lower()) <= HEX_DIGITS:
        # 16 symbols give at most 4 bits a character: a random hex key (an API token, a hash used
        # as a secret) stays under MIN_ENTROPY_BITS.  lab/scripts/secrets_compare.py measured it.
        return entropy >= MIN_HEX_ENTROPY_BITS
    return entropy >= MIN_ENTROPY_BITS
