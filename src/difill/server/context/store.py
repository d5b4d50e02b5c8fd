"""The index's tables: files, their chunks and definitions, and the postings that find them.

Compact on purpose (the index of a 20k-file tree must stay within a few hundred MB): a file is
cut into chunks of ``WINDOW_LINES`` lines; each name a chunk uses lists the chunk's id in an
``array('i')`` (4 bytes a posting); chunk and definition rows are columns of arrays.  A lookup
scores chunks by Jaccard similarity with the query's names in numpy, from the postings alone: no
text is scanned.  Ids only grow; a removed file's rows are marked dead (-1) and its postings are
dropped by ``compact`` once dead ones outnumber the living.

Not thread-safe: index.py holds its lock around every call.
"""

from __future__ import annotations

import os
import sys
from array import array
from collections import Counter
from dataclasses import dataclass

import numpy as np

from difill.server.context.definitions import definition_lines
from difill.server.context.similarity import WINDOW_LINES, identifiers

FILE_OVERHEAD_BYTES = 600  # per file: its record, path strings, dict entries
CHUNK_BYTES = 16  # per chunk: its row in the four chunk columns
POSTING_BYTES = 4  # per (name, chunk) and per (name, definition): one array slot
DEFINITION_BYTES = 12
NAME_BYTES = 120  # a name seen for the first time: the interned string and its dict entry
MAX_POSTINGS_SCANNED = 5000  # a name in more chunks than this says little and costs time
CANDIDATE_CHUNKS = 512  # the best-scoring chunks a lookup looks through for distinct files
MAX_CHUNK_NAMES = 65535


@dataclass
class IndexedFile:
    path: str  # absolute, as listed (under the folder's real path)
    folder: str
    relative: str  # '/'-separated, from the folder: how snippets name it
    language: str | None
    text: str  # LF
    first_chunk: int = 0
    chunks: int = 0
    first_definition: int = 0
    definitions: int = 0
    postings: int = 0
    cost: int = 0  # bytes counted against the index's cap
    name_bytes: int = 0  # the part of ``cost`` for names it was the first to use (never freed)


@dataclass(frozen=True)
class ChunkHit:
    file_id: int
    start: int  # char offset of the chunk in the file's text
    end: int
    line: int  # 0-based line of ``start``
    score: float  # Jaccard similarity of the chunk's names with the query's


