"""Retrieval for a cursor from the workspace index (index.py): draft sources, snippets (the
definitions of the names near the cursor, the most similar windows of open documents and
workspace files) and import drafts.  Called on any thread: it holds the index's lock only while
it scores chunks from the postings and copies what it needs."""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from pygls.uris import to_fs_path

from difill.server.context import files
from difill.server.context.definitions import definition_at
from difill.server.context.drafts import Draft
from difill.server.context.found import Retrieval, Snippet
from difill.server.context.imports import (
    FREE_SCAN_CHARS,
    MAX_FREE_NAMES,
    between_imports,
    free_names,
    import_completion,
    import_targets,
    typed_import,
)
from difill.server.context.jedi_names import JediNames
from difill.server.context.policy import ContextPolicy
from difill.server.context.similarity import identifiers, jaccard, query_text, window_around
from difill.server.context.store import ChunkHit, IndexedFile, Store
from difill.server.context.symbol_lookup import SymbolLookup, rules_for
from difill.text.languages import family_of, language_of

MAX_SIMILAR = 4  # similar windows returned: the best window of each of the most similar files
MIN_JACCARD = 0.05
MAX_DEFINITIONS = 3
MAX_DEFINITION_SITES = 50  # a name defined in more places than this says nothing about which one
DEFINITION_TRIES = 3  # definition lines parsed per name (the line rule may match a non-definition)
MAX_OPEN_SOURCES = 8  # draft sources: open documents, then the most similar workspace files
MAX_WORKSPACE_SOURCES = 4
OPEN_REFRESH_PER_LOOKUP = 4  # open documents (re-)indexed by one lookup: about 6 ms each at 2,000 lines
MAX_IMPORT_SOURCES = 3  # a free name defined at the top of more modules than this cannot pick one
CURRENT_SOURCE_CHARS = 256 * 1024  # of the current document, each side of the cursor, for import drafts
CACHED_DEFINITIONS = 256
# Names the current document defines itself (Python-like line rule): their definitions are at hand.
LOCAL_DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)|^(\w+)[ \t]*[:=]", re.M)
LOCAL_SCAN_CHARS = 64 * 1024  # around the cursor


@dataclass
class OpenDocument:
    uri: str
    path: str | None
    language_id: str
    text: str


@dataclass
class Shared:
    """What the lock guards, besides the store."""

    folders: list[str] = field(default_factory=list)
    open: dict[str, OpenDocument] = field(default_factory=dict)
    # The open documents' chunks and postings (keyed by uri), as the workspace files' are: a lookup
    # scores chunks from postings, not every window of every open document (60 open documents
    # of 2,000 lines took 100-700 ms a lookup).  A document changed since the last lookup is
    # re-indexed at the next lookup, unless it is the one being typed in (never its own source).
    open_store: Store = field(default_factory=Store)
    stale: set[str] = field(default_factory=set)
    edits: list[tuple[str, int]] = field(default_factory=list)  # (uri, line), most recent first
    changes: int = 0  # open documents' changes, opens and closes, all of them
    own_changes: dict[str, int] = field(default_factory=dict)  # those of each open document


@dataclass
class IndexRead:
    """What one lookup copied from the index under its lock (``Retriever._read_index``)."""

    folders: list[str]
    open_similar: list[tuple[ChunkHit, OpenDocument]]  # windows of open documents like the cursor's
    others: list[OpenDocument]  # the other open documents inside the folders
    edits: list[tuple[str, int]]  # (uri, line) of the other documents, most recent first
    workspace: list[tuple[ChunkHit, IndexedFile]]  # the workspace files' most similar windows
    definitions: list  # (sites, name, [(file, file id, offset)]) of the names near the cursor


