"""What difill leaves on disk: files written whole or not at all, and temporary folders that do
not outlive their process for long (issue 62).

* ``write_atomically``: a stamp or a cache file is written to a temporary file in its own folder,
  then renamed over the old one: a crash or a full disk leaves the old file or the new one, never
  half of one (an empty ``worker.json`` stopped ``engine: auto`` from loading any model).
* ``OwnedDir``: a temporary folder with a lock file (``LOCK``) that its process holds locked
  (``flock``) and writes its pid into once locked.  A process killed with SIGKILL removes
  nothing, but the kernel releases its lock: the next ``sweep`` of the prefix (at the next start)
  takes the lock of a folder whose owner wrote its pid, and so knows the owner is gone.  A live
  owner's lock is never free, whatever pid the kernel reuses meanwhile.  A folder without a
  written pid (an older difill's, or one killed between creating the folder and locking it) is
  removed once it is a day old.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock; its temporary folders are not swept
    fcntl = None  # type: ignore[assignment]

LOCK = ".owner"
UNLOCKED_AGE_S = 24 * 3600


def write_atomically(path: Path | str, text: str) -> None:
    """Replace ``path``'s content with ``text`` in one step (a temporary file, then a rename)."""
    path = Path(path)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


class OwnedDir:
    """A new temporary folder named ``prefix...``, locked by this process until ``remove``."""

    def __init__(self, prefix: str) -> None:
        self.path = tempfile.mkdtemp(prefix=prefix)
        self._lock: int | None = None
        self._removing = threading.Lock()
        if fcntl is not None:
            fd = os.open(os.path.join(self.path, LOCK), os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel when this process ends, however
            os.write(fd, str(os.getpid()).encode())  # after the lock: a sweep reads it as "was owned"
            self._lock = fd

    def remove(self) -> None:
        """Remove the folder and release its lock; again, or from another thread at once, nothing
        more (a second close of the lock's descriptor would close whatever file took its number)."""
        with self._removing:
            lock, self._lock = self._lock, None
        shutil.rmtree(self.path, ignore_errors=True)
        if lock is not None:
            os.close(lock)


def sweep(prefix: str) -> list[str]:
    """Remove the folders named ``prefix...`` in the temporary folder that this user's processes
    left when they were killed; returns their paths."""
    if fcntl is None:
        return []
    root = tempfile.gettempdir()
    try:
        names = [name for name in os.listdir(root) if name.startswith(prefix)]
    except OSError:
        return []
    removed = []
    for name in names:
        path = os.path.join(root, name)
        if _abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _abandoned(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return False  # a link, a file, another user's: not ours to remove
    old = time.time() - info.st_mtime > UNLOCKED_AGE_S
    try:
        fd = os.open(os.path.join(path, LOCK), os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return old
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False  # its owner lives
    try:
        return os.read(fd, 32) != b"" or old
    finally:
        os.close(fd)  # the lock goes with it
