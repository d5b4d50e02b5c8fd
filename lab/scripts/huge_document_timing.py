"""Time what a huge document costs the server on its event loop: open, line index, parse, a keystroke.

Run: .venv/bin/python -m lab.scripts.huge_document_timing   (docs/reliability.md quotes the figures;
with MAX_TREE_BYTES in place the parses of documents over the cap take no time, they are skipped.)
"""

from __future__ import annotations

import time

from lsprotocol import types

from difill.server.config import Settings
from difill.server.documents import UTF16, Documents
from difill.server.suggestion_path import context_for
from difill.server.trees import SyntaxTrees


def timed(what: str, work):
    started = time.perf_counter()
    result = work()
    print(f"{what}: {time.perf_counter() - started:.3f} s")
    return result


def main() -> None:
    text = "value = compute(1, 2)  # a line\n" * 650_000
    print(f"document: {len(text) / 1e6:.1f} MB")
    documents, trees = Documents(), SyntaxTrees()
    document = timed("open", lambda: documents.open("file:///huge.py", "python", 1, text))
    timed("line index", lambda: document.line_starts)
    timed("parse", lambda: trees.tree_for(document))
    at = types.Position(line=300_000, character=5)
    keystroke = types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text="x")
    changed = timed("one keystroke", lambda: documents.change("file:///huge.py", 2, [keystroke], UTF16))
    tree = timed("reparse", lambda: trees.tree_for(changed))
    offset = changed.offset_at(at, UTF16)
    timed("context", lambda: context_for(changed.text, offset, "python", changed.uri, Settings(), tree))
    line = documents.open("file:///line.py", "python", 1, "x = [" + "1, " * 700_000 + "]\n")
    timed("parse a 2 MB line", lambda: trees.tree_for(line))


if __name__ == "__main__":
    main()
