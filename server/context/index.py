"""The workspace index: the text of the workspace's files, by the identifiers they use and the
names they define, built and updated on its own worker thread.

Sources, in the order retrieval uses them: the open documents with their live text (given by
the server as they change), the workspace folders' files (listed and read by the worker, see
files.py), files changed on disk (``file_changed`` / ``file_deleted``), and recent edit
locations.  The event loop only puts jobs on a queue; everything that reads the disk or scans
text runs on the worker, one file at a time, so that new jobs (a folder removed, a file saved)
are handled between two files of a long build.  ``retrieve`` may be called from any thread: it
holds the lock only to copy what it needs.

Caps (``IndexLimits``): files, bytes (the text kept plus an estimate of its postings) and the
size of one file.  When a cap is reached the build stops listing: later files are not indexed.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Protocol

from pygls.uris import to_fs_path

from difill.engine.syntax import language_for_path
from difill.server.context import files
from difill.server.context.definitions import defined_names, definition_text
from difill.server.context.similarity import (
    Window,
    identifiers,
    jaccard,
    query_text,
    window_around,
    windows,
)

log = logging.getLogger("difill.server")

BATCH_S = 0.02  # the worker indexes files for this long, then pauses (below) and reads new jobs
PAUSE_S = 0.004  # leaves the GIL to the event loop and the model thread: a build costs typing little
PROGRESS_EVERY_S = 0.5
FILE_OVERHEAD_BYTES = 400  # per indexed file: its record, path strings, dict entries
POSTING_BYTES = 16  # per identifier of a file: a list slot, a share of the dict and of the name
LISTED_PER_FILE = 10  # a build stops after listing this many entries per file the cap allows
MAX_POSTINGS_SCANNED = 4000  # a name used by more files than this says little (and costs time)
CANDIDATE_FILES = 8  # workspace files whose windows are compared, chosen by shared rare names
MAX_SIMILAR = 4  # similar windows returned, the best window of each of the most similar files
MIN_JACCARD = 0.05
MAX_DEFINITIONS = 3
MAX_OPEN_SOURCES = 8  # draft sources: open documents, then the most similar workspace files
MAX_WORKSPACE_SOURCES = 4
RECENT_EDITS = 16
CACHED_WINDOWS = 128  # files whose windows are kept between lookups
LOCAL_DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)|^(\w+)[ \t]*[:=]", re.M)


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
    # (uri or path, LF text) for the draft finder, searched in this order: the current document
    # without the cursor's line, the open documents (most recently edited first), then the most
    # similar workspace files.
    sources: list[tuple[str, str]]
    snippets: list[Snippet]  # by priority (definitions, then similarity); prompt.py orders them


class IndexProgress(Protocol):
    def begin(self, title: str, message: str) -> None: ...
    def report(self, message: str, percentage: int) -> None: ...
    def end(self, message: str) -> None: ...


@dataclass
class _File:
    path: str
    folder: str
    relative: str
    language: str | None
    text: str
    names: frozenset[str]
    defines: frozenset[str]
    cost: int


@dataclass
class _Open:
    uri: str
    path: str | None
    language_id: str
    text: str
    windows: list[Window] | None = None  # computed on first use


@dataclass
class _Build:
    folder: str
    listing: object  # the walk generator
    listed: int = 0


@dataclass
class _State:
    """What the lock guards."""

    files: dict[int, _File] = field(default_factory=dict)
    by_path: dict[str, int] = field(default_factory=dict)
    postings: dict[str, list[int]] = field(default_factory=dict)  # name -> ids (dead ids dropped lazily)
    defines: dict[str, list[int]] = field(default_factory=dict)
    dead_postings: int = 0
    live_postings: int = 0
    bytes: int = 0
    folders: list[str] = field(default_factory=list)
    open: dict[str, _Open] = field(default_factory=dict)
    edits: list[tuple[str, int]] = field(default_factory=list)  # (uri, line), most recent first


class WorkspaceIndex:
    def __init__(self, limits: IndexLimits | None = None, progress: IndexProgress | None = None) -> None:
        self.limits = limits or IndexLimits()
        self.progress = progress
        self.full = False  # a cap was reached: listing stopped
        self._state = _State()
        self._lock = threading.Lock()
        self._jobs: queue.Queue[tuple[str, str]] = queue.Queue()
        self._builds: list[_Build] = []
        self._next_id = 0
        self._windows: OrderedDict[int, list[Window]] = OrderedDict()  # used by retrieve only
        self._definitions: OrderedDict[tuple[int, str], tuple[int, str] | None] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None

    # ---- called from the event loop: cheap, never touch the disk ----

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="difill-index", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._put("stop", "")
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None

    def add_folder(self, path: str) -> None:
        self._put("add_folder", path)

    def remove_folder(self, path: str) -> None:
        self._put("remove_folder", path)

    def file_changed(self, path: str) -> None:
        self._put("changed", path)

    def file_deleted(self, path: str) -> None:
        self._put("deleted", path)

    def set_open(self, uri: str, language_id: str, text: str | None) -> None:
        """The live text of an open document (None: it was closed)."""
        with self._lock:
            if text is None:
                self._state.open.pop(uri, None)
                self._state.edits = [edit for edit in self._state.edits if edit[0] != uri]
            else:
                self._state.open[uri] = _Open(uri, _path_of(uri), language_id, _lf(text))

    def note_edit(self, uri: str, line: int) -> None:
        """An edit at ``line`` of ``uri``: its surroundings become a snippet candidate."""
        with self._lock:
            edits = [e for e in self._state.edits if not (e[0] == uri and abs(e[1] - line) < 8)]
            self._state.edits = [(uri, line), *edits][:RECENT_EDITS]

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every job so far is done (tests and the benchmark)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._jobs.unfinished_tasks == 0 and not self._builds and self._idle.is_set():
                return True
            time.sleep(0.01)
        return False

    def stats(self) -> dict[str, int | bool]:
        with self._lock:
            state = self._state
            return {
                "files": len(state.files),
                "bytes": state.bytes,
                "folders": len(state.folders),
                "full": self.full,
            }

    def indexed_paths(self) -> list[str]:
        with self._lock:
            return sorted(self._state.by_path)

    def _put(self, kind: str, path: str) -> None:
        self._idle.clear()
        self._jobs.put((kind, path))

    # ---- the worker ----

    def _run(self) -> None:
        while True:
            try:
                if self._builds:
                    while True:  # the jobs that came in during the last batch first
                        if self._handle(*self._jobs.get_nowait()) == "stop":
                            return
                else:
                    self._idle.set()
                    if self._handle(*self._jobs.get()) == "stop":
                        return
            except queue.Empty:
                pass
            except Exception:  # one bad job must not end indexing for the session
                log.exception("workspace index: a job failed")
            if self._builds:
                self._advance()
                time.sleep(PAUSE_S)

    def _handle(self, kind: str, path: str) -> str:
        try:
            if kind == "add_folder":
                self._add_folder(path)
            elif kind == "remove_folder":
                self._remove_folder(path)
            elif kind == "changed":
                self._file_changed(path)
            elif kind == "deleted":
                self._remove_paths(lambda p: p == _normal(path))
        finally:
            self._jobs.task_done()
        return kind

    def _add_folder(self, path: str) -> None:
        folder = os.path.realpath(path)
        with self._lock:
            if folder in self._state.folders:
                return
            self._state.folders.append(folder)
        if not os.path.isdir(folder):
            log.info("workspace index: %s is not a directory", path)
            return
        if not self._builds and self.progress is not None:
            self.progress.begin("difill: indexing the workspace", os.path.basename(folder) or folder)
        self._builds.append(_Build(folder, files.walk(folder)))
        self._last_report = time.monotonic()

    def _remove_folder(self, path: str) -> None:
        folder = os.path.realpath(path)
        self._builds = [b for b in self._builds if b.folder != folder]
        with self._lock:
            if folder in self._state.folders:
                self._state.folders.remove(folder)
        self._remove_paths(lambda p: files.inside(p, folder))
        self.full = False  # room again: a later add or change may index more
        self._finish_if_done()

    def _file_changed(self, path: str) -> None:
        with self._lock:
            folders = list(self._state.folders)
        for folder in folders:
            listed = files.admitted(folder, path)
            if listed is not None:
                self._remove_paths(lambda p, gone=listed.path: p == gone)
                self._index(folder, listed)
                return

    def _advance(self) -> None:
        build = self._builds[0]
        started = time.monotonic()
        while time.monotonic() - started < BATCH_S:
            listed = next(build.listing, None)  # type: ignore[call-overload]
            if listed is None:
                self._builds.pop(0)
                self._finish_if_done()
                return
            build.listed += 1
            over_listing = build.listed > LISTED_PER_FILE * max(1, self.limits.max_files)
            if over_listing or not self._index(build.folder, listed):
                log.info("workspace index: a cap is reached (%s); later files are not indexed", self.stats())
                self.full = True
                self._builds.clear()
                self._finish_if_done()
                return
        if self.progress is not None and time.monotonic() - self._last_report > PROGRESS_EVERY_S:
            self._last_report = time.monotonic()
            count = len(self._state.files)
            percentage = min(99, 100 * count // max(1, self.limits.max_files))
            self.progress.report(f"{count} files", percentage)

    def _finish_if_done(self) -> None:
        if not self._builds and self.progress is not None:
            stats = self.stats()
            note = " (a cap was reached)" if self.full else ""
            self.progress.end(f"{stats['files']} files indexed{note}")

    def _index(self, folder: str, listed: files.Listed) -> bool:
        """Read and index one file; False when a cap leaves no room for it."""
        limits = self.limits
        if len(self._state.files) >= limits.max_files or self._state.bytes >= limits.max_bytes:
            return False
        text = files.read_text(listed.path, folder, limits.max_file_bytes)
        if not text or not text.strip():
            return True
        language = language_for_path(listed.path)
        names = frozenset(identifiers(text))
        defines = frozenset(defined_names(text, language))
        cost = len(text) + FILE_OVERHEAD_BYTES + POSTING_BYTES * (len(names) + len(defines))
        if self._state.bytes + cost > limits.max_bytes:
            return False
        record = _File(listed.path, folder, listed.relative, language, text, names, defines, cost)
        with self._lock:
            state = self._state
            if folder not in state.folders:  # removed since this build began
                return True
            file_id = self._next_id
            self._next_id += 1
            state.files[file_id] = record
            state.by_path[listed.path] = file_id
            for name in names:
                state.postings.setdefault(name, []).append(file_id)
            for name in defines:
                state.defines.setdefault(name, []).append(file_id)
            state.live_postings += len(names) + len(defines)
            state.bytes += cost
        return True

    def _remove_paths(self, doomed) -> None:
        with self._lock:
            state = self._state
            for path in [p for p in state.by_path if doomed(p)]:
                record = state.files.pop(state.by_path.pop(path))
                state.bytes -= record.cost
                moved = len(record.names) + len(record.defines)
                state.live_postings -= moved
                state.dead_postings += moved
            if state.dead_postings > max(state.live_postings, 100_000):
                self._compact()

    def _compact(self) -> None:
        """Drop removed files' ids from the postings (they are skipped until then)."""
        state = self._state
        for table in (state.postings, state.defines):
            for name in list(table):
                live = [i for i in table[name] if i in state.files]
                if live:
                    table[name] = live
                else:
                    del table[name]
        state.dead_postings = 0

    # ---- retrieval: any thread ----

    def retrieve(self, uri: str, text: str, offset: int, language_id: str) -> Retrieval:
        """Draft sources and snippets for a cursor at ``offset`` of ``text`` (document ``uri``)."""
        offset = max(0, min(offset, len(text)))
        before, after = _lf(text[:offset]), _lf(text[offset:])
        text, offset = before + after, len(before)
        current_path = _path_of(uri)
        query = identifiers(query_text(text, offset))
        with self._lock:
            state = self._state
            others = [o for u, o in state.open.items() if u != uri]
            open_paths = {o.path for o in state.open.values() if o.path}
            edits = [(u, line) for u, line in state.edits if u != uri]
            ranked = self._ranked_files(query, open_paths | {current_path})
            folders = list(state.folders)
            definitions = self._definition_files(query, text, {current_path})
        similar = self._similar_windows(query, others, edits, ranked, folders)
        snippets = [*self._definition_snippets(definitions), *similar]
        line_start = text.rfind("\n", 0, offset) + 1
        line_end = text.find("\n", offset)
        without_cursor_line = text[:line_start] + ("" if line_end < 0 else text[line_end + 1 :])
        recent = {u: rank for rank, (u, _) in reversed(list(enumerate(edits)))}
        others.sort(key=lambda o: (recent.get(o.uri, len(edits)), o.uri))
        sources = [(uri, without_cursor_line)]
        sources += [(o.uri, o.text) for o in others[:MAX_OPEN_SOURCES]]
        sources += [(f.path, f.text) for _, f in ranked[:MAX_WORKSPACE_SOURCES]]
        return Retrieval(sources, snippets)

    def _ranked_files(self, query: set[str], excluded: set[str | None]) -> list[tuple[int, _File]]:
        """Workspace files sharing the most (rare) names with ``query``; under the lock."""
        state = self._state
        total = len(state.files) + 1
        scores: dict[int, float] = {}
        for name in query:
            ids = state.postings.get(name)
            if not ids or len(ids) > MAX_POSTINGS_SCANNED:
                continue
            weight = math.log(total / len(ids)) + 0.1
            for file_id in ids:
                scores[file_id] = scores.get(file_id, 0.0) + weight
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        ranked = []
        for file_id, _ in best:
            record = state.files.get(file_id)
            if record is not None and record.path not in excluded:
                ranked.append((file_id, record))
                if len(ranked) == CANDIDATE_FILES:
                    break
        return ranked

    def _definition_files(
        self, query: set[str], text: str, excluded: set[str | None]
    ) -> list[tuple[int, _File, str]]:
        """(id, file, name) for the names near the cursor that another file defines; under the lock."""
        local = {a or b for a, b in LOCAL_DEFINITION.findall(text)}
        found = []
        for name in sorted(query - local):
            ids = [i for i in self._state.defines.get(name, ()) if i in self._state.files]
            files_ = sorted(
                (self._state.files[i].relative, i) for i in ids if self._state.files[i].path not in excluded
            )
            if files_:
                file_id = files_[0][1]
                found.append((file_id, self._state.files[file_id], name))
        # The rarest definitions say the most: a name defined in one file beats one defined in many.
        found.sort(key=lambda item: (len(self._state.defines.get(item[2], ())), item[2]))
        return found[:MAX_DEFINITIONS]

    def _definition_snippets(self, definitions: list[tuple[int, _File, str]]) -> list[Snippet]:
        snippets = []
        for file_id, record, name in definitions:
            key = (file_id, name)
            with self._cache_lock:
                cached = self._definitions.get(key, False)
            if cached is False:
                cached = definition_text(record.text, record.language, name)
                with self._cache_lock:
                    self._definitions[key] = cached
                    while len(self._definitions) > CACHED_WINDOWS:
                        self._definitions.popitem(last=False)
            if cached is not None:
                snippets.append(Snippet(record.relative, cached[0], cached[1], "definition", 1.0))
        return snippets

    def _file_windows(self, file_id: int, record: _File) -> list[Window]:
        with self._cache_lock:
            cached = self._windows.get(file_id)
            if cached is not None:
                self._windows.move_to_end(file_id)
                return cached
        computed = windows(record.text)
        with self._cache_lock:
            self._windows[file_id] = computed
            while len(self._windows) > CACHED_WINDOWS:
                self._windows.popitem(last=False)
        return computed

    def _similar_windows(
        self,
        query: set[str],
        others: list[_Open],
        edits: list[tuple[str, int]],
        ranked: list[tuple[int, _File]],
        folders: list[str],
    ) -> list[Snippet]:
        candidates: list[Snippet] = []
        by_uri = {o.uri: o for o in others}
        for other in others:
            if other.windows is None:
                other.windows = windows(other.text)  # the _Open is replaced on change: never stale
            name = _display_path(other, folders)
            candidates += [
                Snippet(name, w.start_line, w.text, "similar", jaccard(query, set(w.names)))
                for w in other.windows
            ]
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
        for file_id, record in ranked:
            for w in self._file_windows(file_id, record):
                candidates.append(
                    Snippet(record.relative, w.start_line, w.text, "similar", jaccard(query, set(w.names)))
                )
        best: dict[str, Snippet] = {}  # one window per file: its best
        for snippet in sorted(candidates, key=lambda s: (-s.score, s.path, s.start_line)):
            if snippet.score >= MIN_JACCARD and snippet.path not in best:
                best[snippet.path] = snippet
        return list(best.values())[:MAX_SIMILAR]


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _normal(path: str) -> str:
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _display_path(document: _Open, folders: list[str]) -> str:
    if document.path:
        real = _normal(document.path)
        for folder in folders:
            if files.inside(real, folder):
                return os.path.relpath(real, folder).replace(os.sep, "/")
        return os.path.basename(document.path)
    return document.uri.rsplit("/", 1)[-1]


def _path_of(uri: str) -> str | None:
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return _normal(path) if path else None
