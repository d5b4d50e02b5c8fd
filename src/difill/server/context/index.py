"""The workspace index: the workspace's files by the names their chunks use and define (store.py),
built and updated on its own worker thread; retrieval for a cursor is retrieval.py's.

Sources, in the order retrieval uses them: the open documents with their live text (given by
the server as they change), the workspace folders' files (listed and read by the worker, see
files.py), files changed on disk (``file_changed`` / ``file_deleted``), and recent edit
locations.  The event loop only puts jobs on a queue; everything that reads the disk or scans
text runs on the worker, one file at a time, so that new jobs (a folder removed, a file saved)
are handled between two files of a long build; file events are coalesced per path (``_Events``)
and stopping never waits for the worker.  ``retrieve`` may be called from any thread.

Caps (``IndexLimits``): files, bytes (the text kept plus its tables, store.py counts them) and
the size of one file.  When a cap is reached the build stops listing: later files are not indexed.
"""

from __future__ import annotations

import logging
import os
import queue
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from difill.server.context import files
from difill.server.context.policy import ContextPolicy
from difill.server.context.retrieval import (
    OpenDocument,
    Retrieval,
    Retriever,
    Shared,
    lf,
    normal_path,
    path_of,
)
from difill.server.context.store import IndexedFile, Store
from difill.text.languages import language_for_path

log = logging.getLogger("difill.server")

BATCH_S = 0.02  # the worker indexes files for this long, then pauses (below) and reads new jobs
PAUSE_S = 0.004  # leaves the GIL to the event loop and the model thread: a build costs typing little
PROGRESS_EVERY_S = 0.5
YIELD_POLL_S = 0.005
# After the model was last busy, the build waits this long more: while the user types, fills come
# one after another, and a build resumed between two of them is mid-file when the next one starts.
YIELD_GRACE_S = 0.3
MAX_PENDING_EVENTS = 10000  # distinct paths waiting; past it the folders are listed again (watchman's rule)
LISTED_PER_FILE = 10  # a build stops after listing this many entries per file the cap allows
RECENT_EDITS = 16


@dataclass(frozen=True)
class IndexLimits:
    max_files: int = 20000
    max_bytes: int = 128 * 1024 * 1024
    max_file_bytes: int = 1024 * 1024


class IndexProgress(Protocol):
    def begin(self, title: str, message: str) -> None: ...
    def report(self, message: str, percentage: int) -> None: ...
    def end(self, message: str) -> None: ...


@dataclass
class _Build:
    folder: str
    listing: Iterator[files.Listed]
    listed: int = 0


class _Events:
    """Files changed on disk, waiting for the worker: one entry per path, the latest kind winning
    (a burst of events for one file is one re-read), at most ``MAX_PENDING_EVENTS`` of them; past
    that, they are dropped for one RESCAN of the folders."""

    RESCAN = "rescan"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: OrderedDict[str, str] = OrderedDict()
        self._overflowed = False

    def put(self, path: str, kind: str) -> bool:
        """Queue an event; True when nothing was waiting before it."""
        with self._lock:
            was_empty = not self._pending and not self._overflowed
            if self._overflowed:
                return False
            self._pending.pop(path, None)
            self._pending[path] = kind
            if len(self._pending) > MAX_PENDING_EVENTS:
                self._pending.clear()
                self._overflowed = True
            return was_empty

    def take(self) -> tuple[str, str] | str | None:
        """The oldest event, RESCAN after an overflow, None when nothing waits."""
        with self._lock:
            if self._overflowed:
                self._overflowed = False
                return self.RESCAN
            return self._pending.popitem(last=False) if self._pending else None

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._pending) or self._overflowed


