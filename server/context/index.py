"""The workspace index: the workspace's files by the names their chunks use and define (store.py),
built and updated on its own worker thread, and retrieval for a cursor.

Sources, in the order retrieval uses them: the open documents with their live text (given by
the server as they change), the workspace folders' files (listed and read by the worker, see
files.py), files changed on disk (``file_changed`` / ``file_deleted``), and recent edit
locations.  The event loop only puts jobs on a queue; everything that reads the disk or scans
text runs on the worker, one file at a time, so that new jobs (a folder removed, a file saved)
are handled between two files of a long build.  ``retrieve`` may be called from any thread: it
holds the lock only while it scores chunks from the postings and copies what it needs.

Caps (``IndexLimits``): files, bytes (the text kept plus its tables, store.py counts them) and
the size of one file.  When a cap is reached the build stops listing: later files are not indexed.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from pygls.uris import to_fs_path

from difill.engine.languages import language_for_path
from difill.server.context import files
from difill.server.context.definitions import definition_at
from difill.server.context.drafts import Draft
from difill.server.context.imports import (
    FREE_SCAN_CHARS,
    MAX_FREE_NAMES,
    between_imports,
    free_names,
    import_completion,
    import_targets,
    typed_import,
)
from difill.server.context.policy import ContextPolicy
from difill.server.context.similarity import identifiers, jaccard, query_text, window_around
from difill.server.context.store import IndexedFile, Store

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
MAX_SIMILAR = 4  # similar windows returned: the best window of each of the most similar files
MIN_JACCARD = 0.05
MAX_DEFINITIONS = 3
MAX_DEFINITION_SITES = 50  # a name defined in more places than this says nothing about which one
DEFINITION_TRIES = 3  # definition lines parsed per name (the line rule may match a non-definition)
MAX_OPEN_SOURCES = 8  # draft sources: open documents, then the most similar workspace files
MAX_WORKSPACE_SOURCES = 4
RECENT_EDITS = 16
OPEN_REFRESH_PER_LOOKUP = 4  # open documents (re-)indexed by one lookup: about 6 ms each at 2,000 lines
MAX_IMPORT_SOURCES = 3  # a free name defined at the top of more modules than this cannot pick one
CURRENT_SOURCE_CHARS = 256 * 1024  # of the current document, each side of the cursor, for import drafts
CACHED_DEFINITIONS = 256
# Names the current document defines itself (Python-like line rule): their definitions are at hand.
LOCAL_DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)|^(\w+)[ \t]*[:=]", re.M)
LOCAL_SCAN_CHARS = 64 * 1024  # around the cursor


@dataclass(frozen=True)
class IndexLimits:
    max_files: int = 20000
    max_bytes: int = 128 * 1024 * 1024
    max_file_bytes: int = 1024 * 1024


@dataclass(frozen=True)
class Snippet:
    path: str  # as the prompt names it: relative to its workspace folder
    start_line: int  # 0-based, in that file
    text: str  # LF text
    kind: str  # "definition" | "similar"
    score: float  # definitions 1.0, windows their Jaccard similarity


@dataclass(frozen=True)
class Retrieval:
    # (uri or path, LF text) for the draft finder, searched after the current document in this
    # order: the open documents (most recently edited first), then the most similar workspace files.
    sources: list[tuple[str, str]]
    snippets: list[Snippet]  # by priority (definitions, then similarity); prompt.py orders them
    # Drafts only the index can make, before the finder's (served.drafts_at): an import line
    # completed with the document's free names (imports.py).
    drafts: list[Draft] = field(default_factory=list)


class IndexProgress(Protocol):
    def begin(self, title: str, message: str) -> None: ...
    def report(self, message: str, percentage: int) -> None: ...
    def end(self, message: str) -> None: ...


@dataclass
class _Open:
    uri: str
    path: str | None
    language_id: str
    text: str


@dataclass
class _Build:
    folder: str
    listing: Iterator[files.Listed]
    listed: int = 0


@dataclass
class _Shared:
    """What the lock guards, besides the store."""

    folders: list[str] = field(default_factory=list)
    open: dict[str, _Open] = field(default_factory=dict)
    # The open documents' chunks and postings (keyed by uri), as the workspace files' are: a lookup
    # scores chunks from postings, not every window of every open document (60 open documents
    # of 2,000 lines took 100-700 ms a lookup).  A document changed since the last lookup is
    # re-indexed at the next lookup, unless it is the one being typed in (never its own source).
    open_store: Store = field(default_factory=Store)
    stale: set[str] = field(default_factory=set)
    edits: list[tuple[str, int]] = field(default_factory=list)  # (uri, line), most recent first


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
    ) -> None:
        self.limits = limits or IndexLimits()
        self.policy = policy or ContextPolicy()
        self.progress = progress
        # While this says so (the model is filling), a build waits between two files: building
        # in Python takes the GIL from the model's own Python and made ghost text 2.5x slower.
        self.yield_to = yield_to or (lambda: False)
        self.full = False  # a cap was reached: listing stopped
        self._store = Store()
        self._shared = _Shared()
        self._lock = threading.Lock()
        self._jobs: queue.Queue[tuple[str, str]] = queue.Queue()  # folders, stop: few, in order
        self._events = _Events()  # files changed on disk: many, coalesced per path
        self._stopped = threading.Event()
        self._builds: list[_Build] = []
        self._last_report = 0.0
        self._last_busy = float("-inf")
        self._definitions: OrderedDict[tuple[int, int, str], str | None] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None

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

    def set_open(self, uri: str, language_id: str, text: str | None) -> None:
        """The live text of an open document (None: it was closed).  One over the file size cap
        is left out, as it would be on disk: scanning it on every lookup would cost seconds.  So is
        one the secrets policy denies (a .env open in a tab): it is never a source for another."""
        path = _path_of(uri)
        with self._lock:
            shared = self._shared
            denied = path is not None and self.policy.denies_path(path, shared.folders)
            if text is None or denied or len(text) > self.limits.max_file_bytes:
                shared.open.pop(uri, None)
                shared.open_store.remove(uri)
                shared.stale.discard(uri)
                shared.edits = [edit for edit in shared.edits if edit[0] != uri]
            else:
                shared.open[uri] = _Open(uri, path, language_id, _lf(text))
                shared.stale.add(uri)

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
        target = _normal(path)
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
                target = _normal(path)
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
        text = files.read_text(listed.path, folder, limits.max_file_bytes)
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

    # ---- retrieval: any thread ----

    def retrieve(self, uri: str, text: str, offset: int, language_id: str) -> Retrieval:
        """Draft sources and snippets for a cursor at ``offset`` of ``text`` (document ``uri``)."""
        offset = max(0, min(offset, len(text)))
        before, after = _lf(text[:offset]), _lf(text[offset:])
        text, offset = before + after, len(before)
        query = identifiers(query_text(text, offset))
        local = {
            a or b
            for a, b in LOCAL_DEFINITION.findall(
                text, max(0, offset - LOCAL_SCAN_CHARS), offset + LOCAL_SCAN_CHARS
            )
        }
        current_path = _path_of(uri)
        with self._lock:
            store, shared = self._store, self._shared
            self._refresh_open(uri)
            current_open = shared.open_store.by_path.get(uri)
            open_hits = shared.open_store.similar_chunks(
                query, {current_open} if current_open is not None else set(), MIN_JACCARD
            )
            open_similar = [
                (hit, shared.open[shared.open_store.files[hit.file_id].path]) for hit in open_hits
            ]
            others = [o for u, o in shared.open.items() if u != uri]
            open_paths = {o.path for o in shared.open.values() if o.path} | {current_path}
            open_ids = {store.by_path[p] for p in open_paths if p in store.by_path}
            current_ids = {store.by_path[current_path]} if current_path in store.by_path else set()
            edits = [(u, line) for u, line in shared.edits if u != uri]
            folders = list(shared.folders)
            hits = store.similar_chunks(query, open_ids, MIN_JACCARD)
            workspace = [(hit, store.files[hit.file_id]) for hit in hits]
            definitions = []
            for name in sorted(query - local):
                found = store.definitions_of(name, current_ids)
                if 0 < len(found) <= MAX_DEFINITION_SITES:
                    definitions.append((len(found), name, [(store.files[f], f, at) for f, at in found]))
        similar = self._similar(query, open_similar, others, edits, workspace, folders)
        snippets = [*self._definition_snippets(definitions), *similar]
        drafts = self._import_drafts(text, offset, current_path) if language_id == "python" else []
        recent = {u: rank for rank, (u, _) in reversed(list(enumerate(edits)))}
        others.sort(key=lambda o: (recent.get(o.uri, len(edits)), o.uri))
        # The current document is not a source here: the finder searches it itself, before and
        # after the cursor, never at the cursor (served.drafts_at).  Without its line, the text
        # before the cursor runs on into the next line, and a source made of it "matched" there:
        # at the start of a line, a full-length match whose draft repeated the line below.
        sources = [(o.uri, o.text) for o in others[:MAX_OPEN_SOURCES]]
        sources += [(record.path, record.text) for _, record in workspace[:MAX_WORKSPACE_SOURCES]]
        return Retrieval(sources, snippets, drafts)

    def _import_drafts(self, text: str, offset: int, current_path: str | None) -> list[Draft]:
        """The cursor's ``from`` line (or a new line among the imports) completed with the names
        the document (without the cursor's line) uses unbound that a workspace module defines at
        its top level (imports.py).  Python documents only."""
        line_start = text.rfind("\n", 0, offset) + 1
        line_end = text.find("\n", offset)
        line_end = len(text) if line_end < 0 else line_end + 1
        line_before = text[line_start:offset]
        typed = typed_import(line_before, line_before == "" and between_imports(text, line_start, line_end))
        if typed is None:
            return []
        # A huge document is read around the cursor only (whole lines).
        low = (
            text.rfind("\n", 0, max(0, line_start - CURRENT_SOURCE_CHARS)) + 1
            if line_start > CURRENT_SOURCE_CHARS
            else 0
        )
        high = text.find("\n", line_end + CURRENT_SOURCE_CHARS)
        high = len(text) if high < 0 else high + 1
        document = text[low:line_start] + text[line_end:high]
        free = free_names(document[:FREE_SCAN_CHARS])[:MAX_FREE_NAMES]
        by_file: dict[int, list[str]] = {}
        common: set[str] = set()  # defined at the top of many modules: they cannot tell which
        with self._lock:
            store, folders = self._store, list(self._shared.folders)
            current_ids = {store.by_path[current_path]} if current_path in store.by_path else set()
            for name in free:
                top_level = [
                    file_id
                    for file_id, at in store.definitions_of(name, current_ids)[:MAX_DEFINITION_SITES]
                    if store.files[file_id].language == "python"
                    and store.files[file_id].text[at : at + 1] not in (" ", "\t")
                ]
                for file_id in dict.fromkeys(top_level):
                    by_file.setdefault(file_id, []).append(name)
                if len(set(top_level)) > MAX_IMPORT_SOURCES:
                    common.add(name)
            records = {file_id: store.files[file_id] for file_id in by_file}
        folder = next((f for f in folders if current_path and files.inside(current_path, f)), None)
        current = (
            os.path.relpath(current_path, folder).replace(os.sep, "/") if folder and current_path else None
        )
        same = {records[i].relative: names for i, names in by_file.items() if records[i].folder == folder}
        other = {records[i].relative: names for i, names in by_file.items() if records[i].folder != folder}
        targets = import_targets(same, current, document, common) + import_targets(
            other, None, document, common
        )
        completion = import_completion(typed, targets, free)
        if completion is None:
            return []
        return [Draft(completion, "import", kind="new-import" if typed.fresh else "import")]

    def _definition_snippets(self, definitions: list) -> list[Snippet]:
        """The definitions of the names near the cursor, the rarest first (a name defined once
        says more than one defined in many files), each from the first file by path."""
        snippets: list[Snippet] = []
        for _, name, found in sorted(definitions, key=lambda d: (d[0], d[1])):
            for record, file_id, at in sorted(found, key=lambda f: (f[0].relative, f[2]))[:DEFINITION_TRIES]:
                text = self._definition(record, file_id, at, name)
                if text is not None:
                    line = record.text.count("\n", 0, at)
                    snippets.append(Snippet(record.relative, line, text, "definition", 1.0))
                    break
            if len(snippets) == MAX_DEFINITIONS:
                break
        return snippets

    def _definition(self, record: IndexedFile, file_id: int, at: int, name: str) -> str | None:
        key = (file_id, at, name)
        with self._cache_lock:
            if key in self._definitions:
                return self._definitions[key]
        text = definition_at(record.text, at, record.language, name)
        with self._cache_lock:
            self._definitions[key] = text
            while len(self._definitions) > CACHED_DEFINITIONS:
                self._definitions.popitem(last=False)
        return text

    def _refresh_open(self, current_uri: str) -> None:
        """Index the open documents changed since the last lookup, but the current one (under the
        lock), ``OPEN_REFRESH_PER_LOOKUP`` at most: sixty documents opened at once are indexed
        over the next lookups, never in one."""
        shared = self._shared
        for uri in sorted(u for u in shared.stale if u != current_uri)[:OPEN_REFRESH_PER_LOOKUP]:
            shared.stale.discard(uri)
            document = shared.open[uri]
            shared.open_store.remove(uri)
            chunks, definitions, cost = shared.open_store.cost_of(document.text, None)
            record = IndexedFile(uri, "", uri, document.language_id, document.text, cost=cost)
            shared.open_store.add(record, chunks, [])

    def _similar(
        self,
        query: set[str],
        open_similar: list,
        others: list[_Open],
        edits: list[tuple[str, int]],
        workspace: list,
        folders: list[str],
    ) -> list[Snippet]:
        """The best window of each of the most similar open documents and workspace files."""
        candidates: list[Snippet] = []
        by_uri = {o.uri: o for o in others}
        for hit, other in open_similar:
            body = other.text[hit.start : hit.end].strip("\n")
            candidates.append(Snippet(_display_path(other, folders), hit.line, body, "similar", hit.score))
        for uri, line in edits:
            other = by_uri.get(uri)
            if other is not None:
                w = window_around(other.text, line)
                candidates.append(
                    Snippet(
                        _display_path(other, folders),
                        w.start_line,
                        w.text,
                        "similar",
                        jaccard(query, set(w.names)),
                    )
                )
        for hit, record in workspace:
            body = record.text[hit.start : hit.end].strip("\n")
            candidates.append(Snippet(record.relative, hit.line, body, "similar", hit.score))
        best: dict[str, Snippet] = {}  # one window per file: its best
        for snippet in sorted(candidates, key=lambda s: (-s.score, s.path, s.start_line)):
            if snippet.score >= MIN_JACCARD and snippet.path not in best:
                best[snippet.path] = snippet
        return list(best.values())[:MAX_SIMILAR]


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _normal(path: str) -> str:
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _path_of(uri: str) -> str | None:
    """The normalised path of a ``file:`` URI; None for other schemes and malformed URIs."""
    try:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        return _normal(path) if path else None
    except (ValueError, OSError):
        return None


def _display_path(document: _Open, folders: list[str]) -> str:
    if document.path:
        for folder in folders:
            if files.inside(document.path, folder):
                return os.path.relpath(document.path, folder).replace(os.sep, "/")
        return os.path.basename(document.path)
    return document.uri.rsplit("/", 1)[-1]
