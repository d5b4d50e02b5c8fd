"""Which files of a workspace folder the index reads, and the one read of a user file.

Everything that touches the disk for a user's file is here, so that the rules are in one place
(issue 62, "every read resolves the real path first"): the index, a resolver's configuration
(tsconfig.json) and jedi's reads (the server answers its process's ``read?`` with ``readable``)
all go through ``readable`` and ``read_bytes``:

* the real path is resolved first, and it must lie inside a workspace folder (a symlink out of the
  folders reads nothing);
* the secrets policy is asked about the path as named *and* the real target: an innocent name
  that links to ``.env``, or into a ``contextExclude`` folder, is denied as its target is;
* only a regular file is opened, without following a link put there meanwhile and without
  waiting (a FIFO or ``/dev/stdin`` would block the reader forever), and at most a bound of bytes.

Symlinked directories are never entered by the listing (no loops, no escape), and a symlinked
file is listed only when its target would be (``walk``).  tests/test_one_read.py walks the
server's sources: no other function opens a file, but the few let off there (each with its reason).
"""

from __future__ import annotations

import functools
import os
import stat
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from difill.server.context import ignore
from difill.server.context.ignore import RuleSet
from difill.server.context.policy import ContextPolicy

# Directories never indexed: version control, virtual environments, dependencies, build output.
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "node_modules", "__pycache__",
    "build", "dist", "target", "out", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".idea", ".vscode", ".eggs", "site-packages",
})  # fmt: skip
# Files that are binary by name: not even opened.
BINARY_SUFFIXES = (
    ".pyc", ".pyo", ".so", ".dylib", ".dll", ".exe", ".o", ".a", ".lib", ".bin", ".dat", ".db",
    ".sqlite", ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".pdf", ".zip", ".gz",
    ".bz2", ".xz", ".zst", ".tar", ".whl", ".jar", ".class", ".woff", ".woff2", ".ttf", ".otf",
    ".mp3", ".mp4", ".wav", ".ogg", ".safetensors", ".pt", ".pth", ".npy", ".npz", ".pkl", ".lock",
)  # fmt: skip
SNIFF_BYTES = 8192  # a NUL in the first 8 KiB: binary (what git and grep do)
MAX_IGNORE_BYTES = 256 * 1024
MAX_REPOSITORY_DEPTH = 64  # directories climbed looking for the repository's .git
MAX_LINE_CHARS = 2000  # a longer line: minified or generated, useless as a snippet and slow to scan


@dataclass(frozen=True)
class Listed:
    path: str  # absolute, inside ``root`` (symlinks not resolved)
    relative: str  # '/'-separated, relative to the folder: how snippets name it


