"""The index's tables: Jaccard scoring from the postings, dead rows, compaction."""

from __future__ import annotations

import pytest

from difill.server.context.store import IndexedFile, Store

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)


def add(store: Store, path: str, text: str) -> int:
    chunks, definitions, cost = store.cost_of(text, "python")
    return store.add(
        IndexedFile(path, "/ws", path.lstrip("/"), "python", text, cost=cost), chunks, definitions
    )


def test_scoring_removal_and_compaction():
    store = Store()
    alike = add(store, "/ws/alike.py", "def parse_header(raw_bytes):\n    return header_table[raw_bytes]\n")
    other = add(store, "/ws/other.py", "def render_page(template):\n    return template\n")
    big = add(store, "/ws/big.py", "".join(f"line_{i} = {i}\n" for i in range(40)) + "parse_header = None\n")
    query = {"parse_header", "raw_bytes", "header_table"}

    hits = store.similar_chunks(query, excluded=set(), min_score=0.0)
    assert [h.file_id for h in hits] == [alike, big]  # other shares nothing
    assert hits[0].score == 1.0 and hits[0].line == 0
    assert store.files[big].text[hits[1].start : hits[1].end].startswith("line_32 = 32\n")  # its third chunk
    assert hits[1].line == 32
    assert store.similar_chunks(query, excluded={alike}, min_score=0.0)[0].file_id == big
    assert sorted(f for f, _ in store.definitions_of("parse_header", set())) == [alike, big]

    before = store.bytes
    store.remove("/ws/alike.py")
    assert store.bytes < before and alike not in store.files
    assert [h.file_id for h in store.similar_chunks(query, set(), 0.0)] == [big]
    assert [f for f, _ in store.definitions_of("parse_header", set())] == [big]
    store.compact()
    assert [h.file_id for h in store.similar_chunks(query, set(), 0.0)] == [big]
    assert [f for f, _ in store.definitions_of("parse_header", set())] == [big]
    assert store.similar_chunks({"render_page"}, set(), 0.0)[0].file_id == other
    again = add(store, "/ws/alike.py", "parse_header = raw_bytes\n")  # re-added after compaction
    assert store.similar_chunks(query, set(), 0.0)[0].file_id == again