class Retriever:
    """Lookups over the index's store and shared state, under its lock."""

    def __init__(
        self, lock: threading.Lock, store: Store, shared: Shared, policy: ContextPolicy,
        project_python: str | None = None, model_busy: Callable[[], bool] | None = None,
    ) -> None:  # fmt: skip
        self.lock = lock
        self.store = store
        self.shared = shared
        self._definitions: OrderedDict[tuple[int, int, str], str | None] = OrderedDict()
        self._cache_lock = threading.Lock()

        def folders() -> list[str]:
            return list(shared.folders)

        # jedi's names (Python), where the index's own rules find none.  It reads what the one
        # read of a user file would (files.py ``readable``: the real path inside a workspace
        # folder or the environment's modules, allowed as named and as its target), nothing else.
        def unreadable(path: str) -> bool:
            return files.readable(path, [*folders(), *jedi.environment_roots()], policy) is None

        jedi = JediNames(
            unreadable, folders, project_python,
            secret=lambda path: files.denied(path, folders(), policy), model_busy=model_busy,
        )  # fmt: skip
        self._symbols = SymbolLookup(lock, store, folders, jedi, policy)

    def warm(self, language_id: str) -> None:
        """A document of ``language_id`` opened: what its first lookup would load, loaded now."""
        if language_id == "python":
            self._symbols.warm()

    def close(self, wait_s: float = 0.0) -> None:
        self._symbols.close(wait_s)

    def retrieve(self, uri: str, text: str, offset: int, language_id: str) -> Retrieval:
        """Draft sources and snippets for a cursor at ``offset`` of ``text`` (document ``uri``)."""
        offset = max(0, min(offset, len(text)))
        before, after = lf(text[:offset]), lf(text[offset:])
        text, offset = before + after, len(before)
        query = identifiers(query_text(text, offset))
        current_path = path_of(uri)
        read = self._read_index(uri, current_path, query, local_names(text, offset))
        similar = self._similar(
            query, read.open_similar, read.others, read.edits, read.workspace, read.folders
        )
        snippets = [*self._definition_snippets(read.definitions), *similar]
        drafts = []
        language = language_of(language_id, uri)
        if language_id == "python":
            drafts += self._import_drafts(text, offset, current_path)
        if rules_for(language) is not None:  # Python, JavaScript/TypeScript, Go
            source_texts = [o.text for o in read.others[:MAX_OPEN_SOURCES]] + [
                r.text for _, r in read.workspace[:MAX_WORKSPACE_SOURCES]
            ]
            drafts += self._symbol_drafts(text, offset, current_path, source_texts, language)
        sources = draft_sources(read, language, current_path or uri)
        names, waiting = (
            self._symbols.import_line_names(text, offset, current_path)
            if language_id == "python"
            else (None, False)
        )
        # jedi's list after ``x.`` still coming: this answer lacks it, and the next ask reads it.
        waiting = waiting or (
            language_id == "python" and self._symbols.jedi_pending(text, offset, current_path)
        )
        return Retrieval(sources, snippets, drafts, names, waiting)

    def _read_index(self, uri: str, current_path: str | None, query: set[str], local: set[str]) -> IndexRead:
        """What a lookup needs from the index and the open documents, copied under the lock."""
        with self.lock:
            store, shared = self.store, self.shared
            self._refresh_open(uri)
            current_open = shared.open_store.by_path.get(uri)
            open_hits = shared.open_store.similar_chunks(
                query, {current_open} if current_open is not None else set(), MIN_JACCARD
            )
            folders = list(shared.folders)
            open_similar = [
                (hit, shared.open[shared.open_store.files[hit.file_id].path]) for hit in open_hits
            ]
            open_similar = [(hit, o) for hit, o in open_similar if in_folders(o, folders)]
            others = [o for u, o in shared.open.items() if u != uri and in_folders(o, folders)]
            open_paths = {o.path for o in shared.open.values() if o.path} | {current_path}
            open_ids = {store.by_path[p] for p in open_paths if p in store.by_path}
            current_ids = {store.by_path[current_path]} if current_path in store.by_path else set()
            edits = [(u, line) for u, line in shared.edits if u != uri]
            hits = store.similar_chunks(query, open_ids, MIN_JACCARD)
            workspace = [(hit, store.files[hit.file_id]) for hit in hits]
            definitions = []
            for name in sorted(query - local):
                found = store.definitions_of(name, current_ids)
                if 0 < len(found) <= MAX_DEFINITION_SITES:
                    definitions.append((len(found), name, [(store.files[f], f, at) for f, at in found]))
        return IndexRead(folders, open_similar, others, edits, workspace, definitions)

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
        with self.lock:
            store, folders = self.store, list(self.shared.folders)
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

    def _symbol_drafts(
        self, text: str, offset: int, current_path: str | None, source_texts: list[str], language: str | None
    ) -> list[Draft]:
        """Symbol candidates at the cursor (symbol_lookup.py), as "symbol" drafts."""
        return self._symbols.drafts(text, offset, current_path, language, source_texts)

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
        shared = self.shared
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
        others: list[OpenDocument],
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