def inside(path: str, root: str) -> bool:
    """Whether ``path`` (absolute, normalised) is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def list_dir(path: str) -> list[os.DirEntry]:
    """The entries of one directory, sorted by name (a stable order: the same caps keep the same
    files).  Empty when it cannot be listed (removed meanwhile, no permission, not a directory)."""
    try:
        with os.scandir(path) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError:
        return []


def _ignore_rules(directory: str, root: str, base: str = "", prepend: str = "") -> RuleSet | None:
    """The rules of ``directory``/.gitignore; None when it has none (or it cannot be read)."""
    text = read_text(os.path.join(directory, ".gitignore"), root, MAX_IGNORE_BYTES)
    rules = ignore.parse(text) if text else ()
    return ignore.RuleSet(rules, base, prepend) if rules else None


def git_rules(root: str) -> tuple[RuleSet, ...]:
    """The ignore rules that apply to the folder ``root`` from outside it, lowest precedence
    first: the global excludes file, the repository's ``info/exclude``, then the ``.gitignore``
    of each directory from the repository root down to ``root``'s parent.  Empty outside a git
    repository (git applies none of them there)."""
    root = os.path.realpath(root)
    repository, git_dir = _repository_of(root)
    if repository is None:
        return ()
    prepend = "" if repository == root else os.path.relpath(root, repository).replace(os.sep, "/") + "/"
    rule_sets: list[RuleSet] = []
    for source in (_global_excludes(), os.path.join(git_dir, "info", "exclude") if git_dir else None):
        text = _read_config(source) if source else None
        rules = ignore.parse(text) if text else ()
        if rules:
            rule_sets.append(ignore.RuleSet(rules, "", prepend))
    directory = repository
    while directory != root:
        below = os.path.relpath(root, directory).replace(os.sep, "/") + "/"
        rules_here = _ignore_rules(directory, directory, "", below)
        if rules_here is not None:
            rule_sets.append(rules_here)
        directory = os.path.join(directory, below.split("/")[0])
    return tuple(rule_sets)


def _repository_of(root: str) -> tuple[str | None, str | None]:
    """(the work tree's top, its git directory) for a folder at or below it; (None, None) when
    there is none.  A ``.git`` file (a worktree, a submodule) names its git directory."""
    directory = root
    for _ in range(MAX_REPOSITORY_DEPTH):
        dot_git = os.path.join(directory, ".git")
        try:
            info = os.lstat(dot_git)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            return directory, dot_git
        if info is not None and stat.S_ISREG(info.st_mode):
            text = _read_config(dot_git) or ""
            target = text.strip().removeprefix("gitdir:").strip() if text.startswith("gitdir:") else ""
            git_dir = os.path.normpath(os.path.join(directory, target)) if target else None
            return directory, git_dir
        parent = os.path.dirname(directory)
        if parent == directory:
            return None, None
        directory = parent
    return None, None


def _global_excludes() -> str | None:
    """git's core.excludesFile, else $XDG_CONFIG_HOME/git/ignore (what git reads by default)."""
    home = os.path.expanduser("~")
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    for config in (os.path.join(config_home, "git", "config"), os.path.join(home, ".gitconfig")):
        named = _excludes_file_setting(_read_config(config) or "")
        if named:
            return os.path.expanduser(named)
    return os.path.join(config_home, "git", "ignore")


def _excludes_file_setting(config: str) -> str | None:
    section = ""
    found = None
    for line in config.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
        elif section == "core" and "=" in line:
            key, _, value = line.partition("=")
            if key.strip().lower() == "excludesfile":
                found = value.strip().strip('"')
    return found


def _read_config(path: str) -> str | None:
    """A small configuration file outside the workspace (git's): a regular file only."""
    data = read_regular(path, MAX_IGNORE_BYTES)
    return None if data is None else data.decode("utf-8", errors="replace")


def walk(root: str, policy: ContextPolicy | None = None, below: str = "") -> Iterator[Listed]:
    """The candidate files under ``root`` (or only under its folder-relative directory
    ``below``), breadth first (a capped index keeps the files nearest the top), honouring the git
    ignore stack (``git_rules``, then every .gitignore on the way, each relative to its own
    directory) and the secrets policy (policy.py).  Nothing that is not a directory, a regular
    file or a symlink is listed: a FIFO or a device is never opened."""
    root = os.path.realpath(root)
    policy = policy or ContextPolicy()
    parts = [part for part in below.split("/") if part]
    if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts):
        return
    if parts and policy.denies_under(root, "/".join(parts), True):
        return
    rules = _rules_down_to(root, parts)
    if rules is None:
        return
    # (directory, its path relative to root, the ignore rules that apply there)
    queue: deque[tuple[str, str, tuple[RuleSet, ...]]] = deque(
        [(os.path.join(root, *parts), "/".join(parts), rules)]
    )
    while queue:
        directory, relative_dir, rules = queue.popleft()
        here = _ignore_rules(directory, root, relative_dir)
        if here is not None:
            rules = (*rules, here)
        for entry in list_dir(directory):
            relative = f"{relative_dir}/{entry.name}" if relative_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                is_file = is_link or entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.name in SKIPPED_DIRS or entry.name.endswith(".egg-info"):
                    continue
                if not ignore.ignored(rules, relative, True) and not policy.denies_under(
                    root, relative, True
                ):
                    queue.append((entry.path, relative, rules))
                continue
            if not is_file or entry.name.endswith(BINARY_SUFFIXES):
                continue
            if ignore.ignored(rules, relative, False) or policy.denies_under(root, relative):
                continue
            if is_link and not _target_listed(root, entry.path, policy):
                continue  # read by its target: a link to an ignored or denied file is that file
            yield Listed(entry.path, relative)


def denied(path: str, folders: Sequence[str], policy: ContextPolicy) -> bool:
    """Whether the secrets policy denies ``path`` as named, or as what it is on disk: a symlink's
    real target (``deploy/env_file -> ../.env`` is a .env; ``app/local.py -> ../private/x.py``
    is in an excluded ``private/``).  Outside every folder a path is read by its own name."""
    return _denied(path, os.path.realpath(path), folders, policy)


def _denied(path: str, real: str, folders: Sequence[str], policy: ContextPolicy) -> bool:
    if policy.denies_path(path, folders):
        return True
    return real != os.path.abspath(path) and policy.denies_path(real, [os.path.realpath(f) for f in folders])