class Store:
    def __init__(self) -> None:
        self.files: dict[int, IndexedFile] = {}
        self.by_path: dict[str, int] = {}
        self.generation = 0  # changes with every file added or removed: what a cache keys on
        self.directories: Counter[str] = Counter()  # directory -> files indexed below it (a folder deleted)
        self.bytes = 0
        self._next_file = 0
        self._postings: dict[str, array] = {}  # name -> chunk ids
        self._defines: dict[str, array] = {}  # name -> definition ids
        self._chunk_file, self._chunk_start = array("i"), array("i")
        self._chunk_line, self._chunk_names = array("i"), array("H")
        self._definition_file, self._definition_start = array("i"), array("i")
        self._live_postings = 0
        self._dead_postings = 0

    def cost_of(self, text: str, language: str | None) -> tuple[list[tuple[int, int, set[str]]], list, int]:
        """(chunks as (start, line, names), definition lines, bytes counted) for ``text``; it changes nothing, so
        the worker computes it without the lock (reading the postings' keys is safe meanwhile)."""
        chunks = []
        start, line = 0, 0
        while start < len(text):
            end = start
            for _ in range(WINDOW_LINES):
                end = text.find("\n", end) + 1
                if end == 0:
                    end = len(text)
                    break
            names = identifiers(text[start:end])
            if names:
                chunks.append((start, line, names))
            line += text.count("\n", start, end)
            start = end
        definitions = definition_lines(text, language)
        postings = sum(len(names) for *_, names in chunks) + len(definitions)
        new_names = len(set().union(*(names for *_, names in chunks)).difference(self._postings))
        cost = (
            sys.getsizeof(text) + FILE_OVERHEAD_BYTES + CHUNK_BYTES * len(chunks)
            + POSTING_BYTES * postings + DEFINITION_BYTES * len(definitions) + NAME_BYTES * new_names
        )  # fmt: skip
        return chunks, definitions, cost

    def add(self, record: IndexedFile, chunks: list[tuple[int, int, set[str]]], definitions: list) -> int:
        file_id = self._next_file
        self._next_file += 1
        record.first_chunk, record.chunks = len(self._chunk_file), len(chunks)
        record.first_definition, record.definitions = len(self._definition_file), len(definitions)
        new_names = 0
        for start, line, names in chunks:
            chunk_id = len(self._chunk_file)
            self._chunk_file.append(file_id)
            self._chunk_start.append(start)
            self._chunk_line.append(line)
            self._chunk_names.append(min(len(names), MAX_CHUNK_NAMES))
            for name in names:
                ids = self._postings.get(name)
                if ids is None:
                    ids = self._postings[name] = array("i")
                    new_names += 1
                ids.append(chunk_id)
        for name, start in definitions:
            definition_id = len(self._definition_file)
            self._definition_file.append(file_id)
            self._definition_start.append(start)
            self._defines.setdefault(sys.intern(name), array("i")).append(definition_id)
        record.postings = sum(len(names) for *_, names in chunks) + len(definitions)
        record.name_bytes = min(record.cost, NAME_BYTES * new_names)  # counted by cost_of
        self.files[file_id] = record
        self.by_path[record.path] = file_id
        self.generation += 1
        self.directories.update(_directories_of(record))
        self.bytes += record.cost
        self._live_postings += record.postings
        return file_id

    def remove(self, path: str) -> None:
        file_id = self.by_path.pop(path, None)
        if file_id is None:
            return
        record = self.files.pop(file_id)
        self.generation += 1
        for directory in _directories_of(record):
            self.directories[directory] -= 1
            if self.directories[directory] <= 0:
                del self.directories[directory]
        for chunk_id in range(record.first_chunk, record.first_chunk + record.chunks):
            self._chunk_file[chunk_id] = -1
        for definition_id in range(record.first_definition, record.first_definition + record.definitions):
            self._definition_file[definition_id] = -1
        # What stays: the names it brought (interned, in the tables) and its dead rows.
        self.bytes -= (
            record.cost
            - record.name_bytes
            - CHUNK_BYTES * record.chunks
            - DEFINITION_BYTES * record.definitions
        )
        self._live_postings -= record.postings
        self._dead_postings += record.postings
        if self._dead_postings > max(self._live_postings, 1_000_000):
            self.compact()

    def compact(self) -> None:
        """Drop dead chunks' and definitions' ids from the postings."""
        live_chunks = np.frombuffer(self._chunk_file, dtype=np.int32) >= 0
        live_definitions = np.frombuffer(self._definition_file, dtype=np.int32) >= 0
        for table, live in ((self._postings, live_chunks), (self._defines, live_definitions)):
            for name in list(table):
                ids = np.frombuffer(table[name], dtype=np.int32)
                kept = ids[live[ids]]
                del ids
                if len(kept):
                    table[name] = array("i")
                    table[name].frombytes(kept.tobytes())
                else:
                    del table[name]
        del live_chunks, live_definitions
        self._dead_postings = 0

    def similar_chunks(
        self, query: set[str], excluded: set[int], min_score: float, limit: int = 16
    ) -> list[ChunkHit]:
        """The best chunk of each of the ``limit`` files most similar to ``query`` (Jaccard over
        names, at least ``min_score``), best first; ties go to the older chunk."""
        arrays = [self._postings.get(name) for name in query]
        scanned = [ids for ids in arrays if ids is not None and 0 < len(ids) <= MAX_POSTINGS_SCANNED]
        if not scanned:
            return []
        # Views of the arrays live only inside these expressions: an array that exports its
        # buffer cannot grow, and the worker appends to them once the lock is released.
        chunk_ids, shared = np.unique(
            np.concatenate([np.frombuffer(ids, dtype=np.int32) for ids in scanned]), return_counts=True
        )
        owners = np.frombuffer(self._chunk_file, dtype=np.int32)[chunk_ids]
        sizes = np.frombuffer(self._chunk_names, dtype=np.uint16)[chunk_ids].astype(np.float64)
        scores = shared / (len(query) + sizes - shared)
        keep = (owners >= 0) & (scores >= min_score)
        if excluded:
            keep &= ~np.isin(owners, np.fromiter(excluded, dtype=np.int32))
        picked = np.flatnonzero(keep)
        if picked.size > CANDIDATE_CHUNKS:  # only the best can be among the first ``limit`` files
            picked = picked[np.argpartition(-scores[picked], CANDIDATE_CHUNKS - 1)[:CANDIDATE_CHUNKS]]
        picked = picked[np.lexsort((chunk_ids[picked], -scores[picked]))]
        hits: list[ChunkHit] = []
        seen: set[int] = set()
        for position in picked.tolist():
            file_id = int(owners[position])
            if file_id in seen:
                continue
            seen.add(file_id)
            chunk_id = int(chunk_ids[position])
            record = self.files[file_id]
            last = record.first_chunk + record.chunks - 1
            end = self._chunk_start[chunk_id + 1] if chunk_id < last else len(record.text)
            start = self._chunk_start[chunk_id]
            hits.append(ChunkHit(file_id, start, end, self._chunk_line[chunk_id], float(scores[position])))
            if len(hits) == limit:
                break
        return hits

    def definitions_of(self, name: str, excluded: set[int]) -> list[tuple[int, int]]:
        """(file id, offset of the line) of each live definition line of ``name``."""
        found = []
        for definition_id in self._defines.get(name, ()):
            file_id = self._definition_file[definition_id]
            if file_id >= 0 and file_id not in excluded:
                found.append((file_id, self._definition_start[definition_id]))
        return found


def _directories_of(record: IndexedFile) -> list[str]:
    """The directories between ``record``'s file and its folder (the folder included)."""
    found: list[str] = []
    if not record.folder:  # an open document, keyed by its uri
        return found
    directory = os.path.dirname(record.path)
    while len(directory) >= len(record.folder) and directory.startswith(record.folder):
        found.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return found
