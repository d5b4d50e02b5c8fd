"""Document sync fuzzing: random sequences of incremental edits (multi-byte and astral characters,
CRLF and lone CRs, empty documents, edits at the end, several changes per didChange) applied
through the server; after every didChange its text must equal the reference model's.

Two levels:

* in process, many cases: each message is read exactly as ``difill serve`` reads one (JSON bytes ->
  ``json.loads`` with the protocol's object hook -> ``handle_message``), for each position encoding;
* through a real ``difill serve`` over stdio, fewer cases: the text comes back from the server
  itself (``difillTest/inspect``, from hooks/sitecustomize.py), so the JSON transport, escaped
  surrogate pairs included, is checked too.

DIFILL_FUZZ_EXAMPLES (default 60) and DIFILL_FUZZ_SERVER_EXAMPLES (default 10) set the numbers of
Hypothesis examples per encoding; the totals are printed (run with -s) for docs/reliability.md.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_hooks import hook_env
from stdio_client import StdioServer
from sync_reference import ENCODINGS, apply_change, changes, documents, line_spans, units

from difill.server.server import create_server

EXAMPLES = int(os.environ.get("DIFILL_FUZZ_EXAMPLES", "60"))
SERVER_EXAMPLES = int(os.environ.get("DIFILL_FUZZ_SERVER_EXAMPLES", "10"))
MAX_STEPS = 25
COUNTS: Counter = Counter()
_uris = itertools.count()


class InProcessServer:
    """``create_server()`` fed JSON bytes the way the stdio loop feeds it, its output kept."""

    def __init__(self, encoding: str) -> None:
        self.server = create_server()
        self.sent: list[dict] = []
        sent = self.sent

        class Writer:
            def write(self, data: bytes) -> None:
                sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

            def close(self) -> None: ...

        self.server.protocol.set_writer(Writer())
        capabilities = {"general": {"positionEncodings": [encoding]}}
        self.feed({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"processId": None, "rootUri": None, "capabilities": capabilities}})  # fmt: skip
        assert self.sent[-1]["result"]["capabilities"]["positionEncoding"] == encoding

    def feed(self, message: dict) -> None:
        protocol = self.server.protocol
        protocol.handle_message(
            json.loads(json.dumps(message).encode(), object_hook=protocol.structure_message)
        )

    def notify(self, method: str, params: dict) -> None:
        self.feed({"jsonrpc": "2.0", "method": method, "params": params})

    def text(self, uri: str) -> str:
        return self.server.documents.get(uri).text

    def problems(self) -> list[dict]:
        """Anything the server said besides answering initialize: an error, a warning."""
        return [m for m in self.sent if m.get("method") == "window/showMessage" or "error" in m]


_in_process: dict[str, InProcessServer] = {}


def in_process(encoding: str) -> InProcessServer:
    if encoding not in _in_process:
        _in_process[encoding] = InProcessServer(encoding)
    return _in_process[encoding]


def run_edits(data, encoding: str, open_doc, change_doc, server_text, level: str) -> None:
    """Open a random document, then up to MAX_STEPS didChange of 1-3 changes each, comparing the
    server's text with the reference after every one."""
    uri = f"file:///tmp/fuzz/{next(_uris)}.py"
    reference = data.draw(documents, label="initial text")
    open_doc(uri, reference)
    assert server_text(uri) == reference
    for version in range(2, 2 + data.draw(st.integers(1, MAX_STEPS), label="steps")):
        batch = []
        for _ in range(data.draw(st.integers(1, 3), label="changes")):
            change = data.draw(changes(reference, encoding))
            reference = apply_change(reference, change, encoding)
            batch.append(change)
        change_doc(uri, version, batch)
        COUNTS[f"{level} didChange"] += 1
        COUNTS[f"{level} changes"] += len(batch)
        assert server_text(uri) == reference, f"after version {version}: {batch!r}"
    COUNTS[f"{level} documents"] += 1
    COUNTS[f"{level} {encoding} documents"] += 1