# A test file by its path: a tests/ or test/ folder, or a test naming convention of its language.
def local_names(text: str, offset: int) -> set[str]:
    """The names the document defines itself near the cursor: their definitions are at hand."""
    return {
        a or b
        for a, b in LOCAL_DEFINITION.findall(
            text, max(0, offset - LOCAL_SCAN_CHARS), offset + LOCAL_SCAN_CHARS
        )
    }


def draft_sources(read: IndexRead, language: str | None, current: str) -> list[tuple[str, str]]:
    """The (source, text) pairs drafts are looked up in, for a document at ``current`` (its path,
    else its uri)."""
    # Draft sources: the document's language (or family: TS and JS) only - a Go file got
    # Python from the workspace; test code after library code for library code, and the
    # other way round in a test file; open documents most recently edited first.
    family = family_of(language)
    testing = is_test_path(current)
    recent = {u: rank for rank, (u, _) in reversed(list(enumerate(read.edits)))}
    open_sources = [
        o for o in read.others if family is None or family_of(language_of(o.language_id, o.uri)) == family
    ]
    open_sources.sort(
        key=lambda o: (is_test_path(o.path or o.uri) != testing, recent.get(o.uri, len(read.edits)), o.uri)
    )
    files_sources = [r for _, r in read.workspace if family is None or family_of(r.language) == family]
    files_sources.sort(key=lambda r: is_test_path(r.path) != testing)  # stable: by similarity within
    # The current document is not a source here: the finder searches it itself, before and
    # after the cursor, never at the cursor (draft_policy.drafts_at).  Without its line, the text
    # before the cursor runs on into the next line, and a source made of it "matched" there:
    # at the start of a line, a full-length match whose draft repeated the line below.
    sources = [(o.uri, o.text) for o in open_sources[:MAX_OPEN_SOURCES]]
    sources += [(record.path, record.text) for record in files_sources[:MAX_WORKSPACE_SOURCES]]
    return sources


TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|__tests__|spec)/|(?:^|/)test_[^/]*$|_test\.\w+$|[./](?:test|spec)\.[jt]sx?$|Tests?\.\w+$"
)


def is_test_path(path: str) -> bool:
    return TEST_PATH.search(path.replace(os.sep, "/")) is not None


def lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def normal_path(path: str) -> str:
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def path_of(uri: str) -> str | None:
    """The normalised path of a ``file:`` URI; None for other schemes and malformed URIs."""
    try:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        return normal_path(path) if path else None
    except (ValueError, OSError):
        return None


def in_folders(document: OpenDocument, folders: list[str]) -> bool:
    """Whether an open document may be a source for another: its file lies inside a workspace
    folder.  Tabs follow the rule of files (issue 62): a tab outside every folder (a notes file
    in the home folder, an untitled buffer) is never read for another document, for any model,
    local or remote.  ``folders`` are real paths, as is a document's folder (``path_of``)."""
    return document.path is not None and any(files.inside(document.path, folder) for folder in folders)


def _display_path(document: OpenDocument, folders: list[str]) -> str:
    if document.path:
        for folder in folders:
            if files.inside(document.path, folder):
                return os.path.relpath(document.path, folder).replace(os.sep, "/")
        return os.path.basename(document.path)
    return document.uri.rsplit("/", 1)[-1]