def readable(path: str, folders: Sequence[str], policy: ContextPolicy | None = None) -> str | None:
    """The real path to read ``path`` at, or None when it must not be read: its real location is
    outside every one of ``folders``, or the secrets policy denies it as named or as its target
    (``denied``).  The type of the file is ``read_regular``'s to check, at the read."""
    real = os.path.realpath(path)
    if not any(inside(real, os.path.realpath(folder)) for folder in folders):
        return None
    return None if _denied(path, real, folders, policy or _built_in()) else real


def read_bytes(
    path: str, folders: Sequence[str], max_bytes: int, policy: ContextPolicy | None = None
) -> bytes | None:
    """The one read of a user file (module docstring): its bytes when ``readable`` allows it and
    it is a regular file of at most ``max_bytes``; None otherwise, and on any error."""
    real = readable(path, folders, policy)
    return None if real is None else read_regular(real, max_bytes)


@functools.lru_cache(maxsize=1)
def _built_in() -> ContextPolicy:
    return ContextPolicy()


def read_text(path: str, root: str, max_bytes: int, policy: ContextPolicy | None = None) -> str | None:
    """The text of ``path`` in the folder ``root`` as LF text, or None when it must not or cannot
    be indexed.

    None for what ``read_bytes`` refuses (a real location outside ``root``, a target the policy
    denies, anything but a regular file, a file over ``max_bytes``), binary (a NUL byte), a line
    over ``MAX_LINE_CHARS`` (minified), and any error (vanished, unreadable).  Text that is not
    UTF-8 is decoded with U+FFFD for the bad bytes: its identifiers still count.
    """
    data = read_bytes(path, [root], max_bytes, policy)
    if data is None or b"\0" in data[:SNIFF_BYTES]:
        return None
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    if any(len(line) > MAX_LINE_CHARS for line in text.split("\n")):
        return None
    return text


def read_regular(path: str, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes``; None otherwise.
    Only for a path already allowed (``read_bytes``, and jedi's process after the server's
    answer) or outside the workspace by design (git's configuration, ``_read_config``).

    The type is checked before the file is opened: opening a FIFO releases a writer blocked on
    it (whose next write then fails), and opening a device node may have effects of its own."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        # O_NONBLOCK: a FIFO put there since the lstat must not wait for a writer; O_NOFOLLOW: a
        # symlink put there since is refused rather than followed.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)  # the file may have grown since the lstat
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if len(data) > max_bytes else data


def _rules_down_to(root: str, parts: list[str]) -> tuple[RuleSet, ...] | None:
    """The ignore rules that apply inside the folder-relative path ``parts`` (its own .gitignore
    not included), or None when the path itself or a directory above it is ignored."""
    rules = git_rules(root)
    for depth in range(len(parts)):
        here = _ignore_rules(os.path.join(root, *parts[:depth]), root, "/".join(parts[:depth]))
        if here is not None:
            rules = (*rules, here)
        if ignore.ignored(rules, "/".join(parts[: depth + 1]), depth + 1 < len(parts)):
            return None
    return rules


def admitted(root: str, path: str, policy: ContextPolicy | None = None) -> Listed | None:
    """``path`` as ``walk`` would list it, or None when ``walk`` would not (outside ``root``, in a
    skipped directory, binary by name, ignored, denied, a symlink whose target would not be
    listed): the rule for one file changed on disk."""
    root = os.path.realpath(root)
    path = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    policy = policy or _built_in()
    listed = _listable(root, path, policy)
    if listed is not None and os.path.islink(path) and not _target_listed(root, path, policy):
        return None
    return listed


def _listable(root: str, path: str, policy: ContextPolicy) -> Listed | None:
    """``admitted`` for a path by its own name (its directories resolved), links not followed."""
    if path == root or not inside(path, root):
        return None
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    parts = relative.split("/")
    if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts[:-1]):
        return None
    if parts[-1].endswith(BINARY_SUFFIXES) or policy.denies_under(root, relative):
        return None
    if _rules_down_to(root, parts) is None:
        return None
    return Listed(path, relative)


def _target_listed(root: str, link: str, policy: ContextPolicy) -> bool:
    """Whether the real target of the symlinked file ``link`` would be listed itself: inside the
    folder, not ignored by git, not denied, not in a skipped directory (``node_modules``)."""
    return _listable(root, os.path.realpath(link), policy) is not None


def git_ignored(root: str, path: str) -> bool:
    """Whether git ignores ``path``, a file inside the folder ``root`` (its whole ignore stack, as
    ``walk`` reads it); False for a path outside ``root``."""
    root = os.path.realpath(root)
    path = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    if path == root or not inside(path, root):
        return False
    return _rules_down_to(root, os.path.relpath(path, root).replace(os.sep, "/").split("/")) is None
