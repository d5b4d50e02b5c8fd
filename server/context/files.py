"""Which files of a workspace folder the index reads, and reading one safely.

Everything that touches the disk for the workspace index is here, so that the rules are in one
place: nothing outside a workspace folder is read, symlinked directories are never entered (no
loops, no escape), a symlinked file is read only when its target is inside the same folder,
and only regular files are opened (a FIFO would block the worker forever).
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import pathspec

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


def _ignore_spec(directory: str) -> pathspec.PathSpec | None:
    """The rules of ``directory``/.gitignore; None when it has none (or it cannot be read)."""
    text = read_text(os.path.join(directory, ".gitignore"), directory, 256 * 1024)
    if not text:
        return None
    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


def walk(root: str) -> Iterator[Listed]:
    """The candidate files under ``root``, breadth first (a capped index keeps the files nearest
    the top), honouring every .gitignore on the way (each relative to its own directory)."""
    root = os.path.realpath(root)
    # (directory, its path relative to root, the .gitignore rules that apply: (base, spec) pairs)
    queue: deque[tuple[str, str, tuple[tuple[str, pathspec.PathSpec], ...]]] = deque([(root, "", ())])
    while queue:
        directory, relative_dir, rules = queue.popleft()
        spec = _ignore_spec(directory)
        if spec is not None:
            rules = (*rules, (relative_dir, spec))
        for entry in list_dir(directory):
            relative = f"{relative_dir}/{entry.name}" if relative_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.name in SKIPPED_DIRS or entry.name.endswith(".egg-info"):
                    continue
                if not _ignored(rules, relative + "/"):
                    queue.append((entry.path, relative, rules))
                continue
            if entry.name.endswith(BINARY_SUFFIXES) or _ignored(rules, relative):
                continue
            yield Listed(entry.path, relative)


def _ignored(rules: tuple[tuple[str, pathspec.PathSpec], ...], relative: str) -> bool:
    for base, spec in rules:
        below = relative[len(base) + 1 :] if base else relative
        if spec.match_file(below):
            return True
    return False


def read_text(path: str, root: str, max_bytes: int) -> str | None:
    """The text of ``path`` as LF text, or None when it must not or cannot be indexed.

    None for: a path whose real location is outside ``root`` (a symlink out of the folder), a
    symlinked directory or anything but a regular file, a file over ``max_bytes``, binary (a NUL
    byte), a line over ``MAX_LINE_CHARS`` (minified), and any error (vanished, unreadable).
    Text that is not UTF-8 is decoded with U+FFFD for the bad bytes: its identifiers still count.
    """
    real = os.path.realpath(path)
    if not inside(real, os.path.realpath(root)):
        return None
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: the real path was
        # checked above, a symlink put there since is refused rather than followed.
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)  # the file may have grown since fstat
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > max_bytes or b"\0" in data[:SNIFF_BYTES]:
        return None
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    if any(len(line) > MAX_LINE_CHARS for line in text.split("\n")):
        return None
    return text


def admitted(root: str, path: str) -> Listed | None:
    """``path`` as ``walk`` would list it, or None when ``walk`` would not (outside ``root``, in a
    skipped directory, binary by name, ignored): the rule for one file changed on disk."""
    root = os.path.realpath(root)
    path = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    if path == root or not inside(path, root):
        return None
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    parts = relative.split("/")
    if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts[:-1]):
        return None
    if parts[-1].endswith(BINARY_SUFFIXES):
        return None
    rules: tuple[tuple[str, pathspec.PathSpec], ...] = ()
    for depth in range(len(parts)):
        base = "/".join(parts[:depth])
        spec = _ignore_spec(os.path.join(root, *parts[:depth]))
        if spec is not None:
            rules = (*rules, (base, spec))
        below = "/".join(parts[: depth + 1]) + ("/" if depth + 1 < len(parts) else "")
        if _ignored(rules, below):
            return None
    return Listed(path, relative)