def document_notifications(notify):
    """(open_doc, change_doc) for ``run_edits``: didOpen and didChange sent with ``notify``."""

    def open_doc(uri, text):
        notify("textDocument/didOpen",
               {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})  # fmt: skip

    def change_doc(uri, version, batch):
        notify("textDocument/didChange",
               {"textDocument": {"uri": uri, "version": version}, "contentChanges": batch})  # fmt: skip

    return open_doc, change_doc


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_incremental_edits_through_the_protocol_match_the_reference(data, encoding):
    server = in_process(encoding)

    run_edits(data, encoding, *document_notifications(server.notify), server.text, "in-process")
    assert server.problems() == []


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One ``difill serve`` per position encoding, without a model: document sync needs none."""
    root = tmp_path_factory.mktemp("fuzz")
    servers = {}
    for encoding in ENCODINGS:
        env = hook_env(root / f"{encoding}.jsonl", inspect="1")
        server = StdioServer(root / "no-model", root / f"{encoding}.stderr", env=env)
        init = server.initialize({"general": {"positionEncodings": [encoding]}})
        assert init["result"]["capabilities"]["positionEncoding"] == encoding
        servers[encoding] = server
    yield servers
    for server in servers.values():
        assert server.close() == 0


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(
    max_examples=SERVER_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_incremental_edits_through_difill_serve_match_the_reference(served, data, encoding):
    server = served[encoding]

    def server_text(uri):
        return server.request("difillTest/inspect", {"uri": uri}, timeout=10)["result"]["text"]

    run_edits(data, encoding, *document_notifications(server.notify), server_text, "difill-serve")


def edge_cases(before: str, change: dict, after: str, encoding: str) -> set[str]:
    """The edge cases one change exercises (what the module docstring promises to fuzz)."""
    found = set()
    inserted = change["text"]
    if "range" not in change:
        found.add("whole-document change")
    else:
        spans = line_spans(before)
        for position in (change["range"]["start"], change["range"]["end"]):
            start, end = spans[position["line"]]
            if position["character"] > units(before[start:end], encoding):
                found.add("position past the end of its line")
        if change["range"]["start"] == change["range"]["end"] and after.endswith(inserted) and inserted:
            found.add("insert at the end")
    if any(ord(ch) > 0xFFFF for ch in inserted):
        found.add("astral character inserted")
    if any(0x7F < ord(ch) <= 0xFFFF for ch in inserted):
        found.add("multi-byte character inserted")
    if "\r\n" in after:
        found.add("CRLF line end")
    if "\r" in after.replace("\r\n", ""):
        found.add("lone CR line end")
    if "\u2028" in after or "\x85" in after:
        found.add("a line break LSP does not split on")
    if not after:
        found.add("empty document")
    return found


EDGE_CASES = {
    "whole-document change", "position past the end of its line", "insert at the end",
    "astral character inserted", "multi-byte character inserted", "CRLF line end", "lone CR line end",
    "a line break LSP does not split on", "empty document",
}  # fmt: skip


def test_the_fuzz_strategies_reach_every_edge_case_they_promise():
    """The fuzz above can only find what its strategies generate: a change to them that stops
    producing, say, astral characters or lone CRs fails here instead of quietly fuzzing less."""
    seen: Counter = Counter()

    @settings(max_examples=60, derandomize=True, database=None, deadline=None)
    @given(data=st.data(), encoding=st.sampled_from(ENCODINGS))
    def draw_edits(data, encoding):
        text = data.draw(documents)
        for _ in range(10):
            change = data.draw(changes(text, encoding))
            after = apply_change(text, change, encoding)
            seen.update(edge_cases(text, change, after, encoding))
            text = after

    draw_edits()
    assert EDGE_CASES - set(seen) == set(), dict(seen)
    print(f"\nFUZZ FIGURES {dict(sorted(COUNTS.items()))}")  # the runs above, for docs/reliability.md