class WorkspaceIndex:
    def __init__(
        self,
        limits: IndexLimits | None = None,
        progress: IndexProgress | None = None,
        yield_to: Callable[[], bool] | None = None,
        policy: ContextPolicy | None = None,
        project_python: str | None = None,
    ) -> None:
        self.limits = limits or IndexLimits()
        self.policy = policy or ContextPolicy()
        self.progress = progress
        # While this says so (the model is filling), a build waits between two files: building
        # in Python takes the GIL from the model's own Python and made ghost text 2.5x slower.
        self.yield_to = yield_to or (lambda: False)
        self.full = False  # a cap was reached: listing stopped
        self._store = Store()
        self._shared = Shared()
        self._lock = threading.Lock()
        self._jobs: queue.Queue[tuple[str, str]] = queue.Queue()  # folders, stop: few, in order
        self._events = _Events()  # files changed on disk: many, coalesced per path
        self._stopped = threading.Event()
        self._builds: list[_Build] = []
        self._last_report = 0.0
        self._last_busy = float("-inf")
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self._retriever = Retriever(
            self._lock, self._store, self._shared, self.policy, project_python, self.yield_to
        )

    # ---- called from the event loop: cheap, never touch the disk ----

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="difill-index", daemon=True)
            self._thread.start()

    def stop(self, wait_s: float = 0.0) -> None:
        """Stop the worker.  It stops between two files or events, so the event loop never waits
        for it (a backlog of 50,000 file events blocked a settings change for 5 s); ``wait_s``:
        wait that long for it to end (tests)."""
        self._stopped.set()
        self._put("stop", "")
        self._retriever.close(wait_s)
        if wait_s and self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=wait_s)
        self._thread = None

    def add_folder(self, path: str) -> None:
        self._put("add_folder", path)

    def remove_folder(self, path: str) -> None:
        self._put("remove_folder", path)

    def file_changed(self, path: str) -> None:
        """A file or a folder created or changed on disk."""
        self._event(path, "changed")

    def file_deleted(self, path: str) -> None:
        """A file or a folder deleted: a folder's whole subtree leaves the index."""
        self._event(path, "deleted")

    def _event(self, path: str, kind: str) -> None:
        self._idle.clear()
        if self._events.put(path, kind):  # the first one waiting: wake the worker
            self._jobs.put(("events", ""))

    def set_open(self, uri: str, language_id: str, text: str | None, source: bool = True) -> None:
        """The live text of an open document (None: it was closed).  One over the file size cap
        is left out, as it would be on disk: scanning it on every lookup would cost seconds.  So is
        one the secrets policy denies (a .env open in a tab, or a link to one), and one that is no
        ``source`` (git ignores it, as it does the files never indexed): it is never a source for
        another.  Nor is one outside every workspace folder (retrieval.py ``in_folders``)."""
        path = path_of(uri)
        with self._lock:
            shared = self._shared
            denied = not source or (path is not None and files.denied(path, shared.folders, self.policy))
            shared.changes += 1  # what other documents' answers may have read (``generation``)
            shared.own_changes[uri] = shared.own_changes.get(uri, 0) + 1
            if text is None:
                shared.own_changes.pop(uri, None)
            if text is None or denied or len(text) > self.limits.max_file_bytes:
                shared.open.pop(uri, None)
                shared.open_store.remove(uri)
                shared.stale.discard(uri)
                shared.edits = [edit for edit in shared.edits if edit[0] != uri]
            else:
                shared.open[uri] = OpenDocument(uri, path, language_id, lf(text))
                shared.stale.add(uri)
        if text is not None:
            self._retriever.warm(language_id)  # jedi's first load, before the first x. typed

    def note_edit(self, uri: str, line: int) -> None:
        """An edit at ``line`` of ``uri``: its surroundings become a snippet candidate."""
        with self._lock:
            edits = [e for e in self._shared.edits if not (e[0] == uri and abs(e[1] - line) < 8)]
            self._shared.edits = [(uri, line), *edits][:RECENT_EDITS]

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every job so far is done (tests and the benchmark)."""
        deadline = time.monotonic() + timeout
        while True:
            if (
                self._jobs.unfinished_tasks == 0
                and not self._builds
                and not self._events
                and self._idle.is_set()
            ):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def generation(self, uri: str) -> int:
        """Changes to what an answer for ``uri`` may have read besides ``uri`` itself: files added,
        changed or removed, and other open documents changed, opened or closed.  A cached answer
        is reused only while it stays the same (features/suggestions/cache.py)."""
        with self._lock:
            shared = self._shared
            return (self._store.generation << 32) + shared.changes - shared.own_changes.get(uri, 0)

    def stats(self) -> dict[str, int | bool]:
        with self._lock:
            store = self._store
            return {
                "files": len(store.files),
                "bytes": store.bytes,
                "folders": len(self._shared.folders),
                "full": self.full,
            }

    def indexed_paths(self) -> list[str]:
        with self._lock:
            return sorted(self._store.by_path)

    def _put(self, kind: str, path: str) -> None:
        self._idle.clear()
        self._jobs.put((kind, path))

    # ---- the worker ----

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                if self._builds or self._events:
                    while True:  # the jobs that came in during the last batch first
                        self._handle(*self._jobs.get_nowait())
                else:
                    self._idle.set()
                    self._handle(*self._jobs.get())
            except queue.Empty:
                pass
            except Exception:  # one bad job must not end indexing for the session
                log.exception("workspace index: a job failed")
            if self._stopped.is_set():
                return
            if self._builds or self._events:
                if self._model_recently_busy():
                    time.sleep(YIELD_POLL_S)
                    continue
                try:
                    if self._events:
                        self._apply_events()
                    else:
                        self._advance()
                except Exception:
                    log.exception("workspace index: a build failed")
                    if self._builds and not self._events:
                        self._builds.pop(0)
                time.sleep(PAUSE_S)

    def _model_recently_busy(self) -> bool:
        now = time.monotonic()
        if self.yield_to():
            self._last_busy = now
        return now - self._last_busy < YIELD_GRACE_S

    def _handle(self, kind: str, path: str) -> None:
        try:
            if kind == "add_folder":
                self._add_folder(path)
            elif kind == "remove_folder":
                self._remove_folder(path)
        finally:
            self._jobs.task_done()

    def _apply_events(self) -> None:
        """File events for ``BATCH_S``, then back to the jobs (a stop, a folder removed)."""
        started = time.monotonic()
        while time.monotonic() - started < BATCH_S and not self._stopped.is_set():
            taken = self._events.take()
            if taken is None:
                return
            if taken == _Events.RESCAN:
                self._rescan()
                return
            path, kind = taken
            if kind == "deleted":
                self._remove_path(path)
            else:
                self._file_changed(path)

    def _rescan(self) -> None:
        """Too many events to keep: list every folder again, as at the start."""
        log.info(
            "workspace index: over %d file events waiting; listing the folders again", MAX_PENDING_EVENTS
        )
        with self._lock:
            folders = list(self._shared.folders)
        for folder in folders:
            self._remove_folder(folder)
            self._add_folder(folder)

    def _remove_path(self, path: str) -> None:
        """A deleted file, or a deleted folder with every file below it."""
        target = normal_path(path)
        with self._lock:
            store = self._store
            if target in store.by_path:
                store.remove(target)
            elif store.directories.get(target):
                for doomed in [p for p in store.by_path if files.inside(p, target)]:
                    store.remove(doomed)

    def _add_folder(self, path: str) -> None:
        folder = os.path.realpath(path)
        with self._lock:
            if folder in self._shared.folders:
                return
            self._shared.folders.append(folder)
        if not os.path.isdir(folder):
            log.info("workspace index: %s is not a directory", path)
            return
        if not self._builds and self.progress is not None:
            self.progress.begin("difill: indexing the workspace", os.path.basename(folder) or folder)
        self._builds.append(_Build(folder, files.walk(folder, self.policy)))
        self._last_report = time.monotonic()

    def _remove_folder(self, path: str) -> None:
        folder = os.path.realpath(path)
        building = bool(self._builds)
        self._builds = [b for b in self._builds if b.folder != folder]
        with self._lock:
            if folder in self._shared.folders:
                self._shared.folders.remove(folder)
            for doomed in [p for p in self._store.by_path if files.inside(p, folder)]:
                self._store.remove(doomed)
        self.full = False  # room again: a later add or change may index more
        if building:
            self._finish_if_done()

    def _file_changed(self, path: str) -> None:
        """A file changed (re-read), or a folder created or renamed into place (listed as a build)."""
        with self._lock:
            folders = list(self._shared.folders)
        try:
            is_dir = stat.S_ISDIR(os.lstat(path).st_mode)
        except OSError:
            return
        for folder in folders:
            if is_dir:
                target = normal_path(path)
                if files.inside(target, folder) and target != folder:
                    below = os.path.relpath(target, folder).replace(os.sep, "/")
                    self._builds.append(_Build(folder, files.walk(folder, self.policy, below)))
                    return
                continue
            listed = files.admitted(folder, path, self.policy)
            if listed is not None:
                with self._lock:
                    self._store.remove(listed.path)
                self._index(folder, listed)
                return

    def _advance(self) -> None:
        build = self._builds[0]
        started = time.monotonic()
        while time.monotonic() - started < BATCH_S and not self._model_recently_busy():
            listed = next(build.listing, None)
            if listed is None:
                self._builds.pop(0)
                self._finish_if_done()
                return
            build.listed += 1
            over_listing = build.listed > LISTED_PER_FILE * max(1, self.limits.max_files)
            if over_listing or not self._index(build.folder, listed):
                self.full = True
                log.info("workspace index: a cap is reached (%s); later files are not indexed", self.stats())
                self._builds.clear()
                self._finish_if_done()
                return
        if self.progress is not None and time.monotonic() - self._last_report > PROGRESS_EVERY_S:
            self._last_report = time.monotonic()
            count = len(self._store.files)
            percentage = min(99, 100 * count // max(1, self.limits.max_files))
            self.progress.report(f"{count} files", percentage)

    def _finish_if_done(self) -> None:
        if not self._builds and self.progress is not None:
            stats = self.stats()
            note = " (a cap was reached)" if self.full else ""
            self.progress.end(f"{stats['files']} files indexed{note}")

    def _index(self, folder: str, listed: files.Listed) -> bool:
        """Read and index one file; False when a cap leaves no room for it."""
        limits, store = self.limits, self._store
        if len(store.files) >= limits.max_files or store.bytes >= limits.max_bytes:
            return False
        text = files.read_text(listed.path, folder, limits.max_file_bytes, self.policy)
        if not text or not text.strip():
            return True
        language = language_for_path(listed.path)
        chunks, definitions, cost = store.cost_of(text, language)
        if store.bytes + cost > limits.max_bytes:
            return False
        record = IndexedFile(listed.path, folder, listed.relative, language, text, cost=cost)
        with self._lock:
            if folder in self._shared.folders:  # else removed since this build began
                store.remove(listed.path)  # a folder listed again (created, renamed) may hold it
                store.add(record, chunks, definitions)
        return True

    def retrieve(self, uri: str, text: str, offset: int, language_id: str) -> Retrieval:
        """Draft sources and snippets for a cursor at ``offset`` of ``text`` (document ``uri``):
        retrieval.py, on the calling thread (any thread)."""
        return self._retriever.retrieve(uri, text, offset, language_id)
